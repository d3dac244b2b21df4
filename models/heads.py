"""The heads of the heads drafter (Medusa's idea on the toy), smoothed the way models.ngram smooths the pair.

The target's "features" are its context, the last two tokens a, b. Head k predicts the k-th token after b from them:

    h_k(x | b)   = (c_k(b, x)  + T_k(b)  · u(x))       / (c_k(b·)  + T_k(b))
    h_k(x | ab)  = (c_k(ab, x) + T_k(ab) · h_k(x | b)) / (c_k(ab·) + T_k(ab))

with the counts of corpus/heads.py and the pair's unigram floor u. For k = 1 these are the pair's q and p, so head 1
is the target itself (row(1, ·) returns the pair's target row). An unseen history falls back wholly to the lower
order, as in the pair, and reports backed_off.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from corpus.errors import InputError
from corpus.heads import HeadTables, load_heads
from models.rowcache import RowCache as _RowCache
from models.rowcache import row_sums as _row_sums
from corpus.build import default_table_path, heads_path_for


class HeadModels:
    """Heads 1..K over the pair's vocabulary: row(k, context) -> ((V,) float64 summing to 1, backed_off)."""

    def __init__(self, tables: HeadTables, pair, path: Path | None = None):
        if list(tables.vocab) != list(pair.vocab):
            raise InputError(f"the heads table {path or ''} was counted over a different vocabulary than the pair "
                             f"table ({tables.V} vs {pair.V} tokens): build both from the same text")
        self.pair, self.tables, self.path = pair, tables, path
        self.last_head = tables.last_head
        self._stats = {}
        for k, h in tables.heads.items():
            self._stats[k] = (np.diff(h.bi_indptr).astype(np.float64), _row_sums(h.bi_indptr, h.bi_counts),
                              np.diff(h.tri_indptr).astype(np.float64), _row_sums(h.tri_indptr, h.tri_counts))
        self._cache = _RowCache((1 << 24) // (8 * max(pair.V, 1)))

    @classmethod
    def for_pair(cls, pair, path: str | Path | None = None) -> "HeadModels":
        """The heads table beside the pair's table (X.npz -> X-heads.npz; the shipped ones for the shipped pair)."""
        if path is None:
            base = pair.path if getattr(pair, "path", None) is not None else default_table_path(pair.tokens)
            path = heads_path_for(base)
        path = Path(path)
        if not path.is_file():
            raise InputError(f"the heads drafter needs a heads table beside the pair table: {path} is missing "
                             f"(build it with: spectable corpus build SOURCES --heads 13 --out {path})")
        return cls(load_heads(path), pair, path)

    def row(self, k: int, context_ids) -> tuple[np.ndarray, bool]:
        """h_k(· | last two tokens of the context) and whether it backed off."""
        if k == 1:
            return self.pair.target_row(context_ids)
        if k not in self.tables.heads:
            raise InputError(f"no head {k}: this heads table has heads 2..{self.last_head} "
                             f"(γ <= {self.last_head - 1} with the heads drafter)")
        ctx = [int(i) for i in context_ids[-2:]]
        key = (k, tuple(ctx))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        h = self.tables.heads[k]
        bi_T, bi_total, tri_T, tri_total = self._stats[k]
        floor = self.pair.unigram_floor
        if not ctx:
            return self._cache.put(key, (floor, True))
        b = ctx[-1]
        lo, hi = h.bi_indptr[b], h.bi_indptr[b + 1]
        if hi == lo:
            low = floor
        else:
            # h_k(x|b) = (c_k(b, x) + T_k(b)·u(x)) / (c_k(b·) + T_k(b))
            low = bi_T[b] * floor
            low[h.bi_indices[lo:hi]] += h.bi_counts[lo:hi]
            low /= bi_total[b] + bi_T[b]
            low.setflags(write=False)
        if len(ctx) < 2:
            return self._cache.put(key, (low, True))
        hkey = ctx[0] * self.pair.V + b
        j = int(np.searchsorted(h.tri_keys, hkey))
        if j >= len(h.tri_keys) or h.tri_keys[j] != hkey:
            return self._cache.put(key, (low, True))          # unseen ab: the bigram-level head wholly
        lo, hi = h.tri_indptr[j], h.tri_indptr[j + 1]
        # h_k(x|ab) = (c_k(ab, x) + T_k(ab)·h_k(x|b)) / (c_k(ab·) + T_k(ab))
        row = tri_T[j] * low
        row[h.tri_indices[lo:hi]] += h.tri_counts[lo:hi]
        row /= tri_total[j] + tri_T[j]
        row.setflags(write=False)
        return self._cache.put(key, (row, False))
