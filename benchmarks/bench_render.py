"""Frame time of the full table on this machine's GL (llvmpipe without a GPU), with draw calls and triangles.

    .venv/bin/python -m benchmarks.bench_render [--frames 8] [--views table,exploded] [--msaa 0] [--scale 1.0]
                                                [--passes]

Prints one line per view and size: median and best frame time over --frames renders of an animating
run (the clock advances 1/30 s between frames, the camera still, as in a lesson), after one warm-up frame
that builds the glyph atlas; frames start from the still layer (the parts unchanged since the last frame,
drawn once: scenes.renderer.Renderer.begin_still) as the app's do. A second line draws everything in every
frame (the cost of a frame while the camera flies or every part moves): --no-still prints only that one.
--scale sets Stage.render_scale (internal resolution); --passes adds a second round of frames with the GL
finished after each pass and prints the mean milliseconds per pass (solids, backdrop, shadows, glass, text,
upscale): slower in total, but it says where the time goes.
"""
from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--views", default="table,exploded")
    ap.add_argument("--sizes", default="1280x720,1920x1080")
    ap.add_argument("--msaa", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--passes", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-still", action="store_true", help="only frames that draw everything")
    args = ap.parse_args()

    from models.ngram import NGramPair
    from models.sampler import SamplerSettings, SpeculativeSampler
    from models.tubes import run_tubes
    from scenes.offscreen import Offscreen, headless_context
    from scenes.stage import Stage

    ctx = headless_context()
    pair = NGramPair.load()
    settings = SamplerSettings(gamma=4, seed=0)
    sampler = SpeculativeSampler(pair, settings)
    sampler.reset(pair.encode("孔乙己"))
    traces = [sampler.step() for _ in range(6)]
    stage = Stage(ctx)
    stage.samples = args.msaa
    stage.render_scale = args.scale
    stage.camera_transition_s = 0.0
    stage.set_run(pair, traces, tubes=run_tubes(pair, rounds=40))
    rows = []
    print(f"renderer: {ctx.info['GL_RENDERER']}  msaa={args.msaa}  scale={args.scale}")
    for size in args.sizes.split(","):
        w, h = (int(v) for v in size.split("x"))
        off = Offscreen(ctx, w, h)
        for view, still in itertools.product(args.views.split(","), (False,) if args.no_still else (True, False)):
            stage.still_layer = still
            stage.set_view(view)
            stage.timeline.seek(stage.timeline.step_moment(1, "mid-verify"))
            stats = stage.render(off.fbo, w, h)           # warm-up (atlas, buffers)
            times, tris, layered = [], [], 0
            cpu0 = time.process_time()
            for _ in range(args.frames):
                stage.timeline.advance(1 / 30)
                stats = stage.render(off.fbo, w, h)
                times.append(stats.frame_ms)
                tris.append(stats.triangles)
                layered += stats.still
            # CPU time of all this process's threads (llvmpipe rasterises on worker threads): the work a
            # frame takes, much less sensitive than wall time to other jobs on a shared machine.
            cpu_ms = (time.process_time() - cpu0) * 1000 / args.frames
            row = {"view": view, "width": w, "height": h, "still_layer": still, "frames_from_still_layer": layered,
                   "draw_calls": stats.draw_calls, "triangles_median": int(statistics.median(tris)),
                   "triangles": max(tris), "frame_ms_median": round(statistics.median(times), 1),
                   "frame_ms_best": round(min(times), 1), "cpu_ms_per_frame": round(cpu_ms, 1)}
            if args.passes:
                stage.renderer.profile = {}
                for _ in range(args.frames):
                    stage.timeline.advance(1 / 30)
                    stage.render(off.fbo, w, h)
                row["passes_ms"] = {k: round(v / args.frames, 1) for k, v in stage.renderer.profile.items()}
                stage.renderer.profile = None
            rows.append(row)
            how = f"still layer {layered}/{args.frames}" if still else "all drawn"
            print(f"{view:9s} {w}x{h} {how:16s}: median {row['frame_ms_median']:6.1f} ms, "
                  f"best {row['frame_ms_best']:6.1f} ms, cpu {row['cpu_ms_per_frame']:6.1f} ms, "
                  f"{row['draw_calls']} draw calls, triangles {row['triangles_median']} (most {row['triangles']})")
            if args.passes:
                print("          passes (ms): " + ", ".join(f"{k} {v}" for k, v in row["passes_ms"].items()))
        stage.still_layer = True
        off.release()
    if args.json:
        print(json.dumps(rows))
    stage.release()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
