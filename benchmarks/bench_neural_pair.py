"""The shipped 《呐喊》 neural pair on this CPU: draft and target ms per pass, c, tokens per pass, plain vs
speculative tokens/s and the speed-up, each beside the memory roofline's value for the same shapes
(models.llm_bench.measure_llama_pair, what `spectable bench --pair neural` prints).

    .venv/bin/python benchmarks/bench_neural_pair.py [--threads 1,2] [--temperatures 1,0] [--gamma 4] [--tokens 128]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from models.llm_bench import measure_llama_pair  # noqa: E402
from models.llm_pair import LlamaPair  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--temperatures", default="1,0")
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--prompt", default="孔乙己")
    a = ap.parse_args()
    pair = LlamaPair.shipped()
    ids = pair.encode(a.prompt)
    print(f"{'threads':>7} {'T':>3} {'target ms':>10} {'paper':>7} {'draft ms':>9} {'paper':>7} {'c':>6} {'paper':>6} "
          f"{'v(γ+1)':>7} {'α':>6} {'tok/pass':>8} {'plain/s':>8} {'spec/s':>8} {'speed-up':>8} {'paper':>6} "
          f"{'costs':>6} {'load':>5}")
    for th in [int(x) for x in a.threads.split(",")]:
        torch.set_num_threads(th)
        for temp in [float(x) for x in a.temperatures.split(",")]:
            r = measure_llama_pair(pair, ids, gamma=a.gamma, tokens=a.tokens, temperature=temp, reps=a.reps)
            p = r["on_paper"]
            print(f"{th:>7} {temp:>3g} {r['target_ms']:>10.2f} {p['target_ms']:>7.3f} {r['draft_ms']:>9.2f} "
                  f"{p['draft_ms']:>7.3f} {r['c']:>6.3f} {p['c']:>6.3f} {r['verify_ratio']:>7.2f} {r['alpha']:>6.3f} "
                  f"{r['tokens_per_pass']:>8.2f} {r['plain_tokens_per_s']:>8.1f} {r['speculative_tokens_per_s']:>8.1f} "
                  f"{r['speedup']:>7.2f}× {p['speedup']:>5.2f}× {p['speedup_from_measured_costs']:>5.2f}× "
                  f"{r['device'].get('load_average_1min', float('nan')):>5.1f}", flush=True)
    print(f"method: {r['method']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
