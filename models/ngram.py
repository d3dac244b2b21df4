"""The two toy models counted from the book: draft q (bigram) and target p (trigram), interpolated Witten-Bell.

With c(·) the counts, N tokens, V vocabulary size and T(h) the number of distinct tokens seen after h:

    floor    u(x)    = (c(x) + 1) / (N + V)                              Witten-Bell against uniform 1/V
    draft    q(x|b)  = (c(bx)  + T(b)  · u(x))   / (c(b·)  + T(b))
    target   p(x|ab) = (c(abx) + T(ab) · q(x|b)) / (c(ab·) + T(ab))

An unseen history falls back wholly to the lower order (q = u when b was never followed by anything;
p = q(·|b) when ab was never seen) and the row reports backed_off=True. A row costs O(V) plus the
history's sparse followers: the smoothed part is one vector op, the seen followers one scatter.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from corpus.errors import InputError
from corpus.tables import CountTables, load_tables
from corpus.tokenizers import NEWLINE, segment_words
from models.pair import RowsPair
from models.rowcache import RowCache as _RowCache
from models.rowcache import row_sums as _row_sums
from corpus.build import default_table_path
from models import analytics as an
from models.analytics import alpha_corpus, alpha_generated

NEWLINE_GLYPH = "↵"


class NGramPair(RowsPair):
    """The draft q (bigram, small drum) and the target p (trigram, big drum) over one vocabulary."""

    def __init__(self, tables: CountTables, tokens: str | None = None, path: Path | None = None):
        self.tables = tables
        self.path = path
        self.manifest = tables.manifest
        self.tokens = tokens or tables.manifest.get("tokens", "char")
        self.vocab: list[str] = list(tables.vocab)
        self.V = len(self.vocab)
        self.index: dict[str, int] = {t: i for i, t in enumerate(self.vocab)}
        self.N = int(tables.unigram.sum())
        t = tables
        # u(x) = (c(x) + 1) / (N + V)
        self.unigram_floor = (t.unigram.astype(np.float64) + 1.0) / (self.N + self.V)
        self.unigram_floor.setflags(write=False)
        # T(b) = distinct followers of b; c(b·) = how often b was followed by anything.
        self._bi_T = np.diff(t.bi_indptr)
        self._bi_total = _row_sums(t.bi_indptr, t.bi_counts)
        self._tri_T = np.diff(t.tri_indptr)
        self._tri_total = _row_sums(t.tri_indptr, t.tri_counts)
        cache_rows = (1 << 24) // (8 * max(self.V, 1))   # ~16 MB of rows per cache
        self._draft_cache = _RowCache(cache_rows)
        self._target_cache = _RowCache(cache_rows)

    # ---- loading -------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path | None = None, tokens: str = "char") -> "NGramPair":
        """Load a table (.npz); path None = the shipped default table for `tokens` ('char' or 'word')."""
        p = default_table_path(tokens) if path is None else Path(path)
        tables = load_tables(p)
        return cls(tables, tables.manifest.get("tokens", tokens), p)

    # ---- the two models ------------------------------------------------------------------------
    def draft_row(self, context_ids) -> tuple[np.ndarray, bool]:
        """q(·|b) for the last token b of the context: (V,) float64 summing to 1, and whether it backed off."""
        if len(context_ids) == 0:
            return self.unigram_floor, True
        b = int(context_ids[-1])
        hit = self._draft_cache.get(b)
        if hit is not None:
            return hit
        t = self.tables
        lo, hi = t.bi_indptr[b], t.bi_indptr[b + 1]
        if hi == lo:
            return self._draft_cache.put(b, (self.unigram_floor, True))
        T_b = float(self._bi_T[b])
        # q(x|b) = (c(bx) + T(b)·u(x)) / (c(b·) + T(b))
        row = T_b * self.unigram_floor
        row[t.bi_indices[lo:hi]] += t.bi_counts[lo:hi]
        row /= self._bi_total[b] + T_b
        row.setflags(write=False)
        return self._draft_cache.put(b, (row, False))

    def target_row(self, context_ids) -> tuple[np.ndarray, bool]:
        """p(·|ab) for the last two tokens a, b: (V,) float64 summing to 1, and whether it backed off to q."""
        if len(context_ids) < 2:
            return self.draft_row(context_ids)[0], True
        a, b = int(context_ids[-2]), int(context_ids[-1])
        key = a * self.V + b
        hit = self._target_cache.get(key)
        if hit is not None:
            return hit
        t = self.tables
        h = int(np.searchsorted(t.tri_keys, key))
        q_b = self.draft_row(context_ids)[0]
        if h >= len(t.tri_keys) or t.tri_keys[h] != key:
            return self._target_cache.put(key, (q_b, True))     # unseen ab: p = q(·|b) wholly
        lo, hi = t.tri_indptr[h], t.tri_indptr[h + 1]
        T_ab = float(self._tri_T[h])
        # p(x|ab) = (c(abx) + T(ab)·q(x|b)) / (c(ab·) + T(ab))
        row = T_ab * q_b
        row[t.tri_indices[lo:hi]] += t.tri_counts[lo:hi]
        row /= self._tri_total[h] + T_ab
        row.setflags(write=False)
        return self._target_cache.put(key, (row, False))

    # ---- counts, for explanations ---------------------------------------------------------------
    def count(self, *ids: int) -> int:
        """c(x), c(bx) or c(abx) from the tables."""
        t = self.tables
        if len(ids) == 1:
            return int(t.unigram[ids[0]])
        if len(ids) == 2:
            lo, hi = t.bi_indptr[ids[0]], t.bi_indptr[ids[0] + 1]
            j = np.searchsorted(t.bi_indices[lo:hi], ids[1])
            return int(t.bi_counts[lo + j]) if j < hi - lo and t.bi_indices[lo + j] == ids[1] else 0
        if len(ids) == 3:
            key = ids[0] * self.V + ids[1]
            h = int(np.searchsorted(t.tri_keys, key))
            if h >= len(t.tri_keys) or t.tri_keys[h] != key:
                return 0
            lo, hi = t.tri_indptr[h], t.tri_indptr[h + 1]
            j = np.searchsorted(t.tri_indices[lo:hi], ids[2])
            return int(t.tri_counts[lo + j]) if j < hi - lo and t.tri_indices[lo + j] == ids[2] else 0
        raise ValueError("count takes 1 to 3 token ids")

    # ---- text <-> ids --------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Token ids of a text; '↵' stands for the newline token. Unknown characters are an InputError."""
        if NEWLINE_GLYPH not in self.index:
            text = text.replace(NEWLINE_GLYPH, NEWLINE)
        if self.tokens == "word":
            return self._encode_words(text)
        unknown = sorted({ch for ch in text if ch not in self.index})
        if unknown:
            raise InputError(f"not in the vocabulary of this table ({self.V} tokens): "
                             + " ".join(repr(c) for c in unknown))
        return [self.index[ch] for ch in text]

    def _encode_words(self, text: str) -> list[int]:
        ids: list[int] = []
        unknown: list[str] = []
        longest = max(len(w) for w in self.vocab)
        for word in segment_words(text):
            if word in self.index:
                ids.append(self.index[word])
                continue
            # jieba cut differently from the counted text: cover the word greedily by known words.
            i = 0
            while i < len(word):
                for j in range(min(len(word), i + longest), i, -1):
                    if word[i:j] in self.index:
                        ids.append(self.index[word[i:j]])
                        i = j
                        break
                else:
                    unknown.append(word[i])
                    i += 1
        if unknown:
            raise InputError(f"not in the vocabulary of this table ({self.V} tokens): "
                             + " ".join(repr(c) for c in sorted(set(unknown))))
        return ids

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)

    def display(self, token_id: int) -> str:
        """The token as drawn on screen: the newline token becomes '↵'."""
        tok = self.vocab[int(token_id)]
        return tok.replace(NEWLINE, NEWLINE_GLYPH)

    # ---- the pair protocol (models.pair.Pair): what the program asks of any pair --------------------------
    kind = "ngram"                        # the --pair word (a label: nothing branches on it)
    offers = frozenset({"counts"})        # heads and trees are built on these counts (models.drafters.COUNTS)
    model_names = ("trigram", "bigram")   # (target, draft), as the CLI names them
    max_run_tokens = None                 # a long run of the counted pair has no limit but the machine's

    @property
    def key(self) -> str:
        """A digest of the counts (vocabulary and every count array): two loads of one table share it, two tables
        with different counts never do. Computed once."""
        if getattr(self, "_key", None) is None:
            t = self.tables
            h = hashlib.sha256()
            h.update("\x00".join(self.vocab).encode("utf-8"))
            for name in ("unigram", "bi_indptr", "bi_indices", "bi_counts", "tri_keys", "tri_indptr", "tri_indices",
                         "tri_counts"):
                arr = np.ascontiguousarray(getattr(t, name))
                h.update(name.encode())
                h.update(str(arr.dtype).encode())
                h.update(arr.tobytes())
            self._key = h.hexdigest()[:16]
        return self._key

    def long_run_tokens(self, settings, sampler: bool = False) -> int:
        """A long run's default length: the vectorised run counts 200,000 tokens; shaped rows or a drafter other
        than the chain need the sampler itself, which counts 20,000 in about as long."""
        return an.LONG_RUN_TOKENS_SHAPED if settings.shapes_rows or sampler else an.LONG_RUN_TOKENS

    def generated_run(self, settings, tokens: int):
        return alpha_generated(self, settings, chars=tokens)

    def alpha_corpus(self, settings) -> float:
        return alpha_corpus(self, settings)
