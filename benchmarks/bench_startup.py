"""Start-up to first frame: import, load tables, open the window (GL, ImGui, font, scene), first frame.

Each repeat runs in a fresh interpreter (cold imports, as a teacher's double-click would), under
SDL_VIDEODRIVER=offscreen unless a display is set. Prints one line per phase and a JSON summary.

    .venv/bin/python -m benchmarks.bench_startup [--repeats 3] [--size 1280x720]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
import pygame, moderngl, numpy, imgui_bundle
from app.controller import Controller
from app.window import App
from app.settings import AppSettings
t_import = time.perf_counter()
from models.ngram import NGramPair
pair = NGramPair.load()
t_tables = time.perf_counter()
w, h = (int(v) for v in sys.argv[1].split("x"))
ctl = Controller(AppSettings(mode="tour"), persist=False)   # as a teacher opens it
app = App(ctl, size=(w, h))
t_window = time.perf_counter()
ctl.session.ensure()
ctl.driver.sync()
t_scene = time.perf_counter()
app.draw_frame(1 / 30)
app.read_frame()          # wait for the GPU: the frame is really finished
t_frame = time.perf_counter()
app.draw_frame(1 / 30)
app.read_frame()
t_frame2 = time.perf_counter()
print(json.dumps({"import_s": t_import - t0, "tables_s": t_tables - t_import, "window_s": t_window - t_tables,
                  "run_and_scene_s": t_scene - t_window, "first_frame_s": t_frame - t_scene,
                  "total_s": t_frame - t0, "second_frame_ms": 1000 * (t_frame2 - t_frame),
                  "stage": ctl.driver.stage is not None, "stage_error": ctl.driver.stage_error}))
app.close()
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", default="1280x720")
    args = ap.parse_args()
    env = dict(os.environ)
    if not env.get("DISPLAY"):
        env["SDL_VIDEODRIVER"] = "offscreen"
    env.setdefault("SDL_AUDIODRIVER", "dummy")
    env["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="spectable-bench-")
    env.setdefault("MPLCONFIGDIR", os.path.join(env["XDG_CONFIG_HOME"], "mpl"))
    runs = []
    for i in range(args.repeats):
        out = subprocess.run([sys.executable, "-c", CHILD, args.size], cwd=ROOT, env=env, capture_output=True,
                             text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
        print(f"run {i + 1}: " + "  ".join(f"{k} {v:.3f}" for k, v in runs[-1].items() if isinstance(v, float)))
    keys = [k for k, v in runs[0].items() if isinstance(v, float)]
    summary = {k: round(statistics.median(r[k] for r in runs), 4) for k in keys}
    summary.update(repeats=args.repeats, size=args.size, stage=runs[0]["stage"], cpus=os.cpu_count(),
                   video=env.get("SDL_VIDEODRIVER", "x11"))
    print("median: " + "  ".join(f"{k} {summary[k]:.3f}" for k in keys))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
