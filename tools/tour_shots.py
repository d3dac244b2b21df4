"""Screenshot every beat of the tour: one PNG per beat (a page's text, then its action once it has played).

    SDL_VIDEODRIVER=offscreen .venv/bin/python tools/tour_shots.py --out /tmp/shots --lang zh [--chapters 1,4]
        [--size 1280x720] [--palette projector] [--during K]

It opens the real window once (the same loop `spectable run --frames` runs, a fixed 1/30 s clock) and walks
the tour with PageDown, letting each beat's camera flight and action finish before the shot. Prints one line
per shot with the beat's parts, what share of each is in view (inside the frame, clear of the HUD and panels, and not
hidden behind another part: Stage.occlusion draws depth) and what the UI covers (the `--json` `beat`).
This is for looking at the lesson, not a test: tests/test_scene_tour_beats.py checks the same numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--lang", choices=("zh", "en"), default="zh")
    ap.add_argument("--chapters", default="1-12", help="e.g. 1-12 or 2,4,9")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--palette", choices=("default", "projector"), default="default")
    ap.add_argument("--settle", type=int, default=45, help="frames after a page turn before its shot")
    ap.add_argument("--during", type=int, default=0, metavar="K",
                    help="also K shots spread over each played pass (…-b05-d1.png …): what the class sees move")
    args = ap.parse_args()
    os.environ.setdefault("SDL_VIDEODRIVER", "offscreen")
    from app import exports
    from app.controller import Controller
    from app.settings import AppSettings
    from app.window import App

    if "-" in args.chapters:
        a, b = (int(v) for v in args.chapters.split("-"))
        chapters = list(range(a, b + 1))
    else:
        chapters = [int(v) for v in args.chapters.split(",")]
    w, h = (int(v) for v in args.size.split("x"))
    args.out.mkdir(parents=True, exist_ok=True)
    settings = AppSettings(language=args.lang, palette=args.palette, mode="tour", chapter=chapters[0] - 1,
                           window_w=w, window_h=h)
    ctl = Controller(settings, persist=False, scripted=True)
    app = App(ctl, size=(w, h))
    shots = []
    try:
        for k in chapters:
            ctl.tour.goto(k - 1)
            ctl.panel.apply_chapter()
            beat = 0
            while True:
                acted = ctl.tour.acted
                frames = args.settle
                if acted and ctl.driver.play_until is not None:      # let the action play to its end
                    play = int((ctl.driver.play_until - ctl.driver.timeline.t) * 30)
                    for d in range(1, args.during + 1):               # shots while it plays
                        app.run(frames=app.frame + max(1, play // (args.during + 1)))
                        exports.save_png(app.read_frame(),
                                         args.out / f"ch{k:02d}-b{beat:02d}-d{d}-{args.lang}.png")
                    frames += play + 10 - args.during * max(1, play // (args.during + 1))
                elif acted and (ctl.tour.action() and ctl.tour.action().do == "play"):
                    frames += 30 * 8                                   # tubes: a few rounds
                app.run(frames=app.frame + frames)
                name = args.out / f"ch{k:02d}-b{beat:02d}-{args.lang}{'-proj' if args.palette == 'projector' else ''}.png"
                exports.save_png(app.read_frame(), name)
                st = app.state()
                shots.append({"file": str(name), "chapter": k, "page": st["page"], "acted": st["acted"],
                              "beat": st.get("beat"), "facts": st.get("facts")})
                print(name.name, json.dumps(st.get("beat"), ensure_ascii=False), flush=True)
                before = (ctl.tour.chapter, ctl.tour.page, ctl.tour.acted)
                ctl.do("next")
                if ctl.tour.chapter != k - 1 or (ctl.tour.chapter, ctl.tour.page, ctl.tour.acted) == before:
                    break
                beat += 1
    finally:
        app.close()
    (args.out / f"shots-{args.lang}.json").write_text(json.dumps(shots, ensure_ascii=False, indent=1),
                                                     encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
