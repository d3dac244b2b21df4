"""Drafters: who proposes the guesses a target pass checks (one module each; the interface is in base.py).

    chain    the bigram draft q (the small drum), γ guesses in sequence: today's default
    lookup   copies from the text itself (prompt lookup / Lookahead's n-gram pool): no draft model
    heads    Medusa's idea: heads on the target's own features propose γ tokens at once: no second model (on the
             counted pair heads counted from the book, on a network pair Medusa-1's trained heads)
    eagle    EAGLE: one small layer pushes the target's features forward a position at a time (a network pair)
    tree     several candidates per position from chain, heads or eagle, checked together (SpecInfer)

Every proposal is checked by the one rule (models.acceptance.verify for one guess per position,
models.multi_candidate.verify_tree for a tree), so the text follows the target's p exactly whatever proposes.
"""
from __future__ import annotations

from corpus.errors import InputError
from models.drafters.base import ChainProposal, DraftCost, Drafter, FirstGuess, TreeProposal
from models.drafters.chain import ChainDrafter
from models.drafters.heads import HeadsDrafter
from models.drafters.lookup import LookupDrafter
from models.drafters.tree import BASES, MAX_TREE_NODES, MAX_WIDTH, SAMPLINGS, TreeDrafter, node_count
from models.drafters.registry import (COPY, COUNTS, DRUM, FEATURES, HEADS, LEAN_COPY, LEAN_MODEL, TREE, DrafterKind,
                                     choice, kind, kind_of, kinds, lean_names, make_choice, names, register,
                                     registered, runs_on)


def _offers(pair) -> frozenset:
    return getattr(pair, "offers", frozenset({COUNTS}))


def _heads(pair, opts, heads):
    """The counted pair's heads (counted from the book) or a network's Medusa-1 heads (trained on its features)."""
    if FEATURES in _offers(pair):
        return pair.feature_drafter("medusa")
    return HeadsDrafter(heads())


def _tree(pair, opts, heads) -> TreeDrafter:
    base = opts.get("tree_from", "chain")
    if base not in BASES:
        raise InputError(f"a tree is built from one of: {', '.join(BASES)} (not {base!r})")
    why = kind(base).problem_on(pair) if pair is not None else None
    if why:
        raise InputError(f"a tree from {base}: {why}")
    if hasattr(pair, "tree_base"):           # a network pair: its rows come from its models (models.llm.tree)
        made = pair.tree_base(base)
    else:
        made = kind(base).make(pair, heads=heads() if base == "heads" else None)
    return TreeDrafter(made,
                       width=opts.get("tree_width", 2), depth=opts.get("tree_depth"), widths=opts.get("tree_widths"),
                       sampling=opts.get("tree_sampling", "iid"))


def _tree_problem(pair) -> str | None:
    """A tree needs a base that runs on the pair: the counted pair's, a draft model, or a network's self-drafters."""
    if pair is None or COUNTS in _offers(pair) or FEATURES in _offers(pair):
        return None
    if hasattr(pair, "tree_base") and getattr(pair, "draft", None) is not None:     # a network pair's draft model
        return None
    return ("a tree is built on the n-gram counts, a network's draft model or its trained self-drafters; "
            f"this pair runs {runs_on(pair, 'tree')}")


def _tree_variants(gamma: int) -> list:
    return [("tree_2x2", "tree 2×2 (chain)", {"tree_width": 2, "tree_depth": 2}),
            (f"tree_2x{gamma}", f"tree 2×{gamma} (chain)", {"tree_width": 2}),
            (f"tree_3x{gamma}", f"tree 3×{gamma} (chain)", {"tree_width": 3}),
            (f"tree_2x{gamma}_heads", f"tree 2×{gamma} (heads)", {"tree_width": 2, "tree_from": "heads"}),
            (f"tree_2x{gamma}_eagle", f"tree 2×{gamma} (EAGLE)", {"tree_width": 2, "tree_from": "eagle"})]


# The four drafters, in the order the lab's menu and the comparisons list them.
register(DrafterKind("chain", lambda pair, opts, heads: ChainDrafter(), draft_model=True, look=DRUM, formulas=True,
                     hue="draft", lean=LEAN_MODEL))
register(DrafterKind("lookup", lambda pair, opts, heads: LookupDrafter(), look=COPY, hue="#ffd92f", lean=LEAN_COPY,
                     words={"guess": "step.guess_lookup", "q": "step.q_lookup", "residual": "step.residual_lookup"}))
register(DrafterKind("heads", _heads, look=HEADS, needs=frozenset({COUNTS, FEATURES}),
                     hue="target", words={"guess": "step.guess_heads", "q": "step.q_heads"}))
register(DrafterKind("eagle", lambda pair, opts, heads: pair.feature_drafter("eagle"), look=DRUM,
                     needs=frozenset({FEATURES}), hue="#e78ac3",
                     words={"guess": "step.guess_eagle", "q": "step.q_eagle"}))
register(DrafterKind("tree", _tree, options=("tree_width", "tree_depth", "tree_widths", "tree_from", "tree_sampling"),
                     gamma_knob=False, look=TREE, hue="accent", problem=_tree_problem,
                     words={"guess": "step.guess_tree"}, variants=_tree_variants,
                     compared=lambda gamma: _tree_variants(gamma)[1:],      # SpecInfer-sized trees only
                     positions=lambda o, gamma: node_count(o.get("tree_widths") or
                                                           [o.get("tree_width", 2)] * (o.get("tree_depth") or gamma))))

__all__ = ["BASES", "SAMPLINGS", "MAX_TREE_NODES", "MAX_WIDTH", "ChainProposal", "TreeProposal",
           "FirstGuess", "DraftCost", "Drafter", "ChainDrafter", "LookupDrafter", "HeadsDrafter", "TreeDrafter",
           "DrafterKind", "LEAN_MODEL", "LEAN_COPY", "lean_names", "choice", "make_choice", "DRUM", "COPY", "HEADS",
           "TREE", "COUNTS", "FEATURES", "kind", "kind_of", "kinds", "names", "register", "registered",
           "make_drafter", "node_count"]


def make_drafter(name: str, pair=None, *, heads=None, **options) -> Drafter:
    """A drafter by name (models.drafters.registry). `pair` is needed for the heads (their table sits beside the
    pair's); `heads` may pass a models.heads.HeadModels already loaded. Options are the kind's own (a tree: its
    tree_width, tree_depth or tree_widths, tree_from and tree_sampling); others are ignored."""
    return kind(name).make(pair, options, heads)
