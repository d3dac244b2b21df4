"""Drafters: who proposes the guesses a target pass checks (one module each; the interface is in base.py).

    chain    the bigram draft q (the small drum), γ guesses in sequence: today's default
    lookup   copies from the text itself (prompt lookup / Lookahead's n-gram pool): no draft model
    heads    Medusa's idea: heads on the target's own features propose γ tokens at once: no second model
    tree     several candidates per position from chain or heads, checked together (SpecInfer)

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

DRAFTERS = ("chain", "lookup", "heads", "tree")

__all__ = ["DRAFTERS", "BASES", "SAMPLINGS", "MAX_TREE_NODES", "MAX_WIDTH", "ChainProposal", "TreeProposal",
           "FirstGuess", "DraftCost", "Drafter", "ChainDrafter", "LookupDrafter", "HeadsDrafter", "TreeDrafter",
           "make_drafter", "node_count"]


def make_drafter(name: str, pair=None, *, tree_width: int = 2, tree_depth: int | None = None, tree_widths=None,
                 tree_from: str = "chain", tree_sampling: str = "iid", heads=None) -> Drafter:
    """A drafter by name. `pair` is needed for the heads (their table sits beside the pair's); `heads` may pass
    a models.heads.HeadModels already loaded. Tree options: width (children per node at every depth), depth
    (default: γ), or widths (an explicit (k_1, …, k_D), which sets the depth), the base drafter and the sampling."""
    if name not in DRAFTERS:
        raise InputError(f"unknown drafter {name!r} (use one of: {', '.join(DRAFTERS)})")
    if name == "chain":
        return ChainDrafter()
    if name == "lookup":
        return LookupDrafter()

    def load_heads():
        if heads is not None:
            return heads
        if pair is None:
            raise InputError("the heads drafter needs the pair (its heads table sits beside the pair's)")
        from models.heads import HeadModels
        return HeadModels.for_pair(pair)
    if name == "heads":
        return HeadsDrafter(load_heads())
    if tree_from not in BASES:
        raise InputError(f"a tree is built from one of: {', '.join(BASES)} (not {tree_from!r})")
    base = ChainDrafter() if tree_from == "chain" else HeadsDrafter(load_heads())
    return TreeDrafter(base, width=tree_width, depth=tree_depth, widths=tree_widths, sampling=tree_sampling)
