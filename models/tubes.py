"""The test-tube experiment: many next-token draws after one prefix, from the target alone (left tube) and
from speculative decoding (right tube), to show both follow the target's p; plus the wrong rules that do not.

Every draw is the first token a pass writes after the prefix (for γ >= 1 that token is always guess 1
or its replacement, so γ does not change the experiment). Vectorised: a million draws take well under
a second. The right tube mirrors models.acceptance.verify draw for draw (tests check it on identical
uniforms): a guess x ~ q, kept iff r < p(x)/q(x) (r ~ U[0, 1), as acceptance.verify), otherwise a replacement from norm(max(0, p - q)).

Rules for the right tube (the app's "break it" switches; every wrong rule biases what the tube counts):
  exact             the exact rule above. Cumulative counts converge to p.
  resample_from_p   a rejected guess is replaced by a draw from p instead of the residual. Tokens the draft
                    over-proposes come out too often: P(x) = min(p, q) + (1 - α)·p(x).
  exact_match_only  a guess is kept only if it is exactly the target's most likely token (greedy checking,
                    as in blockwise parallel decoding); other guesses are rejected and replaced from the
                    residual. The top token swells; tokens the draft over-proposes never appear.
  draft_only        the target never writes a token of its own (no replacement, no bonus): a rejected guess
                    is dropped and the draft guesses again until one passes. All beads are copper and the
                    tube counts min(p, q)/α: tokens the draft under-proposes are never topped up.
                    (Called 'no_bonus' before; that name is still accepted. Skipping only the bonus token is
                    NOT a wrong rule: the first token a pass writes is unchanged, and the text stays exactly p,
                    it just costs more passes — so it is no tube rule; tests/test_core_exact.py proves it.)
  typical           Medusa's typical acceptance (Cai et al. 2024): a guess is kept when p(x) > min(ε, δ·exp(−H(p)))
                    (models.acceptance.typical_threshold); otherwise the target writes its own token, drawn from p.
                    P(x) = q(x)·[p(x) > θ] + (1 − Σ_{p(y) > θ} q(y))·p(x): plausible tokens the draft likes swell.

The drafter (models.drafters) decides what is proposed at the prefix: chain (a guess from q), lookup (the token
copied from the prefix's latest earlier occurrence, q one-hot; none: a plain target step), heads (a guess from
head 2 at the features before the prefix's last token), tree (several candidates from chain or heads, the
multi-candidate rule of models.multi_candidate; exact and typical only). Whatever the drafter, the exact rule's
tube converges to p.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from corpus.errors import InputError
from models.acceptance import TYPICAL_DELTA, TYPICAL_EPSILON, residual, sample_index, typical_threshold
from models.drafters import ChainDrafter
from models.drafters.tree import draw_children

# The table's switches (scenes.tubes names each): the exact rule, the three ways to break it, and Medusa's typical
# acceptance, another method's rule that is not exact either.
RULES = ("exact", "resample_from_p", "exact_match_only", "draft_only", "typical")
ALL_RULES = RULES                      # what run_tubes accepts
TREE_RULES = ("exact", "typical")      # rules defined for several candidates at one position
LEGACY_RULES = {"no_bonus": "draft_only"}   # old name of draft_only (it never was about the bonus alone)
MAX_DRAWS_TOTAL = 5_000_000       # 4 uniforms a draw: 160 MB at the cap
MAX_ROUND_CELLS = 40_000_000      # rounds × V cells in a per-round table
# The test tubes' prefix (SCIENCE.md chapter 6), the lesson's running example: the tubes, the lab's first prompt,
# the overlap plot, the quiz and the handout, the CLI's default --prefix. Written here once.
DEFAULT_PREFIX = "慢慢"


def sample_indices(row: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Vectorised acceptance.sample_index: inverse-CDF draws from an unnormalised row, one per uniform."""
    cdf = np.cumsum(row, dtype=np.float64)
    idx = np.searchsorted(cdf, u * cdf[-1], side="right")
    over = idx >= len(row)
    if over.any():
        idx[over] = int(np.flatnonzero(row > 0)[-1])
    return idx


