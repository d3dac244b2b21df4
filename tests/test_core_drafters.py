"""Every drafter and the multi-candidate rule, proved exact by enumeration; typical acceptance shown not to be.

The enumeration runs the real code path (drafter.propose -> the sampler's target rows -> the rule) through
SpeculativeSampler.pass_from with forced uniforms: every proposal with its probability (each guess's row, one
token at a time), every verdict path with its probability (P(r < ratio) = min(1, ratio), the rule's own ratios),
every final token over the row the rule returns.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from models.acceptance import sample_index, verify
from models.drafters import ChainDrafter, HeadsDrafter, LookupDrafter, TreeDrafter
from models.multi_candidate import verify_position, verify_tree
from models.sampler import SamplerSettings, SpeculativeSampler
from tests.core_helpers import TableHeads, TablePair, hard_rows


# ---- the enumeration harness ---------------------------------------------------------------------------
def _guess_row(prop, i):
    return prop.q_rows[prop.q_of[i]] if hasattr(prop, "q_of") else prop.q_rows[i]


def proposals(sampler, ctx):
    """Every proposal the drafter can make at ctx: yields (probability, u_guess). Guess i's uniform is set to the
    middle of token x's slice of its row's CDF, for every x the row can give; the row of guess i depends only on
    the guesses before it, so a depth-first walk over i covers every proposal once."""
    n = sampler.drafter.guess_uniforms(sampler.settings.gamma)

    def walk(prefix, prob):
        u = np.array(prefix + [0.5] * (n - len(prefix)))
        prop = sampler.drafter.propose(sampler, ctx, sampler.settings.gamma, u)
        count = len(prop.tokens) if hasattr(prop, "q_of") else len(prop.guesses)
        i = len(prefix)
        if i >= count:
            yield prob, u
            return
        row = np.asarray(_guess_row(prop, i), dtype=np.float64)
        cdf = np.cumsum(row)
        for x in np.flatnonzero(row > 0):
            lo = cdf[x - 1] if x else 0.0
            yield from walk(prefix + [(lo + cdf[x]) / 2 / cdf[-1]], prob * row[x] / cdf[-1])
    yield from walk([], 1.0)


def _checks(trace):
    """(slot of its uniform, ratio, accepted) of every test the rule ran, in order."""
    if trace.tree is not None:
        return [(c.node, c.ratio, c.accepted) for c in trace.tree.checks]
    return [(i, trace.ratios[i], trace.accepted[i]) for i in range(trace.tested)]


def pass_outcomes(sampler, ctx):
    """All outcomes of one pass from ctx: yields (probability, tokens written)."""
    n = sampler.drafter.guess_uniforms(sampler.settings.gamma)
    for prob_g, u in proposals(sampler, ctx):
        def walk(decided, prob):
            r = np.array([0.0 if decided.get(j, True) else 1.0 for j in range(n)])
            t, _ = sampler.pass_from(ctx, u, r, 0.5)
            for slot, ratio, ok in _checks(t):
                if slot not in decided:
                    a = min(1.0, ratio)
                    if a > 0:
                        yield from walk({**decided, slot: True}, prob * a)
                    if a < 1:
                        yield from walk({**decided, slot: False}, prob * (1 - a))
                    return
                assert ok == decided[slot]          # the forced uniform gave the verdict we chose
            assert np.all(np.isfinite(t.final_row)) and abs(t.final_row.sum() - 1) < 1e-12
            for y in np.flatnonzero(t.final_row > 0):
                yield prob * t.final_row[y], t.tokens_written[:-1] + [int(y)]
        yield from walk({}, prob_g)


def first_tokens(sampler, ctx, k):
    """Exact distribution of the first k tokens written (enumerating further passes when a pass writes fewer)."""
    dist: dict[tuple, float] = {}

    def walk(prob, written):
        if len(written) >= k:
            key = tuple(written[:k])
            dist[key] = dist.get(key, 0.0) + prob
            return
        for p, toks in pass_outcomes(sampler, list(ctx) + written):
            walk(prob * p, written + toks)
    walk(1.0, [])
    return dist


def _tables(rng, V=4):
    """Context-dependent rows mixing the hard cases (zeros, p = q, rounding-equal, one-hot)."""
    cases = hard_rows(V, rng)
    pick = rng.permutation(len(cases))[:V]
    return np.array([cases[i][0] for i in pick]), np.array([cases[i][1] for i in pick])


def _heads(pair, rng, V, last):
    rows = {}
    for k in range(2, last + 1):
        t = rng.random((V, V)) ** 3
        t[rng.integers(V), rng.integers(V)] = 0.0
        rows[k] = t / t.sum(1, keepdims=True)
    return TableHeads(pair, rows)


def _assert_p(dist, want, V):
    assert abs(sum(dist.values()) - 1.0) < 1e-12
    for x in range(V):
        assert abs(dist.get((x,), 0.0) - want[x]) < 1e-12


def _assert_pp(dist, p_table, x0, V):
    assert abs(sum(dist.values()) - 1.0) < 1e-12
    for x1, x2 in itertools.product(range(V), repeat=2):
        assert abs(dist.get((x1, x2), 0.0) - p_table[x0, x1] * p_table[x1, x2]) < 1e-12


# ---- the harness itself: on the chain it agrees with the hand-written enumeration of test_core_exact -----
def test_harness_reproduces_the_chain_and_catches_a_wrong_rule():
    rng = np.random.default_rng(3)
    p_t, q_t = _tables(rng)
    pair = TablePair(p_t, q_t)
    s = SpeculativeSampler(pair, SamplerSettings(gamma=2), drafter=ChainDrafter())
    _assert_pp(first_tokens(s, [1], 2), p_t, 1, 4)

    class FromP(SpeculativeSampler):               # resample-from-p: a rule the harness must catch
        def pass_from(self, ctx, u_guess, r, u_final, record=True):
            t, w = super().pass_from(ctx, u_guess, r, u_final, record)
            if t.final_kind == "replacement":
                t.final_row = np.asarray(t.p_rows[t.n_accepted], dtype=np.float64)
            return t, w
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.1, 0.2, 0.7])
    wrong = FromP(TablePair(np.tile(p, (3, 1)), np.tile(q, (3, 1))), SamplerSettings(gamma=1))
    got = first_tokens(wrong, [0], 1)
    assert max(abs(got.get((x,), 0.0) - p[x]) for x in range(3)) > 0.05


# ---- lookup --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_lookup_one_pass_and_across_the_boundary_is_exactly_p(seed, gamma):
    """The copied guesses (q one-hot) under the one rule: the first token follows p(·|ctx) and the first two
    p(x1)·p(x2|x1), though the second pass copies from a text that now holds x1."""
    rng = np.random.default_rng(seed)
    p_t, q_t = _tables(rng)
    pair = TablePair(p_t, q_t)
    s = SpeculativeSampler(pair, SamplerSettings(gamma=gamma), drafter=LookupDrafter())
    ctx = [0, 1, 2, 0, 1]                          # "0 1" occurred before: copy "2 0 1"[:γ]
    prop = s.drafter.propose(s, ctx, gamma, np.zeros(gamma))
    assert prop.guesses == [2, 0, 1][:gamma] and prop.source_span == {"ngram": 2, "match": [0, 2], "copy": [2, 2 + gamma]}
    _assert_p(first_tokens(s, ctx, 1), p_t[1], 4)
    _assert_pp(first_tokens(s, ctx, 2), p_t, 1, 4)


def test_lookup_without_a_match_is_a_plain_target_step():
    p_t = np.array([[0.2, 0.5, 0.3]] * 3)
    pair = TablePair(p_t, p_t.copy())
    s = SpeculativeSampler(pair, SamplerSettings(gamma=3, seed=2), drafter=LookupDrafter())
    s.reset([0, 1])                                # its last token never occurred before
    t = s.step()
    assert t.gamma == 0 and t.guesses == [] and t.lanes_lit == 1 and t.final_kind == "bonus"
    assert t.source_span is None and t.drafter == "lookup" and len(t.tokens_written) == 1
    dist = first_tokens(s, [0, 1], 1)
    assert max(abs(dist.get((x,), 0.0) - p_t[1][x]) for x in range(3)) < 1e-12


def test_lookup_copies_from_the_latest_longest_earlier_occurrence():
    """Against a brute-force search over a long random text, pass after pass (the pool is kept up to date)."""
    rng = np.random.default_rng(0)
    V = 4
    p_t = rng.random((V, V)) + 0.1
    p_t /= p_t.sum(1, keepdims=True)
    pair = TablePair(p_t, p_t.copy())
    s = SpeculativeSampler(pair, SamplerSettings(gamma=3, seed=1), drafter=LookupDrafter())
    s.reset(list(rng.integers(0, V, 12)))
    for t in s.run_tokens(400):
        ctx, L = t.context, len(t.context)
        best = None
        for n in (3, 2, 1):
            starts = [j for j in range(L - n) if ctx[j:j + n] == ctx[L - n:]]
            if starts:
                best = (n, max(starts))
                break
        if best is None:
            assert t.source_span is None and not t.guesses
            continue
        n, j = best
        assert t.source_span == {"ngram": n, "match": [j, j + n], "copy": [j + n, min(j + n + 3, L)]}
        assert t.guesses == ctx[j + n:min(j + n + 3, L)]
        assert np.array_equal(t.q_rows, np.eye(V)[t.guesses])
        assert t.lanes_lit == len(t.guesses) + 1


# ---- heads ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_heads_one_pass_and_across_the_boundary_is_exactly_p(seed, gamma):
    """Sampled head proposals (rows that ignore the earlier guesses, some with zeros) under the one rule."""
    rng = np.random.default_rng(20 + seed)
    p_t, q_t = _tables(rng)
    pair = TablePair(p_t, q_t)
    heads = _heads(pair, rng, 4, gamma + 1)
    s = SpeculativeSampler(pair, SamplerSettings(gamma=gamma), drafter=HeadsDrafter(heads))
    ctx = [int(rng.integers(4)), int(rng.integers(4))]
    _assert_p(first_tokens(s, ctx, 1), p_t[ctx[-1]], 4)
    _assert_pp(first_tokens(s, ctx, 2), p_t, ctx[-1], 4)


def test_heads_guess_i_comes_from_head_i_plus_1_at_the_features_before_the_last_token():
    rng = np.random.default_rng(5)
    p_t, q_t = _tables(rng, V=4)
    pair = TablePair(p_t, q_t)
    heads = _heads(pair, rng, 4, 4)
    s = SpeculativeSampler(pair, SamplerSettings(gamma=3, seed=4), drafter=HeadsDrafter(heads))
    s.reset([2, 3])
    for t in s.run_tokens(200):
        assert t.heads == [2, 3, 4] and t.lanes_lit == 4 and t.drafter == "heads"
        feats = t.context[:-1]
        for i in range(3):
            assert np.array_equal(t.q_rows[i], heads.row(i + 2, feats)[0])
            assert sample_index(t.q_rows[i], t.extra["u_guess"][i]) == t.guesses[i]
        v = verify(t.guesses, t.q_rows, t.p_rows, np.array(t.r), t.extra["u_final"])
        assert v.n_accepted == t.n_accepted and v.final_token == t.final_token


# ---- the multi-candidate rule and trees ----------------------------------------------------------------
@pytest.mark.parametrize("case", range(8))
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("sampling", ["iid", "distinct"])
def test_multi_candidate_rule_at_one_position_is_exactly_p(case, k, sampling):
    """k candidates for one position from q (i.i.d., or without replacement with the corrected q), SpecInfer's
    rounds with the residual updates, enumerated: the token written is exactly p."""
    from models.drafters.tree import draw_children
    rng = np.random.default_rng(40 + case)
    V = 4
    p, q = hard_rows(V, rng)[case]
    dist = np.zeros(V)

    def walk(prefix, prob):
        cands = draw_children(q, k, sampling, prefix + [0.5] * (k - len(prefix)))
        i = len(prefix)
        if i >= len(cands):
            enumerate_rule(cands[:i], prob)
            return
        row = cands[i][1]
        cdf = np.cumsum(row)
        for x in np.flatnonzero(row > 0):
            lo = cdf[x - 1] if x else 0.0
            walk(prefix + [(lo + cdf[x]) / 2 / cdf[-1]], prob * row[x] / cdf[-1])

    def enumerate_rule(cands, prob):
        toks = [c[0] for c in cands]
        rows = np.array([c[1] for c in cands])
        for n_rej in range(len(toks) + 1):          # the first n_rej candidates rejected, then one kept (or none)
            r = np.array([1.0] * n_rej + [0.0] * (len(toks) - n_rej))
            pv = verify_position(toks, rows, p, r)
            if [c.accepted for c in pv.checks] != [False] * n_rej + [True] * (n_rej < len(toks)):
                continue                            # that pattern has probability 0 (a ratio of 0, or >= 1)
            pr = prob
            for c in pv.checks:
                a = min(1.0, c.ratio)
                pr *= a if c.accepted else 1 - a
            if pv.kept is not None:
                dist[toks[pv.kept]] += pr
            else:
                row = pv.last_residual / pv.last_residual.sum()
                dist[:] += pr * row
    walk([], 1.0)
    assert np.max(np.abs(dist - p)) < 1e-12


TREES = [("chain", [2], "iid"), ("chain", [3], "distinct"), ("chain", [2, 2], "iid"), ("chain", [2, 2], "distinct"),
         ("chain", [1, 2], "iid"), ("chain", [2, 1], "distinct"), ("heads", [2, 2], "iid"),
         ("heads", [3, 1], "distinct")]


@pytest.mark.parametrize("base,widths,sampling", TREES)
@pytest.mark.parametrize("seed", range(3))
def test_tree_pass_is_exactly_p(base, widths, sampling, seed):
    """A whole tree pass (every proposal, every check path with its residual updates, every final token): the
    first token follows p, and for depth-1 trees, whose passes can write a single token, the first two follow
    p(x1)·p(x2|x1) across the pass boundary."""
    rng = np.random.default_rng(60 + seed)
    V = 4
    p_t, q_t = _tables(rng, V)
    pair = TablePair(p_t, q_t)
    heads = _heads(pair, rng, V, len(widths) + 1)
    b = ChainDrafter() if base == "chain" else HeadsDrafter(heads)
    s = SpeculativeSampler(pair, SamplerSettings(gamma=len(widths)), drafter=TreeDrafter(b, widths=widths,
                                                                                         sampling=sampling))
    ctx = [int(rng.integers(V)), int(rng.integers(V))]
    _assert_p(first_tokens(s, ctx, 1), p_t[ctx[-1]], V)
    if len(widths) == 1 or widths == [1, 2]:
        _assert_pp(first_tokens(s, ctx, 2), p_t, ctx[-1], V)


def test_tree_rule_on_a_chain_is_verify_draw_for_draw():
    """One child per node: the multi-candidate rule is the single-candidate rule, ratio for ratio and token for
    token; and a tree of widths 1,1,1,1 replays the chain sampler's run exactly (same uniforms, same text)."""
    rng = np.random.default_rng(9)
    V = 6
    for _ in range(300):
        g = int(rng.integers(1, 5))
        q_rows = rng.random((g, V)) ** 3
        q_rows /= q_rows.sum(1, keepdims=True)
        p_rows = rng.random((g + 1, V)) ** 3
        p_rows /= p_rows.sum(1, keepdims=True)
        guesses = [sample_index(q_rows[i], rng.random()) for i in range(g)]
        r, uf = rng.random(g), float(rng.random())
        v = verify(guesses, q_rows, p_rows, r, uf)
        tv = verify_tree(list(range(-1, g - 1)), guesses, q_rows, list(range(g)), p_rows, r, uf)
        assert tv.n_accepted == v.n_accepted and tv.final_token == v.final_token and tv.final_kind == v.final_kind
        assert np.array_equal(tv.final_row, v.final_row)
        assert [c.ratio for c in tv.checks] == [float(x) for x in v.ratios[:len(tv.checks)]]
    from models.ngram import NGramPair
    pair = NGramPair.load()
    a = SpeculativeSampler(pair, SamplerSettings(gamma=4, seed=7))
    b = SpeculativeSampler(pair, SamplerSettings(gamma=4, seed=7),
                           drafter=TreeDrafter(ChainDrafter(), widths=[1, 1, 1, 1]))
    for smp in (a, b):
        smp.reset(pair.encode("孔乙"))
        smp.run_tokens(500)
    assert a.tokens == b.tokens


