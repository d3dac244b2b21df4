"""Shared fixtures for the core tests: a small synthetic model pair with hand-picked hard rows."""
from __future__ import annotations

import numpy as np

from corpus.errors import InputError
from models.pair import RowsPair


def hard_rows(V: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """(p, q) pairs covering the cases the exact rule must survive."""
    def rand(zeros=0):
        r = rng.random(V) ** 3
        if zeros:
            r[rng.choice(V, zeros, replace=False)] = 0.0
        return r / r.sum()
    one_hot = lambda i: np.eye(V)[i]  # noqa: E731
    p = rand()
    near = p * (1 + 1e-15 * rng.standard_normal(V))
    near /= near.sum()
    cases = [
        (rand(), rand()),                       # generic
        (rand(zeros=1), rand(zeros=2)),         # zeros in both, q zero where p is not and vice versa
        (p, p.copy()),                          # p == q: nothing is ever rejected
        (near, p),                              # equal up to rounding: the residual can sum to 0
        (one_hot(1), rand()),                   # one-hot target
        (rand(), one_hot(2)),                   # one-hot draft
        (one_hot(0), one_hot(0)),               # both one-hot, same token
        (one_hot(0), one_hot(3)),               # both one-hot, different tokens: every guess is rejected
    ]
    return cases


class TablePair(RowsPair):
    """A pair whose rows depend on the last token only: table[ctx[-1]] (row 0 for an empty context).
    A rows pair (models.pair.RowsPair): its rows and vocabulary give it the n-gram samplers."""

    def __init__(self, p_table: np.ndarray, q_table: np.ndarray):
        self.p_table, self.q_table = p_table, q_table
        self.V = p_table.shape[1]
        self.vocab = [chr(ord("a") + i) for i in range(self.V)]

    def draft_row(self, ctx):
        return self.q_table[ctx[-1] if len(ctx) else 0], False

    def target_row(self, ctx):
        return self.p_table[ctx[-1] if len(ctx) else 0], False

    def encode(self, text):
        try:
            return [self.vocab.index(c) for c in text]
        except ValueError:
            raise InputError("unknown") from None


class TableHeads:
    """Synthetic heads for the heads drafter: head k's row depends on the last token of the features only,
    tables[k][feats[-1]] (row 0 for empty features); head 1 is the pair's target. The HeadModels interface."""

    def __init__(self, pair: TablePair, tables: dict):
        self.pair, self.tables = pair, tables
        self.last_head = max(tables)

    def row(self, k, ctx):
        if k == 1:
            return self.pair.target_row(ctx)
        return self.tables[k][ctx[-1] if len(ctx) else 0], False
