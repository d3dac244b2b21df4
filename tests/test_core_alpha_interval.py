"""α's 95 % interval: the ratio estimator over a long run's independent texts, checked against the binomial
interval where the units are plain coin tosses, and against the spread of the pair's α over seeds."""
import math

import numpy as np
import pytest

from models import analytics
from models.ngram import NGramPair


def test_the_ratio_interval_is_the_binomial_one_for_independent_tosses():
    rng = np.random.default_rng(7)
    trials = rng.integers(200, 400, size=500)
    hits = rng.binomial(trials, 0.64)
    r = hits.sum() / trials.sum()
    want = 1.96 * math.sqrt(r * (1 - r) / trials.sum())
    assert analytics.ratio_ci95(hits, trials) == pytest.approx(want, rel=0.15)
    # units that all say the same thing say nothing of the spread; one unit cannot say it at all
    assert analytics.ratio_ci95(np.full(10, 64), np.full(10, 100)) == 0.0
    assert math.isnan(analytics.ratio_ci95(np.array([3]), np.array([5])))
    assert math.isnan(analytics.ratio_ci95(np.array([3, 0]), np.array([5, 0])))     # empty units left out


def test_the_long_run_s_interval_covers_other_seeds():
    """Seeds 1–3's α each fall within seed 0's α ± (its half-width and theirs combined): the interval is the size
    of the real spread, not a figure of speech; and it is a few thousandths, not zero."""
    pair = NGramPair.load()
    base = analytics.pair_facts(pair, 4, seed=0)
    assert base.runs >= 32 and 0.0005 < base.alpha_ci95 < 0.01
    for seed in (1, 2, 3):
        other = analytics.pair_facts(pair, 4, seed=seed)
        assert abs(other.alpha - base.alpha) < math.hypot(base.alpha_ci95, other.alpha_ci95) * 1.5, seed
