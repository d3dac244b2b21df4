"""Numbers derived from the models for the live facts and the plots: plain functions, cached by their arguments.

Each one calls models.analytics or models.hardware and nothing else; facts.py formats them, figures.py plots
them. Arguments are the values they depend on (a pair, α, γ, c, a device...), so a cache entry can never be
stale: a changed setting is a different argument.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from corpus.errors import InputError
from models.tubes import DEFAULT_PREFIX
from models import analytics, hardware
from models.demo import find_demo_seed
from models.drafters import choice, kind, make_choice
from models.sampler import SamplerSettings, make_sampler

# Published acceptance rates used only as reference curves (Leviathan et al. 2023: drafts two orders of
# magnitude smaller mostly give α between 0.5 and 0.9; a bigram draft for T5-XXL gave about 0.2).
REFERENCE_ALPHAS = (0.2, 0.5, 0.7, 0.9)
GAMMAS = tuple(range(1, 11))
LANE_SWEEP = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


@lru_cache(maxsize=64)
def alpha_corpus(pair, temperature: float | None = None) -> float:
    """α over the book's contexts (held-in text); with both rows shaped to a temperature when given (T = 0:
    greedy one-hot rows, so a guess passes only where the two models' top tokens agree). About 0.4 s."""
    settings = None if temperature is None else SamplerSettings(temperature=float(temperature))
    a = float(pair.alpha_corpus(settings))
    if a != a:
        raise ValueError("this pair has no count table to average Σ min(p, q) over (α is counted on its long run)")
    return a


@lru_cache(maxsize=256)
def speedups(alpha: float, c: float) -> tuple[float, ...]:
    return tuple(float(analytics.speedup(alpha, g, c)) for g in GAMMAS)


@lru_cache(maxsize=256)
def best_gamma(alpha: float, c: float) -> tuple[int, float]:
    """(γ with the best speedup over 1..64, that speedup)."""
    g = int(analytics.best_gamma(alpha, c))
    return g, float(analytics.speedup(alpha, g, c))


@lru_cache(maxsize=256)
def tokens_per_pass_formula(alpha: float) -> tuple[float, ...]:
    return tuple(float(analytics.tokens_per_pass_formula(alpha, g)) for g in GAMMAS)


def tokens_per_pass_bonus(alpha: float, gamma: int) -> tuple[float, float]:
    """(with the bonus, without it): (1 - α^(γ+1))/(1 - α) and that minus α^γ. Skipping the bonus keeps the
    text exact; a pass that keeps all γ guesses (probability α^γ) just writes γ tokens instead of γ + 1."""
    with_bonus = float(analytics.tokens_per_pass_formula(alpha, gamma))
    return with_bonus, with_bonus - float(alpha) ** gamma


@lru_cache(maxsize=32)
def tokens_per_pass_counted(pair, prompt: str, temperature: float, top_k: int, top_p: float, seed: int,
                            passes: int = 40) -> tuple[float, ...]:
    """Run the real sampler at every γ of the plot and count tokens per pass (the prompt, else 慢慢)."""

    try:
        ids = pair.encode(prompt)
    except InputError:
        ids = pair.encode(DEFAULT_PREFIX) if pair.tokens == "char" else [0]
    out = []
    for g in GAMMAS:
        sm = make_sampler(pair, SamplerSettings(gamma=g, temperature=temperature, top_k=top_k, top_p=top_p,
                                                seed=seed))
        sm.reset(ids)
        out.append(float(np.mean([len(sm.step().tokens_written) for _ in range(passes)])))
    return tuple(out)


def extra_arithmetic(alpha: float, gamma: int) -> float:
    """Arithmetic of speculative decoding relative to the target alone (1.53 = 53% more)."""
    return float(analytics.extra_arithmetic(alpha, gamma))


def roofline(device: str, model: str, lanes: int, context: int, positions: int = 1):
    """models.hardware.roofline (a Roofline), cached."""
    return hardware.roofline(device, model, lanes, context, positions)


def pass_busy(device: str, model: str, sequences: int, positions: int, context: int) -> float:
    """The mill's busy share for a pass: `positions` (γ + 1 while checking) of each sequence at once, which
    read that sequence's KV cache once (models.hardware.pass_busy)."""
    return hardware.pass_busy(device, model, sequences, positions, context)


def lane_sweep(device: str, model: str, context: int) -> tuple[list[int], list[float], list[float]]:
    rows = [roofline(device, model, n, context) for n in LANE_SWEEP]
    return list(LANE_SWEEP), [float(r.tokens_per_s) for r in rows], [float(r.arithmetic_busy) for r in rows]


def lane_fits(device: str, model: str, context: int) -> list[bool]:
    """Whether the weights and LANE_SWEEP's sequences' KV caches fit the device's memory, lane count by lane count."""
    return [bool(roofline(device, model, n, context).fits_in_memory) for n in LANE_SWEEP]


@lru_cache(maxsize=64)
def demo_seed(pair, prompt: str, gamma: int, temperature: float, top_k: int, top_p: float, events: tuple,
              start: int, drafter: tuple = ("chain", ()), heads=None) -> int:
    """The first seed >= start whose real run from `prompt` shows `events` in its first passes (models.demo): a
    tour page that describes a kept guess, a replacement or a bonus gets a pass in which it happens. Searched
    once per chapter's settings (a few milliseconds a try); InputError when no seed within the search does.
    drafter: a models.drafters.choice (who proposes in that run); heads: heads(pair) loads its heads tables (the
    session's, loaded once) when the drafter reads them."""
    settings = SamplerSettings(gamma=gamma, temperature=temperature, top_k=top_k, top_p=top_p, seed=start)
    make = lambda: make_choice(drafter, pair, heads=(lambda: heads(pair)) if heads else None)  # noqa: E731
    return find_demo_seed(pair, pair.encode(prompt), settings, tuple(events), start=int(start), drafter=make).seed


def tokens_per_pass_long(pair, settings, tokens: int) -> list[float]:
    """Tokens per pass at each γ of GAMMAS counted on one long seeded run per γ (models.analytics.pair_facts, seed 0,
    as the long-run α): the pair's own figure beside the formula, not a short run's luck. Cached per table."""
    return [float(analytics.pair_facts(pair, g, settings, chars=int(tokens), seed=0).tokens_per_pass_counted)
            for g in GAMMAS]


# Lookahead decoding (Fu et al. 2024): about 120× the operations a pass in its authors' 7B setting on an A100
# (80× for 13B, 56× for 34B), the figure chapter 10 puts on the mill's GPU and on this computer
LOOKAHEAD_OPS = 120
SHORT_COUNTS = 16                   # the parts of the long run chapter 7 lays beside it (its 64 texts, 4 a part)


def pass_positions(s) -> int:
    """Positions one speculative pass computes per sequence at the settings: γ + 1, a tree's nodes + 1 (lookup: at
    most γ + 1, when it copies γ)."""
    name, opts = choice(s)
    return kind(name).positions(dict(opts), s.gamma) + 1
