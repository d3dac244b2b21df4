"""The shipped 《呐喊》 neural pair on this CPU: plain vs speculative tokens/s from interleaved runs, the measured
speed-up beside the formula fed with the same runs' costs (c and the verify ratio timed inside the runs), and the
share of a pass outside the two models (models.llm.bench.measure_llama_pair, what `spectable bench --pair neural`
prints).

    .venv/bin/python -m benchmarks.bench_neural_pair [--threads 1,2] [--temperatures 1,0] [--gamma 4] [--tokens 128]
        [--drafters chain,lookup]
"""
from __future__ import annotations

import argparse


import torch

from models.llm.pair_bench import measure_llama_pair
from models.llm.pair import LlamaPair


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--temperatures", default="1,0")
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--prompt", default="孔乙己")
    ap.add_argument("--drafters", default="chain", help="chain, lookup or both (comma-separated)")
    a = ap.parse_args()
    pair = LlamaPair.shipped()
    ids = pair.encode(a.prompt)
    print(f"{'threads':>7} {'T':>3} {'drafter':>7} {'target ms':>9} {'draft ms':>8} {'c run':>6} {'v run':>6} {'α':>6} "
          f"{'tok/pass':>8} {'plain/s':>8} {'spec/s':>8} {'speed-up':>8} {'formula':>7} {'ratio':>6} {'rest':>5} "
          f"{'load':>5}")
    for th in [int(x) for x in a.threads.split(",")]:
        torch.set_num_threads(th)
        for temp in [float(x) for x in a.temperatures.split(",")]:
            for drafter in a.drafters.split(","):
                r = measure_llama_pair(pair, ids, gamma=a.gamma, tokens=a.tokens, temperature=temp, reps=a.reps,
                                       drafter=drafter)
                run = r["in_run"]
                print(f"{th:>7} {temp:>3g} {drafter:>7} {r['target_ms']:>9.2f} {r['draft_ms']:>8.2f} {run['c']:>6.3f} "
                      f"{run['verify_ratio']:>6.2f} {r['alpha']:>6.3f} {r['tokens_per_pass']:>8.2f} "
                      f"{r['plain_tokens_per_s']:>8.1f} {r['speculative_tokens_per_s']:>8.1f} {r['speedup']:>7.2f}× "
                      f"{run['speedup_formula']:>6.2f}× {run['measured_over_formula']:>6.2f} "
                      f"{100 * run['share_of_pass']['rest']:>4.0f}% "
                      f"{r['device'].get('load_average_1min', float('nan')):>5.1f}", flush=True)
    print(f"method: {r['method']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
