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

import math
from dataclasses import dataclass

import numpy as np

from corpus.errors import InputError

MAX_GAMMA = 64          # the most guesses a pass may check: every γ range in the program reads this one


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


def check_guesses(guesses, q_rows: np.ndarray, row_of=None) -> np.ndarray:
    """The one guard every rule runs first: each guess must be a token id in [0, V) that its own row could have
    drawn (q(x) > 0): row i of q_rows, or row row_of[i] (a tree's nodes share rows). Returns q(x_i) per guess.
    A guess outside the vocabulary or with q(x) = 0 means the proposal and its row disagree; the ratio p/q would
    be meaningless, so refuse it with an InputError (the text verify_on_device gives for the same guesses)."""
    V = q_rows.shape[1]
    if isinstance(guesses, list) and all(type(x) is int for x in guesses):
        bad = next((i for i, x in enumerate(guesses) if not 0 <= x < V), None)  # a sampler's own list: cheap
    else:
        guesses = np.asarray(guesses)
        if guesses.ndim != 1 or (guesses.size and guesses.dtype.kind not in "iu"):
            raise InputError(SHAPE_MESSAGES["guesses"])      # before any cast: 2.5 is never truncated to 2
        outside = (guesses < 0) | (guesses >= V)
        bad = int(np.argmax(outside)) if outside.any() else None   # -1 is refused, never wrapped to V - 1
    if bad is not None:
        raise InputError(violation_message(1, bad, guesses, V))
    qx = q_rows[np.arange(len(guesses)) if row_of is None else row_of, np.asarray(guesses, dtype=np.int64)]
    zero = next((i for i, x in enumerate(qx.tolist()) if not x > 0), None)      # NaN is not > 0 either
    if zero is not None:
        raise InputError(violation_message(2, zero, guesses, V))
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


# ---- what the rule accepts: checked here and, operation for operation, on the device (verify_on_device) ----
ROW_SUM_TOLERANCE = 1e-3     # |Σ row - 1|: fp32 softmax rows are off by ~1e-6, a row that is no distribution by far more

# The data-dependent violations in the order both mirrors test them; the first one found is reported.
# check_guesses (the guard of every rule) is the first two.
VIOLATIONS = ("guess_range", "q_zero", "q_entries", "p_entries", "q_sum", "p_sum", "r_range", "u_range")
SHAPE_MESSAGES = {"guesses": "the rule needs the guesses as a list of whole-number token ids"}


def violation_message(kind: int, i: int, guesses, V: int) -> str:
    """The one line both mirrors raise for violation VIOLATIONS[kind - 1] at position i."""
    name = VIOLATIONS[kind - 1]
    if name == "guess_range":
        return f"guess {i + 1} is token {int(guesses[i])}, outside the vocabulary 0..{V - 1}"
    if name in ("q_entries", "p_entries"):
        return f"{name[0]} row {i + 1} has a NaN, infinite or negative entry"
    if name in ("q_sum", "p_sum"):
        return f"{name[0]} row {i + 1} does not sum to 1 (within {ROW_SUM_TOLERANCE:g})"
    if name == "q_zero":
        return (f"guess {i + 1} (token {int(guesses[i])}) has no draft probability (q is 0 or NaN there): "
                "it cannot have been drawn from its q row")
    if name == "r_range":
        return f"test uniform r[{i + 1}] is not in [0, 1]"
    return "the final uniform is not in [0, 1]"


def check_rule_shapes(gamma: int, guess_dims: int, guesses_integer: bool, rows_float: bool, q_shape, p_shape,
                      r_shape, u_dims: int, lenience) -> None:
    """The checks that need no data (shapes, kinds, lenience); the same call in both mirrors."""
    q_shape, p_shape, r_shape = tuple(q_shape), tuple(p_shape), tuple(r_shape)
    if guess_dims != 1 or not (guesses_integer or gamma == 0):
        raise InputError(SHAPE_MESSAGES["guesses"])
    if not rows_float:
        raise InputError("the rule's q and p rows must hold floating-point probabilities")
    if len(p_shape) != 2 or p_shape[0] != gamma + 1 or p_shape[1] < 1 or q_shape != (gamma, p_shape[1]):
        raise InputError(f"the rule needs q rows of shape (γ, V) and p rows of shape (γ+1, V) for γ = {gamma}, "
                         f"got {q_shape} and {p_shape}")
    if r_shape != (gamma,) or u_dims != 0:
        raise InputError(f"the rule needs γ = {gamma} test uniforms and one final uniform, got {r_shape} and "
                         f"{u_dims} dimensions")
    if isinstance(lenience, bool) or not isinstance(lenience, (int, float)) or not (
            math.isfinite(lenience) and 0 < lenience <= 1):
        raise InputError(f"lenience must be a number above 0 and at most 1, got {lenience!r}")


