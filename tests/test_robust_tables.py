"""Count tables and manifests are validated at load; control characters in a corpus are refused; a table and
its manifest are one unit (a build killed between the two renames is detected)."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from corpus.build import build_and_save
from corpus.errors import InputError
from corpus.tables import load_tables, manifest_path
from models.ngram import NGramPair


@pytest.fixture()
def table(tmp_path):
    """A small real table on disk; returns (path, its arrays as a dict)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "01-a.txt").write_text("标题\n甲乙丙甲乙\n丁甲\n", encoding="utf-8")
    (src / "02-b.txt").write_text("题二\n乙丙乙，戊\n", encoding="utf-8")
    out = tmp_path / "t.npz"
    build_and_save([src], out)
    with np.load(out) as z:
        arrays = {k: z[k] for k in z.files}
    return out, arrays


def _save(path, arrays, **changes):
    d = dict(arrays)
    for k, v in changes.items():
        if v is None:
            d.pop(k)
        else:
            d[k] = v
    np.savez(path, **d)
    return path


def _manifest(arrays, **changes):
    m = json.loads(str(arrays["manifest"]))
    m.update(changes)
    return np.array(json.dumps(m))


CORRUPTIONS = {
    "manifest not JSON": (lambda a: {"manifest": np.array("{not json")}, "not valid JSON"),
    "manifest is a list": (lambda a: {"manifest": np.array("[1, 2]")}, "must be an object"),
    "manifest nested 200,000 deep": (lambda a: {"manifest": np.array("[" * 200_000 + "]" * 200_000)}, "nested"),
    "manifest V is text": (lambda a: {"manifest": _manifest(a, V="x")}, "manifest V must be a whole number"),
    "manifest N wrong": (lambda a: {"manifest": _manifest(a, N=int(a["unigram"].sum()) + 1)}, "sum to"),
    "manifest of another format": (lambda a: {"manifest": _manifest(a, format="gpt2")}, "format"),
    "manifest array missing": (lambda a: {"manifest": None}, "missing manifest"),
    "manifest with NaN": (lambda a: {"manifest": _manifest(a, normalisation=float("nan"))}, "NaN is not a finite"),
    "manifest pieces not objects": (lambda a: {"manifest": _manifest(a, pieces=[1, 2])}, "pieces\\[0\\] must be an"),
    "manifest piece without a file": (lambda a: {"manifest": _manifest(a, pieces=[{"title": "x"}])}, "pieces\\[0\\].file"),
    "short bi_indptr": (lambda a: {"bi_indptr": a["bi_indptr"][:-1]}, "bi_indptr has"),
    "bi_indptr out of order": (lambda a: {"bi_indptr": a["bi_indptr"][::-1].copy()}, "bi_indptr"),
    "bi_indices out of range": (lambda a: {"bi_indices": a["bi_indices"] + len(a["vocab"])}, "bi_indices holds a value"),
    "bi_indices unsorted in a row": (lambda a: {"bi_indices": _unsort_row(a)}, "not sorted"),
    "tri_indices out of range": (lambda a: {"tri_indices": a["tri_indices"] - 5}, "tri_indices holds a value"),
    "tri_keys out of range": (lambda a: {"tri_keys": a["tri_keys"] * 1000}, "tri_keys holds a value"),
    "tri_keys unsorted": (lambda a: {"tri_keys": a["tri_keys"][::-1].copy()}, "tri_keys are not sorted"),
    "short unigram": (lambda a: {"unigram": a["unigram"][:-1]}, "unigram has"),
    "2-D unigram": (lambda a: {"unigram": a["unigram"][None, :]}, "one-dimensional"),
    "NaN counts": (lambda a: {"unigram": np.where(np.arange(len(a["unigram"])) == 0, np.nan,
                                                  a["unigram"].astype(float))}, "whole-number counts"),
    "negative bigram count": (lambda a: {"bi_counts": a["bi_counts"] * np.where(np.arange(len(a["bi_counts"])) == 0,
                                                                                 -1, 1)}, "bi_counts holds a value"),
    "negative unigram count": (lambda a: {"unigram": -a["unigram"]}, "unigram holds a value"),
    "zero trigram count": (lambda a: {"tri_counts": a["tri_counts"] * 0}, "tri_counts holds a value"),
    "boolean counts": (lambda a: {"tri_counts": a["tri_counts"] > 0}, "whole-number counts"),
    "int vocabulary": (lambda a: {"vocab": np.arange(len(a["vocab"]))}, "vocab must be a list of token strings"),
    "empty vocabulary": (lambda a: {"vocab": np.array([], dtype="U1")}, "vocab has 0 tokens"),
    "vocabulary with a repeat": (lambda a: {"vocab": np.sort(np.concatenate([a["vocab"][:1], a["vocab"][:-1]]))},
                                 "not sorted"),
    "a NUL token (reads back empty)": (lambda a: {"vocab": np.array(["\0"] + a["vocab"][1:].tolist())}, "empty token"),
    "a token with a control character": (lambda a: {"vocab": np.array(["\x01"] + a["vocab"][1:].tolist())},
                                         "control character"),
}


