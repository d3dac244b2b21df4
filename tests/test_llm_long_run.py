"""The shipped neural pair's long run (models.long_runs): checked when read, tied to the weights, what ch. 8 quotes."""
from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given

from corpus.errors import InputError
from fuzz_helpers import budget, json_values
from models import long_runs


def _raw():
    return json.loads(long_runs.SHIPPED.read_text(encoding="utf-8"))


def test_the_shipped_long_run_is_long_and_sure():
    """Long enough that α is known to ±0.005 (95 %), and consistent: α = accepted / tested."""
    lr = long_runs.load(long_runs.SHIPPED)
    assert lr.tokens >= 30_000 and lr.runs >= 10 and lr.alpha_ci95 <= 0.005
    assert lr.alpha == pytest.approx(lr.accepted / lr.tested)
    assert 1 < lr.tokens_per_pass <= lr.gamma + 1


def test_the_table_quotes_it_for_the_shipped_pair_only_at_its_settings():
    from app import pairs
    from models import analytics
    from models.sampler import SamplerSettings
    pair = pairs.load("neural")
    lr = long_runs.load(long_runs.SHIPPED)
    pf = analytics.pair_facts(pair, lr.gamma, SamplerSettings(gamma=lr.gamma), seed=0)
    assert (pf.alpha, pf.tokens, pf.runs) == (lr.alpha, lr.tokens, lr.runs) and math.isfinite(pf.alpha_ci95)
    # Another γ is not what was counted: the live (short) run, with no interval.
    other = analytics.pair_facts(pair, lr.gamma - 1, SamplerSettings(gamma=lr.gamma - 1), seed=0, chars=300)
    assert other.tokens < 1000 and math.isnan(other.alpha_ci95)


def test_other_weights_never_read_it(tmp_path):
    """A pair whose weights differ (retrained, another checkpoint) gets no shipped figure."""
    from types import SimpleNamespace
    lr = long_runs.load(long_runs.SHIPPED)
    fake = tmp_path / "m"
    fake.mkdir()
    (fake / "model.safetensors").write_bytes(b"not the shipped weights")
    pair = SimpleNamespace(sources={"target": str(fake), "draft": str(fake)})
    settings = SimpleNamespace(gamma=lr.gamma, temperature=lr.temperature, top_k=lr.top_k, top_p=lr.top_p)
    assert long_runs.shipped_for(pair, settings) is None


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(schema="x"), "schema"), (lambda d: d.update(alpha=float("nan")), "alpha"),
    (lambda d: d.update(tested=0), "tested"), (lambda d: d.update(accepted=d["tested"] + 1), "counts disagree"),
    (lambda d: d.update(alpha=0.1), "accepted / tested"), (lambda d: d.update(gamma=True), "gamma"),
    (lambda d: d.update(extra=1), "unknown key"), (lambda d: d.pop("date"), "date"),
])
def test_a_bad_long_run_file_is_refused(change, words):
    raw = _raw()
    change(raw)
    with pytest.raises(InputError, match=words):
        long_runs.parse(raw, "f")


@budget(150)
@given(json_values(tuple(_raw())))
def test_any_json_is_a_long_run_or_one_input_error(raw):
    try:
        lr = long_runs.parse(raw, "fuzz")
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert math.isfinite(lr.alpha) and lr.accepted <= lr.tested


@budget(100)
@given(json_values())
def test_any_field_value_is_checked(value):
    base = _raw()
    for key in list(base):
        raw = copy.deepcopy(base)
        raw[key] = value
        try:
            long_runs.parse(raw, "fuzz")
        except InputError:
            pass
