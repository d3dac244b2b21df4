"""This computer's roofline, measured: how fast it reads the weights, how fast it multiplies, what a pass costs
besides its matrices, and what these predict for checking several tokens at once.

    read rate      bytes a second a sum over a buffer the size of the model's streamed bytes reaches (the
                   weights live where a buffer that size lives: the caches for a small model, memory for a big one)
    arithmetic     operations a second the model's own several-row products reach at its shapes, with many rows
                   (2·N·K·rows per product, the kernel the pass uses)
    ridge point    arithmetic / read rate, operations per byte: below it a pass waits on reading, above it on
                   arithmetic (an H100 in bf16: 295)
    fixed cost     what a pass of one position costs beyond its matrices (dispatch, attention, norms): the
                   measured pass minus the matrices' bytes / read rate + operations / arithmetic

A pass of k positions is then predicted as fixed + Σ over matrices (bytes / read rate + k · operations /
arithmetic): a CPU's cores read and multiply in turn (a GPU overlaps the two, and its pass is the larger), so
checking k tokens costs the arithmetic of k − 1 more, cheap while k stays under the ridge point's lanes, and the
fixed cost is shared.
With α, the draft's own prediction (c) and these, the speed-up (1 − α^(γ+1)) / ((1 − α)(γc + v(γ+1))) at each γ.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import torch

from models import analytics
from models.llm.kernels import PackedLinear

ARITH_ROWS = 64            # rows for the arithmetic rate: enough that every kernel is bound by its arithmetic


@dataclass
class Roofline:
    read_Bps: float                    # bytes/s at the model's working set
    flops: float                       # operations/s of the model's several-row products
    fixed_s: float                     # a one-position pass beyond its matrices
    pass_1_s: float                    # measured one-position pass
    weight_bytes: int                  # bytes the matrices stream a pass
    matrix_ops: float                  # operations of a one-position pass's matrices (2 per weight)
    matrices: list = field(default_factory=list)    # (bytes, ops per row) of each product
    method: str = ""

    @property
    def ridge(self) -> float:
        """Operations per byte where reading and arithmetic take as long."""
        return self.flops / self.read_Bps

    @property
    def lanes_to_saturate(self) -> float:
        """Positions a pass computes before its arithmetic outlasts its reading (this model's bytes per weight)."""
        return self.ridge * self.weight_bytes / max(self.matrix_ops, 1.0)

    def predict_pass(self, k: int) -> float:
        """Seconds of a pass of k positions: on a CPU the same cores read a matrix and multiply by it, one after
        the other (a GPU overlaps them: its roofline is the larger of the two), so each product costs its bytes /
        read rate plus k · its operations / arithmetic."""
        return self.fixed_s + sum(b / self.read_Bps + k * ops / self.flops for b, ops in self.matrices)

    def verify_ratio(self, k: int) -> float:
        return self.predict_pass(k) / self.predict_pass(1)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("matrices")
        return d | {"ridge_ops_per_byte": self.ridge, "lanes_to_saturate": self.lanes_to_saturate,
                    "predicted_pass_ms": {str(k): self.predict_pass(k) * 1e3 for k in (1, 2, 3, 5, 9, 13)}}


def read_rate(nbytes: int, reps: int = 5) -> float:
    """Bytes a second of a sum over a buffer of nbytes (at least 1 MiB), best of reps after one warm pass."""
    n = max(nbytes, 1 << 20) // 4
    x = torch.ones(n)
    x.sum()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        x.sum()
        best = min(best, time.perf_counter() - t0)
    return n * 4 / best


def _products(model) -> list[PackedLinear]:
    mods = []
    for layer in model.layers:
        mods += [layer.attention.wqkv, layer.attention.wo, layer.feed_forward.w13, layer.feed_forward.w2]
    return mods + [model.output]


@torch.inference_mode()
def arithmetic_rate(model, rows: int = ARITH_ROWS, budget_s: float = 0.4) -> float:
    """Operations a second of the model's several-row kernels at `rows` rows, over each distinct shape once
    (weighted by how many matrices have it)."""
    seen: dict[tuple, list] = {}
    for m in _products(model):
        if isinstance(m, PackedLinear):
            seen.setdefault((m.out_features, m.in_features), []).append(m)
    ops = secs = 0.0
    for (N, K), ms in seen.items():
        x = torch.randn(rows, K)
        k = ms[0].many
        k(x)
        t0, n = time.perf_counter(), 0
        while n < 3 or time.perf_counter() - t0 < budget_s / len(seen):
            k(x)
            n += 1
        per = (time.perf_counter() - t0) / n
        ops += 2.0 * N * K * rows * len(ms)
        secs += per * len(ms)
    return ops / secs if secs else float("nan")


def measure(model, pass_1_s: float) -> Roofline:
    """The roofline of this computer for this model, with the fixed cost inferred from its measured
    one-position pass (seconds, as the model runs: eagerly or as one graph)."""
    mats = []
    for m in _products(model):
        if isinstance(m, PackedLinear):
            mats.append((m.nbytes, 2.0 * m.out_features * m.in_features))
        else:
            w = m.weight
            mats.append((w.numel() * w.element_size(), 2.0 * w.numel()))
    weight_bytes = int(sum(b for b, _ in mats))
    bw = read_rate(weight_bytes)
    flops = arithmetic_rate(model)
    roof = Roofline(bw, flops, 0.0, pass_1_s, weight_bytes, sum(o for _, o in mats), mats)
    roof.fixed_s = max(0.0, pass_1_s - roof.predict_pass(1))
    roof.method = (f"read rate: a sum over {weight_bytes / 1e6:.1f} MB (the matrices' bytes), best of 5; arithmetic: "
                   f"the several-row kernel of each shape at {ARITH_ROWS} rows, 2·N·K operations a row; fixed cost: the "
                   "measured one-position pass minus its matrices' bytes / read rate + operations / arithmetic; a pass "
                   "of k positions predicted as the fixed cost + Σ (bytes / read rate + k · operations / arithmetic): "
                   "a CPU's cores read and multiply in turn")
    return roof


def predicted_speedups(target: Roofline, alpha: float, c: float, gammas=range(1, 13)) -> dict[int, float]:
    """The speed-up at each γ from this computer's roofline: tokens per pass / (γc + v(γ+1))."""
    return {g: analytics.speedup(alpha, g, c, target.verify_ratio(g + 1)) for g in gammas}
