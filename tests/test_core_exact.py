"""Exactness of speculative sampling by enumeration: every outcome of a step, weighted by its probability."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from models.acceptance import verify
from models.sampler import SamplerSettings, SpeculativeSampler, TargetSampler, shape_row
from tests.core_helpers import TablePair, hard_rows


def step_outcomes(pair, ctx, gamma):
    """All outcomes of one speculative pass from ctx: yields (probability, tokens_written).

    Guesses are enumerated with their q probabilities; each verdict pattern (first rejection at n, or none)
    with its probability Π min(1, p/q)·(1 - min(1, p_n/q_n)); the final token over the row verify() returns
    for that pattern (forced with r = 0 for passes and r = 1 for the rejection)."""
    V = pair.V
    for guesses in itertools.product(range(V), repeat=gamma):
        q_rows = np.array([pair.draft_row(ctx + list(guesses[:i]))[0] for i in range(gamma)])
        prob_g = float(np.prod([q_rows[i, x] for i, x in enumerate(guesses)]))
        if prob_g == 0.0:
            continue
        p_rows = np.array([pair.target_row(ctx + list(guesses[:i]))[0] for i in range(gamma + 1)])
        acc = [min(1.0, p_rows[i, x] / q_rows[i, x]) for i, x in enumerate(guesses)]
        for n in range(gamma + 1):
            prob = prob_g * float(np.prod(acc[:n]))
            if n < gamma:
                prob *= 1.0 - acc[n]
            if prob == 0.0:
                continue
            r = np.zeros(gamma)
            if n < gamma:
                r[n] = 1.0
            v = verify(list(guesses), q_rows, p_rows, r, 0.5)
            assert v.n_accepted == n
            assert np.all(np.isfinite(v.final_row)) and abs(v.final_row.sum() - 1) < 1e-12
            for y in range(V):
                if v.final_row[y] > 0:
                    yield prob * v.final_row[y], list(guesses[:n]) + [y]


def step_outcomes_skip_bonus(pair, ctx, gamma):
    """One pass with the bonus token skipped: a pass that keeps all γ guesses writes just those γ tokens
    (the bonus draw is summed out); every other outcome is the exact rule's."""
    merged: dict[tuple, float] = {}
    for prob, toks in step_outcomes(pair, ctx, gamma):
        key = tuple(toks[:gamma]) if len(toks) == gamma + 1 else tuple(toks)
        merged[key] = merged.get(key, 0.0) + prob
    for toks, prob in merged.items():
        yield prob, list(toks)


def first_tokens(pair, ctx, gamma, k, step=step_outcomes):
    """Exact distribution of the first k tokens written (enumerating further passes when a pass writes fewer)."""
    dist: dict[tuple, float] = {}

    def walk(prefix_prob, written):
        if len(written) >= k:
            key = tuple(written[:k])
            dist[key] = dist.get(key, 0.0) + prefix_prob
            return
        for prob, toks in step(pair, ctx + written, gamma):
            walk(prefix_prob * prob, written + toks)
    walk(1.0, [])
    return dist


@pytest.mark.parametrize("case", range(8))
@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_one_step_emits_exactly_p(case, gamma):
    rng = np.random.default_rng(100 + case)
    p, q = hard_rows(4, rng)[case]
    pair = TablePair(np.tile(p, (4, 1)), np.tile(q, (4, 1)))
    dist = first_tokens(pair, [0], gamma, 1)
    got = np.array([dist.get((x,), 0.0) for x in range(4)])
    assert np.max(np.abs(got - p)) < 1e-12
    assert abs(sum(dist.values()) - 1.0) < 1e-12


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma", [1, 2])
def test_first_two_tokens_across_a_pass_boundary(seed, gamma):
    """Context-dependent rows mixing all hard cases: the first two written tokens follow p(x1)·p(x2|x1)."""
    rng = np.random.default_rng(seed)
    cases = hard_rows(4, rng)
    pick = rng.permutation(len(cases))[:4]
    p_table = np.array([cases[i][0] for i in pick])
    q_table = np.array([cases[i][1] for i in pick])
    pair = TablePair(p_table, q_table)
    ctx0 = int(rng.integers(4))
    dist = first_tokens(pair, [ctx0], gamma, 2)
    for x1, x2 in itertools.product(range(4), repeat=2):
        want = p_table[ctx0, x1] * p_table[x1, x2]
        assert abs(dist.get((x1, x2), 0.0) - want) < 1e-12


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma", [1, 2])
def test_skipping_the_bonus_token_stays_exact(seed, gamma):
    """Skipping the bonus is not a wrong rule: with a context-dependent target p(x2|x1) the first two tokens
    written still follow p(x1)·p(x2|x1) exactly (the next pass starts where the accepted guesses end)."""
    rng = np.random.default_rng(50 + seed)
    p_table = rng.random((4, 4)) ** 3
    q_table = rng.random((4, 4)) ** 3
    p_table[rng.integers(4), rng.integers(4)] = 0.0          # a zero in p: q proposes what p never writes
    p_table /= p_table.sum(1, keepdims=True)
    q_table /= q_table.sum(1, keepdims=True)
    pair = TablePair(p_table, q_table)
    ctx0 = int(rng.integers(4))
    dist = first_tokens(pair, [ctx0], gamma, 2, step=step_outcomes_skip_bonus)
    assert abs(sum(dist.values()) - 1.0) < 1e-12
    for x1, x2 in itertools.product(range(4), repeat=2):
        assert abs(dist.get((x1, x2), 0.0) - p_table[ctx0, x1] * p_table[x1, x2]) < 1e-12
    # ... and a pass that keeps every guess really wrote one token fewer (the bonus was skipped):
    lengths = {len(t) for _, t in step_outcomes_skip_bonus(pair, [ctx0], gamma)}
    assert max(lengths) == gamma


