"""The pair protocol: what the program asks of a pair of models (a draft q and a target p over one vocabulary).

Two kinds implement it: models.ngram.NGramPair (the counted bigram and trigram) and models.llm.pair.LlamaPair (two
Llama networks: the shipped 《呐喊》 pair or your checkpoints). Nothing outside them asks which kind a pair is; what
differs is behind these names. A new kind of pair implements them (tests/test_core_pair_protocol.py runs a pair
written there through the sampler, the long run, the step-through and the table).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from corpus.errors import InputError
from models.sampler import SpeculativeSampler, TargetSampler


@runtime_checkable
class Pair(Protocol):
    # ---- the vocabulary and the rows -----------------------------------------------------------------
    V: int                              # vocabulary size
    tokens: str                         # what a token is: 'char' | 'word' | 'bytes' | ...
    kind: str                           # the --pair word ('ngram', 'neural'): a label, nothing branches on it

    @property
    def vocab(self) -> list[str]: ...

    def encode(self, text: str) -> list[int]: ...      # InputError naming what it cannot encode
    def decode(self, ids) -> str: ...
    def display(self, token_id: int) -> str: ...       # as drawn on screen (a newline as ↵)
    def draft_row(self, context_ids) -> tuple[np.ndarray, bool]: ...    # q(·|context), backed off?
    def target_row(self, context_ids) -> tuple[np.ndarray, bool]: ...   # p(·|context), backed off?

    # ---- what it can draft with ------------------------------------------------------------------------
    offers: frozenset                   # what drafters may build on (models.drafters.COUNTS: the n-gram counts)
    model_names: tuple[str, str]        # (target, draft) as the command line names them

    def drafter_for(self, kind): ...    # its own drafter for a models.drafters kind, or None (the kind's own)
    def check_drafter(self, kind) -> None: ...    # InputError (one line) when it cannot draft with `kind`

    # ---- the sampler it builds and its long-run figures ------------------------------------------------
    @property
    def key(self) -> str: ...           # what its figures are cached under: equal for equal models

    max_run_tokens: int | None          # the longest long run it allows (None: no limit)

    def sampler(self, settings=None, *, drafter=None, target_only: bool = False): ...
    def long_run_tokens(self, settings, sampler: bool = False) -> int: ...
    def shipped_long_run(self, settings): ...    # a long run counted once and shipped, or None
    def generated_run(self, settings, tokens: int): ...    # models.trace.GeneratedRun of a seeded run
    def alpha_corpus(self, settings) -> float: ...        # mean Σ min(p, q) over its corpus (NaN: none)


class RowsPair:
    """What a pair whose rows are numpy arrays (the counted pair, a pair of tables) does by default: the samplers of
    models.sampler, each drafter kind's own drafter, the one-line refusal of a kind it cannot feed, no shipped long
    run. Subclasses give the rows, the vocabulary and their long run."""

    offers: frozenset = frozenset()
    max_run_tokens: int | None = None

    def drafter_for(self, kind):
        return None

    def check_drafter(self, kind) -> None:
        problem = kind.problem_on(self)
        if problem is not None:
            raise InputError(problem)

    def sampler(self, settings=None, *, drafter=None, target_only: bool = False):
        """The big drum alone (target_only) or speculative with `drafter` (default: the chain)."""
        return TargetSampler(self, settings) if target_only else SpeculativeSampler(self, settings, drafter=drafter)

    def shipped_long_run(self, settings):
        return None
