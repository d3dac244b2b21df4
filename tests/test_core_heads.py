"""The heads tables and the heads' rows: counts against brute force, head 1's smoothing is the target's, the shipped
tables are what `corpus build --heads` counts, bad files are one clear error."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from corpus.build import build_and_save, build_and_save_heads, default_heads_path, read_token_stream
from corpus.errors import InputError
from corpus.heads import count_head, count_heads, load_heads, save_heads
from models.heads import HeadModels
from models.ngram import NGramPair

CORPUS = Path("/work/shared/corpus/nahan")


@pytest.fixture()
def tiny(tmp_path):
    (tmp_path / "01-a.txt").write_text("标题\n甲乙丙甲乙丁乙甲丙\n丁甲乙乙\n", encoding="utf-8")
    (tmp_path / "02-b.txt").write_text("题二\n乙丙乙，戊甲乙丙\n", encoding="utf-8")
    build_and_save([tmp_path], tmp_path / "t.npz")
    build_and_save_heads([tmp_path], tmp_path / "t-heads.npz", last_head=4)
    return NGramPair.load(tmp_path / "t.npz"), tmp_path


def _dense(indptr, indices, counts, rows, V):
    out = np.zeros((rows, V), dtype=np.int64)
    for r in range(rows):
        out[r, indices[indptr[r]:indptr[r + 1]]] = counts[indptr[r]:indptr[r + 1]]
    return out


def test_head_counts_against_brute_force():
    rng = np.random.default_rng(0)
    V = 5
    ids = rng.integers(0, V, 300)
    for k in (1, 2, 3, 7):
        h = count_head(ids, V, k)
        bi = Counter((int(ids[i]), int(ids[i + k])) for i in range(len(ids) - k))
        tri = Counter((int(ids[i - 1]) * V + int(ids[i]), int(ids[i + k])) for i in range(1, len(ids) - k))
        dense_bi = _dense(h.bi_indptr, h.bi_indices, h.bi_counts, V, V)
        assert all(dense_bi[b, x] == c for (b, x), c in bi.items()) and dense_bi.sum() == sum(bi.values())
        assert list(h.tri_keys) == sorted({key for key, _ in tri})
        dense_tri = _dense(h.tri_indptr, h.tri_indices, h.tri_counts, len(h.tri_keys), V)
        row = {int(key): j for j, key in enumerate(h.tri_keys)}
        assert all(dense_tri[row[key], x] == c for (key, x), c in tri.items())
        assert dense_tri.sum() == sum(tri.values())


def test_head_one_counted_and_smoothed_is_the_target(tiny):
    """Counting head 1 with the heads' code gives the pair's own bigram and trigram counts, and smoothing it with
    the heads' code gives the target's rows (seen, unseen ab, unseen b, short contexts): 'smoothed like the target'."""
    pair, folder = tiny
    toks, _ = read_token_stream([folder])
    ids = np.array([pair.index[t] for t in toks])
    one = count_head(ids, pair.V, 1)
    t = pair.tables
    assert np.array_equal(one.bi_indptr, t.bi_indptr) and np.array_equal(one.bi_counts, t.bi_counts)
    assert np.array_equal(one.tri_keys, t.tri_keys) and np.array_equal(one.tri_counts, t.tri_counts)
    tables = count_heads(toks, 2)
    tables.heads = {2: one}                          # head 1's counts through the heads' smoothing code
    heads = HeadModels(tables, pair)
    for a in range(pair.V):
        for b in range(pair.V):
            got, bo = heads.row(2, [a, b])
            want, want_bo = pair.target_row([a, b])
            assert np.allclose(got, want, rtol=0, atol=1e-15) and bo == want_bo
        assert np.allclose(heads.row(2, [a])[0], pair.draft_row([a])[0], atol=1e-15)
    assert np.array_equal(heads.row(2, [])[0], pair.unigram_floor)
    real = HeadModels.for_pair(pair)
    assert real.path == folder / "t-heads.npz" and real.last_head == 4
    assert real.row(1, [0, 1])[0] is pair.target_row([0, 1])[0]      # head 1 is the target itself


def test_heads_rows_are_distributions_on_the_shipped_table():
    pair = NGramPair.load()
    heads = HeadModels.for_pair(pair)
    assert heads.last_head == 13 and heads.path == default_heads_path("char")
    rng = np.random.default_rng(1)
    t = pair.tables
    for h in rng.choice(len(t.tri_keys), 40, replace=False):
        ctx = [int(t.tri_keys[h] // pair.V), int(t.tri_keys[h] % pair.V)]
        for k in (2, 5, 13):
            row, bo = heads.row(k, ctx)
            assert abs(row.sum() - 1) < 1e-12 and row.min() > 0
    # farther heads are flatter: the entropy grows with the distance looked ahead (averaged over histories)
    ent = []
    for k in (2, 4, 8):
        rows = [heads.row(k, [int(t.tri_keys[h] // pair.V), int(t.tri_keys[h] % pair.V)])[0]
                for h in range(0, len(t.tri_keys), 97)]
        ent.append(np.mean([-(r * np.log(r)).sum() for r in rows]))
    assert ent[0] < ent[1] < ent[2]
    with pytest.raises(InputError, match="γ <= 12"):
        heads.row(14, [0, 1])


def test_shipped_heads_tables_are_what_the_build_counts():
    pair = NGramPair.load()
    shipped = load_heads(default_heads_path("char"))
    assert shipped.vocab == pair.vocab and shipped.manifest["pieces"] == pair.manifest["pieces"]
    assert shipped.manifest["N"] == pair.N and shipped.manifest["heads"] == list(range(2, 14))
    assert "--heads 13" in shipped.manifest["command"]
    toks, _ = read_token_stream([CORPUS], ["02", "05", "07", "08", "14"], "char")
    fresh = count_heads(toks, 13)
    for k in range(2, 14):
        for name in ("bi_indptr", "bi_indices", "bi_counts", "tri_keys", "tri_indptr", "tri_indices", "tri_counts"):
            assert np.array_equal(getattr(fresh.heads[k], name), getattr(shipped.heads[k], name)), (k, name)
    word = load_heads(default_heads_path("word"))
    assert word.vocab == NGramPair.load(tokens="word").vocab and word.manifest["tokens"] == "word"


def test_heads_table_files_are_reproducible_and_validated(tiny, tmp_path):
    pair, folder = tiny
    first = (folder / "t-heads.npz").read_bytes()
    build_and_save_heads([folder], folder / "t-heads.npz", last_head=4)
    assert (folder / "t-heads.npz").read_bytes() == first                   # same text, same bytes
    man = json.loads((folder / "t-heads.json").read_text(encoding="utf-8"))
    assert man["format"] == "spectable-heads-v1" and man["heads"] == [2, 3, 4]
    with pytest.raises(InputError, match="no such heads table"):
        load_heads(tmp_path / "none.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a spectable heads table"):
        load_heads(tmp_path / "junk.npz")
    with pytest.raises(InputError, match="not a spectable heads table"):
        load_heads(folder / "t.npz")                                        # a pair table is not a heads table
    good = load_heads(folder / "t-heads.npz")
    good.heads[3].bi_indices = good.heads[3].bi_indices + pair.V             # an index outside the vocabulary
    save_heads(good, tmp_path / "bad-heads.npz")
    with pytest.raises(InputError, match="head 3"):
        load_heads(tmp_path / "bad-heads.npz")
    other = count_heads(list("丙乙甲丁丁戊乙"), 2)                           # another vocabulary
    with pytest.raises(InputError, match="different vocabulary"):
        HeadModels(other, pair)
    build_and_save([folder], tmp_path / "lonely.npz")
    with pytest.raises(InputError, match="--heads"):
        HeadModels.for_pair(NGramPair.load(tmp_path / "lonely.npz"))
    with pytest.raises(InputError):
        count_heads(list("甲乙丙"), 1)
