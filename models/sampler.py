"""The samplers: speculative decoding on the n-gram pair (Leviathan et al., Algorithm 1) and the target alone.

Both draw every random number from one numpy Generator seeded at reset(), a fixed number per step
(speculative: γ uniforms for the guesses, γ for the tests, 1 for the final token; target alone: 1),
so the same (seed, settings, prefix) replays the same run. The rule itself is models.acceptance.verify.
Temperature, top-k and top-p shape both models' rows before anything is drawn: q in a trace is exactly
the distribution its guess came from, p exactly the one the output follows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from corpus.errors import InputError
from models.acceptance import sample_index, verify
from models.trace import StepTrace

MAX_GAMMA = 64


@dataclass
class SamplerSettings:
    """γ guesses per pass; shaping (temperature, top-k, top-p); seed; lenience (1 = exact, < 1 = the paper's
    lenient variant, not exact). Invalid values raise InputError at construction and again at every
    sampler reset()/step() (the fields may be changed in place, e.g. by a slider)."""

    gamma: int = 4
    temperature: float = 1.0
    top_k: int = 0          # 0 = off
    top_p: float = 1.0      # 1 = off
    seed: int = 0
    lenience: float = 1.0

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, (int, np.integer)):
            raise InputError(f"gamma must be a whole number, got {self.gamma!r}")
        if not 1 <= self.gamma <= MAX_GAMMA:
            raise InputError(f"gamma must be between 1 and {MAX_GAMMA}, got {self.gamma}")
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)) \
                or self.temperature < 0:
            raise InputError(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if not isinstance(self.top_k, (int, np.integer)) or self.top_k < 0:
            raise InputError(f"top-k must be a whole number >= 0 (0 = off), got {self.top_k!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise InputError(f"top-p must be in (0, 1] (1 = off), got {self.top_p!r}")
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise InputError(f"seed must be a whole number >= 0, got {self.seed!r}")
        if not (isinstance(self.lenience, (int, float)) and 0 < self.lenience <= 1):
            raise InputError(f"lenience must be in (0, 1] (1 = exact), got {self.lenience!r}")

    @property
    def exact(self) -> bool:
        return self.lenience == 1.0

    @property
    def shapes_rows(self) -> bool:
        return self.temperature != 1.0 or self.top_k > 0 or self.top_p < 1.0


def shape_row(row: np.ndarray, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> np.ndarray:
    """Apply temperature, then top-k, then top-p to a probability row; returns a new normalised row.

    temperature 0 is greedy: one-hot at the most likely token (the lowest id among ties).
    temperature t > 0: row^(1/t), computed as (row / max)^(1/t) so nothing overflows.
    top-k keeps the k most likely tokens; top-p keeps the smallest most-likely set with mass >= top_p
    (ties broken by lower id, so the result is deterministic).
    """
    row = np.asarray(row, dtype=np.float64)
    if temperature == 0:
        out = np.zeros_like(row)
        out[int(np.argmax(row))] = 1.0
        return out
    if temperature != 1.0:
        out = np.power(row / row.max(), 1.0 / temperature)
    else:
        out = row.copy()
    if top_k > 0 or top_p < 1.0:
        order = np.argsort(-out, kind="stable")
        keep = len(out)
        if top_k > 0:
            keep = min(keep, int(top_k))
        if top_p < 1.0:
            mass = np.cumsum(out[order[:keep]])
            keep = min(keep, int(np.searchsorted(mass, top_p * out.sum() * (1 - 1e-12), side="left")) + 1)
        mask = np.zeros(len(out), dtype=bool)
        mask[order[:keep]] = True
        out[~mask] = 0.0
    return out / out.sum()


class _Base:
    def __init__(self, pair, settings: SamplerSettings | None = None):
        self.pair = pair
        self.settings = settings or SamplerSettings()
        self.reset([])

    def reset(self, prefix_ids=()) -> None:
        """Start again from a prefix with a freshly seeded generator: the same run replays exactly."""
        self.settings.validate()
        ids = [int(i) for i in prefix_ids]
        if any(not 0 <= i < self.pair.V for i in ids):
            raise InputError("prefix holds token ids outside the vocabulary")
        self.tokens: list[int] = ids
        self.prefix_len = len(ids)
        self.rng = np.random.default_rng(self.settings.seed)
        self.step_index = 0

    def _q(self, ctx):
        row, backed = self.pair.draft_row(ctx)
        s = self.settings
        return (shape_row(row, s.temperature, s.top_k, s.top_p) if s.shapes_rows else row), backed

    def _p(self, ctx):
        row, backed = self.pair.target_row(ctx)
        s = self.settings
        return (shape_row(row, s.temperature, s.top_k, s.top_p) if s.shapes_rows else row), backed

    @property
    def written(self) -> list[int]:
        """Tokens written since reset (the prefix excluded)."""
        return self.tokens[self.prefix_len:]

    def run_tokens(self, n: int) -> list[StepTrace]:
        """Run whole steps until at least n tokens have been written by this call (the last pass may write
        up to γ more: a pass is never cut)."""
        if n < 0:
            raise InputError("number of tokens must be >= 0")
        start = len(self.tokens)
        traces = []
        while len(self.tokens) - start < n:
            traces.append(self.step())
        return traces


class SpeculativeSampler(_Base):
    """γ guesses from q (small drum), one target pass computing p at γ+1 positions (big drum), the exact rule."""

    def step(self) -> StepTrace:
        return self._advance(record=True)

    def _advance(self, record: bool):
        """One pass. record=False skips building the trace (long analytics runs) and returns the Verdicts."""
        s = self.settings
        s.validate()
        gamma = s.gamma
        ctx = self.tokens
        tail = ctx[-2:]                              # the models see at most two tokens back
        u = self.rng.random(2 * gamma + 1)           # fixed draw count per step: replayable
        u_guess, r, u_final = u[:gamma], u[gamma:2 * gamma], float(u[-1])
        V = self.pair.V
        guesses: list[int] = []
        q_rows = np.empty((gamma, V))
        p_rows = np.empty((gamma + 1, V))
        draft_bo, target_bo = [], []
        for i in range(gamma):
            # The small drum turns: guess i is drawn from exactly the row stored in the trace.
            q, bo = self._q(tail + guesses)
            q_rows[i] = q
            draft_bo.append(bo)
            guesses.append(sample_index(q, u_guess[i]))
        for i in range(gamma + 1):
            # One turn of the big drum, γ+1 lanes lit: p after the prefix and after each guess.
            p, bo = self._p(tail + guesses[:i])
            p_rows[i] = p
            target_bo.append(bo)
        v = verify(guesses, q_rows, p_rows, r, u_final, lenience=s.lenience)
        written = guesses[:v.n_accepted] + [v.final_token]
        trace = None
        if record:
            trace = StepTrace(
                step_index=self.step_index, context=list(ctx), gamma=gamma, guesses=guesses,
                q_rows=q_rows, p_rows=p_rows, ratios=[float(x) for x in v.ratios], r=[float(x) for x in r],
                tested=min(v.n_accepted + 1, gamma), accepted=[bool(a) for a in v.accepted],
                n_accepted=v.n_accepted, final_token=v.final_token, final_kind=v.final_kind,
                final_row=v.final_row, residual_fallback=v.residual_fallback, tokens_written=written,
                draft_backed_off=draft_bo, target_backed_off=target_bo, lanes_lit=gamma + 1,
                exact=s.exact, extra={"u_guess": [float(x) for x in u_guess], "u_final": u_final,
                                      "sampler": "speculative"})
        self.tokens.extend(written)
        self.step_index += 1
        return trace if record else v


class TargetSampler(_Base):
    """The big drum alone: one pass, one token drawn from p (the left test tube)."""

    def step(self) -> StepTrace:
        self.settings.validate()
        ctx = self.tokens
        u_final = float(self.rng.random())
        p, bo = self._p(ctx[-2:])
        V = self.pair.V
        # verify with no guesses is exactly "draw the bonus token from p": the same code path.
        v = verify(np.zeros(0, dtype=np.int64), np.empty((0, V)), p[None, :], np.zeros(0), u_final)
        trace = StepTrace(
            step_index=self.step_index, context=list(ctx), gamma=0, guesses=[], q_rows=np.empty((0, V)),
            p_rows=np.array(p, dtype=np.float64)[None, :], ratios=[], r=[], tested=0, accepted=[],
            n_accepted=0, final_token=v.final_token, final_kind=v.final_kind, final_row=v.final_row,
            residual_fallback=False, tokens_written=[v.final_token], draft_backed_off=[],
            target_backed_off=[bo], lanes_lit=1, exact=True,
            extra={"u_final": u_final, "sampler": "target"})
        self.tokens.append(v.final_token)
        self.step_index += 1
        return trace
