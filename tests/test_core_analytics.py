"""Analytics, test tubes and the hardware model: formulas, sparse shortcuts vs full rows, statistics on the real pair."""
from __future__ import annotations

import numpy as np
import pytest

from corpus.errors import InputError
from models import analytics as an
from models.acceptance import residual, verify
from models.hardware import DEVICES, MODELS, busy_fraction, load_measurements, roofline
from models.ngram import NGramPair
from models.sampler import SamplerSettings, SpeculativeSampler
from models.tubes import RULES, chi2_pvalue, run_tubes, sample_indices


@pytest.fixture(scope="module")
def pair():
    return NGramPair.load()


def test_formulas():
    for a in (0.0, 0.3, 0.6, 0.95):
        for g in range(1, 9):
            assert abs(an.tokens_per_pass_formula(a, g) - sum(a ** i for i in range(g + 1))) < 1e-12
    assert an.tokens_per_pass_formula(1.0, 4) == 5
    assert abs(an.speedup(0.6, 2, 0.0) - 1.96) < 1e-12                       # +96% speed
    assert abs(an.extra_arithmetic(0.6, 2) - 1.53) < 0.001                    # +53% target arithmetic
    for a, c in ((0.6, 0.1), (0.8, 0.05), (0.3, 0.2)):
        g = an.best_gamma(a, c)
        assert an.speedup(a, g, c) == max(an.speedup(a, k, c) for k in range(1, 65))
    # a γ with speedup > 1 exists iff α > c, and then the best is at least (1 + α)/(1 + c)
    assert an.speedup(0.1, an.best_gamma(0.1, 0.2), 0.2) < 1
    assert an.speedup(0.5, an.best_gamma(0.5, 0.2), 0.2) >= 1.5 / 1.2
    with pytest.raises(InputError):
        an.tokens_per_pass_formula(1.5, 2)


