"""The pair protocol (models.pair.Pair): both kinds of pair implement it, and a third written here (rows from two
small tables over the letters a-d) runs through the sampler with every drafter it can draft with, is refused the
drafters it cannot with one line naming why, gives its long-run figures to models.analytics, and is drawn by the
table. This keeps the recipe "add a pair" in docs/ARCHITECTURE.md true: implement the protocol, nothing else."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from corpus.errors import InputError
from models.pair import Pair, RowsPair
from models.trace import GeneratedRun

P = np.array([[0.5, 0.3, 0.2, 0.0], [0.1, 0.1, 0.4, 0.4], [0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1]])
Q = np.array([[0.4, 0.4, 0.1, 0.1], [0.1, 0.3, 0.3, 0.3], [0.1, 0.2, 0.3, 0.4], [0.5, 0.2, 0.2, 0.1]])


class LetterPair(RowsPair):
    """Rows that depend on the last token only: P[ctx[-1]] and Q[ctx[-1]] (row 0 for an empty context). The
    samplers, the drafters' own drafters and the refusal of heads and trees come from models.pair.RowsPair."""

    kind = "letters"
    tokens = "char"
    offers = frozenset()                     # no n-gram counts: no heads, no trees
    model_names = ("P table", "Q table")
    max_run_tokens = 10_000

    def __init__(self):
        self.V = P.shape[1]
        self.vocab = [chr(ord("a") + i) for i in range(self.V)]

    def encode(self, text: str) -> list[int]:
        bad = [c for c in text if c not in self.vocab]
        if bad:
            raise InputError(f"not a letter of this pair: {bad[0]!r}")
        return [self.vocab.index(c) for c in text]

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)

    def display(self, token_id: int) -> str:
        return self.vocab[int(token_id)]

    def draft_row(self, ctx):
        return Q[ctx[-1] if len(ctx) else 0], False

    def target_row(self, ctx):
        return P[ctx[-1] if len(ctx) else 0], False

    @property
    def key(self) -> str:
        return "letters-" + hashlib.sha256(P.tobytes() + Q.tobytes()).hexdigest()[:12]

    def long_run_tokens(self, settings, sampler: bool = False) -> int:
        return 2_000

    def generated_run(self, settings, tokens: int) -> GeneratedRun:
        s = self.sampler(settings)
        s.reset([0])
        acc = tested = passes = 0
        while len(s.written) < tokens:
            tr = s.step()
            acc, tested, passes = acc + tr.n_accepted, tested + tr.tested, passes + 1
        return GeneratedRun(alpha=acc / tested, alpha_expected=float("nan"), tokens=len(s.written), passes=passes,
                            accepted=acc, tested=tested, gamma=settings.gamma, seed=settings.seed, method="sampler")

    def alpha_corpus(self, settings) -> float:
        return float("nan")


def test_both_kinds_of_pair_and_a_new_one_implement_the_protocol():
    from models.llm.pair import LlamaPair
    from models.ngram import NGramPair
    for pair in (NGramPair.load(), LlamaPair.shipped(), LetterPair()):
        assert isinstance(pair, Pair), type(pair).__name__
    assert not isinstance(object(), Pair)


@pytest.mark.parametrize("name", ["chain", "lookup"])
def test_a_new_pair_samples_p_exactly_with_the_drafters_it_offers(name):
    from models.drafters import kind
    from models.sampler import SamplerSettings, make_sampler
    from tests.test_core_drafters import _assert_pp, first_tokens
    pair = LetterPair()
    k = kind(name)
    pair.check_drafter(k)
    s = make_sampler(pair, SamplerSettings(gamma=2), drafter=k.make(pair))
    _assert_pp(first_tokens(s, [1, 2, 1], 2), P, 1, 4)


@pytest.mark.parametrize("name", ["heads", "tree"])
def test_a_pair_without_counts_refuses_the_drafters_built_on_them(name):
    from models.drafters import kind
    with pytest.raises(InputError) as exc:
        LetterPair().check_drafter(kind(name))
    msg = str(exc.value)
    assert "\n" not in msg and "n-gram counts" in msg and "chain or lookup" in msg


def test_a_new_pair_gives_its_long_run_figures():
    from models import analytics
    from models.sampler import SamplerSettings
    pair = LetterPair()
    f = analytics.pair_facts(pair, 3, SamplerSettings(seed=4), chars=600)
    assert f.table == pair.key and f.tokens >= 600 and 0 < f.alpha < 1
    assert f.alpha == f.accepted / f.tested and np.isnan(f.alpha_corpus)
    # the figure is that run's: the same seed counts the same, another seed counts on its own
    assert analytics.pair_facts(pair, 3, SamplerSettings(seed=4), chars=600) is f
    with pytest.raises(InputError):
        pair.encode("az")