@dataclass
class TubesResult:
    """Plain data for the tubes. Per-round counts are stored over the tokens actually hit (`columns`);
    the properties give full-vocabulary arrays: (rounds, V) per round / cumulative, (V,) totals."""

    prefix: str
    rule: str
    rounds: int
    draws: int
    seed: int
    target_p: np.ndarray                 # (V,) p(x | prefix): the black line
    draft_q: np.ndarray                  # (V,) q(x | prefix)
    columns: np.ndarray                  # (C,) the token ids hit at least once in either tube, ascending
    left_round_c: np.ndarray             # (rounds, C) int: target alone, per round, over `columns`
    right_round_c: np.ndarray            # (rounds, C) int: speculative (with `rule`), per round
    right_accepted_round_c: np.ndarray   # (rounds, C) int: copper beads (accepted guesses) per round
    alpha: float                         # Σ min(p, q) at the prefix
    tv_left: float                       # total variation between the left tube's cumulative freq and p
    tv_right: float
    chi2_p_left: float                   # chi-square goodness-of-fit p-value of the cumulative counts vs p
    chi2_p_right: float
    tv_left_series: np.ndarray = field(default=None)    # (rounds,) TV of the cumulative counts after each round
    tv_right_series: np.ndarray = field(default=None)
    attempts: int = 0                    # draft_only: draft guesses made in all (several per bead)
    drafter: str = "chain"               # who proposed the right tube's guesses (models.drafters)
    width: int = 1                       # candidates per draw (a tree's first-position width)
    proposed: bool = True                # False: the drafter had nothing to propose (lookup without a match)
    typical_threshold: float | None = None   # rule typical: min(ε, δ·exp(−H(p))) at the prefix

    # Full-vocabulary views, (rounds, V) or (V,), built on first use from the compact columns and kept
    # (the scene reads them every frame). Treat them as read-only.
    def _full(self, compact: np.ndarray) -> np.ndarray:
        out = np.zeros(compact.shape[:-1] + (len(self.target_p),), dtype=np.int64)
        out[..., self.columns] = compact
        return out

    @cached_property
    def left_round(self) -> np.ndarray:
        return self._full(self.left_round_c)

    @cached_property
    def right_round(self) -> np.ndarray:
        return self._full(self.right_round_c)

    @cached_property
    def right_accepted_round(self) -> np.ndarray:
        """Copper beads per round and token."""
        return self._full(self.right_accepted_round_c)

    @cached_property
    def right_replaced_round(self) -> np.ndarray:
        """Red beads per round and token."""
        return self._full(self.right_round_c - self.right_accepted_round_c)

    @cached_property
    def left_cumulative(self) -> np.ndarray:
        return self._full(np.cumsum(self.left_round_c, axis=0))

    @cached_property
    def right_cumulative(self) -> np.ndarray:
        return self._full(np.cumsum(self.right_round_c, axis=0))

    @cached_property
    def left_counts(self) -> np.ndarray:
        return self._full(self.left_round_c.sum(axis=0))

    @cached_property
    def right_counts(self) -> np.ndarray:
        return self._full(self.right_round_c.sum(axis=0))

    @cached_property
    def right_accepted(self) -> np.ndarray:
        return self._full(self.right_accepted_round_c.sum(axis=0))

    @cached_property
    def right_replaced(self) -> np.ndarray:
        return self._full((self.right_round_c - self.right_accepted_round_c).sum(axis=0))

    def top_ids(self, n: int = 8) -> list[int]:
        """The n tokens with the largest p (ties by id): the tube's labelled columns."""
        return [int(i) for i in np.argsort(-self.target_p, kind="stable")[:n]]

    def to_json(self, pair, min_p: float = 1e-3) -> dict:
        """The CLI's --json object: token -> value maps over tokens with p >= min_p or any count."""
        shown = np.flatnonzero((self.target_p >= min_p) | (self.left_counts > 0) | (self.right_counts > 0))
        shown = shown[np.argsort(-self.target_p[shown], kind="stable")]
        m = lambda arr, cast: {pair.display(i): cast(arr[i]) for i in shown}  # noqa: E731
        return {"prefix": self.prefix, "rule": self.rule, "rounds": self.rounds, "draws": self.draws,
                "seed": self.seed, "alpha": self.alpha,
                "target_p": m(self.target_p, float), "draft_q": m(self.draft_q, float),
                "left_counts": m(self.left_counts, int), "right_counts": m(self.right_counts, int),
                "right_accepted": m(self.right_accepted, int), "right_replaced": m(self.right_replaced, int),
                "right_accepted_total": int(self.right_accepted.sum()),
                "right_replaced_total": int(self.right_replaced.sum()),
                "tv_left": self.tv_left, "tv_right": self.tv_right,
                "chi2_p_left": self.chi2_p_left, "chi2_p_right": self.chi2_p_right,
                "exact": self.rule == "exact", "drafter": self.drafter, "width": self.width,
                "proposed": self.proposed, "typical_threshold": self.typical_threshold}


