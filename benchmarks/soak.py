"""Soak: the real window, headless, for N frames through every mode and export; prints what it holds as it goes.

    SDL_VIDEODRIVER=offscreen .venv/bin/python -m benchmarks.soak [--frames 3600] [--cycle 600] [--size 1280x720]
                                                                  [--every 600] [--json]

The window (app.window.App, in this process, the scripted loop's fixed 1/30 s clock) repeats one cycle of
--cycle frames: every mode in the mode bar's order (the tour through all its chapters, the lab with its
values changed through Controller.update and put back, the step-through forward and back, the tubes through
every rule and its speed keys, the exploded view through every part, the hardware panel, the quiz (a fresh
one each cycle: answers, class mode, reveal, "show me" and back), and any other registered mode with
next/previous), the classroom keys toggled and toggled back (language, palette, text size, help, blank,
pause, cut-away, reduced motion), and every export (F12 screenshot, E plots, C run log, G GIF, the quiz's
answers) as key presses into a temporary folder. Before the first frame and every --every frames it prints:
resident memory (VmRSS after gc and malloc_trim; the peak so far, ru_maxrss), GL objects alive (moderngl
objects created minus released, counted by wrapping the context's create calls and every object's release:
GLCensus), open file descriptors (/proc/self/fd), ImGui textures, open matplotlib figures, the churn so far
(GL objects made, texture writes and their bytes, plots drawn), and the median frame time, wall and the
process's CPU time (the whole loop: events, clock, the table, the panels, exports; on a shared machine the wall
time moves with the load). At the end: the growth per 1,000 frames of each, measured between the ends of the
first and the last cycle (the first cycle fills the caches: glyphs, plots, tube results, instance buffers);
GL objects, RSS and fds at the start and the end, the RSS peak; frame time p50 and p95 (wall and CPU); every
GL object made after the first cycle by kind and the program's line that made it (churn, and where it comes
from); and what is still alive after the window closed.

tests/test_app_soak.py runs three short cycles of the same schedule and bounds the counts.
"""
from __future__ import annotations

import argparse
import sys
import json
import statistics
import time

from app.soak import frame_time_growth, growth_per_1000, percentile, run_soak


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=3600)
    ap.add_argument("--cycle", type=int, default=600, help="frames one round of every mode and export takes")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--every", type=int, default=None, help="print every N frames (default: every cycle)")
    ap.add_argument("--gif-seconds", type=float, default=None, help="GIF length (default: the app's)")
    ap.add_argument("--json", action="store_true", help="print one JSON object at the end instead of a table")
    args = ap.parse_args()
    w, h = (int(v) for v in args.size.lower().split("x"))

    def show(s: dict) -> None:
        if args.json:
            return
        gl = " ".join(f"{k[:4]}={v}" for k, v in s["gl"].items())
        tail = "after close" if s["closed"] else \
            f"{s['frame_ms_median']} ms/frame ({s['cpu_ms_median']} ms CPU)  mode {s['mode']}"
        print(f"frame {s['frame']:6d}  rss {s['rss_mb']:7.1f} MB (peak {s['rss_peak_mb']:.0f})  "
              f"gl {s['gl_alive']:4d} ({gl})  fds {s['fds']:3d}  "
              f"imgui tex {s['imgui_textures']}  figures {s['figures']}  | made {s['gl_made']}  tex writes "
              f"{s['texture_writes']} ({s['texture_mb']} MB)  plots drawn {s['plot_renders']}  exports {s['exports']}"
              f"  | {tail}", flush=True)

    t0 = time.perf_counter()
    res = run_soak(args.frames, args.cycle, (w, h), args.every, report=show, gif_seconds=args.gif_seconds)
    growth = growth_per_1000(res["samples"], args.cycle)
    live = [s for s in res["samples"] if not s["closed"]]
    start, end = live[0], live[-1]
    summary = {"frames": args.frames, "cycle": args.cycle, "size": args.size,
               "growth_per_1000_frames": growth,
               "gl_alive_start": start["gl_alive"], "gl_alive_end": end["gl_alive"],
               "rss_mb_start": start["rss_mb"], "rss_mb_end": end["rss_mb"], "rss_mb_peak": end["rss_peak_mb"],
               "fds_start": start["fds"], "fds_end": end["fds"],
               "frame_ms_median": round(statistics.median(res["frame_ms"]), 2),
               "frame_ms_p95": percentile(res["frame_ms"], 95),
               "cpu_ms_median": round(statistics.median(res["cpu_ms"]), 2),
               "cpu_ms_p95": percentile(res["cpu_ms"], 95),
               "made_after_first_cycle": res["made_after_first_cycle"],
               "frame_ms_growth_per_1000_frames": frame_time_growth(res["frame_ms"], args.cycle),
               "cpu_ms_growth_per_1000_frames": frame_time_growth(res["cpu_ms"], args.cycle),
               "gl_alive_after_close": res["samples"][-1]["gl"],
               "exports": len(res["exports"]), "stage_error": res["stage_error"],
               "wall_s": round(time.perf_counter() - t0, 1)}
    if args.json:
        print(json.dumps({**summary, "samples": res["samples"]}, ensure_ascii=False))
    else:
        print("per 1,000 frames, from the end of cycle 1 to the end: "
              + ", ".join(f"{k} {v:+g}" for k, v in growth.items()))
        print(f"GL objects alive {start['gl_alive']} at the start, {end['gl_alive']} at the end; "
              f"RSS {start['rss_mb']} MB at the start, {end['rss_mb']} MB at the end, peak {end['rss_peak_mb']} MB; "
              f"fds {start['fds']} -> {end['fds']}; frame p50 {summary['frame_ms_median']} ms, "
              f"p95 {summary['frame_ms_p95']} ms wall (CPU p50 {summary['cpu_ms_median']}, "
              f"p95 {summary['cpu_ms_p95']} ms)")
        made = res["made_after_first_cycle"]
        print("GL objects made after cycle 1 (kind, where): "
              + ("; ".join(f"{k} x{v}" for k, v in made.items()) or "none"))
        print(f"median frame {summary['frame_ms_median']} ms wall, {summary['cpu_ms_median']} ms CPU; growth per "
              f"1,000 frames {summary['frame_ms_growth_per_1000_frames']} ms wall, "
              f"{summary['cpu_ms_growth_per_1000_frames']} ms CPU; exports written {summary['exports']}; "
              f"GL objects alive after close {summary['gl_alive_after_close'] or 'none'}; wall {summary['wall_s']} s")
        if res["stage_error"]:
            print(f"stage error: {res['stage_error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
