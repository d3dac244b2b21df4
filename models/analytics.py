"""Analytics of the pair: acceptance rate α (over the corpus and over generated text), tokens per pass,
speedup, the best γ, and the extra arithmetic speculative decoding spends (Leviathan et al., §3-4); the pair's
own figures from one long run, cached per table (pair_facts), and what a short run counted (count_run).

    β(context)        = Σ_x min(p(x), q(x))  = 1 - TV(p, q): the chance one guess passes there
    tokens per pass   = (1 - α^(γ+1)) / (1 - α)
    speedup(α, γ, c)  = (1 - α^(γ+1)) / ((1 - α)(γ c + 1))
    extra arithmetic  = (1 - α)(γ c_hat + γ + 1) / (1 - α^(γ+1))       (× target arithmetic; c_hat = draft/target ops)

The long generated run uses the pair's sparse structure (below) so 200,000 tokens take a fraction of a second.
"""
from __future__ import annotations

import math
import threading
import weakref
from dataclasses import dataclass, replace

import numpy as np

from corpus.errors import InputError
from models.trace import GeneratedRun  # noqa: F401 - a long run's counts (re-exported: callers read it here)
from models.sampler import SamplerSettings, SpeculativeSampler, shape_row


# ---- formulas ------------------------------------------------------------------------------------
def _check_alpha(alpha: float) -> None:
    if not (0.0 <= alpha <= 1.0):
        raise InputError(f"alpha must be in [0, 1], got {alpha}")


def _check_gamma(gamma: int) -> None:
    if not isinstance(gamma, (int, np.integer)) or gamma < 1:
        raise InputError(f"gamma must be a whole number >= 1, got {gamma!r}")


def tokens_per_pass_formula(alpha: float, gamma: int) -> float:
    """Expected tokens written per target pass: 1 + α + α² + … + α^γ = (1 - α^(γ+1)) / (1 - α)."""
    _check_alpha(alpha)
    _check_gamma(gamma)
    if alpha == 1.0:
        return float(gamma + 1)
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def speedup(alpha: float, gamma: int, c: float, verify: float = 1.0) -> float:
    """Walltime improvement over the target alone when one draft run costs c target runs and checking γ+1 tokens
    costs `verify` target runs (1 on paper: the weights are read once for all of them):
    (1 - α^(γ+1)) / ((1 - α)(γ c + v))."""
    if not (c >= 0 and math.isfinite(c)):
        raise InputError(f"c must be a finite number >= 0, got {c}")
    if not (verify > 0 and math.isfinite(verify)):
        raise InputError(f"the verify cost must be a finite number > 0, got {verify}")
    return tokens_per_pass_formula(alpha, gamma) / (gamma * c + verify)


def best_gamma(alpha: float, c: float, max_gamma: int = 64) -> int:
    """The γ in 1..max_gamma with the largest speedup (the smallest such γ on ties)."""
    speeds = [speedup(alpha, g, c) for g in range(1, max_gamma + 1)]
    return int(np.argmax(speeds)) + 1


def extra_arithmetic(alpha: float, gamma: int, c_hat: float = 0.0) -> float:
    """Target arithmetic per written token relative to the target alone (1.53 = +53%), draft ignored at c_hat = 0.
    Every pass computes γ+1 positions (and the draft γ c_hat) but writes only (1 - α^(γ+1))/(1 - α) tokens."""
    return (gamma * c_hat + gamma + 1.0) / tokens_per_pass_formula(alpha, gamma)


def overlap(p: np.ndarray, q: np.ndarray) -> float:
    """β = Σ min(p, q): the probability one guess drawn from q passes the test against p."""
    return float(np.minimum(p, q).sum())


# ---- the pair's sparse structure -----------------------------------------------------------------
# Interpolated Witten-Bell gives p(·|ab) = λ·q(·|b) + c(ab·)/D with λ = T(ab)/D, D = c(ab·) + T(ab).
# So p - q = c(abx)/D - (1 - λ)·q(x|b) is negative off the followers x of ab: min(p, q) = λq + m and the
# residual max(0, p - q) both live on the followers only. Per trigram entry (ab, x):
#   m = min(c/D, (1-λ) q(x|b)),  res = max(0, c/D - (1-λ) q(x|b)),  β(ab) = λ + Σ m.
@dataclass
class _Sparse:
    lam: np.ndarray        # (H,) λ per seen trigram history
    beta: np.ndarray       # (H,) Σ min(p, q) per seen history (unshaped rows)
    total: np.ndarray      # (H,) c(ab·)
    Gm: np.ndarray         # (nnz3+1,) cumulative m over all trigram entries
    Gr: np.ndarray         # (nnz3+1,) cumulative residual
    Gc: np.ndarray         # (nnz3+1,) cumulative trigram counts
    Gb: np.ndarray         # (nnz2+1,) cumulative bigram counts
    u_cdf: np.ndarray      # (V,) cumulative unigram floor