def test_tree_traces_replay_through_the_rule_and_describe_the_pass():
    from models.ngram import NGramPair
    pair = NGramPair.load()
    for sampling in ("iid", "distinct"):
        s = SpeculativeSampler(pair, SamplerSettings(gamma=3, seed=2),
                               drafter=TreeDrafter(ChainDrafter(), width=2, sampling=sampling))
        s.reset(pair.encode("孔乙"))
        for t in s.run_tokens(150):
            tr = t.tree
            assert len(tr.nodes) == 14 or sampling == "distinct"
            assert t.lanes_lit == tr.lanes_lit == len(tr.nodes) + 1 and tr.widths == [2, 2, 2]
            parents = [n.parent for n in tr.nodes]
            for n in tr.nodes:
                assert sample_index(tr.q_rows[n.q_row], t.extra["u_guess"][n.id]) == n.token
                assert n.depth == (1 if n.parent < 0 else tr.nodes[n.parent].depth + 1)
            tv = verify_tree(parents, [n.token for n in tr.nodes], tr.q_rows, [n.q_row for n in tr.nodes], tr.p_rows,
                             t.extra["u_test"], t.extra["u_final"])
            assert tv.accepted_path == tr.accepted_path and tv.final_token == t.final_token
            assert [(c.node, c.accepted) for c in tv.checks] == [(c.node, c.accepted) for c in tr.checks]
            assert t.tokens_written == [tr.nodes[i].token for i in tr.accepted_path] + [t.final_token]
            # Siblings are checked in the order they were drawn; after a rejection the next sibling is checked
            # against the residual recorded for it.
            for a, b in zip(tr.checks, tr.checks[1:]):
                if not a.accepted:
                    assert tr.nodes[b.node].parent == tr.nodes[a.node].parent and b.target_row == a.residual_row
                    want = np.maximum(0.0, tr.target_rows[a.target_row] - tr.q_rows[tr.nodes[a.node].q_row])
                    if not a.fallback:
                        assert np.allclose(tr.target_rows[a.residual_row], want / want.sum(), atol=1e-15)
            # the chain fields: the walk, ratios that are p_rows[i][x] / q_rows[i][x]
            for i, x in enumerate(t.guesses):
                assert t.ratios[i] == pytest.approx(t.p_rows[i][x] / t.q_rows[i][x], rel=1e-12)
            assert t.n_accepted == len(tr.accepted_path) and t.accepted == [True] * t.n_accepted + \
                [False] * (len(t.guesses) - t.n_accepted)
            if sampling == "distinct":
                for par in set(parents):
                    kids = [tr.nodes[i].token for i in tr.children(par)]
                    assert len(kids) == len(set(kids))          # no duplicate siblings without replacement


