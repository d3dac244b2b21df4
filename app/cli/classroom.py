"""Classroom subcommands that need no window: `spectable handout` (the printable student page)."""
from __future__ import annotations

from pathlib import Path

from corpus import jsonio
from corpus.errors import InputError
from app.paths import resolve_font


def register(sub) -> None:
    p = sub.add_parser("handout", help="write the one-page student handout (PNG and PDF, A4 at 150 dpi)",
                       description="The student handout: the idea, the rule, the table's numbers computed now "
                                   "from the models and the hardware model, the words, four quiz questions.")
    p.add_argument("--lang", choices=("zh", "en"), default=None, help="language (default: the saved setting)")
    p.add_argument("--out", type=Path, default=Path("handout.png"),
                   help="PNG to write (default handout.png); the PDF goes beside it with the same name")
    p.add_argument("--json", action="store_true", help="print one JSON object: the files written")
    p.set_defaults(func=_handout)


def _handout(args) -> int:
    from app.lesson import handout, quiz  # lazy: pulls in PIL
    # lazy: not loaded at `spectable` start
    from app.session import Session
    from app.settings import LAB_FIELDS, load_settings
    if args.out.suffix.lower() != ".png":
        raise InputError(f"--out must name a .png file (the .pdf goes beside it), not {args.out}")
    if not args.out.parent.is_dir():
        raise InputError(f"folder {args.out.parent} does not exist")
    settings, _ = load_settings()
    lang = args.lang or settings.language
    session = Session(settings)
    run = session.ensure()
    if run is None:
        raise InputError(session.error or "no run to take the numbers from")
    snap = quiz.Snapshot(session.pair(), run, {k: getattr(settings, k) for k in LAB_FIELDS})
    img = handout.render(snap, lang, resolve_font())
    paths = handout.save(img, args.out.parent, args.out.stem)
    if args.json:
        print(jsonio.dumps({"files": [str(p) for p in paths], "language": lang}))
    else:
        for path in paths:
            print(f"wrote {path}")
    return 0
