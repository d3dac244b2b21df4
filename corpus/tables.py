"""Count tables: unigram, bigram and trigram counts of a token sequence, and their compact .npz file format.

File format (numpy .npz, no pickles; format name FORMAT):
  vocab          (V,) unicode     token strings, sorted by code point ('\n' is a token)
  unigram        (V,) int64       c(x)
  bi_indptr      (V+1,) int64     CSR rows by history b: the followers of b are
  bi_indices     (nnz,) int32       bi_indices[bi_indptr[b]:bi_indptr[b+1]] (sorted) with
  bi_counts      (nnz,) int64       counts c(bx)
  tri_keys       (H,) int64       trigram histories (a, b) seen, as the sorted key a·V + b
  tri_indptr     (H+1,) int64     CSR rows by history index: followers x and counts c(abx)
  tri_indices    (nnz3,) int32
  tri_counts     (nnz3,) int64
  manifest       () unicode       the manifest as JSON (pieces, normalisation, sha256, N, V, ...)
T(h), the number of distinct tokens seen after h, is a row length: indptr[h+1] - indptr[h];
c(h·), the history's total, is the row's sum. Neither is stored.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corpus.atomic import write_atomic

FORMAT = "spectable-ngram-v1"


@dataclass
class CountTables:
    vocab: list[str]
    unigram: np.ndarray
    bi_indptr: np.ndarray
    bi_indices: np.ndarray
    bi_counts: np.ndarray
    tri_keys: np.ndarray
    tri_indptr: np.ndarray
    tri_indices: np.ndarray
    tri_counts: np.ndarray
    manifest: dict = field(default_factory=dict)

    @property
    def V(self) -> int:
        return len(self.vocab)

    @property
    def N(self) -> int:
        return int(self.unigram.sum())


def _csr(history: np.ndarray, follower: np.ndarray, n_rows: int, V: int):
    """Group (history, follower) pairs into CSR rows with counts; histories are already dense 0..n_rows-1."""
    key = history.astype(np.int64) * V + follower
    uniq, counts = np.unique(key, return_counts=True)
    rows = uniq // V
    indices = (uniq % V).astype(np.int32)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    return np.cumsum(indptr), indices, counts.astype(np.int64)


def count_tokens(tokens: list[str], manifest: dict | None = None) -> CountTables:
    """Count 1-, 2- and 3-grams over one token sequence (pieces already joined with newline tokens)."""
    vocab = sorted(set(tokens))
    index = {t: i for i, t in enumerate(vocab)}
    V = len(vocab)
    ids = np.fromiter((index[t] for t in tokens), dtype=np.int64, count=len(tokens))
    unigram = np.bincount(ids, minlength=V).astype(np.int64)
    bi_indptr, bi_indices, bi_counts = _csr(ids[:-1], ids[1:], V, V)
    # Trigram histories (a, b) are sparse: number the seen ones densely in sorted key order.
    hist = ids[:-2] * V + ids[1:-1]
    tri_keys, hist_row = np.unique(hist, return_inverse=True)
    tri_indptr, tri_indices, tri_counts = _csr(hist_row, ids[2:], len(tri_keys), V)
    man = dict(manifest or {})
    man.update({"format": FORMAT, "N": int(len(ids)), "V": V})
    return CountTables(vocab, unigram, bi_indptr, bi_indices, bi_counts, tri_keys.astype(np.int64),
                       tri_indptr, tri_indices, tri_counts, man)


def _write_npz(fh, arrays: dict) -> None:
    """np.savez_compressed, but with fixed zip timestamps so the same text always gives the same bytes."""
    import io
    import zipfile
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue())


def manifest_path(table_path: str | Path) -> Path:
    """The manifest JSON sits beside the table: nahan-char.npz -> nahan-char.json."""
    return Path(table_path).with_suffix(".json")


def save_tables(tables: CountTables, path: str | Path) -> Path:
    """Write the .npz (compressed) and the manifest JSON beside it, each atomically."""
    path = Path(path)
    manifest_json = json.dumps(tables.manifest, ensure_ascii=False, indent=1, sort_keys=True)
    arrays = dict(vocab=np.array(tables.vocab, dtype=np.str_), unigram=tables.unigram,
                  bi_indptr=tables.bi_indptr, bi_indices=tables.bi_indices, bi_counts=tables.bi_counts,
                  tri_keys=tables.tri_keys, tri_indptr=tables.tri_indptr, tri_indices=tables.tri_indices,
                  tri_counts=tables.tri_counts, manifest=np.array(manifest_json))
    write_atomic(path, lambda fh: _write_npz(fh, arrays))
    write_atomic(manifest_path(path), lambda fh: fh.write((manifest_json + "\n").encode("utf-8")))
    return path


def load_tables(path: str | Path) -> CountTables:
    """Read a table written by save_tables; a missing or foreign file is an InputError."""
    from corpus.errors import InputError
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such table file: {path}")
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except Exception as exc:  # a zip/npz parsing failure of any kind means "not our table"
        raise InputError(f"not a spectable count table: {path} ({type(exc).__name__})") from None
    need = ("vocab", "unigram", "bi_indptr", "bi_indices", "bi_counts", "tri_keys", "tri_indptr",
            "tri_indices", "tri_counts", "manifest")
    missing = [k for k in need if k not in data]
    if missing:
        raise InputError(f"not a spectable count table: {path} (missing {', '.join(missing)})")
    manifest = json.loads(str(data["manifest"]))
    return CountTables(data["vocab"].tolist(), data["unigram"], data["bi_indptr"], data["bi_indices"],
                       data["bi_counts"], data["tri_keys"], data["tri_indptr"], data["tri_indices"],
                       data["tri_counts"], manifest)