def test_sparse_beta_and_residual_match_full_rows(pair):
    sp = an._sparse(pair)
    t = pair.tables
    rng = np.random.default_rng(0)
    for h in rng.choice(len(t.tri_keys), 150, replace=False):
        ctx = [int(t.tri_keys[h] // pair.V), int(t.tri_keys[h] % pair.V)]
        p, q = pair.target_row(ctx)[0], pair.draft_row(ctx)[0]
        assert abs(sp.beta[h] - np.minimum(p, q).sum()) < 1e-12
        lo, hi = t.tri_indptr[h], t.tri_indptr[h + 1]
        res = residual(p, q)
        sparse_res = np.zeros(pair.V)
        sparse_res[t.tri_indices[lo:hi]] = np.diff(sp.Gr)[lo:hi]
        assert np.allclose(sparse_res, res, atol=1e-13)


def test_alpha_corpus_is_the_count_weighted_mean(pair):
    a = an.alpha_corpus(pair)
    assert 0.3 < a < 0.9
    # shaped path (row by row) agrees with the sparse path at temperature 1 when shaping is a no-op top-p = 1
    assert abs(an.alpha_corpus(pair, SamplerSettings(top_k=pair.V)) - a) < 1e-9


def test_alpha_generated_vectorised_agrees_with_the_sampler(pair):
    s = SamplerSettings(gamma=4, seed=3)
    fast = an.alpha_generated(pair, s, chars=60_000)
    assert fast.method == "vectorised"
    slow = an.alpha_generated(pair, SamplerSettings(gamma=4, seed=3, top_k=pair.V), chars=6_000)
    assert slow.method == "sampler"
    se = np.sqrt(slow.alpha * (1 - slow.alpha) / slow.tested) * 2      # runs are correlated: be generous
    assert abs(fast.alpha - slow.alpha) < 5 * se
    assert abs(fast.tokens_per_pass - slow.tokens_per_pass) < 0.15
    assert abs(fast.alpha - fast.alpha_expected) < 0.02
    again = an.alpha_generated(pair, s, chars=60_000)
    assert again.accepted == fast.accepted                                 # seeded: replays
    assert 1 <= fast.tokens_per_pass <= 5


def test_alpha_over_the_text_is_the_overlap_averaged_where_the_sampler_wrote(pair):
    """α over the written text, computed inside the vectorised run, against an independent count: the real
    sampler writes a text and Σ min(p, q) is averaged over every one of its positions, row by row."""
    fast = an.alpha_generated(pair, SamplerSettings(gamma=4, seed=5), chars=60_000)
    sampler = SpeculativeSampler(pair, SamplerSettings(gamma=4, seed=5))
    sampler.reset(pair.encode("\n"))
    while len(sampler.written) < 6_000:
        sampler.step()
    ctx = sampler.tokens
    betas = [an.overlap(pair.target_row(ctx[:i])[0], pair.draft_row(ctx[:i])[0])
             for i in range(sampler.prefix_len, len(ctx))]
    slow = float(np.mean(betas))
    # one text of 6,000 tokens: its own spread from blocks of 500 (neighbours are correlated; be generous)
    blocks = np.array(betas[:6_000]).reshape(12, 500).mean(axis=1)
    se = blocks.std(ddof=1) / np.sqrt(len(blocks))
    assert abs(fast.alpha_text - slow) < 4 * se + 2 * fast.alpha_text_ci95
    assert fast.alpha_text_ci95 < 0.005


def test_alpha_over_the_text_does_not_depend_on_gamma_where_the_kept_share_does(pair):
    """The text is p's whatever γ is, so its average overlap is too; the share of guesses kept is not: a pass's
    first guess is the hardest, and with fewer guesses a pass, more of them are first."""
    one, eight = (an.alpha_generated(pair, SamplerSettings(gamma=g, seed=0)) for g in (1, 8))
    assert abs(one.alpha_text - eight.alpha_text) < 2 * (one.alpha_text_ci95 + eight.alpha_text_ci95)
    assert eight.alpha - one.alpha > 2 * (one.alpha_ci95 + eight.alpha_ci95)
    assert one.alpha < one.alpha_text - 2 * one.alpha_ci95     # counted at γ = 1 it reads low


def test_real_pair_first_token_matches_p_chi_square(pair):
    """The real SpeculativeSampler from 慢慢, 3000 seeded runs: first written token vs p (and vs shaped p)."""
    ids = pair.encode("慢慢")
    for kw in ({}, {"temperature": 0.7, "top_k": 20}):
        st = SamplerSettings(gamma=3, **kw)
        p = pair.target_row(ids)[0]
        if st.shapes_rows:
            from models.sampler import shape_row
            p = shape_row(p, st.temperature, st.top_k, st.top_p)
        counts = np.zeros(pair.V, dtype=np.int64)
        sampler = SpeculativeSampler(pair, st)
        for seed in range(3000):
            sampler.settings = SamplerSettings(gamma=3, seed=seed, **kw)
            sampler.reset(ids)
            counts[sampler.step().tokens_written[0]] += 1
        assert chi2_pvalue(counts, p) > 1e-3
        q = pair.draft_row(ids)[0]
        assert chi2_pvalue(counts, q) < 1e-6                                 # and the test has power


def test_tubes_mirror_verify_draw_for_draw(pair):
    ids = pair.encode("慢慢")
    q, p = pair.draft_row(ids)[0], pair.target_row(ids)[0]
    rng = np.random.default_rng(1)
    u = rng.random((4, 400))
    guesses = sample_indices(q, u[1])
    for i in range(400):
        v = verify([guesses[i]], q[None, :], np.array([p, p]), np.array([u[2, i]]), u[3, i])
        tok = guesses[i] if v.n_accepted else v.final_token
        res = residual(p, q)
        expect = guesses[i] if u[2, i] <= p[guesses[i]] / q[guesses[i]] else sample_indices(res, u[3, i:i + 1])[0]
        assert tok == expect
    res = run_tubes(pair, "慢慢", rounds=4, draws=100, seed=1)
    assert res.left_round.sum() == 400 and res.right_round.sum() == 400
    assert np.array_equal(res.right_accepted_round + res.right_replaced_round, res.right_round)
    # replays
    again = run_tubes(pair, "慢慢", rounds=4, draws=100, seed=1)
    assert np.array_equal(res.right_round, again.right_round)


def test_tubes_exact_converges_and_wrong_rules_are_visibly_biased(pair):
    ids = pair.encode("慢慢")
    q, p = pair.draft_row(ids)[0], pair.target_row(ids)[0]
    exact = run_tubes(pair, rounds=200, draws=1000, seed=2)
    assert exact.chi2_p_left > 1e-3 and exact.chi2_p_right > 1e-3
    assert exact.tv_right < 0.02
    over = q > p                                  # tokens the draft over-proposes are never red beads
    assert exact.right_replaced[over].sum() == 0
    for rule in RULES[1:]:
        wrong = run_tubes(pair, rounds=200, draws=1000, seed=2, rule=rule)
        assert wrong.chi2_p_right < 1e-9 and wrong.tv_right > 0.05, rule
        assert wrong.chi2_p_left > 1e-3
    nb = run_tubes(pair, rounds=200, draws=1000, seed=2, rule="draft_only")
    m = np.minimum(p, q) / np.minimum(p, q).sum()
    assert nb.right_replaced.sum() == 0 and 0.5 * np.abs(nb.right_counts / 200_000 - m).sum() < 0.02
    rp = run_tubes(pair, rounds=200, draws=1000, seed=2, rule="resample_from_p")
    a = np.minimum(p, q).sum()
    want = np.minimum(p, q) + (1 - a) * p
    assert 0.5 * np.abs(rp.right_counts / 200_000 - want).sum() < 0.02
    old = run_tubes(pair, rounds=2, draws=50, seed=2, rule="no_bonus")     # the old name of draft_only
    assert old.rule == "draft_only" and old.right_replaced.sum() == 0
    with pytest.raises(InputError):
        run_tubes(pair, rule="nope")
    with pytest.raises(InputError):
        run_tubes(pair, prefix="慢Z")


def test_hardware_reproduces_science_figures():
    r1 = roofline("h100-sxm", "llama-3.1-8b", 1, 0)
    assert round(r1.ms_per_token, 2) == 4.79
    assert round(r1.tokens_per_s) == 209
    assert round(100 * r1.arithmetic_idle, 1) == 99.7
    assert round(r1.device_ops_per_byte) == 295 and round(r1.lanes_to_saturate) == 295
    assert r1.weight_bytes == 16_060_522_496
    r64 = roofline("h100-sxm", "llama-3.1-8b", 64, 0)
    assert round(r64.tokens_per_s, -1) == 13_350
    assert round(100 * r64.arithmetic_busy) == 22
    kv = roofline("h100-sxm", "llama-3.1-8b", 64, 4096)
    assert kv.kv_bytes_per_token == 131_072
    assert round(kv.kv_bytes_per_step / 1e9, 1) == 34.4
    assert round(kv.bytes_per_step / 1e9, 1) == 50.4
    assert round(kv.tokens_per_s, -1) == 4_250
    assert round(DEVICES["h200"].ops_per_byte) == 206
    assert round(100 * busy_fraction("h100-sxm", "llama-3.1-8b", 9)) == 3
    assert MODELS["llama-3.2-1b"].kv_bytes_per_token == 16 * 8 * 64 * 2 * 2
    for bad in (("tpu", "llama-3.1-8b"), ("h100-sxm", "gpt-5")):
        with pytest.raises(InputError):
            roofline(*bad)
    with pytest.raises(InputError):
        roofline("h100-sxm", "llama-3.1-8b", 0, 0)


def test_measurements_folder(tmp_path):
    assert load_measurements(tmp_path / "missing") == {}
    (tmp_path / "h200-run.json").write_text('{"device": {"name": "NVIDIA H200", "copy_bandwidth_GBps": 4300,'
                                           ' "matmul_tflops": 790}, "ms_per_token": 5.1}')
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "other.json").write_text('{"note": "no device figures"}')
    found = load_measurements(tmp_path)
    assert list(found) == ["measured-h200-run"]
    d = found["measured-h200-run"]
    assert d.measured and d.bandwidth_Bps == 4.3e12 and d.flops == 790e12
    r = roofline(d, "llama-3.1-8b", 1, 0)
    assert abs(r.ms_per_token - 16.060522496e9 / 4.3e12 * 1e3) < 1e-9
