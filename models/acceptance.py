"""The acceptance rule of speculative sampling (Leviathan et al. 2023, Algorithm 1): the one exact rule.

Every sampler in the project (the n-gram pair, the test tubes, the torch backend) calls or mirrors
this module; tests prove the torch mirror gives identical verdicts and tokens on identical inputs.

Randomness is injected as uniforms so the rule itself is a pure function:
  accept guess i  iff  r_i < p_i(x_i) / q_i(x_i)   (r_i ~ U[0, 1): the paper's r <= p/q, exactly)
  first rejection at i: emit a token from norm(max(0, p_i - q_i))   (the residual)
  all γ accepted:       emit a bonus token from p_{γ+1}

A deterministic proposal (prompt lookup, greedy heads) is the same rule with q one-hot at the guess x: keep x
with probability p(x); on rejection max(0, p − q) is p with x set to 0, renormalised. Several candidates at one
position (a guess tree) use the multi-round generalisation in models.multi_candidate, built on the helpers here.
typical_threshold() is Medusa's typical acceptance, a rule that is NOT exact, kept here for contrast only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def sample_index(row: np.ndarray, u: float) -> int:
    """Inverse-CDF draw from an unnormalised non-negative row with one uniform u in [0, 1).

    side='right' picks the first index whose cumulative mass exceeds u·total, so a token with zero
    mass can never be chosen; u·total rounding up to the total falls back to the last positive entry.
    """
    cdf = np.cumsum(row, dtype=np.float64)
    total = cdf[-1]
    i = int(np.searchsorted(cdf, u * total, side="right"))
    if i >= len(row):
        i = int(np.flatnonzero(row > 0)[-1])
    return i


def check_guesses(guesses, q_rows: np.ndarray) -> np.ndarray:
    """The one guard every rule runs first: each guess must be a token id in [0, V) that its own row could have
    drawn (q(x) > 0). Returns q_i(x_i) per guess. A guess outside the vocabulary or with q(x) = 0 means the
    proposal and its row disagree; the ratio p/q would be meaningless, so refuse it with a ValueError."""
    V = q_rows.shape[1]
    if isinstance(guesses, list) and all(type(x) is int for x in guesses):
        ok = all(0 <= x < V for x in guesses)          # the samplers' own lists: checked in Python, cheaply
    else:
        guesses = np.asarray(guesses)
        ok = guesses.dtype.kind in "iu" and (guesses.size == 0 or (guesses.min() >= 0 and guesses.max() < V))
    if not ok:
        shown = guesses.tolist() if isinstance(guesses, np.ndarray) else list(guesses)
        raise ValueError(f"guess ids must be whole token ids in [0, {V}), got {shown}")
    qx = q_rows[np.arange(len(guesses)), guesses]
    if not (qx > 0).all():
        i = int(np.flatnonzero(~(qx > 0))[0])
        raise ValueError(f"guess {i} (token {int(guesses[i])}) has draft probability {float(qx[i])!r}: "
                         "it cannot have been drawn from its q row")
    return qx


def residual(p: np.ndarray, q: np.ndarray, lenience: float = 1.0) -> np.ndarray:
    """max(0, p - q), unnormalised: what the draft under-proposed.  (lenience < 1 scales q down; not exact.)"""
    return np.maximum(0.0, p - lenience * q)


@dataclass(frozen=True)
class Verdicts:
    """The outcome of checking γ guesses."""

    ratios: np.ndarray           # p_i(x_i) / q_i(x_i) for every guess i (γ,), also untested ones
    accepted: np.ndarray         # bool (γ,): True for guesses kept; False from the first rejection on
    n_accepted: int              # number of guesses kept (0..γ)
    final_token: int             # the replacement (n_accepted < γ) or the bonus token (n_accepted == γ)
    final_kind: str              # "replacement" | "bonus"
    final_row: np.ndarray        # normalised distribution the final token was drawn from (residual or p_{γ+1})
    residual_fallback: bool      # residual summed to 0 in floating point: drew from p instead (see below)

    @property
    def tokens_written(self) -> int:
        return self.n_accepted + 1


def verify(guesses, q_rows: np.ndarray, p_rows: np.ndarray, r: np.ndarray, u_final: float,
           lenience: float = 1.0) -> Verdicts:
    """Check γ guesses against the target.

    guesses: (γ,) token ids drawn from q_rows[i]; q_rows: (γ, V); p_rows: (γ+1, V); r: (γ,) uniforms;
    u_final: one uniform for the replacement / bonus draw. lenience = 1 is the exact rule.
    """
    gamma = len(guesses)
    if p_rows.shape[0] != gamma + 1 or q_rows.shape[0] != gamma:
        raise ValueError("need γ q rows and γ+1 p rows")
    qx = check_guesses(guesses, q_rows)          # before any cast: -1 or 2.5 is refused, never wrapped or truncated
    guesses = np.asarray(guesses, dtype=np.int64)
    px = p_rows[np.arange(gamma), guesses]
    ratios = px / qx
    # Strict "<": r is drawn from [0, 1), so P(r < ratio) = min(1, ratio) exactly; with "<=" a token with
    # p(x) = 0 would pass whenever r came out exactly 0.0 (probability 2^-53, but not zero).
    passes = np.asarray(r) < ratios / lenience
    # Checking stops at the first rejection; later guesses follow a wrong token and are discarded.
    n = int(np.argmin(passes)) if not passes.all() else gamma
    accepted = np.zeros(gamma, dtype=bool)
    accepted[:n] = True
    fallback = False
    if n < gamma:
        row = residual(p_rows[n], q_rows[n], lenience)
        total = row.sum()
        if not total > 0.0:
            # Σ max(0, p - q) == 0 in floating point means p <= q everywhere, so p == q up to rounding:
            # the rejection itself was a rounding artefact (exactly, p/q = 1 always passes). The exact
            # rule's residual is then undefined; p is the distribution exact arithmetic converges to.
            row, total, fallback = p_rows[n].astype(np.float64), float(p_rows[n].sum()), True
        kind = "replacement"
    else:
        row = p_rows[gamma].astype(np.float64)
        total = row.sum()
        kind = "bonus"
    token = sample_index(row, u_final)
    return Verdicts(ratios=ratios, accepted=accepted, n_accepted=n, final_token=token, final_kind=kind,
                    final_row=row / total, residual_fallback=fallback)


# ---- Medusa's typical acceptance: NOT exact (for the "break it" tube only) --------------------------
TYPICAL_EPSILON = 0.09   # Medusa's defaults (medusa_generate: posterior_threshold=0.09,
TYPICAL_DELTA = 0.3      # posterior_alpha=0.3 ≈ sqrt(threshold))


def typical_threshold(p: np.ndarray, epsilon: float = TYPICAL_EPSILON, delta: float = TYPICAL_DELTA) -> float:
    """Medusa's typical acceptance (Cai et al. 2024, §2.3.1): a candidate x is kept when
    p(x) > min(ε, δ·exp(−H(p))), H the entropy of p in nats. A flat p (high entropy) lowers the bar, a peaked p
    raises it to ε. It favours plausible tokens but is not exact: what is written no longer follows p (a kept
    guess is written with probability q(x), not min(p, q)(x), and nothing tops up what the draft under-proposes)."""
    if not (0 < epsilon <= 1 and 0 < delta and np.isfinite(delta)):
        raise ValueError(f"typical acceptance needs 0 < ε <= 1 and δ > 0, got ε={epsilon!r}, δ={delta!r}")
    nz = p[p > 0]
    entropy = float(-(nz * np.log(nz)).sum())
    return min(float(epsilon), float(delta) * float(np.exp(-entropy)))
