"""The heads drafter (Medusa's idea on the toy, Cai et al. 2024): no second model; extra heads on the target's
own features propose several tokens at once.

The toy target's features at a position are its context there (the last two tokens). Head k predicts the k-th
token after that position (models.heads, counted from the book and smoothed like the target; head 1 is the target
itself). As in Medusa the heads read the features of the last position the target computed: a pass starts just
after the target wrote its own token y (the previous pass's replacement or bonus: head 1's token), from the
features before y, so guess i — the i-th token after y — comes from head i + 1:

    guess i ~ h_{i+1}(· | the two tokens before y)          i = 1..γ

The heads never see y (EAGLE's draft does: SCIENCE.md chapter 10). Each guess is SAMPLED from its head's row, and
that row is the q of the rule: it is a function of the context alone (not of the earlier guesses), which is a
valid proposal, so models.acceptance.verify keeps the output exactly p. (Greedy heads would be the one-hot case
of the same rule, as in the lookup drafter.) The heads cost no sequential draft runs, only their own arithmetic
and weights inside the target's pass.
"""
from __future__ import annotations

import numpy as np

from corpus.errors import InputError
from models.acceptance import sample_index
from models.drafters.base import ChainProposal, DraftCost, Drafter, FirstGuess


class HeadsDrafter(Drafter):
    name = "heads"

    def __init__(self, heads):
        self.heads = heads                        # models.heads.HeadModels

    @staticmethod
    def features(context) -> list[int]:
        """The context the heads read: everything before the last token (the one the target itself wrote)."""
        return list(context[:-1][-2:])

    def validate(self, gamma: int) -> None:
        if gamma + 1 > self.heads.last_head:
            raise InputError(f"the heads table has heads 2..{self.heads.last_head}: γ must be at most "
                             f"{self.heads.last_head - 1} with the heads drafter, got {gamma}")

    def row_at(self, rows, context, path, depth):
        """The head row for `depth` tokens after the context (trees built from heads: the same at every node)."""
        row, bo = self.heads.row(depth + 1, self.features(context))
        return rows.shape(row), bo

    def propose(self, rows, context, gamma, u) -> ChainProposal:
        self.validate(gamma)
        feats = self.features(context)
        guesses: list[int] = []
        q_rows = np.empty((gamma, rows.pair.V))
        backed = []
        for i in range(gamma):
            row, bo = self.heads.row(i + 2, feats)
            q_rows[i] = rows.shape(row)
            backed.append(bo)
            guesses.append(sample_index(q_rows[i], u[i]))
        return ChainProposal(guesses, q_rows, backed, heads=[i + 2 for i in range(gamma)])

    def first_guess(self, rows, context) -> FirstGuess:
        return FirstGuess(np.asarray(self.row_at(rows, context, [], 1)[0], dtype=np.float64))

    def cost(self, gamma: int) -> DraftCost:
        return DraftCost(heads=gamma, note="γ heads on the target's last hidden state, inside the target's pass")

    def describe(self) -> dict:
        return {"drafter": self.name, "last_head": self.heads.last_head}