def test_every_rule_refuses_a_guess_outside_the_vocabulary_or_with_q_zero():
    q = np.array([[0.5, 0.5, 0.0]])
    p = np.array([[0.2, 0.3, 0.5], [0.2, 0.3, 0.5]])
    for bad in ([3], [-1], [2], [1.5]):
        with pytest.raises(ValueError, match="guess"):
            verify(bad, q, p, np.array([0.1]), 0.2)
        with pytest.raises(ValueError, match="guess"):
            verify_position(bad, q, p[0], [0.1])
        with pytest.raises(ValueError, match="guess"):
            verify_tree([-1], bad, q, [0], p, [0.1], 0.2)


# ---- typical acceptance: NOT exact --------------------------------------------------------------------
def test_typical_acceptance_is_biased_by_enumeration():
    """Medusa's rule keeps a guess when p(x) > min(ε, δ·exp(−H(p))), else the target draws from p: enumerated,
    P(x) = q(x)·[p(x) > θ] + (1 − Σ_{p(y) > θ} q(y))·p(x), far from p when q favours a plausible token."""
    from models.acceptance import typical_threshold
    p = np.array([0.5, 0.3, 0.15, 0.05])
    q = np.array([0.1, 0.7, 0.1, 0.1])
    thr = typical_threshold(p)
    H = -(p * np.log(p)).sum()
    assert thr == pytest.approx(min(0.09, 0.3 * np.exp(-H)))
    out = np.zeros(4)
    for x in range(4):                              # guess x ~ q, then the rule
        if p[x] > thr:
            out[x] += q[x]
        else:
            out += q[x] * p
    kept = p > thr
    assert np.allclose(out, q * kept + (1 - q[kept].sum()) * p)
    assert 0.5 * np.abs(out - p).sum() > 0.3


