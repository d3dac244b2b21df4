"""The models behind the lesson's numbers: the pair's long-run facts (cached per table), a short run's counts,
the pass roofline (γ + 1 positions of one sequence read its KV cache once) and the demo seed search."""
from __future__ import annotations

import json

import numpy as np
import pytest

from corpus.errors import InputError
from models import analytics as an
from models import demo
from models.hardware import pass_busy, roofline
from models.ngram import NGramPair
from models.sampler import SamplerSettings, SpeculativeSampler
from tests.core_helpers import TablePair


@pytest.fixture(scope="module")
def pair():
    return NGramPair.load()


# ---- the pair's facts ------------------------------------------------------------------------------
def test_pair_facts_are_the_long_run_and_the_cli_reports_the_same(pair, capsys):
    from app.cli import main
    pf = an.pair_facts(pair)
    run = an.alpha_generated(pair, SamplerSettings(gamma=4), chars=an.LONG_RUN_TOKENS)
    # α is Σ min(p, q) averaged over the run's text; the kept share is its count of verdicts
    assert (pf.alpha, pf.kept_share, pf.accepted, pf.tested, pf.tokens, pf.passes) == \
        (run.alpha_text, run.alpha, run.accepted, run.tested, run.tokens, run.passes)
    assert pf.alpha_measure == "text" and pf.alpha_ci95 == run.alpha_text_ci95 and pf.kept_ci95 == run.alpha_ci95
    assert pf.tokens > 190_000 and pf.tokens_per_pass_counted == run.tokens_per_pass
    assert pf.alpha_corpus == an.alpha_corpus(pair)
    assert pf.tokens_per_pass_formula == an.tokens_per_pass_formula(pf.alpha, 4)
    g, sp = pf.best(0.1)
    assert sp == max(an.speedup(pf.alpha, k, 0.1) for k in range(1, 65)) and g == an.best_gamma(pf.alpha, 0.1)
    assert main(["alpha", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli["alpha"] == pf.alpha and cli["alpha_generated"] == pf.kept_share
    from app.derived import SHORT_COUNTS
    assert cli["alpha_parts"] == pf.alpha_parts(SHORT_COUNTS)[0] and len(cli["alpha_parts"]) == SHORT_COUNTS
    assert cli["tokens_per_pass_counted"] == pf.tokens_per_pass_counted
    assert cli["best_gamma"] == g and cli["best_speedup"] == sp


def test_pair_facts_are_computed_once_per_table(pair):
    first = an.pair_facts(pair)
    assert an.pair_facts(pair) is first
    again = NGramPair.load()                          # a second load of the same table shares the entry
    assert an.table_key(again) == an.table_key(pair) and an.pair_facts(again) is first
    assert an.pair_facts(pair, gamma=2) is not first and an.pair_facts(pair, gamma=2).gamma == 2
    word = NGramPair.load(tokens="word")
    assert an.table_key(word) != an.table_key(pair)
    small = an.pair_facts(word, chars=5_000)
    assert small.table == an.table_key(word) and small.alpha != first.alpha


def test_a_short_run_is_counted_as_that_run(pair):
    sampler = SpeculativeSampler(pair, SamplerSettings(gamma=4, seed=0))
    sampler.reset(pair.encode("慢慢"))
    traces = [sampler.step() for _ in range(12)]
    c = an.count_run(traces)
    assert c.passes == 12 and c.written == len(sampler.written)
    assert c.accepted == sum(tr.n_accepted for tr in traces) and c.tested == sum(tr.tested for tr in traces)
    assert c.bonus + c.replacements == 12
    assert c.bonus == sum(tr.n_accepted == 4 for tr in traces)
    assert c.tokens_per_pass == pytest.approx(c.written / 12)
    # A short run's kept share is not the pair's α: it is only what this run counted.
    assert c.accepted / c.tested != an.pair_facts(pair).alpha


# ---- the pass roofline ------------------------------------------------------------------------------
def test_checking_positions_belong_to_one_sequence():
    one = roofline("h100-sxm", "llama-3.1-8b", 1, 4096)
    check = roofline("h100-sxm", "llama-3.1-8b", 1, 4096, positions=5)
    as_batch = roofline("h100-sxm", "llama-3.1-8b", 5, 4096)             # the old, wrong model of a check
    assert check.bytes_per_step == one.bytes_per_step                 # the KV cache is read once
    assert check.ops_per_step == 5 * one.ops_per_step
    assert check.arithmetic_busy == pytest.approx(5 * one.arithmetic_busy)   # still memory-bound
    assert as_batch.bytes_per_step > check.bytes_per_step
    assert check.arithmetic_busy > as_batch.arithmetic_busy
    # 64 sequences at 4,096 tokens checking γ + 1 = 5 positions each, worked by hand from the data sheet and
    # Meta's config: 50.42 GB read at 3.35 TB/s against 320 positions × (2 × params + attention over 4,096
    # tokens: 4 × 32 layers × 4,096 hidden × 4,096) at 989 TFLOP/s.
    params = 8_030_261_248
    read_s = (2 * params + 64 * 4096 * 131_072) / 3.35e12
    ops = 64 * 5 * (2 * params + 4 * 32 * 4096 * 4096)
    assert pass_busy("h100-sxm", "llama-3.1-8b", 64, 5, 4096) == pytest.approx(ops / 989e12 / read_s, rel=1e-9)
    assert pass_busy("h100-sxm", "llama-3.1-8b", 64, 1, 4096) == pytest.approx(ops / 5 / 989e12 / read_s, rel=1e-9)
    # The batch figures SCIENCE.md teaches are unchanged.
    r = roofline("h100-sxm", "llama-3.1-8b", 64, 0)
    assert round(r.tokens_per_s, -1) == 13350 and f"{100 * r.arithmetic_busy:.0f}%" == "22%"
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InputError):
            roofline("h100-sxm", "llama-3.1-8b", 1, 0, positions=bad)


def test_attention_arithmetic_grows_with_the_context():
    """Attention's arithmetic is counted (issue 34: a long-context example without it read half its arithmetic):
    none without a cache, an eighth of the weights' at 4,096 tokens, about as much as the weights' at 32,768."""
    weights = 2 * 8_030_261_248
    for ctx, share in ((0, 0.0), (4096, 0.134), (32768, 1.07)):
        r = roofline("h100-sxm", "llama-3.1-8b", 1, ctx)
        assert r.attention_ops_per_step / weights == pytest.approx(share, abs=0.01), ctx
        assert r.ops_per_step == pytest.approx(weights + r.attention_ops_per_step)
    # 8 sequences of 32,768 tokens read what 64 of 4,096 read (the same 262,144 cached tokens) and fit in an H100's
    # 80 GB; 64 of 32,768 would need about 291 GB and do not.
    fit = roofline("h100-sxm", "llama-3.1-8b", 8, 32768, positions=5)
    assert fit.bytes_per_step == roofline("h100-sxm", "llama-3.1-8b", 64, 4096).bytes_per_step and fit.fits_in_memory
    assert not roofline("h100-sxm", "llama-3.1-8b", 64, 32768).fits_in_memory
    no_cache = roofline("h100-sxm", "llama-3.1-8b", 8, 0, positions=5)
    assert fit.arithmetic_ms_per_step > 2 * no_cache.arithmetic_ms_per_step


# ---- the demo seed search ---------------------------------------------------------------------------
def _passes(pair, prompt, settings, seed, n):
    from dataclasses import replace
    s = SpeculativeSampler(pair, replace(settings, seed=seed))
    s.reset(pair.encode(prompt))
    return [s.step() for _ in range(n)]


@pytest.mark.parametrize("prompt", ["慢慢", "孔乙己"])
def test_demo_seed_shows_the_events_in_order_and_is_the_first_that_does(pair, prompt):
    st = SamplerSettings(gamma=4)
    found = demo.find_demo_seed(pair, pair.encode(prompt), st, ["kept_and_replaced", "all_kept_bonus"])
    first, second = _passes(pair, prompt, st, found.seed, 2)
    assert 0 < first.n_accepted < 4 and first.final_kind == "replacement"       # dots, then a diamond
    assert second.n_accepted == 4 and second.final_kind == "bonus"              # all kept, the bonus
    assert found.tries == found.seed + 1
    for seed in range(found.seed):                                             # no earlier seed does
        a, b = _passes(pair, prompt, st, seed, 2)
        assert not (0 < a.n_accepted < 4 and b.n_accepted == 4)
    assert demo.find_demo_seed(pair, pair.encode(prompt), st, ["kept_and_replaced", "all_kept_bonus"]) == found


def test_demo_seed_for_a_gamble_and_bad_requests(pair):
    st = SamplerSettings(gamma=4)
    g = demo.find_demo_seed(pair, pair.encode("慢慢"), st, ["gamble"])
    (tr,) = _passes(pair, "慢慢", st, g.seed, 1)
    assert any(tr.ratios[i] < 1 for i in range(tr.tested))
    with pytest.raises(InputError):
        demo.find_demo_seed(pair, pair.encode("慢慢"), st, ["a_pink_elephant"])
    with pytest.raises(InputError):
        demo.find_demo_seed(pair, pair.encode("慢慢"), st, [])
    # Draft and target always disagree (one-hot on different tokens): every guess is rejected, no bonus ever.
    V = 3
    p = np.tile(np.eye(V)[0], (V, 1))
    q = np.tile(np.eye(V)[1], (V, 1))
    never = TablePair(p, q)
    with pytest.raises(InputError, match="no seed"):
        demo.find_demo_seed(never, [0], st, ["all_kept_bonus"], max_tries=50)
    assert demo.find_demo_seed(never, [0], st, ["first_rejected"]).seed == 0


def test_generated_text_beats_the_book_because_of_unseen_histories(pair):
    """What chapter 7 says: α over written text is above α over the book because about one tested position in
    seven has a two-character history the book never has; there p = q and every guess passes. Without those
    positions the written text's mean overlap is the book's."""
    pf = an.pair_facts(pair)
    share = pf.backed_off_share
    assert 0.08 < share < 0.25
    assert pf.alpha > pf.alpha_corpus + 0.03
    seen_only = (pf.alpha_expected - share) / (1 - share)          # β = 1 exactly at the backed-off positions
    assert seen_only == pytest.approx(pf.alpha_corpus, abs=0.01)
    assert an.pair_facts(pair, settings=SamplerSettings(temperature=0.5), chars=2_000).backed_off == -1
