"""The drafter interface: a drafter proposes, the one rule verifies.

A drafter turns the context (prompt + text written so far) and a pass's guess uniforms into a proposal; it never
sees the target's verdicts, so it cannot bias what is written. The sampler (models.sampler.SpeculativeSampler)
computes the target's rows where the proposal needs them and hands both to the rule:

    ChainProposal  one guess per position     -> models.acceptance.verify        (chain, lookup, heads)
    TreeProposal   several per position, a tree -> models.multi_candidate.verify_tree   (tree)

Each guess comes with the row it was drawn from (a copied guess: one-hot), because that row is the q of the rule.
Rows come from a `rows` object with draft_row(ctx), target_row(ctx) and shape(row): the sampler itself, or
models.sampler.Rows for the test tubes; both apply the settings' temperature / top-k / top-p.

    class Drafter:
        name                        'chain' | 'lookup' | 'heads' | 'tree'
        guess_uniforms(γ) -> int    uniforms a pass draws for its guesses (the same number again for the tests)
        validate(γ)                 InputError if this drafter cannot run at γ
        reset()                     forget any state (the sampler calls it at reset())
        propose(rows, context, γ, u) -> ChainProposal | TreeProposal
        first_guess(rows, context) -> FirstGuess   the row(s) the first position's candidates come from (tubes)
        cost(γ) -> DraftCost        what proposing costs, for models.analytics.speedup_model
        first_width(γ) -> int       candidates at the first position (1 but for a tree)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class ChainProposal:
    """One guess per position, in order (k <= γ; k = 0 means a plain target step)."""

    guesses: list[int]
    q_rows: np.ndarray                       # (k, V) the row each guess was drawn from (one-hot for a copied guess)
    backed_off: list[bool]                   # (k,) the proposal row backed off to a lower order
    heads: list[int] | None = None           # heads drafter: the head behind each guess
    source_span: dict | None = None          # lookup: {"ngram", "match": [a, b], "copy": [c, d]} in the context


@dataclass
class TreeProposal:
    """A tree of guesses, breadth-first; a node's children in the order they were drawn."""

    parents: list[int]                       # -1 = the root (the context)
    tokens: list[int]
    depths: list[int]                        # 1 = the first position after the context
    paths: list[list[int]]                   # the tokens from the root to each node, the node's own last
    q_rows: np.ndarray                       # (R, V) the rows the tokens were drawn from
    q_of: list[int]                          # the index in q_rows of each node's row
    backed_off: list[bool]                   # per node: its row backed off
    base: str                                # 'chain' | 'heads'
    sampling: str                            # 'iid' | 'distinct'
    widths: list[int]
    heads: list[int] | None = None           # heads-based trees: the head behind each node


@dataclass
class FirstGuess:
    """How the first position after a context is proposed: the row the candidates are drawn from (None: nothing
    to propose, a plain target step), how many candidates, and how they are drawn."""

    row: np.ndarray | None
    width: int = 1
    sampling: str = "iid"
    copied: bool = False                     # a deterministic (one-hot) proposal


@dataclass
class DraftCost:
    """What proposing costs per pass (models.analytics.speedup_model turns it into time)."""

    draft_runs: int = 0                      # sequential runs of a separate draft model (c × a target step each)
    heads: int = 0                           # Medusa heads evaluated on the target's last hidden state
    note: str = ""
    extra: dict = field(default_factory=dict)


class Drafter:
    """Base class: a drafter proposes; models.acceptance / models.multi_candidate verify."""

    name = ""
    deterministic = False      # guesses are a function of the context alone (one-hot q rows)

    def guess_uniforms(self, gamma: int) -> int:
        return gamma

    def validate(self, gamma: int) -> None:
        return None

    def reset(self) -> None:
        return None

    def propose(self, rows, context: list[int], gamma: int, u: np.ndarray):
        raise NotImplementedError

    def first_guess(self, rows, context: list[int]) -> FirstGuess:
        raise NotImplementedError

    def cost(self, gamma: int) -> DraftCost:
        return DraftCost()

    def first_width(self, gamma: int) -> int:
        """Candidates proposed at the first position after the context (a tree: its first width)."""
        return 1

    def describe(self) -> dict:
        """The drafter's settings, for JSON output."""
        return {"drafter": self.name}


def one_hot_rows(tokens, V: int) -> np.ndarray:
    rows = np.zeros((len(tokens), V))
    rows[np.arange(len(tokens)), np.asarray(tokens, dtype=np.int64)] = 1.0
    return rows