def _rows_are_distributions(rows: np.ndarray) -> bool:
    """Fast path: min >= 0 (False for a NaN) and every sum within the tolerance (False for +inf) imply that no
    row has a NaN, infinite or negative entry or a wrong sum, so the per-row flags below would all be False.
    Two reductions; the γ+1 sums are compared in Python (a numpy call each would cost more than the rows)."""
    if rows.size == 0:
        return True
    lo, hi = 1.0 - ROW_SUM_TOLERANCE, 1.0 + ROW_SUM_TOLERANCE
    return bool(rows.min() >= 0) and all(lo <= x <= hi for x in rows.sum(axis=1, dtype=np.float64).tolist())


def find_row_violation(q_rows: np.ndarray, p_rows: np.ndarray, r: np.ndarray, u_final: float) -> tuple[int, int]:
    """(kind, position) of the first violation after check_guesses' two, (0, 0) for a well-formed step."""
    if (0 <= u_final <= 1 and all(0 <= x <= 1 for x in r.tolist())
            and _rows_are_distributions(q_rows) and _rows_are_distributions(p_rows)):
        return 0, 0             # a sampler's every step: a few reductions (False for a NaN), not every flag
    flags = [
        ~(np.isfinite(q_rows) & (q_rows >= 0)).all(axis=1),
        ~(np.isfinite(p_rows) & (p_rows >= 0)).all(axis=1),
        np.abs(q_rows.sum(axis=1, dtype=np.float64) - 1.0) > ROW_SUM_TOLERANCE,
        np.abs(p_rows.sum(axis=1, dtype=np.float64) - 1.0) > ROW_SUM_TOLERANCE,
        ~((r >= 0) & (r <= 1)),
        np.atleast_1d(not 0 <= u_final <= 1),
    ]
    for kind, flag in enumerate(flags, start=3):
        if flag.any():
            return kind, int(np.argmax(flag))
    return 0, 0


def check_rule_inputs(guesses, q_rows, p_rows, r, u_final, lenience: float = 1.0):
    """Validate one step's inputs (InputError otherwise); returns (guesses int64, q_i(x_i), q_rows, p_rows, r, u)
    for the rule to trust."""
    g, q_rows, p_rows, r, u = (np.asarray(guesses), np.asarray(q_rows), np.asarray(p_rows), np.asarray(r),
                               np.asarray(u_final))
    check_rule_shapes(len(g) if g.ndim else -1, g.ndim, g.dtype.kind in "iu", q_rows.dtype.kind == "f" and
                      p_rows.dtype.kind == "f", q_rows.shape, p_rows.shape, r.shape, u.ndim, lenience)
    if r.dtype.kind not in "fiu" or u.dtype.kind not in "fiu":
        raise InputError("the rule's uniforms must be numbers")
    qx = check_guesses(guesses, q_rows)
    u = float(u)
    check_rows_and_uniforms(q_rows, p_rows, r, u, g)
    return g.astype(np.int64), qx, q_rows, p_rows, r, u


def check_rows_and_uniforms(q_rows: np.ndarray, p_rows: np.ndarray, r: np.ndarray, u_final: float | None,
                            guesses) -> None:
    """The checks every rule runs after check_guesses (this one and models.multi_candidate's): the q and p rows
    are distributions (finite, >= 0, summing to 1 within ROW_SUM_TOLERANCE), the uniforms in [0, 1]. The first
    violation is an InputError with the text verify_on_device gives. u_final None: a rule with no final draw
    (one position of the multi-candidate rule)."""
    kind, i = find_row_violation(q_rows, p_rows, r, 0.0 if u_final is None else float(u_final))
    if kind:
        raise InputError(violation_message(kind, i, guesses, p_rows.shape[1]))


def verify(guesses, q_rows: np.ndarray, p_rows: np.ndarray, r: np.ndarray, u_final: float,
           lenience: float = 1.0) -> Verdicts:
    """Check γ guesses against the target.

    guesses: (γ,) token ids drawn from q_rows[i]; q_rows: (γ, V); p_rows: (γ+1, V); r: (γ,) uniforms;
    u_final: one uniform for the replacement / bonus draw. lenience = 1 is the exact rule.
    Inputs that are no step (a guess outside [0, V) or with q = 0, rows that are not distributions, uniforms
    outside [0, 1]: 1 itself is harmless, it rejects every ratio below 1) are an InputError, the same one
    verify_on_device raises.
    """
    guesses, qx, q_rows, p_rows, r, u_final = check_rule_inputs(guesses, q_rows, p_rows, r, u_final, lenience)
    gamma = len(guesses)
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
