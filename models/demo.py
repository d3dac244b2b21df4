"""Demo passes that show what a page describes: a seed search over the real sampler, never a made-up trace.

A lesson page that says "the target keeps two guesses and replaces the third" needs a pass in which that
happens. Which pass a seed gives is luck, so the tour asks for the events its pages describe, in order
(pass 1 keeps some guesses and replaces one, pass 2 keeps all γ and adds the bonus...) and this module
tries seeds 0, 1, 2, ... on the real SpeculativeSampler from the prompt until the first passes show them.
The result is a pure function of (pair, prompt, settings, events): the same inputs find the same seed.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from corpus.errors import InputError
from models.sampler import make_sampler


def _kept_and_replaced(tr) -> bool:
    """Some guesses kept (dots), then a rejection and the target's replacement (a diamond)."""
    return 0 < tr.n_accepted < tr.gamma and tr.final_kind == "replacement"


def _all_kept_bonus(tr) -> bool:
    """Every guess kept and the bonus token drawn from p at position γ + 1."""
    return tr.gamma > 0 and tr.n_accepted == tr.gamma and tr.final_kind == "bonus"


def _first_rejected(tr) -> bool:
    """The first guess already rejected: nothing kept, the replacement alone is written."""
    return tr.gamma > 0 and tr.n_accepted == 0


def _some_kept(tr) -> bool:
    """At least one guess kept: the pass writes more than the target alone would (the idea working)."""
    return tr.gamma > 0 and tr.n_accepted >= 1


def _gamble(tr) -> bool:
    """A tested guess is a real coin toss (q > p: it passes only with probability p/q < 1)."""
    return any(tr.ratios[i] < 1.0 for i in range(tr.tested))


def _gamble_rejected(tr) -> bool:
    """The pass's first real coin toss (q > p) went against the guess: the residual round that follows is the
    one a page can draw (the test checkpoint asks about that very guess), and it spreads over at least two tokens
    (a picture of topping up what the draft under-proposed, not a single bar)."""
    i = next((i for i in range(tr.tested) if tr.ratios[i] < 1.0), None)
    if i is None or tr.accepted[i] or tr.final_row is None:
        return False
    return int(np.count_nonzero(np.asarray(tr.final_row) >= 0.05)) >= 2


def _copied_kept(tr) -> bool:
    """Lookup copied guesses from earlier text and the target kept at least one."""
    return tr.source_span is not None and bool(tr.guesses) and tr.n_accepted >= 1


def _later_round_kept(tr) -> bool:
    """A tree: at some position a candidate was rejected and a later one kept (the residual round shown), and the
    walk went on to the next position."""
    tree = tr.tree
    return tree is not None and len(tree.accepted_path) >= 1 and any(c.accepted and c.round > 1 for c in tree.checks)


EVENTS: dict[str, Callable] = {
    "kept_and_replaced": _kept_and_replaced,
    "all_kept_bonus": _all_kept_bonus,
    "first_rejected": _first_rejected,
    "some_kept": _some_kept,
    "gamble": _gamble,
    "gamble_rejected": _gamble_rejected,
    "copied_kept": _copied_kept,
    "later_round_kept": _later_round_kept,
}


@dataclass(frozen=True)
class DemoSeed:
    seed: int                 # the first seed whose first passes show the events, in order
    events: tuple[str, ...]
    tries: int                # seeds tried (the search's cost)


def find_demo_seed(pair, prompt_ids: Sequence[int], settings, events: Sequence[str], *, start: int = 0,
                   max_tries: int = 2000, drafter: Callable | None = None) -> DemoSeed:
    """The first seed >= start for which pass k of a SpeculativeSampler run from `prompt_ids` with `settings`
    (its seed replaced; `drafter`: a function making a fresh models.drafters drafter for each try, else the chain)
    shows events[k], for every k. InputError if an event is unknown or no seed in
    [start, start + max_tries) shows them (say, a bonus that the pair never allows after this prompt)."""
    events = tuple(events)
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise InputError(f"unknown demo event(s) {', '.join(unknown)} (known: {', '.join(EVENTS)})")
    if not events:
        raise InputError("no demo events asked for")
    if not isinstance(start, int) or start < 0 or not isinstance(max_tries, int) or max_tries < 1:
        raise InputError("start must be >= 0 and max_tries >= 1")
    tests = [EVENTS[e] for e in events]
    for seed in range(start, start + max_tries):
        sampler = make_sampler(pair, replace(settings, seed=seed), drafter=drafter() if drafter else None)  # either pair
        sampler.reset(prompt_ids)
        for test in tests:
            if not test(sampler.step()):
                break
        else:
            return DemoSeed(seed=seed, events=events, tries=seed - start + 1)
    raise InputError(f"no seed in {start}..{start + max_tries - 1} shows {', '.join(events)} after this prompt")
