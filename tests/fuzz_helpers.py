"""Shared pieces of the hypothesis fuzz tests: per-test budgets and a JSON value strategy."""
from __future__ import annotations

import os

from hypothesis import settings
from hypothesis import strategies as st

LONG = os.environ.get("SPECTABLE_FUZZ") == "long"


def budget(n: int):
    """settings for one fuzz test: n examples in CI (derandomized), 20 x n with SPECTABLE_FUZZ=long."""
    return settings(max_examples=n * 20 if LONG else n)


# Numbers a user-edited file can hold: ordinary, huge, tiny, negative, NaN/Infinity literals, 400-digit ints.
odd_numbers = st.one_of(
    st.integers(-3, 3), st.integers(-(2 ** 70), 2 ** 70), st.just(10 ** 400),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e308, 1e-300, -0.0, 1e12, 0.5, 1.5]))

json_scalars = st.one_of(st.none(), st.booleans(), odd_numbers, st.text(max_size=12))


def json_values(keys=()):
    """Any JSON value (Python's json writes NaN/Infinity as the literals its reader accepts)."""
    names = st.one_of(st.sampled_from(list(keys)), st.text(max_size=8)) if keys else st.text(max_size=8)
    return st.recursive(json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                              st.dictionaries(names, inner, max_size=4)),
                        max_leaves=12)
