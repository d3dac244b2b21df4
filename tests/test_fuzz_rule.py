"""Fuzzing the rule with hypothesis: for any p, q, guesses and uniforms, acceptance.verify gives either the one
user error or a verdict, the torch mirror gives the same one; and on any small distributions the verdicts'
distribution is exact (enumerating the cells of the uniforms, each at a point inside it, weighted by its size)."""
from __future__ import annotations

import itertools

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from corpus.errors import InputError
from models import acceptance
from models.llm.speculative import verify_on_device
from tests.fuzz_helpers import budget

floats = st.one_of(st.floats(-0.5, 1.5), st.sampled_from([0.0, 1.0, float("nan"), float("inf"), -1e-30]))


@st.composite
def distribution(draw, V):
    w = draw(st.lists(st.integers(0, 3), min_size=V, max_size=V).filter(any))
    return np.array(w, dtype=np.float64) / sum(w)


@st.composite
def any_step(draw):
    """Mostly well-formed steps (distributions, guesses q can draw) with every kind of damage mixed in."""
    V, g = draw(st.integers(1, 5)), draw(st.integers(0, 3))
    q = np.array([draw(distribution(V)) for _ in range(g)]).reshape(g, V)
    p = np.array([draw(distribution(V)) for _ in range(g + 1)])
    guesses = [draw(st.sampled_from(np.flatnonzero(q[i]).tolist())) for i in range(g)]
    r = np.array([draw(st.floats(0, 1)) for _ in range(g)])
    u = draw(st.floats(0, 1))
    lenience = 1.0
    for _ in range(draw(st.integers(0, 2))):           # damage: a cell, a guess, a uniform or the lenience
        what = draw(st.sampled_from(["q", "p", "guess", "r", "u", "lenience"]))
        if what == "q" and g:
            q[draw(st.integers(0, g - 1)), draw(st.integers(0, V - 1))] = draw(floats)
        elif what == "p":
            p[draw(st.integers(0, g)), draw(st.integers(0, V - 1))] = draw(floats)
        elif what == "guess" and g:
            guesses[draw(st.integers(0, g - 1))] = draw(st.integers(-2, V + 1))
        elif what == "r" and g:
            r[draw(st.integers(0, g - 1))] = draw(floats)
        elif what == "u":
            u = draw(floats)
        elif what == "lenience":
            lenience = draw(st.sampled_from([0.5, 0.0, -1.0, 2.0, float("nan")]))
    return guesses, q.astype(np.float32), p.astype(np.float32), r, u, lenience


def _numpy(guesses, q, p, r, u, lenience):
    try:
        v = acceptance.verify(guesses, q, p, r, u, lenience)
    except InputError as exc:
        return "error", str(exc)
    assert 0 <= v.final_token < p.shape[1] and 0 <= v.n_accepted <= len(guesses)
    assert np.all(np.isfinite(v.final_row)) and abs(float(v.final_row.sum()) - 1) < 1e-5   # fp32 rows
    return "verdict", (v.n_accepted, v.final_token, v.residual_fallback, v.accepted.tolist(), v.ratios.tolist())


def _torch(guesses, q, p, r, u, lenience):
    try:
        v = verify_on_device(torch.tensor(guesses, dtype=torch.int64).reshape(-1), torch.from_numpy(q),
                             torch.from_numpy(p), torch.from_numpy(r), torch.tensor(u, dtype=torch.float64), lenience)
    except InputError as exc:
        return "error", str(exc)
    return "verdict", (int(v.n_accepted), int(v.final_token), bool(v.residual_fallback), v.accepted.tolist(),
                       v.ratios.tolist())


@budget(300)
@given(any_step())
def test_any_step_is_a_clear_error_or_a_verdict_and_both_mirrors_agree(step):
    a = _numpy(*step)                      # anything but InputError propagates and fails the test
    assert a == _torch(*step)


@st.composite
def small_pair(draw):
    V = draw(st.integers(2, 4))
    g = draw(st.integers(1, 3 if V <= 3 else 2))
    q = np.array([draw(distribution(V)) for _ in range(g)])
    p = np.array([draw(distribution(V)) for _ in range(g + 1)])
    return q, p


@budget(40)
@given(small_pair())
def test_the_verdicts_distribution_is_exact_on_any_small_distributions(pair):
    """Enumerate every guess tuple (weight Π q_i(x_i)), every verdict (first rejection at n, or none: weight
    Π_{i<n} a_i · (1 - a_n), a_i = min(1, p_i/q_i)) with each tested uniform inside its cell (a_i/2 to pass,
    (1 + a_n)/2 to fail), and every cell of the final uniform (the expected row's mass, hit at its midpoint);
    the rule runs at each point and must land in that cell. The first written token must follow p_0, and
    after an accepted first guess a the second must follow p_1: P(x1 = a accepted, x2 = b) = min(q_0, p_0)(a) p_1(b)."""
    q, p = pair
    g, V = q.shape
    first = np.zeros(V)
    joint = np.zeros((V, V))
    for guesses in itertools.product(range(V), repeat=g):
        w_guess = float(np.prod([q[i, x] for i, x in enumerate(guesses)]))
        if w_guess == 0:
            continue
        a = [min(1.0, p[i, x] / q[i, x]) for i, x in enumerate(guesses)]
        for n in range(g + 1):
            w = w_guess * float(np.prod(a[:n])) * (1 - a[n] if n < g else 1.0)
            if w == 0:
                continue
            r = np.array([a[i] / 2 if i < n else (1 + a[i]) / 2 if i == n else 0.5 for i in range(g)])
            row = np.maximum(0.0, p[n] - q[n]) if n < g else p[g]
            row = (row if row.sum() > 0 else p[n]) / (row.sum() if row.sum() > 0 else p[n].sum())
            cdf = np.concatenate([[0.0], np.cumsum(row)])
            for k in np.flatnonzero(row):
                v = acceptance.verify(list(guesses), q, p, r, float((cdf[k] + cdf[k + 1]) / 2))
                assert v.n_accepted == n and v.final_token == k
                written = list(guesses[:n]) + [int(k)]
                first[written[0]] += w * row[k]
                if n >= 1:
                    joint[written[0], written[1]] += w * row[k]
    assert np.max(np.abs(first - p[0])) < 1e-12
    assert np.max(np.abs(joint - np.minimum(q[0], p[0])[:, None] * p[1][None, :])) < 1e-12