@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_tokens_per_pass_with_and_without_the_bonus(gamma):
    """Where every position is equally easy (β = α everywhere), a pass writes (1 − α^(γ+1))/(1 − α) tokens on
    average with the bonus and α^γ fewer without it (all γ kept: γ tokens instead of γ + 1)."""
    from models.analytics import overlap, tokens_per_pass_formula
    rng = np.random.default_rng(gamma)
    p, q = rng.random(4) ** 2, rng.random(4) ** 2
    p, q = p / p.sum(), q / q.sum()
    pair = TablePair(np.tile(p, (4, 1)), np.tile(q, (4, 1)))
    alpha = overlap(p, q)
    with_bonus = sum(prob * len(t) for prob, t in step_outcomes(pair, [0], gamma))
    without = sum(prob * len(t) for prob, t in step_outcomes_skip_bonus(pair, [0], gamma))
    assert abs(with_bonus - tokens_per_pass_formula(alpha, gamma)) < 1e-12
    assert abs(without - (tokens_per_pass_formula(alpha, gamma) - alpha ** gamma)) < 1e-12
    assert without < with_bonus


def test_zero_residual_is_handled_without_nan():
    """p <= q everywhere with p != q only by rounding: a rejection leaves Σ max(0, p - q) = 0; verify draws from p."""
    q = np.array([0.1, 0.2, 0.7])
    p = np.array([np.nextafter(0.1, 0.0), 0.2, 0.7])
    v = verify([0], q[None, :], np.array([p, p]), np.array([1.0]), 0.3)
    assert v.n_accepted == 0 and v.residual_fallback
    assert np.all(np.isfinite(v.final_row)) and np.allclose(v.final_row, p / p.sum())
    pair = TablePair(np.tile(p, (3, 1)), np.tile(q, (3, 1)))
    dist = first_tokens(pair, [0], 1, 1)
    assert max(abs(dist.get((x,), 0.0) - p[x]) for x in range(3)) < 1e-12


def test_sampler_traces_replay_verify():
    """Every trace is reproducible from its recorded rows and uniforms through the one rule."""
    from models.acceptance import sample_index
    rng = np.random.default_rng(7)
    p_table = rng.random((5, 5)) ** 2
    q_table = rng.random((5, 5)) ** 2
    p_table /= p_table.sum(1, keepdims=True)
    q_table /= q_table.sum(1, keepdims=True)
    pair = TablePair(p_table, q_table)
    s = SpeculativeSampler(pair, SamplerSettings(gamma=3, seed=5))
    s.reset([1])
    for t in s.run_tokens(60):
        for i, x in enumerate(t.guesses):
            assert sample_index(t.q_rows[i], t.extra["u_guess"][i]) == x
            assert np.array_equal(t.q_rows[i], q_table[(t.context + t.guesses[:i])[-1]])
        v = verify(t.guesses, t.q_rows, t.p_rows, np.array(t.r), t.extra["u_final"])
        assert v.n_accepted == t.n_accepted and v.final_token == t.final_token
        assert t.tokens_written == t.guesses[:t.n_accepted] + [t.final_token]
        assert t.lanes_lit == 4 and t.tested == min(t.n_accepted + 1, 3)


