"""The chain drafter (the default): the bigram draft q, the small drum, guesses γ tokens one after another.

Guess i is drawn from q(· | the token before it), the previous guesses included: a separate small model runs γ
times in sequence (c × a target pass each), then the target checks all γ in one pass (models.acceptance.verify).
"""
from __future__ import annotations

import numpy as np

from models.acceptance import sample_index
from models.drafters.base import ChainProposal, DraftCost, Drafter, FirstGuess


class ChainDrafter(Drafter):
    name = "chain"

    def propose(self, rows, context, gamma, u) -> ChainProposal:
        tail = list(context[-2:])                    # the models see at most two tokens back
        guesses: list[int] = []
        q_rows = np.empty((gamma, rows.pair.V))
        backed = []
        for i in range(gamma):
            # The small drum turns: guess i is drawn from exactly the row stored in the trace.
            q, bo = rows.draft_row(tail + guesses)
            q_rows[i] = q
            backed.append(bo)
            guesses.append(sample_index(q, u[i]))
        return ChainProposal(guesses, q_rows, backed)

    def row_at(self, rows, context, path, depth):
        """The row a guess after context + path is drawn from (for trees built from this drafter)."""
        return rows.draft_row(list(context[-2:]) + list(path))

    def first_guess(self, rows, context) -> FirstGuess:
        return FirstGuess(np.asarray(rows.draft_row(context)[0], dtype=np.float64))

    def cost(self, gamma: int) -> DraftCost:
        return DraftCost(draft_runs=gamma, note="γ sequential runs of the draft model, c × a target pass each")