# ---- the real 《呐喊》 pair: χ² for every drafter, and typical acceptance fails the same test -------------
@pytest.fixture(scope="module")
def pair():
    from models.ngram import NGramPair
    return NGramPair.load()


def _drafters(pair):
    from models.heads import HeadModels
    heads = HeadModels.for_pair(pair)
    return {"chain": ChainDrafter(), "lookup": LookupDrafter(), "heads": HeadsDrafter(heads),
            "tree": TreeDrafter(ChainDrafter(), width=2),
            "tree-distinct": TreeDrafter(ChainDrafter(), width=3, sampling="distinct"),
            "tree-heads": TreeDrafter(HeadsDrafter(heads), width=2)}


def test_real_pair_tubes_exact_for_every_drafter_typical_biased(pair):
    from models.tubes import run_tubes
    for name, d in _drafters(pair).items():
        draws = 200 if name == "tree-distinct" else 1000          # the distinct tube runs draw by draw
        exact = run_tubes(pair, rounds=200, draws=draws, seed=3, drafter=d)
        assert exact.proposed and exact.chi2_p_right > 1e-3 and exact.tv_right < 0.03, name
        typ = run_tubes(pair, rounds=200, draws=draws, seed=3, rule="typical", drafter=d)
        assert typ.chi2_p_right < 1e-9 and typ.tv_right > 0.05, name
        assert typ.chi2_p_left > 1e-3