def _unsort_row(a):
    ind, ptr = a["bi_indices"].copy(), a["bi_indptr"]
    row = int(np.argmax(np.diff(ptr) >= 2))
    lo = ptr[row]
    ind[lo], ind[lo + 1] = ind[lo + 1], ind[lo]
    return ind


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_a_corrupt_table_is_one_input_error(table, tmp_path, case):
    path, arrays = table
    change, message = CORRUPTIONS[case]
    bad = _save(tmp_path / "bad.npz", arrays, **change(arrays))
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(InputError, match=message) as err:
        NGramPair.load(bad)
    assert "\n" not in str(err.value)
    assert sorted(os.listdir(tmp_path)) == before           # loading writes nothing


def test_the_valid_table_loads_and_its_rows_are_distributions(table):
    path, _ = table
    pair = NGramPair.load(path)
    for ctx in ([], [0], [0, 1], [pair.V - 1, 0]):
        for row, _ in (pair.draft_row(ctx), pair.target_row(ctx)):
            assert abs(row.sum() - 1) < 1e-12 and row.min() > 0


def test_a_bad_table_on_the_command_line_is_one_line_and_exit_2(table, tmp_path, capsys):
    from app.cli import main
    path, arrays = table
    bad = _save(tmp_path / "bad.npz", arrays, bi_indices=arrays["bi_indices"] + 100)
    assert main(["probs", "--table", str(bad), "--prefix", "甲乙"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spectable: error:") and err.count("\n") == 1


# ---- control characters in a corpus ---------------------------------------------------------------------
@pytest.mark.parametrize("raw, where", [
    ("标题\n甲乙\x00丙\n".encode(), "U+0000 (NUL) on line 2"),
    ("标题\n甲乙\n丙\x0c丁\n".encode(), "U+000C (form feed) on line 3"),
    ("标题\n甲\x85乙\n".encode(), "U+0085 on line 2"),
    ("title\nsome text\n".encode("utf-16-le"), "UTF-16"),       # ASCII in UTF-16 is valid UTF-8 full of NULs
])
def test_control_characters_in_a_corpus_are_refused_with_the_line(tmp_path, raw, where):
    (tmp_path / "x.txt").write_bytes(raw)
    with pytest.raises(InputError, match=re.escape(where)):
        build_and_save([tmp_path / "x.txt"], tmp_path / "o.npz")
    assert not (tmp_path / "o.npz").exists()


def test_tab_is_kept_as_a_token(tmp_path):
    (tmp_path / "x.txt").write_text("标题\n甲\t乙甲\t乙\n", encoding="utf-8")
    t = build_and_save([tmp_path / "x.txt"], tmp_path / "o.npz")
    assert "\t" in t.vocab and "\t" in load_tables(tmp_path / "o.npz").vocab


# ---- the table and its manifest are one unit -------------------------------------------------------------
def test_a_build_killed_between_the_two_renames_is_detected(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("标题\n甲乙丙甲乙\n", encoding="utf-8")
    out = tmp_path / "t.npz"
    build_and_save([src], out)                                   # the old pair
    old_manifest = manifest_path(out).read_bytes()
    (src / "a.txt").write_text("标题\n丙丁戊丙丁戊\n", encoding="utf-8")
    real_replace = os.replace
    calls = []

    class Killed(BaseException):
        pass

    def replace_then_die(a, b):
        calls.append(b)
        if len(calls) == 2:
            raise Killed()                                       # the process dies before the manifest's rename
        real_replace(a, b)

    monkeypatch.setattr(os, "replace", replace_then_die)
    with pytest.raises(Killed):
        build_and_save([src], out)
    monkeypatch.setattr(os, "replace", real_replace)
    assert manifest_path(out).read_bytes() == old_manifest      # new table, old manifest
    with pytest.raises(InputError, match="does not belong to"):
        load_tables(out)
    manifest_path(out).unlink()                                  # the .npz alone is a whole table
    assert load_tables(out).vocab == ["丁", "丙", "戊"]


def test_a_manifest_edited_to_another_table_or_hash_is_refused(table):
    path, _ = table
    side = manifest_path(path)
    m = json.loads(side.read_text(encoding="utf-8"))
    assert len(m.pop("table_sha256")) == 64
    side.write_text(json.dumps(m), encoding="utf-8")             # no hash recorded: checked by content
    load_tables(path)
    side.write_text(json.dumps(dict(m, N=m["N"] + 1)), encoding="utf-8")
    with pytest.raises(InputError, match="does not belong"):
        load_tables(path)
    side.write_text(json.dumps(dict(m, table_sha256="0" * 64)), encoding="utf-8")
    with pytest.raises(InputError, match="does not belong"):
        load_tables(path)
    side.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(InputError, match="nested|JSON"):
        load_tables(path)


def test_shipped_tables_carry_their_hash():
    import hashlib
    from corpus.build import default_table_path
    for kind in ("char", "word"):
        p = default_table_path(kind)
        m = json.loads(manifest_path(p).read_text(encoding="utf-8"))
        assert m["table_sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()


# ---- the heads drafter's tables: the same file checks and the same one-unit pair -------------------------
@pytest.fixture()
def heads_table(tmp_path):
    from corpus.build import build_and_save_heads
    (tmp_path / "a.txt").write_text("标题\n甲乙丙甲乙丁甲乙丙\n", encoding="utf-8")
    out = tmp_path / "t-heads.npz"
    build_and_save_heads([tmp_path / "a.txt"], out, last_head=3)
    with np.load(out) as z:
        return out, {k: z[k] for k in z.files}


@pytest.mark.parametrize("change, message", [
    (lambda a: {"h2_bi_counts": a["h2_bi_counts"].astype(float) + 0.5}, "h2|head 2.*whole-number"),
    (lambda a: {"h2_bi_indices": _unsort_row({"bi_indices": a["h2_bi_indices"], "bi_indptr": a["h2_bi_indptr"]})},
     "head 2: bi_indices are not sorted"),
    (lambda a: {"h3_tri_indices": a["h3_tri_indices"] + 100}, "head 3: tri_indices holds a value outside"),
    (lambda a: {"heads": np.array([2.0, 3.0])}, "heads must hold whole-number"),
    (lambda a: {"manifest": np.array("[" * 100_000)}, "nested|JSON"),
    (lambda a: {"vocab": np.arange(len(a["vocab"]))}, "vocab must be a list"),
])
def test_a_corrupt_heads_table_is_one_input_error(heads_table, tmp_path, change, message):
    from corpus.heads import load_heads
    _, arrays = heads_table
    bad = _save(tmp_path / "bad-heads.npz", arrays, **change(arrays))
    with pytest.raises(InputError, match=message):
        load_heads(bad)


def test_a_heads_build_killed_between_the_two_renames_is_detected(heads_table):
    from corpus.heads import load_heads
    path, _ = heads_table
    side = manifest_path(path)
    m = json.loads(side.read_text(encoding="utf-8"))
    side.write_text(json.dumps(dict(m, table_sha256="0" * 64)), encoding="utf-8")   # another build's copy
    with pytest.raises(InputError, match="does not belong to"):
        load_heads(path)
    side.unlink()
    assert load_heads(path).manifest["heads"] == [2, 3]


def test_shipped_heads_tables_carry_their_hash():
    import hashlib
    from corpus.build import default_heads_path
    for kind in ("char", "word"):
        p = default_heads_path(kind)
        m = json.loads(manifest_path(p).read_text(encoding="utf-8"))
        assert m["table_sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
