"""The lookup drafter: no draft model at all (prompt lookup decoding, Saxena 2023; Lookahead decoding's n-gram
pool, Fu et al. 2024). The guesses are copied from the text itself.

Take the last n tokens of the context (prompt + everything written), n = MAX_NGRAM down to 1; find their latest
earlier occurrence; copy the up to γ tokens that followed it. The proposal is deterministic, so q is one-hot at
each copied token and the exact rule (models.acceptance.verify, unchanged) becomes: keep x with probability p(x);
on rejection draw from max(0, p − q) = p with x removed, renormalised (SCIENCE.md, "Exact rules beyond a single
chain"). A copy is a function of the context alone, so the text still follows p exactly. With no earlier
occurrence there is nothing to copy and the pass is a plain target step (no guesses, one lane).

The pool is an index of every n-gram of the text to its latest start whose next token exists, kept up to date as
the text grows (a long run costs O(1) per token, not a scan of the text per pass).
"""
from __future__ import annotations

import numpy as np

from models.drafters.base import ChainProposal, DraftCost, Drafter, FirstGuess, one_hot_rows

MAX_NGRAM = 3          # prompt lookup decoding's usual longest n-gram


class LookupDrafter(Drafter):
    name = "lookup"
    deterministic = True

    def __init__(self, max_ngram: int = MAX_NGRAM):
        self.max_ngram = int(max_ngram)
        self.reset()

    def reset(self) -> None:
        self._src: list | None = None
        self._n = 0
        self._last = None
        self._index: list[dict] = [dict() for _ in range(self.max_ngram + 1)]

    def _sync(self, tokens: list[int]) -> None:
        """Bring the pool up to date with `tokens` (rebuilt if it is another text than last time)."""
        if tokens is not self._src or len(tokens) < self._n or (self._n and tokens[self._n - 1] != self._last):
            self.reset()
            self._src = tokens
        for L in range(self._n, len(tokens)):
            # tokens[L] exists now, so every n-gram ending just before L has a continuation: register it at its
            # start (a later occurrence overwrites an earlier one: the latest wins).
            for n in range(1, min(self.max_ngram, L) + 1):
                self._index[n][tuple(tokens[L - n:L])] = L - n
        self._n = len(tokens)
        self._last = tokens[-1] if tokens else None

    def find(self, context: list[int], gamma: int) -> dict | None:
        """The span to copy: {"ngram": n, "match": [a, b], "copy": [c, d]} or None when the text has no earlier
        occurrence of even its last token."""
        self._sync(context)
        L = len(context)
        for n in range(min(self.max_ngram, L - 1), 0, -1):
            start = self._index[n].get(tuple(context[L - n:]))
            if start is not None:
                c0 = start + n
                return {"ngram": n, "match": [start, c0], "copy": [c0, min(c0 + gamma, L)]}
        return None

    def propose(self, rows, context, gamma, u) -> ChainProposal:
        span = self.find(context, gamma)
        V = rows.pair.V
        if span is None:
            return ChainProposal([], np.empty((0, V)), [], source_span=None)
        guesses = [int(t) for t in context[span["copy"][0]:span["copy"][1]]]
        return ChainProposal(guesses, one_hot_rows(guesses, V), [False] * len(guesses), source_span=span)

    def first_guess(self, rows, context) -> FirstGuess:
        # A fresh pool: the tubes ask about one context many times, never the sampler's growing text.
        probe = LookupDrafter(self.max_ngram)
        span = probe.find(list(context), 1)
        if span is None:
            return FirstGuess(None, copied=True)
        return FirstGuess(one_hot_rows([context[span["copy"][0]]], rows.pair.V)[0], copied=True)

    def cost(self, gamma: int) -> DraftCost:
        return DraftCost(note="copied from the text: no draft model, no extra arithmetic")

    def describe(self) -> dict:
        return {"drafter": self.name, "max_ngram": self.max_ngram}
