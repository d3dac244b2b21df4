"""Core speed figures (printed, never asserted): table load, speculative steps per second at γ = 4 (the chain, and
the lookup, heads and tree drafters), a million test-tube draws, and the long α run.  Run: .venv/bin/python -m benchmarks.bench_core"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def best_of(n, fn):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> int:
    figures = {}
    # Cold load in a fresh interpreter (imports included), then warm loads in this one.
    code = ("import time; t=time.perf_counter(); from models.ngram import NGramPair; "
            "NGramPair.load(); print(time.perf_counter()-t)")
    cold = float(subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout)
    figures["table_load_cold_s"] = cold
    from models.ngram import NGramPair
    figures["table_load_warm_s"], pair = best_of(5, NGramPair.load)
    figures["word_table_load_warm_s"], _ = best_of(3, lambda: NGramPair.load(tokens="word"))

    from models.sampler import SamplerSettings, SpeculativeSampler, TargetSampler
    sampler = SpeculativeSampler(pair, SamplerSettings(gamma=4, seed=1))
    sampler.reset(pair.encode("孔乙"))
    sampler.run_tokens(200)                           # warm the row caches a little, as a running app would
    n_steps, before = 2000, len(sampler.tokens)
    t = time.perf_counter()
    for _ in range(n_steps):
        sampler.step()
    dt = time.perf_counter() - t
    figures["speculative_steps_per_s_gamma4"] = n_steps / dt
    figures["speculative_tokens_per_s_gamma4"] = (len(sampler.tokens) - before) / dt
    # The other drafters at γ = 4 (the tree: width 2, 30 nodes a pass), same start.
    from models.drafters import make_drafter
    for name, opts in (("lookup", {}), ("heads", {}), ("tree", {"tree_width": 2})):
        other = SpeculativeSampler(pair, SamplerSettings(gamma=4, seed=1), drafter=make_drafter(name, pair, **opts))
        other.reset(pair.encode("孔乙"))
        other.run_tokens(200)
        n_other, before = 500, len(other.tokens)
        t = time.perf_counter()
        for _ in range(n_other):
            other.step()
        dt = time.perf_counter() - t
        figures[f"{name}_steps_per_s_gamma4"] = n_other / dt
        figures[f"{name}_tokens_per_s_gamma4"] = (len(other.tokens) - before) / dt
    target = TargetSampler(pair, SamplerSettings(seed=1))
    target.reset(pair.encode("孔乙"))
    t = time.perf_counter()
    target.run_tokens(2000)
    figures["target_steps_per_s"] = 2000 / (time.perf_counter() - t)

    from models.tubes import run_tubes
    run_tubes(pair, rounds=2, draws=10)               # import scipy outside the timing
    figures["tubes_1e6_draws_s_200x5000"], _ = best_of(3, lambda: run_tubes(pair, rounds=200, draws=5000))
    figures["tubes_1e6_draws_s_20000x50"], _ = best_of(1, lambda: run_tubes(pair, rounds=20000, draws=50))
    figures["tubes_default_200x50_s"], _ = best_of(3, lambda: run_tubes(pair))

    from models import analytics as an
    figures["alpha_corpus_s"], _ = best_of(3, lambda: an.alpha_corpus(NGramPair.load()))
    figures["alpha_generated_200k_s"], run = best_of(1, lambda: an.alpha_generated(pair, chars=200_000))
    for k, v in figures.items():
        unit = "" if "per_s" in k else " s"
        print(f"{k:<36} {v:,.4f}{unit}" if v < 100 else f"{k:<36} {v:,.0f}{unit}")
    print(json.dumps({k: round(v, 6) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