_SPARSE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _sparse(pair) -> _Sparse:
    hit = _SPARSE.get(pair)
    if hit is not None:
        return hit
    t, V = pair.tables, pair.V
    H = len(t.tri_keys)
    T_h = np.diff(t.tri_indptr).astype(np.float64)
    row_of = np.repeat(np.arange(H), np.diff(t.tri_indptr))
    tot_h = np.bincount(row_of, weights=t.tri_counts, minlength=H)
    D = tot_h + T_h
    lam = T_h / D
    b = (t.tri_keys % V)[row_of]
    x = t.tri_indices.astype(np.int64)
    # q(x|b) = (c(bx) + T(b)·u(x)) / (c(b·) + T(b)) at every trigram entry; c(bx) > 0 there.
    bi_rows = np.repeat(np.arange(V), np.diff(t.bi_indptr))
    bi_keys = bi_rows * V + t.bi_indices
    c_bx = t.bi_counts[np.searchsorted(bi_keys, b * V + x)]
    T_b = np.diff(t.bi_indptr)[b].astype(np.float64)
    tot_b = np.bincount(bi_rows, weights=t.bi_counts, minlength=V)[b]
    q_e = (c_bx + T_b * pair.unigram_floor[x]) / (tot_b + T_b)
    emp = t.tri_counts / D[row_of]
    m = np.minimum(emp, (1.0 - lam[row_of]) * q_e)
    res = np.maximum(0.0, emp - (1.0 - lam[row_of]) * q_e)
    beta = lam + np.bincount(row_of, weights=m, minlength=H)
    z = lambda w: np.concatenate(([0.0], np.cumsum(w, dtype=np.float64)))  # noqa: E731
    sp = _Sparse(lam=lam, beta=beta, total=tot_h, Gm=z(m), Gr=z(res), Gc=z(t.tri_counts), Gb=z(t.bi_counts),
                 u_cdf=np.cumsum(pair.unigram_floor))
    _SPARSE[pair] = sp
    return sp


