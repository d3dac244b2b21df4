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

Beside NAME.npz, NAME.json is the same manifest for people, plus `table_sha256` (the .npz's hash): the .npz
alone is the table; load_tables refuses a .json beside it that belongs to another build.
"""
from __future__ import annotations

import json
import zlib
import hashlib
import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corpus.atomic import atomic_path
from corpus.errors import InputError
from corpus.normalise import CONTROL_CHARACTERS
from corpus.tokenizers import NEWLINE, TOKEN_KINDS
from corpus.validate import mapping, parse_json, read_json, read_regular_file, text, whole

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
    """Write the .npz (compressed), then the manifest JSON beside it, each atomically (write_table_files)."""
    arrays = dict(vocab=np.array(tables.vocab, dtype=np.str_), unigram=tables.unigram,
                  bi_indptr=tables.bi_indptr, bi_indices=tables.bi_indices, bi_counts=tables.bi_counts,
                  tri_keys=tables.tri_keys, tri_indptr=tables.tri_indptr, tri_indices=tables.tri_indices,
                  tri_counts=tables.tri_counts)
    return write_table_files(path, arrays, tables.manifest)


def write_table_files(path: str | Path, arrays: dict, manifest: dict) -> Path:
    """A table file (the arrays + the manifest as JSON, fixed zip timestamps: the same counts give the same
    bytes), then the manifest's copy beside it, each atomically.

    The .npz is the table: it holds its own manifest. The .json beside it is a copy for people that also
    records the .npz's sha256, so a build killed between the two renames (a new table beside the old
    manifest) is detected by read_table_file's caller (check_manifest_copy), not silently paired."""
    path = Path(path)
    manifest_json = json.dumps(manifest, ensure_ascii=False, indent=1, sort_keys=True)
    buf = io.BytesIO()
    _write_npz(buf, dict(arrays, manifest=np.array(manifest_json)))
    blob = buf.getvalue()
    side = dict(manifest, table_sha256=hashlib.sha256(blob).hexdigest())
    side_bytes = (json.dumps(side, ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode("utf-8")
    # Both files are made in memory, then both temp files written, before either is replaced: a failure
    # (a full disk, a name that cannot be written) leaves the old pair whole.
    with atomic_path(manifest_path(path)) as side_tmp, atomic_path(path) as table_tmp:   # the table's rename first
        table_tmp.write_bytes(blob)
        side_tmp.write_bytes(side_bytes)
    return path


# ---- loading: every array and the manifest checked once, here; NGramPair trusts what this returns ---------
MAX_TABLE_BYTES = 1 << 30          # uncompressed arrays of one table (the shipped ones are ~1 MB)
MAX_MANIFEST_BYTES = 1 << 20
MAX_TOKENS = 2**31 - 1             # N; V <= N and ids fit the int32 indices
_ARRAYS = ("vocab", "unigram", "bi_indptr", "bi_indices", "bi_counts", "tri_keys", "tri_indptr",
           "tri_indices", "tri_counts", "manifest")


def load_tables(path: str | Path) -> CountTables:
    """Read a table written by save_tables; anything but a well-formed table is one InputError line."""
    data, sha = read_table_file(path, "count table")
    missing = [k for k in _ARRAYS if k not in data]
    if missing:
        raise InputError(f"not a spectable count table: {path} (missing {', '.join(missing)})")
    tables = validate_tables(data, str(path))
    check_manifest_copy(path, tables.manifest, sha)
    return tables


def read_table_file(path: str | Path, what: str) -> tuple[dict, str]:
    """The arrays of a table .npz (no pickles, at most MAX_TABLE_BYTES unpacked) and the file's sha256."""
    path = Path(path)
    try:
        blob = read_regular_file(path, what, MAX_TABLE_BYTES)
    except FileNotFoundError:
        raise InputError(f"no such {'table file' if what == 'count table' else what}: {path}") from None
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:     # sizes first: a small file may inflate to gigabytes
            unpacked = sum(i.file_size for i in zf.infolist())
        if unpacked > MAX_TABLE_BYTES:
            raise InputError(f"{path}: {unpacked:,} bytes of arrays is more than a {what} can be")
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except InputError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError, RuntimeError,
            NotImplementedError) as exc:   # zipfile/numpy on a foreign or damaged file: "not our table"
        raise InputError(f"not a spectable {what}: {path} ({type(exc).__name__})") from None
    return data, hashlib.sha256(blob).hexdigest()


def read_manifest(data: dict, where: str) -> dict:
    """The manifest a table file embeds: one JSON object, finite numbers only."""
    m = data.get("manifest")
    if m is None or m.dtype.kind != "U" or m.ndim != 0:
        raise InputError(f"{where}: the embedded manifest is not one text")
    return mapping(parse_json(str(m), f"{where} (embedded manifest)", finite=True), f"{where}: the manifest")


def check_manifest_copy(path: str | Path, manifest: dict, sha: str) -> None:
    """The .json beside a table, if there is one, must be that table's: same manifest and, where it records
    one, the table's sha256 (manifests written before the sha256 was recorded are checked by content)."""
    path = Path(path)
    side = manifest_path(path)
    if side == path or not side.is_file():
        return
    copy = dict(mapping(read_json(side, "a table manifest", MAX_MANIFEST_BYTES, finite=True), str(side)))
    recorded = copy.pop("table_sha256", None)
    if (recorded is not None and recorded != sha) or copy != manifest:
        raise InputError(f"{side} does not belong to {path} (left by an interrupted `corpus build`?): "
                         f"build the table again, or delete {side.name} to use the table alone")


def int_array(a: np.ndarray, name: str, where: str, lo: int, hi: int, length: int | None = None) -> np.ndarray:
    """A 1-D integer array with every value in [lo, hi], returned as int64 (the bounds keep casts exact)."""
    if a.ndim != 1:
        raise InputError(f"{where}: {name} must be one-dimensional, not of shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise InputError(f"{where}: {name} must hold whole-number counts, not {a.dtype} values")
    if length is not None and len(a) != length:
        raise InputError(f"{where}: {name} has {len(a)} entries, the table needs {length}")
    if a.size and (a.min() < lo or a.max() > hi):
        raise InputError(f"{where}: {name} holds a value outside {lo:,}..{hi:,}")
    return a.astype(np.int64)


def check_csr(indptr: np.ndarray, indices: np.ndarray, counts: np.ndarray, n_rows: int, V: int, N: int,
              name: str, where: str, rows_nonempty: bool):
    """CSR rows: indptr from 0 up to nnz, non-decreasing; followers in [0, V) strictly increasing within a row
    (lookups bisect them); counts from 1 to N."""
    indices = int_array(indices, f"{name}_indices", where, 0, V - 1)
    nnz = len(indices)
    indptr = int_array(indptr, f"{name}_indptr", where, 0, nnz, n_rows + 1)
    counts = int_array(counts, f"{name}_counts", where, 1, N, nnz)
    steps = np.diff(indptr)
    if indptr[0] != 0 or indptr[-1] != nnz or (steps < 0).any():
        raise InputError(f"{where}: {name}_indptr does not run from 0 up to {nnz} in order")
    if rows_nonempty and (steps == 0).any():
        raise InputError(f"{where}: a {name} history has no followers")
    starts = np.zeros(nnz, dtype=bool)
    starts[indptr[:-1][steps > 0]] = True
    if (np.diff(indices)[~starts[1:]] <= 0).any():
        raise InputError(f"{where}: {name}_indices are not sorted and distinct within a row")
    return indptr, indices.astype(np.int32), counts


def validate_tables(data: dict, where: str) -> CountTables:
    """Type, shape, range and consistency of every array and of the manifest (counts sum to N, V tokens)."""
    manifest = read_manifest(data, where)
    if manifest.get("format") != FORMAT:
        raise InputError(f"{where}: manifest format is {manifest.get('format')!r}, not {FORMAT!r}")
    if manifest.get("tokens", "char") not in TOKEN_KINDS:
        raise InputError(f"{where}: manifest tokens is {manifest.get('tokens')!r} (one of {', '.join(TOKEN_KINDS)})")
    _check_pieces(manifest.get("pieces", []), where)
    N = whole(manifest.get("N"), f"{where}: manifest N", 3, MAX_TOKENS)
    V = whole(manifest.get("V"), f"{where}: manifest V", 1, N)
    vocab = data["vocab"]
    if vocab.dtype.kind != "U" or vocab.ndim != 1:
        raise InputError(f"{where}: vocab must be a list of token strings, not {vocab.dtype} of shape {vocab.shape}")
    if len(vocab) != V:
        raise InputError(f"{where}: vocab has {len(vocab)} tokens, the manifest says V = {V}")
    tokens = vocab.tolist()
    for tok in tokens:
        # numpy strings cannot end in NUL ('\0' reads back as ''): no token may be empty or hold a control character
        if tok == "" or (tok != NEWLINE and _has_control(tok)):
            raise InputError(f"{where}: vocab holds an empty token or one with a control character: {tok!r}")
    if V > 1 and not (vocab[1:] > vocab[:-1]).all():
        raise InputError(f"{where}: vocab is not sorted by code point without repeats")
    unigram = int_array(data["unigram"], "unigram", where, 1, N, V)
    if int(unigram.sum()) != N:
        raise InputError(f"{where}: unigram counts sum to {int(unigram.sum()):,}, the manifest says N = {N:,}")
    bi = check_csr(data["bi_indptr"], data["bi_indices"], data["bi_counts"], V, V, N, "bi", where, False)
    if int(bi[2].sum()) != N - 1:
        raise InputError(f"{where}: bigram counts sum to {int(bi[2].sum()):,}, not N - 1 = {N - 1:,}")
    tri_keys = int_array(data["tri_keys"], "tri_keys", where, 0, V * V - 1)
    if len(tri_keys) > 1 and (np.diff(tri_keys) <= 0).any():
        raise InputError(f"{where}: tri_keys are not sorted and distinct")
    tri = check_csr(data["tri_indptr"], data["tri_indices"], data["tri_counts"], len(tri_keys), V, N, "tri", where, True)
    if int(tri[2].sum()) != N - 2:
        raise InputError(f"{where}: trigram counts sum to {int(tri[2].sum()):,}, not N - 2 = {N - 2:,}")
    return CountTables(tokens, unigram, *bi, tri_keys, *tri, manifest)


def _check_pieces(pieces, where: str) -> None:
    """The manifest's source list, as `corpus info` prints it: objects with file, title, sha256 and counts."""
    if not isinstance(pieces, list) or len(pieces) > 100_000:
        raise InputError(f"{where}: manifest pieces must be a list of sources")
    for i, piece in enumerate(pieces):
        piece = mapping(piece, f"{where}: manifest pieces[{i}]")
        for key in ("file", "title", "sha256"):
            text(piece.get(key), f"{where}: manifest pieces[{i}].{key}", 1000)
        for key in ("paragraphs", "tokens"):
            whole(piece.get(key), f"{where}: manifest pieces[{i}].{key}", 0, MAX_TOKENS)


def _has_control(token: str) -> bool:
    return CONTROL_CHARACTERS.search(token) is not None
