"""The rule refuses inputs that are no step (a guess outside [0, V), q(x) = 0, rows that are no distribution,
uniforms outside [0, 1]) with the same InputError in numpy and in the torch mirror; the decoder reports it."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from corpus.errors import InputError
from models import acceptance
from models.llm.speculative import verify_on_device


def _step(V=5, gamma=2, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.random((gamma, V)).astype(np.float32)
    p = rng.random((gamma + 1, V)).astype(np.float32)
    q /= q.sum(1, keepdims=True)
    p /= p.sum(1, keepdims=True)
    return [1, 3][:gamma], q, p, np.array([0.3, 0.6])[:gamma], 0.4


def _outcome_numpy(guesses, q, p, r, u, lenience=1.0):
    try:
        v = acceptance.verify(guesses, q, p, r, u, lenience)
    except InputError as exc:
        return "error", str(exc)
    return "verdict", (v.n_accepted, v.final_token, v.residual_fallback)


def _outcome_torch(guesses, q, p, r, u, lenience=1.0):
    try:
        v = verify_on_device(torch.as_tensor(np.asarray(guesses)), torch.from_numpy(q),
                             torch.from_numpy(p), torch.as_tensor(np.asarray(r, dtype=np.float64)),
                             torch.tensor(float(u), dtype=torch.float64), lenience)
    except InputError as exc:
        return "error", str(exc)
    return "verdict", (int(v.n_accepted), int(v.final_token), bool(v.residual_fallback))


def _mutate(case):
    g, q, p, r, u = _step()
    if case == "guess -1":
        g = [-1, 3]
    elif case == "guess V":
        g = [1, 5]
    elif case == "q(x) = 0":
        q[1] = [0.25, 0.25, 0.25, 0.0, 0.25]
    elif case == "NaN in q":
        q[0, 2] = np.nan
    elif case == "inf in p":
        p[2, 0] = np.inf
    elif case == "negative p":
        p[1, 0] = -0.1
        p[1, 1] += 0.1
    elif case == "q not normalised":
        q[0] *= 2
    elif case == "p all zero":
        p[2] = 0.0
    elif case == "r negative":
        r = np.array([0.3, -0.5])
    elif case == "r NaN":
        r = np.array([np.nan, 0.5])
    elif case == "u above 1":
        u = 1.5
    return g, q, p, r, u


CASES = {
    "guess -1": "guess 1 is token -1, outside the vocabulary 0..4",
    "guess V": "guess 2 is token 5, outside the vocabulary 0..4",
    "q(x) = 0": "guess 2 (token 3) has no draft probability",
    "NaN in q": "q row 1 has a NaN, infinite or negative entry",
    "inf in p": "p row 3 has a NaN, infinite or negative entry",
    "negative p": "p row 2 has a NaN, infinite or negative entry",
    "q not normalised": "q row 1 does not sum to 1",
    "p all zero": "p row 3 does not sum to 1",
    "r negative": "test uniform r[2] is not in [0, 1]",
    "r NaN": "test uniform r[1] is not in [0, 1]",
    "u above 1": "the final uniform is not in [0, 1]",
}


@pytest.mark.parametrize("case", list(CASES))
def test_numpy_rule_and_torch_mirror_refuse_alike(case):
    args = _mutate(case)
    a, b = _outcome_numpy(*args), _outcome_torch(*args)
    assert a[0] == "error" and CASES[case] in a[1], a
    assert a == b                                             # same error type, same message


def test_shape_and_lenience_errors_are_the_same_in_both():
    g, q, p, r, u = _step()
    for args, lenience in [((g, q, p[:2], r, u), 1.0), ((g, q, p, r[:1], u), 1.0), ((g, q, p, r, u), 0.0),
                           ((g, q, p, r, u), float("nan")), (([1.5, 2.0], q, p, r, u), 1.0),
                           ((g, q.astype(np.int64), p, r, u), 1.0)]:
        a = _outcome_numpy(*args, lenience=lenience)
        b = _outcome_torch(*args, lenience=lenience)
        assert a[0] == "error" and a == b, (a, b)


def test_a_well_formed_step_still_agrees_bit_for_bit():
    for seed in range(20):
        args = _step(V=7, gamma=2, seed=seed)
        a, b = _outcome_numpy(*args), _outcome_torch(*args)
        assert a[0] == "verdict" and a == b


def test_the_decoder_reports_nan_rows_from_a_broken_model():
    """A draft whose weights are NaN (an fp16 overflow looks the same) gives NaN q rows: the pass stops with
    the rule's error after its one host read, instead of writing tokens drawn from NaN."""
    from models.llm.model import CONFIGS, build_random
    from models.llm.speculative import SpeculativeDecoder
    target = build_random(CONFIGS["tiny"], seed=1)
    draft = build_random(CONFIGS["tiny-draft"], seed=2)
    with torch.no_grad():
        draft.norm.weight.fill_(float("nan"))
    for m in (target, draft):
        m.setup_caches(1, 64)
    dec = SpeculativeDecoder(target, draft, gamma=3, temperature=1.0, seed=0)
    with pytest.raises(InputError, match="guess 1 .* has no draft probability .q is 0 or NaN there."):
        dec.generate([1, 2, 3], 10)


