"""The speculative step on tensors: torch rule == numpy rule, greedy output == plain, caches roll back."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from models import acceptance
from models.llm.model import CONFIGS, build_random
from models.llm.speculative import (PlainDecoder, SpeculativeDecoder, sample_index, shape_probs,
                                    verify_on_device)
from tests.llm_helpers import fresh_cache_copy, one_thread



_threads = pytest.fixture(autouse=True, scope="module")(one_thread)

def _rows(rng, k, V, kind):
    if kind == "one-hot":
        x = np.zeros((k, V), np.float32)
        x[np.arange(k), rng.integers(0, V, k)] = 1.0
        return x
    x = rng.random((k, V)).astype(np.float32)
    if kind == "zeros":
        x[rng.random((k, V)) < 0.6] = 0.0
        x[np.arange(k), rng.integers(0, V, k)] += 0.1   # every row keeps some mass
    if kind == "peaked":
        x = x ** 8
        x[np.arange(k), rng.integers(0, V, k)] += 1.0
    return (x / x.sum(1, keepdims=True)).astype(np.float32)


def _both(guesses, q, p, r, u, lenience=1.0):
    a = acceptance.verify(guesses, q, p, r, u, lenience)
    b = verify_on_device(torch.tensor(guesses), torch.from_numpy(q), torch.from_numpy(p), torch.from_numpy(r),
                         torch.tensor(u, dtype=torch.float64), lenience)
    return a, b


def test_torch_rule_equals_numpy_rule_on_identical_inputs_and_uniforms():
    rng = np.random.default_rng(0)
    kinds = ["dense", "zeros", "one-hot", "peaked"]
    outcomes = {"bonus": 0, "replacement": 0, "fallback": 0}
    for case in range(600):
        V, g = int(rng.integers(2, 40)), int(rng.integers(1, 7))
        q = _rows(rng, g, V, kinds[case % 4])
        p = _rows(rng, g + 1, V, kinds[(case // 4) % 4])
        if case % 5 == 0:
            p[:g] = q                                     # p == q: every guess must pass
        if case % 7 == 0:                                 # p <= q everywhere, below q at the guess: zero residual
            p[:g] = q * np.float32(1 - 1e-6)
        guesses = np.array([rng.choice(V, p=q[i].astype(np.float64) / q[i].astype(np.float64).sum())
                            for i in range(g)])
        r = rng.random(g)
        if case % 7 == 0:
            r[:] = 1 - 1e-9                               # reject on the rounding margin
        u = float(rng.random()) if case % 11 else 1 - 1e-17
        lenience = 1.0 if case % 9 else 0.7
        a, b = _both(guesses, q, p, r, u, lenience)
        assert a.n_accepted == int(b.n_accepted), case
        assert a.final_token == int(b.final_token), case
        assert a.residual_fallback == bool(b.residual_fallback), case
        assert np.array_equal(a.accepted, b.accepted.numpy()), case
        assert np.array_equal(a.ratios, b.ratios.numpy()), case
        if case % 5 == 0 and lenience == 1.0 and case % 7:
            assert a.n_accepted == g
        outcomes["fallback" if a.residual_fallback else a.final_kind] += 1
    assert min(outcomes.values()) > 0, outcomes           # every branch of the rule was exercised


def test_sample_index_mirrors_numpy_at_the_edges():
    row = np.array([0.0, 0.25, 0.0, 0.75, 0.0], np.float32)
    for u in [0.0, 0.2499999, 0.25, 0.5, 0.9999999, 1 - 1e-17, 1.0]:
        assert acceptance.sample_index(row, u) == int(sample_index(torch.from_numpy(row),
                                                                   torch.tensor(u, dtype=torch.float64)))
    assert int(sample_index(torch.from_numpy(row), torch.tensor(1.0, dtype=torch.float64))) == 3  # last positive


def test_greedy_rows_are_one_hot_and_sampling_rows_fp32():
    logits = torch.tensor([[1.0, 3.0, 2.0]], dtype=torch.bfloat16)
    assert shape_probs(logits, 0.0).tolist() == [[0.0, 1.0, 0.0]]
    p = shape_probs(logits, 0.5)
    assert p.dtype == torch.float32 and abs(float(p.sum()) - 1) < 1e-6


@pytest.fixture(scope="module")
def pair():
    target = build_random(CONFIGS["tiny"], seed=11, std=0.1)
    draft = build_random(CONFIGS["tiny-draft"], seed=12, std=0.1)
    twin = build_random(CONFIGS["tiny"], seed=11, std=0.1)   # a draft identical to the target: all guesses pass
    near = build_random(CONFIGS["tiny"], seed=11, std=0.1)   # the target plus noise: greedy guesses often agree
    gen = torch.Generator().manual_seed(13)
    with torch.no_grad():
        for p in near.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.03)
    return target, draft, twin, near


@pytest.mark.parametrize("gamma", [2, 5])
def test_greedy_speculative_equals_greedy_plain(pair, gamma):
    target, draft, twin, near = pair
    prompt = list(range(7, 27))
    for m in pair:
        m.setup_caches(1, 160)
    plain = PlainDecoder(target).generate(prompt, 40)
    if gamma == 2:                                     # an unrelated draft: nearly every guess replaced
        assert SpeculativeDecoder(target, draft, gamma=gamma).generate(prompt, 40).tokens == plain
    mixed = SpeculativeDecoder(target, near, gamma=gamma).generate(prompt, 40)
    assert mixed.tokens == plain
    assert 0 < mixed.alpha < 1                         # some guesses kept, some replaced
    same = SpeculativeDecoder(target, twin, gamma=gamma).generate(prompt, 40)
    assert same.tokens == plain
    # every pass kept all γ guesses and the draft consumed its last guess each time
    assert all(r.n_accepted == r.gamma and r.final_kind == "bonus" for r in same.records)
    assert all(r.gamma == gamma for r in same.records[:-1])    # only the last pass guesses fewer (the tail)
    assert same.passes < mixed.passes


def test_caches_hold_exactly_the_written_text_after_rollbacks(pair):
    target, draft = pair[:2]
    prompt = list(range(3, 15))
    target.setup_caches(1, 128)
    draft.setup_caches(1, 128)
    dec = SpeculativeDecoder(target, draft, gamma=4, temperature=1.0, seed=3)
    res = dec.generate(prompt, 50)
    assert any(r.n_accepted < 4 for r in res.records)          # rejections happened: rollback was needed
    text = prompt + res.tokens[:1] + [t for r in res.records for t in r.tokens]
    pos = dec.pos                                               # positions < pos are in the target's cache
    assert text[pos] == int(dec.cur)
    t_k = [layer.attention.kv_cache.k_cache[:, :, :pos].clone() for layer in target.layers]
    d_valid = pos - 1 if dec.proposer.behind else pos
    d_k = [layer.attention.kv_cache.k_cache[:, :, :d_valid].clone() for layer in draft.layers]
    for ours, ref in zip(t_k, fresh_cache_copy(target, text[:pos], 128)):
        assert torch.allclose(ours, ref, atol=1e-5)
    for ours, ref in zip(d_k, fresh_cache_copy(draft, text[:d_valid], 128)):
        assert torch.allclose(ours, ref, atol=1e-5)


def test_sampling_replays_from_its_seed(pair):
    target, draft = pair[:2]
    for m in (target, draft):
        m.setup_caches(1, 128)
    runs = [SpeculativeDecoder(target, draft, gamma=3, temperature=0.8, seed=s).generate([5, 6, 7], 40).tokens
            for s in (1, 1, 2)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    plain = [PlainDecoder(target, temperature=0.8, seed=s).generate([5, 6, 7], 40) for s in (4, 4)]
    assert plain[0] == plain[1]


def test_tail_pass_with_no_guess_is_a_plain_step_and_keeps_the_draft_in_step(pair):
    target, _, twin, _ = pair
    for m in (target, twin):
        m.setup_caches(1, 64)
    prompt = [9, 8, 7]
    plain = PlainDecoder(target).generate(prompt, 10)
    dec = SpeculativeDecoder(target, twin, gamma=3)
    res = dec.generate(prompt, 10)                 # 1 + 4 + 4 written, then 1 wanted: a pass with no guess
    assert res.tokens == plain
    assert [r.gamma for r in res.records] == [3, 3, 0]
    assert dec.proposer.behind                     # the draft has not read the token the last pass verified
    rec = dec.step()                               # and a further pass reads it first, then guesses on
    assert rec.gamma == 3 and rec.n_accepted == 3
