"""The n-gram pair: Witten-Bell formulas against hand counts, backoff, table files, encoding, shipped tables."""
from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pytest

from corpus.build import build_and_save, default_table_path
from corpus.errors import InputError
from corpus.tables import load_tables, manifest_path
from models.ngram import NGramPair


@pytest.fixture(scope="module")
def pair():
    return NGramPair.load()


@pytest.fixture()
def tiny(tmp_path):
    (tmp_path / "01-a.txt").write_text("标题\n甲乙丙甲乙\n丁甲\n", encoding="utf-8")
    (tmp_path / "02-b.txt").write_text("题二\n乙丙乙，戊\n", encoding="utf-8")
    out = tmp_path / "t.npz"
    build_and_save([tmp_path], out)
    return NGramPair.load(out), "甲乙丙甲乙\n丁甲\n乙丙乙，戊", tmp_path


def test_normalisation_and_manifest(tiny):
    p, text, folder = tiny
    assert p.decode(range(p.V)) == "".join(sorted(set(text)))         # vocabulary = characters seen
    assert p.N == len(text)
    m = p.manifest
    assert [x["file"] for x in m["pieces"]] == ["01-a.txt", "02-b.txt"]
    assert m["pieces"][0]["title"] == "标题"
    assert m["pieces"][0]["sha256"] == hashlib.sha256((folder / "01-a.txt").read_bytes()).hexdigest()
    assert m["N"] == p.N and m["V"] == p.V
    assert manifest_path(folder / "t.npz").is_file()


def test_witten_bell_formulas_against_hand_counts(tiny):
    p, text, _ = tiny
    N, V = len(text), len(set(text))
    c1 = Counter(text)
    c2 = Counter(text[i:i + 2] for i in range(N - 1))
    c3 = Counter(text[i:i + 3] for i in range(N - 2))
    u = {x: (c1[x] + 1) / (N + V) for x in c1}

    def q(x, b):
        T = len({k for k in c2 if k[0] == b})
        tot = sum(v for k, v in c2.items() if k[0] == b)
        return (c2[b + x] + T * u[x]) / (tot + T)

    def pp(x, ab):
        T = len({k for k in c3 if k[:2] == ab})
        tot = sum(v for k, v in c3.items() if k[:2] == ab)
        return (c3[ab + x] + T * q(x, ab[1])) / (tot + T)

    for ab in {text[i:i + 2] for i in range(N - 2)}:
        ids = p.encode(ab)
        qrow, qbo = p.draft_row(ids)
        prow, pbo = p.target_row(ids)
        assert not qbo and not pbo
        for x in c1:
            assert abs(qrow[p.index[x]] - q(x, ab[1])) < 1e-15
            assert abs(prow[p.index[x]] - pp(x, ab)) < 1e-15
        assert abs(qrow.sum() - 1) < 1e-12 and abs(prow.sum() - 1) < 1e-12


def test_backoff_cases(tiny):
    p, text, _ = tiny
    # '戊' ends the corpus: never followed by anything -> q falls back wholly to the unigram floor.
    q, bo = p.draft_row(p.encode("戊"))
    assert bo and np.array_equal(q, p.unigram_floor)
    # an unseen pair -> p = q(.|b) and it says so
    prow, pbo = p.target_row(p.encode("戊甲"))
    qrow, qbo = p.draft_row(p.encode("甲"))
    assert pbo and not qbo and np.array_equal(prow, qrow)
    # short contexts
    assert p.target_row([])[1] and p.draft_row([])[1]
    assert np.array_equal(p.target_row(p.encode("甲"))[0], qrow)
    assert abs(p.unigram_floor.sum() - 1) < 1e-12


def test_counts_lookup(tiny):
    p, text, _ = tiny
    assert p.count(*p.encode("甲乙")) == 2 and p.count(*p.encode("甲乙丙")) == 1
    assert p.count(*p.encode("乙")) == text.count("乙") and p.count(*p.encode("戊甲")) == 0


def test_rows_sum_to_one_on_shipped_table(pair):
    rng = np.random.default_rng(0)
    for _ in range(200):
        ctx = list(rng.integers(0, pair.V, size=2))
        for row, _bo in (pair.draft_row(ctx), pair.target_row(ctx)):
            assert abs(row.sum() - 1) < 1e-12 and row.min() > 0


def test_shipped_tables_and_manifest(pair):
    m = pair.manifest
    assert [x["file"][:2] for x in m["pieces"]] == ["02", "05", "07", "08", "14"]
    assert [x["title"] for x in m["pieces"]] == ["孔乙己", "一件小事", "风波", "故乡", "社戏"]
    assert m["tokens"] == "char" and m["N"] == pair.N and m["V"] == pair.V
    assert sum(x["tokens"] for x in m["pieces"]) + len(m["pieces"]) - 1 == pair.N   # stories joined by '\n'
    assert "\n" in pair.index and pair.display(pair.index["\n"]) == "↵"
    assert all(len(x["sha256"]) == 64 for x in m["pieces"])
    assert pair.encode("慢慢") == [pair.index["慢"]] * 2
    assert pair.encode("慢↵") == [pair.index["慢"], pair.index["\n"]]
    assert pair.decode(pair.encode("孔乙己")) == "孔乙己"
    with pytest.raises(InputError, match="Z"):
        pair.encode("孔Z")
    word = NGramPair.load(tokens="word")
    assert word.tokens == "word" and word.V > 1000
    assert word.decode(word.encode("慢慢")) == "慢慢"


def test_table_round_trip(tmp_path, tiny):
    p, _, folder = tiny
    first = (folder / "t.npz").read_bytes()
    build_and_save([folder], folder / "t.npz")
    assert (folder / "t.npz").read_bytes() == first                        # same text, same bytes
    t = load_tables(folder / "t.npz")
    assert t.vocab == p.vocab and int(t.unigram.sum()) == p.N
    with pytest.raises(InputError):
        load_tables(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError):
        load_tables(tmp_path / "junk.npz")
    assert default_table_path("char").is_file() and default_table_path("word").is_file()
    with pytest.raises(InputError):
        default_table_path("bytes")


def test_bad_corpus_files(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "latin1.txt").write_bytes("标题\n".encode() + b"caf\xe9\n")
    (tmp_path / "title-only.txt").write_text("标题\n", encoding="utf-8")
    for name, msg in (("empty.txt", "empty"), ("latin1.txt", "UTF-8"), ("title-only.txt", "no text"),
                      ("nope.txt", "no such")):
        with pytest.raises(InputError, match=msg):
            build_and_save([tmp_path / name], tmp_path / "o.npz")
    with pytest.raises(InputError, match="no piece"):
        build_and_save([tmp_path], tmp_path / "o.npz", pieces=["99"])
