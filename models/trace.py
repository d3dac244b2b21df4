"""StepTrace: the plain-data record of one speculative step, everything needed to animate and explain it.

The sampler fills it; the scene's timeline, the step-through panel, the CSV log and the CLI read it.
It holds no references to models or generators.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class StepTrace:
    step_index: int                 # 0-based index of this target pass in the run
    context: list[int]              # token ids before the step (the whole text so far)
    gamma: int                      # γ guesses made
    guesses: list[int]              # (γ,) draft guesses, in order
    q_rows: np.ndarray              # (γ, V) the draft distributions each guess was drawn from (after temperature/top-k/top-p)
    p_rows: np.ndarray              # (γ+1, V) target distributions at the γ+1 positions (same transforms)
    ratios: list[float]             # (γ,) p_i(x_i) / q_i(x_i)
    r: list[float]                  # (γ,) the uniforms drawn for the tests (untested ones are still drawn, for replay)
    tested: int                     # how many tests were actually run: n_accepted + 1, capped at γ
    accepted: list[bool]            # (γ,) verdict per guess; False from the first rejection on
    n_accepted: int                 # guesses kept
    final_token: int                # replacement or bonus token
    final_kind: str                 # "replacement" | "bonus"
    final_row: np.ndarray           # (V,) normalised residual (replacement) or p_{γ+1} (bonus) it was drawn from
    residual_fallback: bool         # the residual summed to zero in floating point; drew from p (see acceptance.py)
    tokens_written: list[int]       # accepted guesses + final token
    draft_backed_off: list[bool]    # (γ,) bigram context unseen: q fell back to the unigram floor
    target_backed_off: list[bool]   # (γ+1,) trigram context unseen: p fell back wholly to q's bigram
    lanes_lit: int                  # tokens computed in the target pass = γ + 1
    exact: bool = True              # False when lenience < 1 (not the exact rule)
    extra: dict = field(default_factory=dict)

    @property
    def vocab_size(self) -> int:
        return int(self.p_rows.shape[1])
