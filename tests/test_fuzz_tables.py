"""Fuzzing count tables and their manifests with hypothesis: a real table from random text, then any damage to
its arrays, its embedded manifest or the manifest beside it. Loading gives the one user error, or a table
whose every row is a probability distribution; it writes nothing."""
from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from app.cli import main
from corpus.errors import InputError
from corpus.tables import count_tokens, load_tables, manifest_path, save_tables
from models.ngram import NGramPair
from tests.fuzz_helpers import budget, json_values, odd_numbers

ARRAYS = ("vocab", "unigram", "bi_indptr", "bi_indices", "bi_counts", "tri_keys", "tri_indptr", "tri_indices",
          "tri_counts", "manifest")
MANIFEST_KEYS = ("format", "N", "V", "tokens", "pieces", "normalisation", "command", "file", "title", "sha256",
                 "paragraphs")


def _damage(draw, a: np.ndarray):
    kind = draw(st.sampled_from(["drop", "truncate", "extend", "negate", "shift", "poke", "float", "nan", "bool",
                                 "text", "2-D", "reverse", "empty", "uint", "huge"]))
    if kind == "drop":
        return None
    if a.dtype.kind == "U":
        if kind in ("text", "poke") and a.ndim == 1 and a.size:   # (the vocab; the manifest is 0-d)
            b = a.copy()
            b[draw(st.integers(0, a.size - 1))] = draw(st.text(max_size=3))
            return b
        if kind == "float":
            return np.arange(a.size, dtype=float)
        return a[::-1].copy() if kind == "reverse" and a.ndim == 1 else a[:-1] if a.ndim == 1 else np.array([])
    n = a.size
    # numbers as int64 (bool and uint too) or float64, so every change below is well-defined for the test
    base = a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64)
    if kind == "truncate":
        return base[: draw(st.integers(0, max(n - 1, 0)))]
    if kind == "extend":
        return np.concatenate([base.ravel(), base.ravel()[-1:] if n else np.zeros(1, base.dtype)])
    if kind == "negate":
        return -base
    if kind == "shift":
        return base + draw(st.integers(-3, 3))
    if kind == "poke" and n:
        b = base.copy()
        b.flat[draw(st.integers(0, n - 1))] = draw(st.integers(-(2 ** 40), 2 ** 40))
        return b
    if kind == "float":
        return base.astype(float)
    if kind == "nan":
        b = base.astype(float)
        if n:
            b.flat[draw(st.integers(0, n - 1))] = np.nan
        return b
    if kind == "bool":
        return base > 0
    if kind == "text":
        return base.astype(str)
    if kind == "2-D":
        return base.reshape(1, -1)
    if kind == "reverse":
        return base[::-1].copy()
    if kind == "empty":
        return base[:0]
    if kind == "uint":
        return np.abs(np.nan_to_num(base)).astype(np.uint64)
    return np.nan_to_num(base).astype(np.int64) * (2 ** 40)


@st.composite
def damaged_table(draw):
    """(arrays to save, manifest-beside-it text or None, raw bytes instead of a zip or None)."""
    alphabet = draw(st.text(alphabet="甲乙丙丁\n", min_size=1, max_size=4).map(lambda s: sorted(set(s))))
    tokens = draw(st.lists(st.sampled_from(alphabet), min_size=3, max_size=40))
    t = count_tokens(tokens, {"tokens": "char", "pieces": [{"file": "a.txt", "title": "甲", "sha256": "0" * 64,
                                                           "paragraphs": 1, "tokens": len(tokens)}]})
    with tempfile.TemporaryDirectory() as d:                     # the real file, then its arrays
        save_tables(t, Path(d) / "t.npz")
        with np.load(Path(d) / "t.npz") as z:
            arrays = {k: z[k] for k in z.files}
        side = manifest_path(Path(d) / "t.npz").read_text(encoding="utf-8")
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(sorted(arrays)))
        if name == "manifest":
            try:
                m = json.loads(str(arrays["manifest"]))
            except ValueError:
                m = None
            how = draw(st.sampled_from(["key", "whole", "text"]))
            if how == "key" and isinstance(m, dict):
                m[draw(st.sampled_from(MANIFEST_KEYS))] = draw(json_values(MANIFEST_KEYS))
                arrays["manifest"] = np.array(json.dumps(m))
            elif how in ("whole", "key"):
                arrays["manifest"] = np.array(json.dumps(draw(json_values(MANIFEST_KEYS))))
            else:
                arrays["manifest"] = np.array(draw(st.text(max_size=20)))
        else:
            b = _damage(draw, arrays[name])
            if b is None:
                arrays.pop(name)
            else:
                arrays[name] = b
    side_kind = draw(st.sampled_from(["same", "none", "other", "number"]))
    if side_kind == "none":
        side = None
    elif side_kind == "other":
        side = json.dumps(draw(json_values(MANIFEST_KEYS + ("table_sha256",))))
    elif side_kind == "number":
        side = json.dumps(draw(odd_numbers))
    raw = draw(st.one_of(st.none(), st.none(), st.binary(max_size=64)))
    return arrays, side, raw


@budget(250)
@given(damaged_table())
def test_a_damaged_table_is_one_input_error_or_a_table_of_distributions(case):
    arrays, side, raw = case
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.npz"
        if raw is not None:
            path.write_bytes(raw)
        else:
            np.savez(path, **arrays)
        if side is not None:
            manifest_path(path).write_text(side, encoding="utf-8")
        before = sorted(os.listdir(d))
        try:
            tables = load_tables(path)
        except InputError as exc:
            assert "\n" not in str(exc)
            return
        finally:
            assert sorted(os.listdir(d)) == before
        for extra in ([], ["--json"]):                             # and what `corpus info` prints of it
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                assert main(["corpus", "info", "--table", str(path), *extra]) == 0
        pair = NGramPair(tables)
        assert pair.N == tables.manifest["N"] and pair.V == len(pair.vocab) >= 1
        for ctx in ([], *([i] for i in range(pair.V)), *([i, j] for i in range(pair.V) for j in range(pair.V))):
            for row, _ in (pair.draft_row(ctx), pair.target_row(ctx)):
                assert row.shape == (pair.V,) and np.all(np.isfinite(row)) and row.min() > 0
                assert abs(row.sum() - 1) < 1e-12
