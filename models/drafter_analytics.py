"""What each drafter buys and what it costs: tokens per pass counted from real runs, lanes per pass (tokens the
target computes at once), and the speed-up that gives under the hardware model (models.hardware's roofline).

    lanes per pass   chain, heads: γ + 1;  lookup: copied guesses + 1 (1 when nothing matched);  tree: nodes + 1
    pass time        max(weights + KV read, arithmetic at that many lanes)                 (models.hardware.pass_time)
                     + draft runs × c × one target step    (chain: γ runs; a tree from chain: one run per depth)
                     heads: their own weights read and their arithmetic inside the same pass; lookup: nothing
    speedup_model    tokens per pass × one target step / pass time        (the target alone writes 1 per step)

With lanes well under the device's ops-per-byte the pass costs one read of the weights, so a chain's speed-up is
the formula's (1 − α^(γ+1))/((1 − α)(γc + 1)) with the counted tokens per pass; a wide tree lights hundreds of
lanes and becomes arithmetic-bound.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from corpus.errors import InputError


@dataclass
class DrafterRun:
    """A seeded run of one drafter, counted pass by pass."""

    drafter: str
    label: str
    tokens: int                  # tokens written
    passes: int                  # target passes
    accepted: int                # candidates kept
    tested: int                  # candidates checked (a tree checks several per position)
    positions: int               # positions checked (a tree: once per depth its walk reached)
    filled: int                  # positions filled by a kept candidate
    lanes: int                   # lanes lit in all passes
    proposing_passes: int        # passes with at least one guess (lookup: the text had a match)
    gamma: int
    seed: int
    prompts: int = 1
    method: str = "sampler"
    extra: dict = field(default_factory=dict)

    @property
    def alpha(self) -> float:
        """Kept / checked candidates (for a chain: α)."""
        return self.accepted / self.tested if self.tested else float("nan")

    @property
    def alpha_per_position(self) -> float:
        """Chance a checked position is filled from the proposal (a chain: α; a tree: any of its candidates)."""
        return self.filled / self.positions if self.positions else float("nan")

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.passes if self.passes else float("nan")

    @property
    def lanes_per_pass(self) -> float:
        return self.lanes / self.passes if self.passes else float("nan")

    @property
    def proposing_share(self) -> float:
        return self.proposing_passes / self.passes if self.passes else float("nan")


def count_traces(traces, drafter_name: str, label: str, gamma: int, seed: int, prompts: int = 1) -> DrafterRun:
    """Totals over StepTraces of any drafter."""
    acc = tested = positions = filled = lanes = proposing = tokens = 0
    for t in traces:
        acc += t.n_accepted
        tested += len(t.tree.checks) if t.tree is not None else t.tested
        positions += t.tested
        filled += t.n_accepted
        lanes += t.lanes_lit
        proposing += bool(t.guesses)
        tokens += len(t.tokens_written)
    return DrafterRun(drafter_name, label, tokens, len(traces), acc, tested, positions, filled, lanes, proposing,
                      gamma, seed, prompts)


def drafter_generated(pair, settings, drafter, chars: int = 20_000, prefix: str = "\n", label: str | None = None
                      ) -> DrafterRun:
    """Run the sampler with `drafter` for about `chars` tokens from `prefix` (seeded by settings.seed)."""
    from models.sampler import SpeculativeSampler
    if not isinstance(chars, (int, np.integer)) or chars < 1 or chars > 10_000_000:
        raise InputError(f"chars must be between 1 and 10000000, got {chars!r}")
    sampler = SpeculativeSampler(pair, settings, drafter=drafter)
    sampler.reset(pair.encode(prefix))
    traces = sampler.run_tokens(chars)
    return count_traces(traces, drafter.name, label or drafter.name, settings.gamma, settings.seed)


def speedup_model(tokens_per_pass: float, lanes_per_pass: float, cost, device="h100-sxm", model="llama-3.1-8b",
                  context: int = 0, c: float = 0.1) -> dict:
    """The speed-up over the target alone under the roofline (module docstring), with the pieces it is made of.
    cost: a models.drafters.DraftCost (draft runs per pass, heads per pass)."""
    from models.hardware import get_model, pass_time, roofline
    if not (c >= 0 and np.isfinite(c)):
        raise InputError(f"c must be a finite number >= 0, got {c}")
    if not (np.isfinite(tokens_per_pass) and np.isfinite(lanes_per_pass)):
        raise InputError("tokens and lanes per pass must be finite (no passes were run)")
    m = get_model(model)
    step_ms = roofline(device, model, 1, context)["ms_per_step"]
    head_params = cost.heads * m.medusa_head_params
    # Each head runs once a pass, on the hidden state of the last position kept: its weights are read and used once.
    target = pass_time(device, model, lanes_per_pass, context, extra_params=head_params, extra_ops=2.0 * head_params)
    draft_ms = cost.draft_runs * c * step_ms
    total = target["ms"] + draft_ms
    free = target["ms"]
    return {"speedup_model": tokens_per_pass * step_ms / total,
            "speedup_model_c0": tokens_per_pass * step_ms / free,
            "target_step_ms": step_ms, "pass_ms": total, "target_pass_ms": target["ms"],
            "read_ms": target["read_ms"], "arithmetic_ms": target["arithmetic_ms"], "bound": target["bound"],
            "draft_ms": draft_ms, "draft_runs_per_pass": cost.draft_runs, "heads_per_pass": cost.heads,
            "head_params": head_params, "device": device, "model": model, "context": context, "c": c,
            "cost_note": cost.note}


def default_specs(gamma: int, tree_widths=(2, 3)) -> list[tuple[str, str, dict]]:
    """The drafters compared by default: (label, drafter name, make_drafter options)."""
    specs = [("chain", "chain", {}), ("lookup", "lookup", {}), ("heads", "heads", {})]
    for w in tree_widths:
        specs.append((f"tree {w}×{gamma} (chain)", "tree", {"tree_width": w}))
    specs.append((f"tree 2×{gamma} (heads)", "tree", {"tree_width": 2, "tree_from": "heads"}))
    return specs


def compare_drafters(pair, settings, prompts, tokens_per_prompt: int = 400, specs=None, device="h100-sxm",
                     model="llama-3.1-8b", context: int = 0, c: float = 0.1) -> list[dict]:
    """Every drafter on the same prompts, same seed and settings: tokens per pass against lanes per pass (what each
    buys and what it costs), with α and the roofline speed-up. One dict per drafter (plain numbers, for plots)."""
    from models.drafters import make_drafter
    from models.sampler import SpeculativeSampler
    if not prompts:
        raise InputError("give at least one prompt")
    if not isinstance(tokens_per_prompt, (int, np.integer)) or not 1 <= tokens_per_prompt <= 1_000_000:
        raise InputError(f"tokens per prompt must be 1..1000000, got {tokens_per_prompt!r}")
    ids = [pair.encode(pr) for pr in prompts]
    out = []
    for label, name, opts in (specs or default_specs(settings.gamma)):
        drafter = make_drafter(name, pair, **opts)
        sampler = SpeculativeSampler(pair, settings, drafter=drafter)
        traces = []
        for start in ids:
            sampler.reset(start)
            traces += sampler.run_tokens(tokens_per_prompt)
        run = count_traces(traces, name, label, settings.gamma, settings.seed, len(ids))
        model_fig = speedup_model(run.tokens_per_pass, run.lanes_per_pass, drafter.cost(settings.gamma), device,
                                  model, context, c)
        out.append({"label": label, "drafter": name, "options": dict(opts), "tokens_per_pass": run.tokens_per_pass,
                    "lanes_per_pass": run.lanes_per_pass, "alpha": run.alpha,
                    "alpha_per_position": run.alpha_per_position, "passes": run.passes, "tokens": run.tokens,
                    "speedup_model": model_fig["speedup_model"], "bound": model_fig["bound"]})
    return out
