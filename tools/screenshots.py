"""Screenshots of every mode and every tour beat, with each frame's legibility figures, for looking at.

    SDL_VIDEODRIVER=offscreen python tools/screenshots.py --out shots/ [--size 1280x720]
        [--lang zh en] [--palette default projector] [--only modes|tour|quiz|drafters] [--pair ngram|neural]

Runs the real window in this process (the controller, the table and the panels, as `spectable run` does),
walks the tour beat by beat (each page, then its action, the table's pass played to its end), opens each
mode, and takes the quiz start to finish; `drafters` shows the lab (its drafters plot), the step-through and
the tubes with each drafter, then typical acceptance. `--pair neural` opens the modes with the shipped neural
pair on the table (the file names then start with `neural-`; the tour's pages choose their own pair). Writes
one PNG per frame, contact sheets of them
(sheet-<lang>-<palette>-<part>-N.png, 3 x 3 frames each) and summary.json: per frame its name, the smallest
text drawn, overlapping boxes, scrollbars, clipped panels and the table's labels left out as too small.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def shoot(out: Path, size, lang: str, palette: str, parts, pair: str = "ngram") -> list[dict]:
    from app.controller import Controller
    from app.exports import save_png
    from app.settings import AppSettings
    from app.window import FIXED_DT, App
    from models import drafters

    settings = AppSettings(language=lang, palette=palette, mode="tour", chapter=0, pair=pair)
    ctl = Controller(settings, persist=False, scripted=True, export_dir=out / "exports")
    app = App(ctl, size=size)
    rows: list[dict] = []

    def settle() -> None:
        for _ in range(3):
            ctl.driver.advance(30.0)       # the played pass, the camera's flight: to their ends
            app.draw_frame(FIXED_DT)

    def snap(name: str) -> None:
        settle()
        path = out / f"{'neural-' if pair != 'ngram' else ''}{lang}-{palette}-{name}.png"
        save_png(app.read_frame(), path)
        leg = dict(app.legibility)
        rows.append({"name": name, "lang": lang, "palette": palette, "file": path.name, **leg})
        bad = leg["overlaps"] or leg["scrollbars"] or leg["clipped"]
        print(f"{path.name}: min {leg['min_text_px']} px, overlaps {len(leg['overlaps'])}, "
              f"scrollbars {leg['scrollbars']}, clipped {leg['clipped']}" + ("  <--" if bad else ""))

    try:
        if "tour" in parts:
            ctl.set_mode("tour")
            ctl.tour.goto(0)
            ctl.panel.apply_chapter()
            seen = set()
            while True:
                st = ctl.tour
                key = (st.chapter, st.page, st.acted)
                if key in seen:
                    break
                seen.add(key)
                snap(f"tour-{st.chapter + 1:02d}-{st.page + 1}{'b' if st.acted else 'a'}")
                ctl.do("next")
        if "modes" in parts:
            for mode in ctl.modes:
                if mode in ("tour", "quiz"):
                    continue
                ctl.set_mode(mode)
                snap(f"mode-{mode}")
                if mode == "lab":               # its folded knobs, the models switch among them
                    ctl.panel.open_more = True
                    snap("mode-lab-more")
                    ctl.panel.open_more = False
        if "drafters" in parts:
            # The lab, the step-through and the tubes with each drafter, the lab's plot on the drafters tab.
            for name in drafters.names():
                ctl.set_mode("lab")
                ctl.update(drafter=name)
                ctl.panel.plot = "drafters"
                snap(f"drafter-{name}-lab")
                for mode in ("step", "tubes"):
                    if mode in ctl.modes:
                        ctl.set_mode(mode)
                        snap(f"drafter-{name}-{mode}")
            ctl.set_mode("lab")
            ctl.update(drafter="chain", tube_rule="typical")
            snap("drafter-typical-lab")
            if "tubes" in ctl.modes:
                ctl.set_mode("tubes")
                snap("drafter-typical-tubes")
            ctl.set_mode("lab")
            ctl.update(tube_rule="exact")
        if "quiz" in parts and "quiz" in ctl.modes:
            ctl.set_mode("quiz")
            quiz = ctl.panel
            quiz.restart()
            for k in range(len(quiz.questions())):
                snap(f"quiz-{k + 1:02d}-question")
                quiz.answer(k % 4)
                snap(f"quiz-{k + 1:02d}-answered")
                ctl.do("next")
            snap("quiz-summary")
            quiz.set_class_mode(True)
            quiz.goto(0)
            snap("quiz-class-question")
            ctl.do("reveal")
            snap("quiz-class-revealed")
    finally:
        app.close()
    return rows


def contact_sheets(out: Path, rows: list[dict], per: int = 9) -> None:
    from PIL import Image
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["lang"], r["palette"], r["name"].split("-")[0]), []).append(r)
    for (lang, palette, part), items in groups.items():
        for n in range(0, len(items), per):
            chunk = items[n:n + per]
            thumbs = [Image.open(out / r["file"]).convert("RGB") for r in chunk]
            w, h = thumbs[0].size
            sheet = Image.new("RGB", (w * 3, h * ((len(thumbs) + 2) // 3)), (40, 40, 40))
            for k, im in enumerate(thumbs):
                sheet.paste(im, ((k % 3) * w, (k // 3) * h))
            sheet = sheet.resize((sheet.width // 2, sheet.height // 2))
            sheet.save(out / f"sheet-{lang}-{palette}-{part}-{n // per + 1}.png")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--lang", nargs="+", default=["zh", "en"])
    ap.add_argument("--palette", nargs="+", default=["default", "projector"])
    ap.add_argument("--only", nargs="+", default=["tour", "modes", "quiz"])
    ap.add_argument("--pair", choices=("ngram", "neural"), default="ngram", help="the models on the table")
    args = ap.parse_args()
    os.environ.setdefault("SDL_VIDEODRIVER", "offscreen")
    os.environ.setdefault("XDG_CONFIG_HOME", str(args.out / "config"))
    args.out.mkdir(parents=True, exist_ok=True)
    size = tuple(int(v) for v in args.size.lower().split("x"))
    rows = []
    for lang in args.lang:
        for palette in args.palette:
            rows += shoot(args.out, size, lang, palette, args.only, args.pair)
    contact_sheets(args.out, rows)
    (args.out / "summary.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    worst = min((r["min_text_px"] for r in rows), default=None)
    flagged = [r["file"] for r in rows if r["overlaps"] or r["scrollbars"] or r["clipped"]]
    print(f"{len(rows)} frames; smallest text {worst} px; {len(flagged)} with overlaps, scrollbars or clipping")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
