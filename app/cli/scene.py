"""`spectable render`: one frame (or a frame sequence) of the cast-iron table, headless, after K target passes of a seeded run."""
from __future__ import annotations

import math
from pathlib import Path

from corpus import jsonio
from app.cli.numbers import SEED, number, whole
from app.cli.options import add_drafter_args, add_tokens_kind, make_drafter
from corpus.errors import InputError
from models.tubes import run_tubes

VIEW_NAMES = ("table", "bigdrum", "readhead", "cutaway", "smalldrum", "tape", "bridge", "mill", "cabinet", "tubes",
              "exploded")
PHASES = ("draft", "verify", "check", "write", "mid-draft", "mid-verify", "mid-check", "mid-write", "look")


def register(sub) -> None:
    p = sub.add_parser("render", help="render the table headless to PNG (one frame, or --frames N)",
                       description="Render the cast-iron table offscreen (EGL) after K target passes of a seeded run.")
    p.add_argument("--view", default="table", help=f"one of: {', '.join(VIEW_NAMES)} (default table)")
    p.add_argument("--step", type=whole(0, 10_000), default=1,
                   help="show target pass K (1-based) at the end of --phase; 0 = before the first pass; "
                        "for --view tubes: after K rounds of the tube experiment (default 1)")
    p.add_argument("--phase", default="write", help=f"moment within the pass: {', '.join(PHASES)} (default write: "
                                                    "verdicts shown, before the tape scrolls)")
    p.add_argument("--size", default="1280x720", help="WxH in pixels (default 1280x720)")
    p.add_argument("--out", default="shot.png", help="PNG file for one frame (default shot.png)")
    p.add_argument("--frames", type=whole(0, 100_000), default=0, help="write N frames of the animation instead of one")
    p.add_argument("--out-dir", default=None, help="folder for --frames (created if missing)")
    p.add_argument("--fps", type=number(1, 240), default=30.0, help="frames per second of animation time for --frames")
    p.add_argument("--seed", type=SEED, default=0, help="sampler seed (default 0)")
    p.add_argument("--gamma", type=whole(1, 16), default=4, help="guesses per pass γ (default 4)")
    p.add_argument("--prefix", default="孔乙己", help="text the run starts from (default 孔乙己)")
    add_tokens_kind(p)
    p.add_argument("--batch", type=whole(1, 512), default=1, help="sequences batched: lanes x batch, one drawer each")
    p.add_argument("--device", default="h100-sxm", help="hardware the mill models (default h100-sxm)")
    p.add_argument("--rule", default="exact", help="the right tube's rule: exact (default), resample_from_p, "
                                                   "exact_match_only, draft_only, typical")
    p.add_argument("--palette", default="default", help="default | projector")
    p.add_argument("--lang", default="both", choices=("zh", "en", "both"), help="label language")
    p.add_argument("--msaa", type=whole(0, 8), default=4, help="multisample anti-aliasing samples (0 = off; default 4)")
    add_drafter_args(p)
    p.add_argument("--stats", action="store_true", help="print draw calls, triangles and frame time")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run_render)


def _check(args):
    from scenes.offscreen import parse_size  # lazy: not loaded at `spectable` start

    if args.view not in VIEW_NAMES:
        raise InputError(f"unknown view {args.view!r} (choose from {', '.join(VIEW_NAMES)})")
    if args.phase not in PHASES:
        raise InputError(f"unknown phase {args.phase!r} (choose from {', '.join(PHASES)})")
    if args.msaa not in (0, 2, 4, 8):
        raise InputError(f"--msaa must be 0, 2, 4 or 8, got {args.msaa}")
    if args.frames and not args.out_dir:
        raise InputError("--frames needs --out-dir")
    if not args.prefix:
        raise InputError("--prefix must not be empty")
    return parse_size(args.size)


