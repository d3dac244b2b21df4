"""Count the shipped neural pair's long run once and ship it (assets/models/nahan-long-run.json).

    .venv/bin/python tools/neural_long_run.py [--runs 20] [--tokens-each 2000] [--gamma 4]

Runs `runs` independent seeded runs of the pair at the lab's default row shaping (the table's settings), pools
α and tokens per pass, and writes the file atomically with a 95 % interval from the spread between runs. The
table then quotes this long run for the shipped pair (models.long_runs) instead of a 2,000-token one.
"""
from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--tokens-each", type=int, default=2000)
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    from corpus import jsonio
    from corpus.atomic import write_text_atomic
    from models import long_runs
    from models.llm.pair import LlamaPair
    from models.sampler import SamplerSettings
    pair = LlamaPair.shipped()
    settings = SamplerSettings(gamma=args.gamma)
    cmd = f"tools/neural_long_run.py --runs {args.runs} --tokens-each {args.tokens_each} --gamma {args.gamma}"
    lr = long_runs.measure(pair, settings, args.runs, args.tokens_each, "fp32",
                           datetime.date.today().isoformat(), cmd,
                           progress=lambda k, n: print(f"run {k}/{n}", file=sys.stderr, flush=True))
    out = args.out or long_runs.SHIPPED
    write_text_atomic(out, jsonio.dumps(long_runs.to_json(lr), indent=1) + "\n")
    print(f"{out}: α = {lr.alpha:.4f} ± {lr.alpha_ci95:.4f} over {lr.tokens:,} tokens ({lr.runs} runs), "
          f"{lr.tokens_per_pass:.3f} tokens per pass")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