def total_variation(counts: np.ndarray, p: np.ndarray) -> float:
    n = counts.sum()
    return float(0.5 * np.abs(counts / n - p).sum()) if n else 1.0


def tv_series(round_counts: np.ndarray, p: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
    """TV of the cumulative counts after each round. round_counts may hold only the columns `cols` that were
    ever hit; a column never hit contributes its whole p to the distance."""
    if cols is None:
        cols = np.arange(len(p))
    cum = np.cumsum(round_counts, axis=0, dtype=np.float64)
    never = p.sum() - p[cols].sum()
    return 0.5 * (np.abs(cum / cum.sum(axis=1, keepdims=True) - p[cols][None, :]).sum(axis=1) + never)


def tv_noise(p: np.ndarray, n: int, reps: int = 400, seed: int = 0) -> tuple[float, float, float]:
    """How far from p a perfect sampler's tube ends after n draws: (mean, 5th, 95th percentile) of the TV of n
    draws taken from p itself (a fixed seed: the same figures every time). Two exact tubes differ by this much
    by chance alone. Cached per (p, n): the tubes' p after their prefix is one row."""
    p = np.asarray(p, dtype=np.float64)
    return _tv_noise(p.tobytes(), len(p), int(n), int(reps), int(seed))


@lru_cache(maxsize=8)
def _tv_noise(p_bytes: bytes, size: int, n: int, reps: int, seed: int) -> tuple[float, float, float]:
    p = np.frombuffer(p_bytes, dtype=np.float64, count=size)
    p = p / p.sum()
    counts = np.random.default_rng(seed).multinomial(int(n), p, size=int(reps))
    tv = 0.5 * np.abs(counts / float(n) - p[None, :]).sum(axis=1)
    return float(tv.mean()), float(np.quantile(tv, 0.05)), float(np.quantile(tv, 0.95))


def chi2_pvalue(counts: np.ndarray, p: np.ndarray, min_expected: float = 5.0) -> float:
    """Chi-square goodness of fit of counts against p. Tokens expected fewer than min_expected times are pooled
    into one bin (the test's usual validity condition); a count where p = 0 is impossible under p: p-value 0."""
    from scipy.stats import chisquare  # lazy: scipy only for this statistic
    n = float(counts.sum())
    if n == 0:
        return 1.0
    if np.any(counts[p <= 0] > 0):
        return 0.0
    expected = p * n
    big = expected >= min_expected
    obs = list(counts[big].astype(np.float64))
    exp = list(expected[big])
    rest_obs, rest_exp = float(counts[~big].sum()), float(expected[~big].sum())
    if rest_exp > 0:
        obs.append(rest_obs)
        exp.append(rest_exp)
    if len(obs) < 2:
        return 1.0
    exp = np.asarray(exp)
    exp *= sum(obs) / exp.sum()          # chisquare wants equal totals; differences are rounding only
    return float(chisquare(obs, exp).pvalue)


def run_tubes(pair, prefix: str = DEFAULT_PREFIX, rounds: int = 200, draws: int = 50, seed: int = 1, rule: str = "exact",
              settings=None, drafter=None, typical_epsilon: float = TYPICAL_EPSILON,
              typical_delta: float = TYPICAL_DELTA) -> TubesResult:
    """Fill both tubes: rounds × draws next-token draws after `prefix`, from p alone and speculatively.
    settings (a SamplerSettings) shapes both rows (temperature, top-k, top-p) like the samplers do; drafter
    (models.drafters; default the chain) proposes the right tube's guesses."""
    from models.sampler import Rows  # lazy: not loaded at `spectable` start
    rule = LEGACY_RULES.get(rule, rule)
    if rule not in ALL_RULES:
        raise InputError(f"unknown rule {rule!r} (use one of: {', '.join(ALL_RULES)})")
    if rounds < 1 or draws < 1:
        raise InputError("rounds and draws must be >= 1")
    if rounds * draws > MAX_DRAWS_TOTAL:
        raise InputError(f"rounds × draws must be <= {MAX_DRAWS_TOTAL}")
    if rounds * pair.V > MAX_ROUND_CELLS:
        raise InputError(f"too many rounds for a vocabulary of {pair.V}: at most {MAX_ROUND_CELLS // pair.V} "
                         "(use more draws per round)")
    if seed < 0:
        raise InputError("seed must be >= 0")
    if settings is not None and not settings.exact:
        raise InputError("the test tubes run the exact rule (or a named wrong rule); lenience < 1 is not supported here")
    drafter = drafter or ChainDrafter()
    ids = pair.encode(prefix)
    rows = Rows(pair, settings)
    p = np.asarray(rows.target_row(ids)[0], dtype=np.float64)
    first = drafter.first_guess(rows, ids)
    q = first.row
    if first.width > 1 and rule not in TREE_RULES:
        raise InputError(f"rule {rule} is defined for one guess per position; with several candidates (a tree) "
                         f"use one of: {', '.join(TREE_RULES)}")
    thr = None
    if rule == "typical":
        try:
            thr = typical_threshold(p, typical_epsilon, typical_delta)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    if q is None and rule == "draft_only":
        raise InputError(f"rule draft_only cannot write anything here: the {drafter.name} drafter proposes nothing "
                         "after this prefix")
    if q is not None and rule == "draft_only" and not np.minimum(p, q).sum() > 0:
        # Guessing again until one passes would never end: no token is both proposed and kept.
        raise InputError("rule draft_only cannot write anything here: the draft and the target share no token "
                         "(Σ min(p, q) = 0, e.g. greedy rows with different top tokens)")
    V = pair.V
    n = rounds * draws
    rng = np.random.default_rng(seed)
    attempts = n
    if q is None:
        # Nothing to propose (lookup without an earlier occurrence): every pass is a plain target step.
        u = rng.random((2, n))
        left = sample_indices(p, u[0])
        right = sample_indices(p, u[1])
        accepted = np.zeros(n, dtype=bool)
        attempts = 0
        q_show = np.zeros(V)
    elif first.width == 1:
        q_show = q
        u = rng.random((4, n))       # left draw; guess; test r; replacement — fixed use, so runs replay
        left = sample_indices(p, u[0])
        right, accepted, attempts = _one_guess(p, q, u, rule, rng, thr)
    else:
        q_show = q
        u = rng.random((2 + 2 * first.width, n))     # left; final; then (guess, r) per candidate
        left = sample_indices(p, u[0])
        right, accepted = _candidates(p, q, u, first.width, first.sampling, rule, thr)
        attempts = n * first.width

    # Count per round over the columns actually hit (a few hundred of V), then place them in (rounds, V).
    cols = np.unique(np.concatenate((left, right)))
    col_of = np.zeros(V, dtype=np.int64)
    col_of[cols] = np.arange(len(cols))
    round_of = np.repeat(np.arange(rounds), draws)
    C = len(cols)

    def per_round(tokens, mask=None):
        keys = round_of * C + col_of[tokens]
        if mask is not None:
            keys = keys[mask]
        return np.bincount(keys, minlength=rounds * C).reshape(rounds, C)
    left_c = per_round(left)
    right_c = per_round(right)
    acc_c = per_round(right, accepted)
    lc = np.zeros(V, dtype=np.int64)
    rc = np.zeros(V, dtype=np.int64)
    lc[cols], rc[cols] = left_c.sum(axis=0), right_c.sum(axis=0)
    return TubesResult(prefix=prefix, rule=rule, rounds=rounds, draws=draws, seed=seed, target_p=p, draft_q=q_show,
                       columns=cols, left_round_c=left_c, right_round_c=right_c, right_accepted_round_c=acc_c,
                       alpha=float(np.minimum(p, q_show).sum()),
                       tv_left=total_variation(lc, p), tv_right=total_variation(rc, p),
                       chi2_p_left=chi2_pvalue(lc, p), chi2_p_right=chi2_pvalue(rc, p),
                       tv_left_series=tv_series(left_c, p, cols), tv_right_series=tv_series(right_c, p, cols),
                       attempts=attempts, drafter=drafter.name, width=first.width, proposed=q is not None,
                       typical_threshold=thr)


def _one_guess(p, q, u, rule, rng, thr):
    """The right tube with one guess x ~ q per draw (q one-hot for a copied guess): (tokens, kept, guesses made)."""
    n = u.shape[1]
    guess = sample_indices(q, u[1])
    ratio = p[guess] / q[guess]             # acceptance_ratio = p / q (q > 0: the guess came from q)
    attempts = n
    if rule == "exact":
        accepted = u[2] < ratio
        res = residual(p, q)
        # Σ max(0, p - q) == 0 only when p == q up to rounding; then nothing is rejected in exact arithmetic
        # and acceptance.verify falls back to p: do the same.
        fix = sample_indices(res if res.sum() > 0 else p, u[3])
    elif rule == "resample_from_p":
        accepted = u[2] < ratio
        fix = sample_indices(p, u[3])
    elif rule == "exact_match_only":
        top = int(np.argmax(p))
        accepted = guess == top
        res = residual(p, q)
        fix = sample_indices(res if res.sum() > 0 else p, u[3])
    elif rule == "typical":
        # Kept when plausible under p, whatever q says; otherwise the target writes its own token from p.
        accepted = p[guess] > thr
        fix = sample_indices(p, u[3])
    else:  # draft_only: guess again until one passes (rejection sampling: counts ∝ min(p, q))
        accepted = u[2] < ratio
        todo = np.flatnonzero(~accepted)
        while todo.size:
            g2 = sample_indices(q, rng.random(todo.size))
            ok = rng.random(todo.size) < p[g2] / q[g2]
            attempts += todo.size
            guess[todo[ok]] = g2[ok]
            todo = todo[~ok]
        accepted = np.ones(n, dtype=bool)
        fix = guess
    return np.where(accepted, guess, fix), accepted, attempts


def _candidates(p, q, u, width, sampling, rule, thr):
    """The right tube with `width` candidates per draw (a tree's first position): u[0] the left tube, u[1] the final
    draw, u[2 + 2j] / u[3 + 2j] candidate j's draw and test. i.i.d. candidates are vectorised (the residuals do not
    depend on which tokens were drawn); distinct ones run models.multi_candidate.verify_position draw by draw."""
    from models.multi_candidate import verify_position  # lazy: not loaded at `spectable` start
    n = u.shape[1]
    right = np.empty(n, dtype=np.int64)
    accepted = np.zeros(n, dtype=bool)
    if sampling == "iid":
        pending = np.ones(n, dtype=bool)
        target, last = p, None
        for j in range(width):
            g = sample_indices(q, u[2 + 2 * j])
            if rule == "typical":
                ok = pending & (p[g] > thr)
            else:
                # SpecInfer's round j: keep iff r < p_j(x)/q(x); then p_{j+1} = norm(max(0, p_j − q)).
                ok = pending & (u[3 + 2 * j] < target[g] / q[g])
                res = residual(target, q)
                total = res.sum()
                if not total > 0.0:
                    res, total = target, target.sum()      # as verify_position: p_j = q up to rounding
                last, target = res, res / total
            right[ok] = g[ok]
            accepted |= ok
            pending &= ~ok
        k = np.flatnonzero(pending)
        right[k] = sample_indices(p if rule == "typical" else last, u[1][k])
        return right, accepted
    for i in range(n):
        cands = draw_children(q, width, "distinct", u[2::2, i])
        toks = [c[0] for c in cands]
        if rule == "typical":
            kept = next((j for j, x in enumerate(toks) if p[x] > thr), None)
            right[i] = toks[kept] if kept is not None else sample_index(p, u[1, i])
        else:
            pv = verify_position(toks, np.array([c[1] for c in cands]), p, u[3::2, i])
            kept = pv.kept
            right[i] = toks[kept] if kept is not None else sample_index(pv.last_residual, u[1, i])
        accepted[i] = kept is not None
    return right, accepted