def _outcome_tree(guesses, q, p, r, u):
    """The multi-candidate rule on the same step as a chain (one candidate per position)."""
    from models.multi_candidate import verify_tree
    try:
        tv = verify_tree(list(range(-1, len(guesses) - 1)), guesses, q, list(range(len(guesses))), p, r, u)
    except InputError as exc:
        return "error", str(exc)
    return "verdict", (tv.n_accepted, tv.final_token, tv.residual_fallback)


@pytest.mark.parametrize("case", list(CASES))
def test_the_multi_candidate_rule_refuses_what_verify_refuses_with_the_same_line(case):
    args = _mutate(case)
    assert _outcome_tree(*args) == _outcome_numpy(*args)


def test_the_multi_candidate_rule_checks_every_node_and_each_position():
    """A fault in a branch the walk never reaches is still refused (verify checks every guess, not only the
    tested ones), and verify_position alone checks its candidates' rows, its p row and its uniforms."""
    from models.multi_candidate import verify_position, verify_tree
    g, q, p, r, u = _step(V=5, gamma=2)
    p3 = np.vstack([p, p[1:2]])                    # root -> node 0 -> node 1, and node 2 a sibling of node 0
    assert _outcome_tree(g, q, p, r, u)[0] == "verdict"
    bad_q = np.vstack([q, 2 * q[:1]])             # the sibling's row: q(x) > 0, but no distribution
    with pytest.raises(InputError, match="q row 3 does not sum to 1"):
        verify_tree([-1, 0, -1], [1, 3, 2], bad_q, [0, 1, 2], p3, [0.0, 0.6, 0.3], u)
    with pytest.raises(InputError, match=r"test uniform r\[3\] is not in \[0, 1\]"):
        verify_tree([-1, 0, -1], [1, 3, 2], q, [0, 1, 1], p3, [0.0, 0.6, 2.0], u)
    rows = np.vstack([q[0], q[0]])
    for p_row, rr, message in [(np.full(5, 0.3), [0.3, 0.6], "p row 1 does not sum to 1"),
                               (np.array([np.nan, 0.25, 0.25, 0.25, 0.25]), [0.3, 0.6], "p row 1 has a NaN"),
                               (p[0], [0.3, -0.1], r"test uniform r\[2\] is not in \[0, 1\]")]:
        with pytest.raises(InputError, match=message):
            verify_position([1, 3], rows, p_row, rr)
    with pytest.raises(InputError, match="q row 2 does not sum to 1"):
        verify_position([1, 3], np.vstack([q[0], 2 * q[0]]), p[0], [0.3, 0.6])
