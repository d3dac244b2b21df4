"""The neural pair's sampler: traces replay the numpy rule, the KV caches roll back (rows equal a fresh forward),
greedy speculative = greedy target, seeded replay, the window refill, and the output follows p (chi-square)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from models import acceptance
from models.llm.model import CONFIGS, build_random
from models.llm.pair import LlamaPair, LlamaSampler, LlamaTargetSampler, MIN_WINDOW, shape_probs
from models.llm.text import TokenText
from models.sampler import SamplerSettings, shape_row
from models.tubes import chi2_pvalue
from tests.llm_helpers import load_train_pair, one_thread

_threads = pytest.fixture(autouse=True, scope="module")(one_thread)

VOCAB = ["<unk>", "\n", "一", "了", "人", "地", "己", "慢", "的", "，"]


def tiny_pair(vocab=VOCAB, std=0.4, window=None, seeds=(1, 2)):
    from dataclasses import replace
    tp = load_train_pair()
    t_cfg = replace(CONFIGS["tiny"], vocab_size=len(vocab), max_position_embeddings=256)
    d_cfg = replace(CONFIGS["tiny-draft"], vocab_size=len(vocab), max_position_embeddings=256)
    target = build_random(t_cfg, seed=seeds[0], std=std)
    draft = build_random(d_cfg, seed=seeds[1], std=std)
    return LlamaPair(target, draft, TokenText(tp.char_tokenizer(vocab), len(vocab)), window=window)


def fresh_rows(model, ids):
    """Softmax rows after each prefix of ids, from one forward with a freshly set-up cache (no history)."""
    model.setup_caches(1, max(16, len(ids)))
    with torch.no_grad():
        logits = model(torch.tensor([ids]), torch.arange(len(ids)), eager=True)[0]
    return torch.softmax(logits.float(), -1).numpy()


def test_shape_probs_mirrors_shape_row():
    g = torch.Generator().manual_seed(0)
    for case in range(40):
        logits = torch.randn(37, generator=g) * 3
        logits[case % 37] = logits.max()                      # a tie at the top now and then
        T, k, p = [(1.0, 0, 1.0), (0.0, 0, 1.0), (0.7, 0, 1.0), (1.3, 5, 1.0), (1.0, 0, 0.8), (0.5, 8, 0.6)][case % 6]
        ours = shape_probs(logits, T, k, p).double().numpy()
        ref = shape_row(torch.softmax(logits.double(), -1).numpy(), T, k, p)
        assert np.array_equal(ours > 0, ref > 0), case
        assert np.allclose(ours, ref, atol=2e-6), case


def test_traces_replay_the_numpy_rule_and_rows_equal_a_fresh_forward():
    """Each trace is self-consistent under models.acceptance (the numpy rule) and its p/q rows are what the
    models compute from scratch for that context: the caches rolled back correctly after every rejection."""
    pair = tiny_pair()
    s = LlamaSampler(pair, SamplerSettings(gamma=3, temperature=1.0, seed=5))
    s.reset(pair.encode("慢慢地"))
    traces = [s.step() for _ in range(25)]
    kinds = {t.final_kind for t in traces}
    assert kinds == {"bonus", "replacement"}, kinds
    assert any(t.n_accepted == 0 for t in traces)
    text = pair.encode("慢慢地")
    for t in traces:
        assert t.context == text and t.gamma == 3 and t.lanes_lit == 4
        assert t.q_rows.shape == (3, pair.V) and t.p_rows.shape == (4, pair.V)
        for i, x in enumerate(t.guesses):
            assert acceptance.sample_index(t.q_rows[i], t.extra["u_guess"][i]) == x      # drawn from that row
        v = acceptance.verify(t.guesses, t.q_rows, t.p_rows, np.array(t.r), t.extra["u_final"])
        assert v.n_accepted == t.n_accepted and v.final_token == t.final_token and v.final_kind == t.final_kind
        assert list(v.accepted) == t.accepted and np.array_equal(v.ratios, np.array(t.ratios, np.float32))
        assert np.allclose(v.final_row, t.final_row, atol=1e-7) and abs(t.final_row.sum() - 1) < 1e-12
        assert t.tokens_written == t.guesses[:t.n_accepted] + [t.final_token]
        assert t.tested == min(t.n_accepted + 1, 3)
        p_fresh = fresh_rows(pair.target, t.context + t.guesses)[-4:]
        q_fresh = fresh_rows(pair.draft, t.context + t.guesses[:2])[-3:]
        assert np.allclose(p_fresh, t.p_rows, atol=2e-6) and np.allclose(q_fresh, t.q_rows, atol=2e-6)
        text = text + t.tokens_written
    assert s.tokens == text


def test_greedy_speculative_writes_what_the_target_alone_writes_and_a_seed_replays():
    pair = tiny_pair()
    prefix = pair.encode("一人")
    spec = LlamaSampler(pair, SamplerSettings(gamma=4, temperature=0.0))
    spec.reset(prefix)
    spec.run_tokens(40)
    plain = LlamaTargetSampler(pair, SamplerSettings(temperature=0.0))
    plain.reset(prefix)
    tt = plain.run_tokens(40)
    assert spec.written[:40] == plain.written[:40]
    assert all(t.gamma == 0 and t.lanes_lit == 1 and t.extra["sampler"] == "target" for t in tt)
    runs = []
    for seed in (3, 3, 4):
        s = LlamaSampler(pair, SamplerSettings(gamma=2, seed=seed))
        s.reset(prefix)
        runs.append([(t.guesses, t.r, t.tokens_written) for t in s.run_tokens(30)])
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_two_samplers_sharing_the_models_do_not_disturb_each_other():
    pair = tiny_pair()
    a, b = (LlamaSampler(pair, SamplerSettings(gamma=3, seed=9)) for _ in range(2))
    a.reset(pair.encode("的"))
    b.reset(pair.encode("的"))
    for _ in range(8):                       # interleaved: each refills the caches it finds taken
        ta, tb = a.step(), b.step()
        assert ta.tokens_written == tb.tokens_written and np.array_equal(ta.p_rows, tb.p_rows)
        pair.target_row(pair.encode("了了"))  # a row query in between takes the caches too


def test_scoring_a_long_text_in_overlapping_windows_gives_every_position_its_row():
    pair = tiny_pair(window=MIN_WINDOW)
    rng = np.random.default_rng(0)
    ids = [int(i) for i in rng.integers(1, pair.V, 400)]
    sc = pair.score(ids)
    W = MIN_WINDOW
    for t in (0, 1, W - 2, W - 1, W, W + 1, 2 * W, 398):
        start = max(0, (t - W + 2 + W // 2 - 1) // (W // 2) * (W // 2)) if t >= W - 1 else 0
        ctx = ids[start:t + 1]
        assert len(ctx) >= min(t + 1, W // 2)
        p = fresh_rows(pair.target, ctx)[-1].astype(np.float64)
        q = fresh_rows(pair.draft, ctx)[-1].astype(np.float64)
        assert sc["logp"][t] == pytest.approx(np.log(p[ids[t + 1]]), abs=1e-5)
        assert sc["logq"][t] == pytest.approx(np.log(q[ids[t + 1]]), abs=1e-5)
        assert sc["overlap"][t] == pytest.approx(np.minimum(p, q).sum(), abs=1e-5)


def test_a_text_longer_than_the_window_refills_the_caches_with_its_last_half():
    pair = tiny_pair(window=MIN_WINDOW)
    s = LlamaSampler(pair, SamplerSettings(gamma=4, seed=2))
    s.reset(pair.encode("慢"))
    traces = s.run_tokens(3 * MIN_WINDOW)
    starts = [t.extra["window_start"] for t in traces]
    assert starts[0] == 0 and max(starts) > 0 and starts == sorted(starts)
    t = traces[-1]
    ws = t.extra["window_start"]
    assert len(t.context) - ws <= MIN_WINDOW
    p_fresh = fresh_rows(pair.target, t.context[ws:] + t.guesses)[-(t.gamma + 1):]
    assert np.allclose(p_fresh, t.p_rows, atol=2e-6)


def test_the_torch_decoder_output_follows_p_over_two_tokens():
    """Chi-square of the first two written tokens (x1, x2) after a prefix against p(x1)·p(x2|x1), computed from
    the target alone: across the pass boundary and through every rollback. The same test rejects q."""
    vocab = ["<unk>", "\n", "一", "了", "人", "地"]
    pair = tiny_pair(vocab, std=1.2, seeds=(11, 12))
    prefix = pair.encode("一人")
    V = pair.V
    p1 = fresh_rows(pair.target, prefix)[-1].astype(np.float64)
    q1 = fresh_rows(pair.draft, prefix)[-1].astype(np.float64)
    joint_p = np.array([p1[a] * fresh_rows(pair.target, prefix + [a])[-1] for a in range(V)]).ravel()
    joint_q = np.array([q1[a] * fresh_rows(pair.draft, prefix + [a])[-1] for a in range(V)]).ravel()
    assert 0.2 < np.minimum(p1, q1).sum() < 0.9          # the models disagree: rejections happen
    counts = np.zeros(V * V)
    s = LlamaSampler(pair, SamplerSettings(gamma=1, temperature=1.0, seed=123))
    n = 1200
    for _ in range(n):
        s.rewind(prefix)                   # back to the prefix; the random stream goes on
        s.run_tokens(2)
        counts[s.written[0] * V + s.written[1]] += 1
    assert chi2_pvalue(counts, joint_p / joint_p.sum()) > 1e-3
    assert chi2_pvalue(counts, joint_q / joint_q.sum()) < 1e-6


class EchoProposer:
    """A deterministic proposer (a stand-in for a lookup drafter): guesses the last token again, γ times, with
    one-hot rows. The rule stays exact for any proposer that says which rows its guesses came from."""

    def __init__(self, V):
        self.V = V

    def prefill(self, ids):
        pass

    def propose(self, context, cur, pos, g, u, shape):
        V = self.V
        guesses = cur[0].repeat(g)
        rows = torch.zeros(g, V)
        rows[torch.arange(g), guesses] = 1.0
        return guesses, rows

    def commit(self, n, g):
        pass


def test_any_proposer_drives_the_step_and_the_output_still_follows_p():
    pair = tiny_pair(["<unk>", "\n", "一", "了", "人", "地"], std=1.2, seeds=(11, 12))
    prefix = pair.encode("一一")
    greedy = LlamaSampler(pair, SamplerSettings(gamma=3, temperature=0.0), proposer=EchoProposer(pair.V))
    greedy.reset(prefix)
    greedy.run_tokens(30)
    plain = LlamaTargetSampler(pair, SamplerSettings(temperature=0.0))
    plain.reset(prefix)
    plain.run_tokens(30)
    assert greedy.written[:30] == plain.written[:30]
    p = fresh_rows(pair.target, prefix)[-1].astype(np.float64)
    s = LlamaSampler(pair, SamplerSettings(gamma=2, seed=4), proposer=EchoProposer(pair.V))
    counts = np.zeros(pair.V)
    for _ in range(800):
        s.rewind(prefix)
        t = s.step()
        assert t.q_rows[0, t.guesses[0]] == 1.0
        counts[t.tokens_written[0]] += 1
    assert chi2_pvalue(counts, p) > 1e-3
    assert counts[pair.encode("一")[0]] < 800 * min(1.0, p[pair.encode("一")[0]] + 0.1)   # guesses get rejected
