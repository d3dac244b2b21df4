"""Every drafter's long run (spectable drafters, shipped as corpus/tables/nahan-char-drafters.json): the file is a
count of the shipped tables (the chain's entry recounted here matches it exactly), used only at the settings it was
counted at and on the same table files, validated when read back (any JSON gives a checked document or one
InputError), and the CLI writes and prints it."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpus.errors import InputError
from models import drafter_analytics as da
from models.drafters import node_count
from models.sampler import SamplerSettings
from tests.test_core_cli import run


@pytest.fixture(scope="module")
def pair():
    from models.ngram import NGramPair
    return NGramPair.load()


@pytest.fixture(scope="module")
def shipped(pair):
    doc = da.shipped_long_runs(pair, SamplerSettings(gamma=4))
    assert doc is not None, "the long runs are shipped for the char table at γ = 4"
    return doc


def test_the_shipped_long_runs_are_counts_of_the_shipped_tables(pair, shipped):
    s = shipped["settings"]
    assert (s["gamma"], s["seed"], s["chars"], s["prefix"]) == (4, 0, 20_000, "\n")
    # every drafter the counted pair runs (EAGLE and its tree need a network's features)
    assert [p["key"] for p in shipped["points"]] == [k for k, _, name, opts in da.long_run_specs(4)
                                                     if da.runs_on(pair, name, opts)]
    assert "eagle" not in [p["drafter"] for p in shipped["points"]]
    lanes = {"chain": 5, "heads": 5, "tree_2x2": node_count([2, 2]) + 1, "tree_2x4": node_count([2] * 4) + 1,
             "tree_3x4": node_count([3] * 4) + 1, "tree_2x4_heads": node_count([2] * 4) + 1}
    for p in shipped["points"]:
        assert p["tokens"] >= 20_000 and p["tokens_per_pass"] == pytest.approx(p["tokens"] / p["passes"])
        if p["key"] in lanes:
            assert p["lanes_per_pass"] == lanes[p["key"]]
        else:                                    # lookup: copied + 1, between 1 and γ + 1
            assert 1 < p["lanes_per_pass"] < 5
    # the chain recounted now is the file's, to the last token (same seed, same prefix, same tables)
    fresh = da.long_runs(pair, SamplerSettings(gamma=4, seed=0), specs=da.long_run_specs(4)[:1])["points"][0]
    chain = shipped["points"][0]
    assert {k: fresh[k] for k in ("tokens", "passes", "alpha", "lanes_per_pass")} == \
        {k: chain[k] for k in ("tokens", "passes", "alpha", "lanes_per_pass")}


def test_the_long_runs_are_used_only_where_they_were_counted(pair, shipped, monkeypatch):
    assert da.shipped_long_runs(pair, SamplerSettings(gamma=3)) is None
    assert da.shipped_long_runs(pair, SamplerSettings(gamma=4, temperature=0.5)) is None
    assert da.shipped_long_runs(pair, SamplerSettings(gamma=4, top_k=5)) is None
    real = da.table_files(pair)
    monkeypatch.setattr(da, "table_files", lambda p: dict(real, heads="0" * 64))
    assert da.shipped_long_runs(pair, SamplerSettings(gamma=4)) is None     # another heads table
    monkeypatch.undo()
    # the speedups follow the device, model, context and c of the moment, from the same counts
    a = da.with_speedups(shipped["points"], "h100-sxm", "llama-3.1-8b", 0, 0.1)
    b = da.with_speedups(shipped["points"], "h100-sxm", "llama-3.1-8b", 0, 0.3)
    chain_a, chain_b = a[0], b[0]
    assert chain_a["speedup_model"] > chain_b["speedup_model"]            # a dearer draft costs the chain
    lookup_a, lookup_b = a[1], b[1]
    assert lookup_a["speedup_model"] == lookup_b["speedup_model"]         # lookup runs no draft model
    from models.drafters import DraftCost
    want = da.speedup_model(chain_a["tokens_per_pass"], 5.0, DraftCost(draft_runs=4), "h100-sxm", "llama-3.1-8b",
                            0, 0.1)["speedup_model"]
    assert chain_a["speedup_model"] == pytest.approx(want)


def test_a_bad_long_run_file_is_refused_in_one_line(tmp_path, pair, shipped):
    good = json.dumps(shipped)
    assert da.parse_long_runs(good)["points"] == shipped["points"]
    bad = [
        "not json", "[]", json.dumps({"schema": "other"}),
        good.replace('"schema": "spectable-drafters/1"', '"schema": "spectable-drafters/9"'),
        json.dumps(dict(shipped, points=[])),
        json.dumps(dict(shipped, settings=dict(shipped["settings"], gamma=0))),
        json.dumps(dict(shipped, points=[dict(shipped["points"][0], tokens_per_pass=-1)])),
        json.dumps(dict(shipped, points=[dict(shipped["points"][0], alpha=1.5)])),
        good.replace(f'"lanes_per_pass": {shipped["points"][0]["lanes_per_pass"]}', '"lanes_per_pass": NaN', 1),
        json.dumps(dict(shipped, points=[dict(shipped["points"][0], passes=True)])),
    ]
    for text in bad:
        with pytest.raises(InputError) as exc:
            da.parse_long_runs(text)
        assert "\n" not in str(exc.value)
    path = tmp_path / "x-drafters.json"
    path.write_text("{broken", encoding="utf-8")
    with pytest.raises(InputError, match="x-drafters.json"):
        da.shipped_long_runs(pair, SamplerSettings(gamma=4), path=path)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                     max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(doc=st.fixed_dictionaries({"schema": st.just(da.LONG_RUN_SCHEMA)},
                                  optional={"settings": _json, "files": _json, "points": _json}) | _json)
def test_any_json_is_a_checked_document_or_an_input_error(doc):
    try:
        text = json.dumps(doc)
    except ValueError:
        return
    try:
        out = da.parse_long_runs(text)
    except InputError:
        return
    for p in out["points"]:
        for k in ("tokens_per_pass", "lanes_per_pass", "alpha", "alpha_per_position"):
            assert math.isfinite(p[k])
        assert 0 <= p["alpha"] <= 1 and p["tokens_per_pass"] >= 1 and p["lanes_per_pass"] >= 1


def test_cli_counts_prints_and_writes_the_long_runs(tmp_path, capsys):
    out = tmp_path / "d.json"
    rc, stdout, err = run(capsys, "drafters", "--chars", "40", "--gamma", "2", "--out", str(out), "--json")
    assert rc == 0, err
    doc = json.loads(stdout)
    assert doc["schema"] == da.LONG_RUN_SCHEMA and doc["settings"]["chars"] == 40 and doc["device"] == "h100-sxm"
    from models.ngram import NGramPair
    counted = NGramPair.load()
    assert [p["key"] for p in doc["points"]] == [k for k, _, name, opts in da.long_run_specs(2)
                                                 if da.runs_on(counted, name, opts)]
    assert all(p["speedup_model"] > 0 for p in doc["points"])
    written = da.parse_long_runs(out.read_text(encoding="utf-8"))
    assert [p["tokens"] for p in written["points"]] == [p["tokens"] for p in doc["points"]]
    rc, stdout, _ = run(capsys, "drafters", "--chars", "30", "--gamma", "2")
    assert rc == 0 and "tokens/pass" in stdout and "tree 3×2 (chain)" in stdout
    for args in (["--chars", "0"], ["--gamma", "0"], ["--device", "nope"], ["--c", "-1"],
                 ["--out", str(tmp_path / "no" / "d.json")]):
        rc, _, err = run(capsys, "drafters", "--chars", "20", *args)
        assert rc == 2 and err.strip().startswith("spectable: error:") and len(err.strip().splitlines()) == 1, args
