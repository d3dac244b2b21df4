"""Settings files, fuzzed: any content gives validated settings, or the file set aside plus defaults; never another
exception, nothing written anywhere but the file's own folder, and every value in range for the widgets."""
from __future__ import annotations

import json
import math
from dataclasses import asdict, fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.settings import DEFAULTS, FIELDS, INT32_MAX, AppSettings, load_settings, parse_settings, save_settings
from corpus.errors import InputError

NAMES = [f.name for f in fields(AppSettings)]
numbers = st.one_of(st.integers(), st.integers(min_value=-2**70, max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e400, -1e400, 2**31, 2**63]))
scalars = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=300),
                    st.sampled_from(["tour", "lab", "zh", "en", "exact", "no_bonus", "target", "h200", ""]))
json_values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8),
                                                                                              kids, max_size=4),
                           max_leaves=12)
settings_dicts = st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=10), json_values, max_size=12)


def assert_valid(s: AppSettings) -> None:
    """Every field has its declared type, is finite and lies in its range; ImGui's int inputs can hold it."""
    for name, spec in FIELDS.items():
        v = getattr(s, name)
        assert type(v) is spec.kind, (name, v)
        if spec.kind in (int, float):
            assert math.isfinite(v) and spec.lo <= v <= spec.hi, (name, v)
        if spec.kind is int:
            assert -2**31 <= v <= INT32_MAX
        legal = spec.legal()
        if legal is not None:
            assert v in legal, (name, v)
        if spec.max_len is not None:
            assert 1 <= len(v) <= spec.max_len
    assert s == AppSettings(**asdict(s)).clamp()          # validated settings are a fixed point


def _load_in(folder, content: bytes):
    path = folder / "settings.json"
    path.write_bytes(content)
    before = {p.name for p in folder.iterdir()}
    s, msg = load_settings(path)
    assert_valid(s)
    after = {p.name for p in folder.iterdir()}
    if msg is None:
        assert after == before                           # read, nothing written
    else:
        assert "set aside as settings.json.corrupt-" in msg and s == DEFAULTS
        new = after - before
        assert after - new == before - {"settings.json"} and len(new) == 1
        assert (folder / new.pop()).read_bytes() == content          # set aside whole, never edited
    return s, msg


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(settings_dicts)
def test_any_json_object_gives_valid_settings_or_is_set_aside(tmp_path_factory, raw):
    folder = tmp_path_factory.mktemp("cfg")
    s, msg = _load_in(folder, json.dumps(raw).encode("utf-8"))
    typed_ok = all(_well_typed(k, v) for k, v in raw.items() if k in FIELDS)
    assert (msg is None) == typed_ok, (raw, msg)


def _well_typed(name, v) -> bool:
    kind = FIELDS[name].kind
    if kind is bool:
        return isinstance(v, bool)
    if kind is str:
        return isinstance(v, str)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if isinstance(v, float) and not math.isfinite(v):
        return False
    return kind is float or float(v).is_integer()


@settings(max_examples=100, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(lambda t: t.encode("utf-8")),
                 json_values.map(lambda v: json.dumps(v).encode("utf-8"))))
def test_any_bytes_never_raise(tmp_path_factory, content):
    _load_in(tmp_path_factory.mktemp("cfg"), content)


@settings(max_examples=100, deadline=None, database=None)
@given(settings_dicts)
def test_parse_raises_only_the_user_error(raw):
    try:
        assert_valid(parse_settings(json.dumps(raw)))
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)


@pytest.mark.parametrize("text", ['{"gamma": Infinity}', '{"chapter": 1e400}', '{"seed": NaN}', "[" * 100_000,
                                  '{"window_w": "wide"}', '{"prompt": 7}', '{"fullscreen": 1}'])
def test_files_that_crashed_before_are_set_aside(tmp_path, text):
    s, msg = _load_in(tmp_path, text.encode("utf-8"))
    assert msg is not None and s == DEFAULTS


def test_out_of_range_values_are_clamped_and_saved_clamped(tmp_path):
    raw = {"seed": 2**31 + 5, "top_k": 10**12, "window_w": 10**9, "window_h": 10**9, "gamma": -3,
           "device": "abacus", "prompt": "长" * 1000, "ui_scale": 1e300}
    s, msg = _load_in(tmp_path, json.dumps(raw).encode("utf-8"))
    assert msg is None
    assert (s.seed, s.window_w, s.window_h, s.gamma, s.device) == (INT32_MAX, 8192, 8192, 1, DEFAULTS.device)
    assert s.prompt == "长" * FIELDS["prompt"].max_len and s.ui_scale == 2.5
    save_settings(s, tmp_path / "settings.json")
    assert json.loads((tmp_path / "settings.json").read_text(encoding="utf-8"))["window_w"] == 8192


def test_a_stale_temp_file_of_the_settings_is_removed_and_a_fresh_one_kept(tmp_path):
    import os
    import time
    stale = tmp_path / ".settings.json.k1ll3d.tmp.json"
    fresh = tmp_path / ".settings.json.wr1t1ng.tmp.json"
    other = tmp_path / ".notes.json.x.tmp.json"
    for p in (stale, fresh, other):
        p.write_text('{"gamma": ')
    old = time.time() - 3600
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    load_settings(tmp_path / "settings.json")
    assert not stale.exists() and fresh.exists() and other.exists()