def test_tubes_with_candidates_mirror_the_rule_draw_for_draw(pair):
    """The vectorised i.i.d. tube is models.multi_candidate.verify_position on the same uniforms."""
    from models.tubes import _candidates
    ids = pair.encode("慢慢")
    q, p = pair.draft_row(ids)[0], pair.target_row(ids)[0]
    u = np.random.default_rng(4).random((2 + 2 * 3, 500))
    right, accepted = _candidates(p, q, u, 3, "iid", "exact", None)
    for i in range(500):
        toks = [sample_index(q, u[2 + 2 * j, i]) for j in range(3)]
        pv = verify_position(toks, np.tile(q, (3, 1)), p, u[3::2, i])
        want = toks[pv.kept] if pv.kept is not None else sample_index(pv.last_residual, u[1, i])
        assert right[i] == want and accepted[i] == (pv.kept is not None)


@pytest.mark.parametrize("name", ["lookup", "heads", "tree", "tree-distinct", "tree-heads"])
def test_real_pair_sampler_first_two_tokens_match_p(pair, name):
    """The real SpeculativeSampler with each drafter, 1,500 seeded runs from 慢慢: the first two written tokens
    against p(x1)·p(x2|x1) by chi-square (the second often comes from a second pass)."""
    from models.tubes import chi2_pvalue
    ids = pair.encode("慢慢")
    drafter = _drafters(pair)[name]
    p1 = pair.target_row(ids)[0]
    top = np.argsort(-p1)[:12]
    cells = {}
    want = []
    for x1 in top:
        row = pair.target_row(ids + [int(x1)])[0]
        for x2 in np.argsort(-row)[:12]:
            cells[(int(x1), int(x2))] = len(want)
            want.append(p1[x1] * row[x2])
    want.append(1.0 - sum(want))
    counts = np.zeros(len(want), dtype=np.int64)
    firsts = np.zeros(pair.V, dtype=np.int64)
    sampler = SpeculativeSampler(pair, SamplerSettings(gamma=2), drafter=drafter)
    for seed in range(1500):
        sampler.settings = SamplerSettings(gamma=2, seed=seed)
        sampler.reset(ids)
        sampler.run_tokens(2)
        x1, x2 = sampler.written[:2]
        counts[cells.get((x1, x2), len(want) - 1)] += 1
        firsts[x1] += 1
    assert chi2_pvalue(counts, np.array(want)) > 1e-3
    assert chi2_pvalue(firsts, p1) > 1e-3
    first = drafter.first_guess(sampler, ids).row
    if name != "lookup":                                       # and the test has power against the proposal
        assert chi2_pvalue(firsts, first) < 1e-6
