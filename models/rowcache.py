"""Two helpers of the counted models (models.ngram, models.heads): a bounded cache of rows and the sums of CSR rows.

Their own module so the heads (a drafter's tables) need not import the pair's module, which builds samplers.
"""
from __future__ import annotations

import threading

import numpy as np


class RowCache:
    """A small bounded cache of read-only rows keyed by history (rows repeat a lot while sampling).
    Locked on writes: the app fills test tubes on a worker thread while the main thread steps."""

    def __init__(self, max_items: int):
        self.max_items = max(16, max_items)
        self.items: dict = {}
        self.lock = threading.Lock()

    def get(self, key):
        return self.items.get(key)

    def put(self, key, value):
        with self.lock:
            if len(self.items) >= self.max_items:
                # Drop the oldest half (dicts keep insertion order): cheap and good enough for sampling loops.
                for k in list(self.items)[: self.max_items // 2]:
                    self.items.pop(k, None)
            self.items[key] = value
        return value


def row_sums(indptr: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sum of each CSR row (empty rows give 0), via a cumulative sum."""
    cs = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
    return (cs[indptr[1:]] - cs[indptr[:-1]]).astype(np.float64)
