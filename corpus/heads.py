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

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corpus.atomic import write_atomic
from corpus.errors import InputError
from corpus.tables import _csr, _write_npz, manifest_path

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
    """Write the .npz and its manifest JSON beside it, each atomically (same text -> same bytes)."""
    path = Path(path)
    manifest_json = json.dumps(tables.manifest, ensure_ascii=False, indent=1, sort_keys=True)
    arrays: dict[str, np.ndarray] = {"vocab": np.array(tables.vocab, dtype=np.str_),
                                     "heads": np.array(sorted(tables.heads), dtype=np.int64)}
    for k in sorted(tables.heads):
        h = tables.heads[k]
        for name in ("bi_indptr", "bi_indices", "bi_counts", "tri_keys", "tri_indptr", "tri_indices", "tri_counts"):
            arrays[f"h{k}_{name}"] = getattr(h, name)
    arrays["manifest"] = np.array(manifest_json)
    write_atomic(path, lambda fh: _write_npz(fh, arrays))
    write_atomic(manifest_path(path), lambda fh: fh.write((manifest_json + "\n").encode("utf-8")))
    return path


def _csr_ok(indptr, indices, counts, rows: int, V: int) -> bool:
    return (indptr.ndim == 1 and len(indptr) == rows + 1 and indptr[0] == 0 and bool(np.all(np.diff(indptr) >= 0))
            and indptr[-1] == len(indices) == len(counts) and (len(indices) == 0 or
                                                               (indices.min() >= 0 and indices.max() < V))
            and bool(np.all(counts > 0)))


def load_heads(path: str | Path) -> HeadTables:
    """Read a heads table, checking it once here: the format, every array's shape and range."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such heads table: {path}")
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
        manifest = json.loads(str(data["manifest"]))
        vocab = data["vocab"].tolist()
        ks = [int(k) for k in data["heads"]]
    except Exception as exc:  # any parse failure means "not our heads table"
        raise InputError(f"not a spectable heads table: {path} ({type(exc).__name__})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputError(f"not a spectable heads table: {path} (format is not {FORMAT})")
    V = len(vocab)
    if not ks or ks != list(range(2, ks[-1] + 1)) or ks[-1] > MAX_HEAD:
        raise InputError(f"heads table {path}: heads must be 2..K, got {ks}")
    heads = {}
    for k in ks:
        try:
            arr = {n: data[f"h{k}_{n}"] for n in ("bi_indptr", "bi_indices", "bi_counts", "tri_keys", "tri_indptr",
                                                  "tri_indices", "tri_counts")}
        except KeyError as exc:
            raise InputError(f"heads table {path}: missing {exc.args[0]}") from None
        keys = arr["tri_keys"]
        ok = (_csr_ok(arr["bi_indptr"], arr["bi_indices"], arr["bi_counts"], V, V)
              and _csr_ok(arr["tri_indptr"], arr["tri_indices"], arr["tri_counts"], len(keys), V)
              and (len(keys) == 0 or (keys.min() >= 0 and keys.max() < V * V and bool(np.all(np.diff(keys) > 0)))))
        if not ok:
            raise InputError(f"heads table {path}: head {k}'s counts are malformed")
        heads[k] = HeadCounts(k, **{n: a.astype(np.int64) if n != "bi_indices" and n != "tri_indices" else a
                                    for n, a in arr.items()})
    return HeadTables(vocab, heads, manifest)