def test_replay_same_seed_same_run_and_different_seed_differs():
    pair = TablePair(np.tile(np.full(4, 0.25), (4, 1)), np.tile([0.1, 0.2, 0.3, 0.4], (4, 1)))
    a = SpeculativeSampler(pair, SamplerSettings(gamma=2, seed=3))
    a.reset([0])
    ta = a.run_tokens(50)
    a.reset([0])
    tb = a.run_tokens(50)
    assert [t.tokens_written for t in ta] == [t.tokens_written for t in tb]
    c = SpeculativeSampler(pair, SamplerSettings(gamma=2, seed=4))
    c.reset([0])
    assert c.run_tokens(50) and c.tokens != a.tokens
    t1 = TargetSampler(pair, SamplerSettings(seed=9))
    t1.reset([0])
    t1.run_tokens(30)
    first = list(t1.tokens)
    t1.reset([0])
    t1.run_tokens(30)
    assert t1.tokens == first


def test_shaped_rows_are_what_was_sampled():
    """With temperature/top-k/top-p, trace rows are the shaped rows and the enumeration still gives shaped p."""
    rng = np.random.default_rng(11)
    p, q = rng.random(5), rng.random(5)
    p, q = p / p.sum(), q / q.sum()
    pair = TablePair(np.tile(p, (5, 1)), np.tile(q, (5, 1)))
    for kw in ({"temperature": 0.5}, {"top_k": 2}, {"top_p": 0.6}, {"temperature": 0.0}):
        st = SamplerSettings(gamma=2, seed=1, **kw)
        sp = shape_row(p, st.temperature, st.top_k, st.top_p)
        sq = shape_row(q, st.temperature, st.top_k, st.top_p)
        s = SpeculativeSampler(pair, st)
        s.reset([0])
        t = s.step()
        assert np.allclose(t.q_rows[0], sq) and np.allclose(t.p_rows[0], sp)
        shaped = TablePair(np.tile(sp, (5, 1)), np.tile(sq, (5, 1)))
        dist = first_tokens(shaped, [0], 2, 1)
        assert max(abs(dist.get((x,), 0.0) - sp[x]) for x in range(5)) < 1e-12


def test_temperature_zero_is_greedy_one_hot():
    row = np.array([0.1, 0.5, 0.4])
    assert np.array_equal(shape_row(row, 0.0), [0, 1, 0])
    # A tie between the two largest entries goes to the lowest id (and only one token keeps the mass).
    assert np.array_equal(shape_row(np.array([0.4, 0.2, 0.4]), 0.0), [1, 0, 0])
    assert np.array_equal(shape_row(np.array([0.2, 0.4, 0.4]), 0.0), [0, 1, 0])
    out = shape_row(np.array([0.1, 0.2, 0.3, 0.4]), top_k=2)
    assert np.allclose(out, [0, 0, 3 / 7, 4 / 7])
    out = shape_row(np.array([0.1, 0.2, 0.3, 0.4]), top_p=0.7)
    assert np.allclose(out, [0, 0, 3 / 7, 4 / 7])
    out = shape_row(np.array([0.1, 0.2, 0.3, 0.4]), top_p=0.71)
    assert np.allclose(out, [0, 2 / 9, 3 / 9, 4 / 9])
    hot = shape_row(np.array([1e-300, 1.0]), 0.01)
    assert np.all(np.isfinite(hot)) and hot[1] == 1.0


def test_lenience_is_marked_not_exact():
    pair = TablePair(np.tile([0.5, 0.5], (2, 1)), np.tile([0.9, 0.1], (2, 1)))
    s = SpeculativeSampler(pair, SamplerSettings(gamma=2, seed=0, lenience=0.5))
    s.reset([0])
    assert s.step().exact is False
    s = SpeculativeSampler(pair, SamplerSettings(gamma=2, seed=0))
    s.reset([0])
    assert s.step().exact is True


def test_a_token_the_target_never_writes_is_never_accepted_even_at_r_zero():
    """r ~ U[0, 1) can be exactly 0.0: the test must still reject a guess with p(x) = 0 (strict r < p/q)."""
    q = np.array([[0.5, 0.5]])
    p = np.array([[1.0, 0.0], [0.5, 0.5]])
    v = verify([1], q, p, np.array([0.0]), 0.3)
    assert v.n_accepted == 0 and v.final_token == 0 and v.final_kind == "replacement"