def _segment_draw(G: np.ndarray, lo: np.ndarray, hi: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw inside each segment [lo, hi) of a global cumulative-weight array G (len nnz+1)."""
    start = G[lo]
    target = start + u * (G[hi] - start)
    idx = np.searchsorted(G, target, side="right") - 1
    return np.clip(idx, lo, hi - 1)


# ---- α over the corpus ---------------------------------------------------------------------------
def alpha_corpus(pair, settings=None) -> float:
    """Mean of Σ min(p, q) over the corpus positions with two tokens of history (all but the first two).
    Computed from the counts alone: a history ab occurs c(ab·) times. (Held-in text: optimistic.)"""
    t = pair.tables
    if settings is None or not settings.shapes_rows:
        sp = _sparse(pair)
        return float((sp.total * sp.beta).sum() / sp.total.sum())
    V = pair.V
    betas = np.empty(len(t.tri_keys))
    for h, key in enumerate(t.tri_keys):
        ctx = [int(key // V), int(key % V)]
        p = shape_row(pair.target_row(ctx)[0], settings.temperature, settings.top_k, settings.top_p)
        q = shape_row(pair.draft_row(ctx)[0], settings.temperature, settings.top_k, settings.top_p)
        betas[h] = overlap(p, q)
    totals = _sparse(pair).total
    return float((totals * betas).sum() / totals.sum())


# ---- α over generated text -----------------------------------------------------------------------
def alpha_generated(pair, settings=None, chars: int = 200_000, chains: int = 64, prefix: str = "\n") -> GeneratedRun:
    """Run speculative decoding for about `chars` tokens (seeded by settings.seed) and measure acceptance.

    With unshaped rows and the exact rule the run is vectorised over `chains` independent texts: each position
    is simulated exactly as Algorithm 1 treats it (a tested position passes with probability β and writes
    min(p, q)/β, else writes the residual and ends the pass; position γ+1 writes the bonus from p), which is the
    same joint law of (text, verdicts) as drawing the guesses. Otherwise the SpeculativeSampler itself runs.
    """
    s = settings or SamplerSettings()
    if not isinstance(chars, (int, np.integer)) or chars < 1 or chars > 10_000_000:
        raise InputError(f"chars must be between 1 and 10000000, got {chars!r}")
    start = pair.encode(prefix)
    if s.shapes_rows or not s.exact:
        sampler = SpeculativeSampler(pair, s)
        sampler.reset(start)
        acc = tested = passes = 0
        tested_at, acc_at = np.zeros(s.gamma, dtype=np.int64), np.zeros(s.gamma, dtype=np.int64)
        while len(sampler.written) < chars:
            v = sampler.tally_step()
            acc += v.n_accepted
            tested += v.tested
            passes += 1
            tested_at[:v.tested] += 1
            acc_at[:v.n_accepted] += 1
        return GeneratedRun(alpha=acc / tested, alpha_expected=float("nan"), tokens=len(sampler.written),
                            passes=passes, accepted=acc, tested=tested, gamma=s.gamma, seed=s.seed, method="sampler",
                            tested_by_depth=tuple(int(x) for x in tested_at),
                            accepted_by_depth=tuple(int(x) for x in acc_at))
    return _alpha_generated_vectorised(pair, s, chars, chains, start)


def _alpha_generated_vectorised(pair, s, chars, chains, start) -> GeneratedRun:
    sp, t, V, gamma = _sparse(pair), pair.tables, pair.V, s.gamma
    rng = np.random.default_rng(s.seed)
    M = int(min(chains, chars))
    a = np.full(M, start[-2] if len(start) >= 2 else -1, dtype=np.int64)
    b = np.full(M, start[-1] if len(start) >= 1 else -1, dtype=np.int64)
    pos = np.zeros(M, dtype=np.int64)               # place in the current pass: 0..γ-1 tested, γ = bonus
    in_pass = np.zeros(M, dtype=np.int64)           # tokens written so far in the current pass
    Gb = sp.Gb
    acc = tested = passes = tokens_done = backed = 0
    acc_each = np.zeros(M, dtype=np.int64)          # each text's own counts: α's interval over independent texts
    tested_each = np.zeros(M, dtype=np.int64)
    beta_sum = 0.0
    # Σ min(p, q) at every position of the text written (each chain's own sum, over its completed passes as the
    # tokens are): α as its definition averages it, over the text, not where a guess happened to be tested
    beta_text_each, beta_pending = np.zeros(M), np.zeros(M)
    text_each = np.zeros(M, dtype=np.int64)
    # per place in a pass, over completed passes only (as tokens and passes are): 1 + Σ_k Π_(j≤k) of the shares
    # is then exactly the tokens a pass counted
    tested_at, acc_at = np.zeros(gamma, dtype=np.int64), np.zeros(gamma, dtype=np.int64)
    cur_tested, cur_acc = np.zeros((M, max(gamma, 1)), dtype=np.int64), np.zeros((M, max(gamma, 1)), dtype=np.int64)
    rows = np.arange(M)
    steps = -(-chars // M)

    def draw_q(bb, u1, u2):
        """x ~ q(·|b) = w·(bigram counts of b) + (1 - w)·u with w = c(b·)/(c(b·) + T(b)); u alone if b unseen."""
        out = np.searchsorted(sp.u_cdf, u2 * sp.u_cdf[-1], side="right")
        out = np.minimum(out, V - 1)
        ok = bb >= 0
        lo = np.where(ok, t.bi_indptr[np.maximum(bb, 0)], 0)
        hi = np.where(ok, t.bi_indptr[np.maximum(bb, 0) + 1], 0)
        tot = Gb[hi] - Gb[lo]
        T_b = hi - lo
        use_counts = ok & (T_b > 0) & (u1 * (tot + T_b) < tot)
        if use_counts.any():
            k = np.flatnonzero(use_counts)
            # reuse u1 rescaled inside the counts' share: it is uniform there
            uu = u1[k] * (tot[k] + T_b[k]) / tot[k]
            out[k] = t.bi_indices[_segment_draw(Gb, lo[k], hi[k], uu)]
        return out

    for _ in range(steps):
        u = rng.random((4, M))
        key = np.where((a >= 0) & (b >= 0), a * V + b, -1)
        h = np.searchsorted(t.tri_keys, key)
        seen = (key >= 0) & (h < len(t.tri_keys))
        seen[seen] = t.tri_keys[h[seen]] == key[seen]
        hs = np.where(seen, h, 0)
        beta = np.where(seen, sp.beta[hs], 1.0)           # unseen ab: p = q, every guess passes
        lam = np.where(seen, sp.lam[hs], 1.0)
        lo = np.where(seen, t.tri_indptr[hs], 0)
        hi = np.where(seen, t.tri_indptr[hs + 1], 0)
        is_test = pos < gamma
        passed = is_test & (u[0] < beta)
        failed = is_test & ~passed
        tok = np.empty(M, dtype=np.int64)
        # accepted guess: min(p, q)/β = (λ/β)·q + m/β ; bonus: p = λ·q + (1-λ)·counts/c(ab·)
        from_q = np.where(passed, u[1] * beta < lam, ~failed & (u[1] < lam))
        k = np.flatnonzero(from_q)
        if k.size:
            tok[k] = draw_q(b[k], u[2][k], u[3][k])
        k = np.flatnonzero(passed & ~from_q)
        if k.size:
            tok[k] = t.tri_indices[_segment_draw(sp.Gm, lo[k], hi[k], u[2][k])]
        k = np.flatnonzero(failed)
        if k.size:
            tok[k] = t.tri_indices[_segment_draw(sp.Gr, lo[k], hi[k], u[2][k])]
        k = np.flatnonzero(~is_test & ~from_q)
        if k.size:
            tok[k] = t.tri_indices[_segment_draw(sp.Gc, lo[k], hi[k], u[2][k])]
        tested += int(is_test.sum())
        backed += int((is_test & ~seen).sum())
        acc += int(passed.sum())
        acc_each += passed
        tested_each += is_test
        cur_tested[rows[is_test], pos[is_test]] = 1
        cur_acc[rows[passed], pos[passed]] = 1
        beta_sum += float(beta[is_test].sum())
        beta_pending += beta
        in_pass += 1
        ends = failed | ~is_test
        passes += int(ends.sum())
        if gamma:
            tested_at += cur_tested[ends].sum(axis=0)
            acc_at += cur_acc[ends].sum(axis=0)
            cur_tested[ends] = 0
            cur_acc[ends] = 0
        tokens_done += int(in_pass[ends].sum())
        beta_text_each[ends] += beta_pending[ends]
        beta_pending[ends] = 0.0
        text_each[ends] += in_pass[ends]
        in_pass[ends] = 0
        pos = np.where(ends, 0, pos + 1)
        a, b = b, tok
    return GeneratedRun(alpha=acc / tested, alpha_expected=beta_sum / tested, tokens=tokens_done, passes=passes,
                        accepted=acc, tested=tested, gamma=gamma, seed=s.seed, method="vectorised",
                        backed_off=backed, alpha_ci95=ratio_ci95(acc_each, tested_each), chains=M,
                        tested_by_depth=tuple(int(x) for x in tested_at), accepted_by_depth=tuple(int(x) for x in acc_at),
                        alpha_text=float(beta_text_each.sum() / tokens_done) if tokens_done else float("nan"),
                        alpha_text_ci95=ratio_ci95(beta_text_each, text_each),
                        text_parts=tuple(zip(beta_text_each.tolist(), text_each.tolist())))


def ratio_ci95(hits: np.ndarray, trials: np.ndarray) -> float:
    """Half-width of the 95 % interval of Σ hits / Σ trials over independent units (each a text of its own): the
    ratio estimator's standard error, sqrt(Σ (h_i − r·t_i)² / (n (n − 1))) / mean(t), times 1.96. NaN below two
    units with trials."""
    h, n = np.asarray(hits, float), np.asarray(trials, float)
    keep = n > 0
    h, n = h[keep], n[keep]
    if len(n) < 2:
        return float("nan")
    r = h.sum() / n.sum()
    return float(1.96 * math.sqrt(((h - r * n) ** 2).sum() / (len(n) * (len(n) - 1))) / n.mean())


def speedup_table(alpha: float, c: float, gammas=range(1, 9)) -> dict[int, float]:
    return {int(g): speedup(alpha, int(g), c) for g in gammas}


# ---- the pair's own properties, from long runs, computed once per table ---------------------------
# A short demo run (the tour's 12 passes) is luck as much as the pair: 9 of 21 guesses kept says little.
# What the panels show as the pair's α, tokens per pass, best γ and best speedup comes from here, the same
# run `spectable alpha` reports (seed 0, 64 texts from a paragraph start, 200,000 tokens; 20,000 when the
# rows are shaped, where the SpeculativeSampler itself runs).
LONG_RUN_TOKENS = 200_000
LONG_RUN_TOKENS_SHAPED = 20_000
# A neural pair runs its two networks every pass (the shipped pair: ~150 tokens/s on one CPU core): 2,000 tokens
# from the start token, about 750 passes and 1,700 tested guesses (α to about ±0.01).
LONG_RUN_TOKENS_NEURAL = 2_000
MAX_RUN_TOKENS_NEURAL = 100_000


@dataclass(frozen=True)
class PairFacts:
    """What the pair is like at γ: α and tokens per pass counted over one long seeded run, α over the corpus."""

    table: str                   # table_key(pair): the counts these numbers belong to
    gamma: int
    seed: int
    temperature: float
    top_k: int
    top_p: float
    # α, E[Σ min(p, q)]: Σ min(p, q) averaged over every position of the long run's text where the run computed it
    # (the vectorised run: alpha_measure "text"); else the share of guesses kept, its estimate ("kept"). The two
    # differ: guesses are tested at positions that are not typical of the text (a pass's 1st follows a token the
    # target wrote itself, and is harder)
    alpha: float
    alpha_expected: float        # mean β over the tested positions (vectorised run only; else NaN)
    accepted: int
    tested: int
    tokens: int                  # tokens written in completed passes
    passes: int
    tokens_per_pass_counted: float
    alpha_corpus: float          # mean Σ min(p, q) over the corpus's own positions (held-in: optimistic)
    method: str                  # "vectorised" | "sampler"
    backed_off: int = -1         # tested positions with an unseen history (p = q there); -1: not counted
    alpha_ci95: float = float("nan")   # half-width of α's 95 % interval: over the run's independent texts (a
                                       # vectorised run), over the shipped long run's seeded runs; NaN: not known
    runs: int = 1                # independent texts or seeded runs pooled
    tested_by_depth: tuple = ()  # guesses tested / accepted at each place in a pass (empty: not counted)
    accepted_by_depth: tuple = ()
    alpha_measure: str = "kept"  # "text": alpha averages Σ min(p, q) over the text; "kept": the share of guesses kept
    kept_ci95: float = float("nan")    # half-width of the kept share's 95 % interval (as alpha_ci95)
    text_parts: tuple = ()       # each text's (Σ min(p, q), positions) when alpha_measure is "text"

    def alpha_parts(self, n: int) -> tuple[list[float], float]:
        """α over each of `n` parts of the long run (its texts in n groups, in order), and the mean tokens a part:
        how far a count that short wanders, from the run itself (the parts together are the long run). Empty
        where the run kept no texts' sums."""
        if not self.text_parts or n < 1:
            return [], 0.0
        parts = np.array_split(np.asarray(self.text_parts, dtype=np.float64), min(n, len(self.text_parts)))
        return [float(g[:, 0].sum() / g[:, 1].sum()) for g in parts], float(np.mean([g[:, 1].sum() for g in parts]))

    @property
    def kept_share(self) -> float:
        """Accepted / tested guesses: what counting the verdicts gives (at γ = 4, a little under α)."""
        return self.accepted / self.tested if self.tested else float("nan")

    @property
    def alpha_by_depth(self) -> list[float]:
        """The share of guesses kept at each place in a pass, of those reached: 1 + Σ_k Π_(j≤k) of them is the
        tokens per pass counted (every pass tests its first guess; the k-th is reached when k − 1 were kept)."""
        return [a / t for a, t in zip(self.accepted_by_depth, self.tested_by_depth) if t]

    @property
    def backed_off_share(self) -> float:
        """Share of tested positions where the target backed off to the draft (NaN when not counted)."""
        return self.backed_off / self.tested if self.backed_off >= 0 and self.tested else float("nan")

    @property
    def tokens_per_pass_formula(self) -> float:
        """(1 - α^(γ+1)) / (1 - α): what the pass would write if every position were equally easy."""
        return tokens_per_pass_formula(self.alpha, self.gamma)

    def speedup(self, c: float, gamma: int | None = None) -> float:
        return speedup(self.alpha, self.gamma if gamma is None else gamma, c)

    def best(self, c: float, max_gamma: int = 64) -> tuple[int, float]:
        """(best γ, its speedup) at this α for a draft cost ratio c."""
        g = best_gamma(self.alpha, c, max_gamma)
        return g, speedup(self.alpha, g, c)

    def extra_arithmetic(self, gamma: int | None = None, c_hat: float = 0.0) -> float:
        return extra_arithmetic(self.alpha, self.gamma if gamma is None else gamma, c_hat)


_PAIR_FACTS: dict = {}
_PAIR_FACTS_MAX = 64
_PAIR_FACTS_LOCK = threading.Lock()


def table_key(pair) -> str:
    """What the pair's figures depend on (models.pair.Pair.key): two loads of one table share it, two tables with
    different counts (or checkpoints) never do."""
    return pair.key


def pair_facts(pair, gamma: int = 4, settings=None, chars: int | None = None, seed: int | None = None) -> PairFacts:
    """The pair's α and tokens per pass at γ from one long seeded run (as `spectable alpha`), cached by
    (table, γ, row shaping, seed, length): the first call costs about 0.6 s, later ones nothing."""

    _check_gamma(gamma)
    s = settings or SamplerSettings()
    s = replace(s, gamma=int(gamma), seed=s.seed if seed is None else int(seed))
    if chars is None:
        # The pair's own long run, counted once over tens of thousands of tokens (models.long_runs), when it was
        # counted at these settings: a network's cannot be counted while a class waits.
        lr = pair.shipped_long_run(s)
        if lr is not None:
            return PairFacts(table=table_key(pair), gamma=s.gamma, seed=s.seed, temperature=s.temperature,
                             top_k=s.top_k, top_p=s.top_p, alpha=lr.alpha, alpha_expected=float("nan"),
                             accepted=lr.accepted, tested=lr.tested, tokens=lr.tokens, passes=lr.passes,
                             tokens_per_pass_counted=lr.tokens_per_pass, alpha_corpus=float("nan"),
                             method="shipped long run", alpha_ci95=lr.alpha_ci95, runs=lr.runs,
                             kept_ci95=lr.alpha_ci95)
        chars = pair.long_run_tokens(s)
    key = (table_key(pair), s.gamma, s.temperature, s.top_k, s.top_p, s.lenience, s.seed, int(chars))
    with _PAIR_FACTS_LOCK:
        hit = _PAIR_FACTS.get(key)
    if hit is not None:
        return hit
    run = pair.generated_run(s, int(chars))
    by_text = math.isfinite(run.alpha_text)
    a_corpus = pair.alpha_corpus(s)        # NaN for a network: no count table to average Σ min(p, q) over
    out = PairFacts(table=key[0], gamma=s.gamma, seed=s.seed, temperature=s.temperature, top_k=s.top_k,
                    top_p=s.top_p, alpha=run.alpha_text if by_text else run.alpha, alpha_expected=run.alpha_expected, accepted=run.accepted,
                    tested=run.tested, tokens=run.tokens, passes=run.passes,
                    tokens_per_pass_counted=run.tokens_per_pass, alpha_corpus=a_corpus, method=run.method,
                    backed_off=run.backed_off, alpha_ci95=run.alpha_text_ci95 if by_text else run.alpha_ci95,
                    runs=run.chains, tested_by_depth=run.tested_by_depth, accepted_by_depth=run.accepted_by_depth,
                    alpha_measure="text" if by_text else "kept", kept_ci95=run.alpha_ci95,
                    text_parts=run.text_parts if by_text else ())
    with _PAIR_FACTS_LOCK:
        if len(_PAIR_FACTS) >= _PAIR_FACTS_MAX:
            _PAIR_FACTS.pop(next(iter(_PAIR_FACTS)))
        _PAIR_FACTS[key] = out
    return out


@dataclass(frozen=True)
class RunCount:
    """What one (short) run counted: labelled as that run's count, never as the pair's α."""

    passes: int
    tested: int
    accepted: int
    written: int
    bonus: int                   # passes that kept all γ guesses and wrote the bonus token
    replacements: int

    @property
    def tokens_per_pass(self) -> float:
        return self.written / self.passes if self.passes else float("nan")


def count_run(traces) -> RunCount:
    """Counts over a run's traces (speculative passes; a target-alone pass tests nothing and writes one)."""
    tested = sum(int(tr.tested) for tr in traces)
    accepted = sum(int(tr.n_accepted) for tr in traces)
    written = sum(len(tr.tokens_written) for tr in traces)
    bonus = sum(1 for tr in traces if tr.gamma > 0 and tr.final_kind == "bonus")
    repl = sum(1 for tr in traces if tr.final_kind == "replacement")
    return RunCount(passes=len(traces), tested=tested, accepted=accepted, written=written, bonus=bonus,
                    replacements=repl)
