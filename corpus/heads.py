"""Count tables for the heads drafter (Medusa's idea on the toy): how often a history is followed k tokens later by x.

Head k predicts the k-th token after the position whose features (its last two tokens) it reads. Head 1 is the
target itself: its counts are the pair table's trigrams and bigrams. This file holds heads 2..K, counted from the
same normalised token stream the pair table counts (corpus.build.read_token_stream), t_0 … t_{N−1}:

    bigram level    c_k(b, x)   = #{i : t_i = b,               t_{i+k} = x}
    trigram level   c_k(ab, x)  = #{i : t_{i−1} = a, t_i = b,  t_{i+k} = x}

(for k = 1 these are exactly the pair's c(bx) and c(abx); tests check it). models.heads smooths them the way
models.ngram smooths the pair (interpolated Witten-Bell over the same unigram floor).

File format FORMAT (numpy .npz, no pickles), written deterministically like the pair table:
  vocab            (V,) unicode   the same sorted vocabulary as the pair table of the same text
  heads            (K−1,) int64   the offsets stored: 2..K
  h{k}_bi_indptr   (V+1,) int64   CSR rows by history b: followers x at offset k and counts c_k(b, x)
  h{k}_bi_indices  (nnz,) int32
  h{k}_bi_counts   (nnz,) int64
  h{k}_tri_keys    (H,) int64     histories a·V + b seen with a token k after b, sorted
  h{k}_tri_indptr  (H+1,) int64   CSR rows by history index: followers x and counts c_k(ab, x)
  h{k}_tri_indices (nnz3,) int32
  h{k}_tri_counts  (nnz3,) int64
  manifest         () unicode     JSON: format, tokens, N, V, pieces (sha256 …), normalisation, heads, models, command
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corpus.errors import InputError
from corpus.tables import (MAX_TOKENS, _csr, check_csr, check_manifest_copy, int_array, read_manifest,
                           read_table_file, write_table_files)

FORMAT = "spectable-heads-v1"
MAX_HEAD = 65          # γ <= 64 guesses use heads 2..γ+1


@dataclass
class HeadCounts:
    """One head's counts: CSR tables at the bigram and trigram history levels."""

    k: int
    bi_indptr: np.ndarray
    bi_indices: np.ndarray
    bi_counts: np.ndarray
    tri_keys: np.ndarray
    tri_indptr: np.ndarray
    tri_indices: np.ndarray
    tri_counts: np.ndarray


@dataclass
class HeadTables:
    vocab: list[str]
    heads: dict[int, HeadCounts]
    manifest: dict

    @property
    def V(self) -> int:
        return len(self.vocab)

    @property
    def last_head(self) -> int:
        return max(self.heads) if self.heads else 1


def count_head(ids: np.ndarray, V: int, k: int) -> HeadCounts:
    """c_k(b, x) and c_k(ab, x) over one token-id sequence."""
    n = len(ids)
    if n < k + 2:
        raise InputError(f"too little text to count head {k} (need at least {k + 2} tokens)")
    bi_indptr, bi_indices, bi_counts = _csr(ids[:n - k], ids[k:], V, V)
    hist = ids[:n - 1 - k] * V + ids[1:n - k]
    keys, hist_row = np.unique(hist, return_inverse=True)
    tri_indptr, tri_indices, tri_counts = _csr(hist_row, ids[1 + k:], len(keys), V)
    return HeadCounts(k, bi_indptr, bi_indices, bi_counts, keys.astype(np.int64), tri_indptr, tri_indices,
                      tri_counts)


def count_heads(tokens: list[str], last_head: int, manifest: dict | None = None) -> HeadTables:
    """Heads 2..last_head over a token stream (the vocabulary is the pair table's: the stream's sorted set)."""
    if isinstance(last_head, bool) or not isinstance(last_head, (int, np.integer)) or not 2 <= last_head <= MAX_HEAD:
        raise InputError(f"--heads must be a whole number between 2 and {MAX_HEAD}, got {last_head!r}")
    vocab = sorted(set(tokens))
    index = {t: i for i, t in enumerate(vocab)}
    ids = np.fromiter((index[t] for t in tokens), dtype=np.int64, count=len(tokens))
    heads = {k: count_head(ids, len(vocab), k) for k in range(2, int(last_head) + 1)}
    man = dict(manifest or {})
    man.update({"format": FORMAT, "N": int(len(ids)), "V": len(vocab), "heads": list(heads),
                "models": {"heads": "head k (the k-th token after the features): interpolated Witten-Bell, "
                                    "c_k(ab, x) over c_k(b, x) over the pair's unigram floor; head 1 is the "
                                    "target p itself"}})
    return HeadTables(vocab, heads, man)


def save_heads(tables: HeadTables, path: str | Path) -> Path:
    """Write the .npz and its manifest JSON beside it, each atomically (same text -> same bytes); the copy
    records the .npz's sha256 (corpus.tables.write_table_files), so the two are one unit."""
    arrays: dict[str, np.ndarray] = {"vocab": np.array(tables.vocab, dtype=np.str_),
                                     "heads": np.array(sorted(tables.heads), dtype=np.int64)}
    for k in sorted(tables.heads):
        h = tables.heads[k]
        for name in ("bi_indptr", "bi_indices", "bi_counts", "tri_keys", "tri_indptr", "tri_indices", "tri_counts"):
            arrays[f"h{k}_{name}"] = getattr(h, name)
    return write_table_files(path, arrays, tables.manifest)


def load_heads(path: str | Path) -> HeadTables:
    """Read a heads table, checking it once here: the format, every array's shape and range."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such heads table: {path}")
    data, sha = read_table_file(path, "heads table")
    if not all(k in data for k in ("vocab", "heads", "manifest")):
        raise InputError(f"not a spectable heads table: {path} (missing vocab, heads or manifest)")
    manifest = read_manifest(data, f"heads table {path}")
    if manifest.get("format") != FORMAT:
        raise InputError(f"not a spectable heads table: {path} (format is not {FORMAT})")
    if data["vocab"].dtype.kind != "U" or data["vocab"].ndim != 1 or not data["vocab"].size:
        raise InputError(f"heads table {path}: vocab must be a list of token strings")
    vocab = data["vocab"].tolist()
    V = len(vocab)
    ks = int_array(data["heads"], "heads", f"heads table {path}", 2, MAX_HEAD).tolist()
    if not ks or ks != list(range(2, ks[-1] + 1)):
        raise InputError(f"heads table {path}: heads must be 2..K, got {ks}")
    heads = {}
    for k in ks:
        try:
            arr = {n: data[f"h{k}_{n}"] for n in ("bi_indptr", "bi_indices", "bi_counts", "tri_keys", "tri_indptr",
                                                  "tri_indices", "tri_counts")}
        except KeyError as exc:
            raise InputError(f"heads table {path}: missing {exc.args[0]}") from None
        where = f"heads table {path}: head {k}"
        bi = check_csr(arr["bi_indptr"], arr["bi_indices"], arr["bi_counts"], V, V, MAX_TOKENS, "bi", where, False)
        keys = int_array(arr["tri_keys"], "tri_keys", where, 0, V * V - 1)
        if len(keys) > 1 and (np.diff(keys) <= 0).any():
            raise InputError(f"{where}: tri_keys are not sorted and distinct")
        tri = check_csr(arr["tri_indptr"], arr["tri_indices"], arr["tri_counts"], len(keys), V, MAX_TOKENS, "tri",
                        where, True)
        heads[k] = HeadCounts(k, *bi, keys, *tri)
    check_manifest_copy(path, manifest, sha)
    return HeadTables(vocab, heads, manifest)