def build_stage(ctx, args, steps: int, tube_rounds: int = 200):
    """A Stage showing a seeded run of `steps` steps (plus the tube experiment) as the CLI describes it."""
    # lazy: not loaded at `spectable` start
    from models.hardware import get_device
    from models.ngram import NGramPair
    from models.sampler import SamplerSettings, SpeculativeSampler
    from scenes.stage import Stage  # lazy: not loaded at `spectable` start

    get_device(args.device)
    pair = NGramPair.load(tokens=args.tokens_kind)
    settings = SamplerSettings(gamma=args.gamma, seed=args.seed)
    drafter = make_drafter(args, pair) if getattr(args, "drafter", None) else None
    if drafter is not None:
        drafter.validate(settings.gamma)
    sampler = SpeculativeSampler(pair, settings, drafter=drafter)
    sampler.reset(pair.encode(args.prefix))
    traces = [sampler.step() for _ in range(max(steps, 1))]
    rule = getattr(args, "rule", "exact")
    tubes = run_tubes(pair, rounds=tube_rounds, seed=args.seed + 1, rule=rule, drafter=drafter) \
        if args.tokens_kind == "char" else None
    stage = Stage(ctx, palette=args.palette)
    stage.language = args.lang
    stage.samples = args.msaa
    stage.set_run(pair, traces, tubes=tubes, device=args.device, model="llama-3.1-8b", batch_lanes=args.batch)
    stage.set_view(args.view)
    return stage


def _moment(stage, args) -> float:
    tl = stage.timeline
    if args.view == "tubes" and tl.tube_rounds:
        k = min(max(args.step, 1), tl.tube_rounds)
        return (k - 1 + 0.9) * tl.timing.tube_round      # round k, every bead fallen
    if args.step == 0:
        return 0.0
    return tl.step_moment(args.step - 1, args.phase)


def run_render(args) -> int:
    from scenes.offscreen import Offscreen, headless_context, save_png  # lazy: not loaded at `spectable` start

    width, height = _check(args)
    out = Path(args.out)
    if not args.frames and out.parent != Path("") and not out.parent.is_dir():
        raise InputError(f"folder {out.parent} does not exist")
    if args.frames:
        out_dir = Path(args.out_dir)
        if out_dir.exists() and not out_dir.is_dir():
            raise InputError(f"{out_dir} exists and is not a folder")
        # Enough steps to fill the sequence (a step lasts a few seconds of animation).
        seconds = args.frames / args.fps
        steps = max(args.step, 1) + int(math.ceil(seconds / 3.0)) + 1
    elif args.view == "tubes":
        steps = 1          # --step counts the tube experiment's rounds there, not target passes
    else:
        steps = max(args.step, 1)
    tube_rounds = max(200, args.step) if args.view == "tubes" else 200
    ctx = headless_context()
    stage = build_stage(ctx, args, steps, tube_rounds)
    off = Offscreen(ctx, width, height)
    try:
        if not args.frames:
            stage.timeline.seek(_moment(stage, args))
            stats = stage.render(off.fbo, width, height)
            if args.stats or args.json:
                stats = stage.render(off.fbo, width, height)   # steady state: the first frame builds the atlas
            save_png(off.read(), out)
            leg = stage.legibility
            result = {"draw_calls": stats.draw_calls, "triangles": stats.triangles,
                      "frame_ms": round(stats.frame_ms, 2), "width": width, "height": height, "out": str(out),
                      "view": args.view, "step": args.step, "t": round(stage.timeline.t, 4),
                      "min_text_px": leg["min_text_px"], "overlaps": [list(p) for p in leg["overlaps"]],
                      "hidden_labels": len(leg["hidden"]),
                      "lanes_lit": stage.state().lanes_true, "drafter": stage.state().drafter,
                      "labels": stage.labels_json()}
        else:
            out_dir.mkdir(parents=True, exist_ok=True)
            t0 = 0.0 if args.step == 0 else stage.timeline.step_start(args.step - 1)
            worst_calls = worst_tris = 0
            total_ms = 0.0
            for i in range(args.frames):
                stage.timeline.seek(t0 + i / args.fps)
                stats = stage.render(off.fbo, width, height)
                save_png(off.read(), out_dir / f"frame_{i:05d}.png")
                worst_calls = max(worst_calls, stats.draw_calls)
                worst_tris = max(worst_tris, stats.triangles)
                total_ms += stats.frame_ms
            result = {"draw_calls": worst_calls, "triangles": worst_tris,
                      "frame_ms": round(total_ms / args.frames, 2), "width": width, "height": height,
                      "out": str(out_dir), "frames": args.frames, "fps": args.fps}
    finally:
        off.release()
        stage.release()
    if args.json:
        print(jsonio.dumps(result))
    else:
        if args.stats:
            print(f"draw calls {result['draw_calls']}, triangles {result['triangles']}, "
                  f"frame {result['frame_ms']:.1f} ms at {width}x{height}")
            if "min_text_px" in result:
                print(f"smallest text {result['min_text_px']} px, {len(result['overlaps'])} overlapping boxes, "
                      f"{result['hidden_labels']} labels left out as too small")
        print(f"wrote {result['out']}")
    return 0
