"""The tree drafter: several candidates per position from `chain`, `heads` or `eagle`, checked in one target pass.

SpecInfer's token tree (Miao et al., ASPLOS 2024) with an expansion configuration (k_1, …, k_D): every node at
depth d − 1 (the root is the context) gets k_d children, drawn from the base drafter's row for that position —
the bigram q after the node's path (`chain`), or head d + 1 (`heads`: the same row at every node of a depth,
since the heads do not see the path). Two ways of drawing a node's children:

    iid        i.i.d. from the row (SpecInfer); a duplicate of a rejected sibling is a sure rejection
    distinct   without replacement: each next sibling from the row with the earlier siblings removed and
               renormalised (the corrected q of SpecTr / recursive rejection sampling), so no lane is wasted

The target computes every node at once (tree attention): lanes lit = nodes + 1 (SCIENCE.md). The rule is
models.multi_candidate.verify_tree (SpecInfer's multi-round rule, each candidate with its own row): exactly p.
Tokens written = the accepted path + 1.
"""
from __future__ import annotations

import numpy as np

from corpus.errors import InputError
from models.acceptance import sample_index
from models.drafters.base import DraftCost, Drafter, FirstGuess, TreeProposal

SAMPLINGS = ("iid", "distinct")
BASES = ("chain", "heads", "eagle")        # eagle: on a network pair with self-drafters only
MAX_TREE_NODES = 512
MAX_WIDTH = 16


def node_count(widths) -> int:
    """Nodes of a tree where every node at depth d − 1 has widths[d − 1] children: Σ_d Π_{i<=d} k_i."""
    total, level = 0, 1
    for k in widths:
        level *= int(k)
        total += level
    return total


def draw_children(row: np.ndarray, k: int, sampling: str, u) -> list[tuple[int, np.ndarray]]:
    """Up to k candidates for one position with uniforms u[0], u[1], …: (token, the row it was drawn from).
    iid: every one from `row`. distinct: each from `row` with the earlier ones removed and renormalised (the
    corrected q); fewer than k when the row has fewer tokens."""
    out: list[tuple[int, np.ndarray]] = []
    remaining = None
    for j in range(k):
        if sampling == "iid" or j == 0:
            cur = row
        else:
            remaining = row.astype(np.float64, copy=True) if remaining is None else remaining
            remaining[out[-1][0]] = 0.0
            total = remaining.sum()
            if not total > 0.0:
                break                        # every token this row can give is drawn already
            cur = remaining / total
        out.append((sample_index(cur, u[j]), cur))
    return out


class TreeDrafter(Drafter):
    name = "tree"

    def __init__(self, base: Drafter, width: int = 2, depth: int | None = None, widths=None, sampling: str = "iid"):
        if sampling not in SAMPLINGS:
            raise InputError(f"unknown tree sampling {sampling!r} (use one of: {', '.join(SAMPLINGS)})")
        if base.name not in BASES:
            raise InputError(f"a tree is built from one of: {', '.join(BASES)} (not {base.name!r})")
        self.base, self.sampling = base, sampling
        if widths is not None:
            widths = [int(k) for k in widths]
            if not widths or any(not 1 <= k <= MAX_WIDTH for k in widths):
                raise InputError(f"tree widths must be 1..{MAX_WIDTH} per depth, got {widths}")
            self._check_nodes(widths)
        elif not isinstance(width, (int, np.integer)) or isinstance(width, bool) or not 1 <= width <= MAX_WIDTH:
            raise InputError(f"tree width must be a whole number 1..{MAX_WIDTH}, got {width!r}")
        if depth is not None and (not isinstance(depth, (int, np.integer)) or isinstance(depth, bool)
                                  or not 1 <= depth <= 64):
            raise InputError(f"tree depth must be a whole number 1..64, got {depth!r}")
        self.width, self.depth, self.fixed_widths = int(width), depth, widths
        if widths is None and depth is not None:
            self._check_nodes(self.widths_for(depth))

    @staticmethod
    def _check_nodes(widths) -> None:
        n = node_count(widths)
        if n > MAX_TREE_NODES:
            raise InputError(f"a tree of widths {list(widths)} has {n} nodes; at most {MAX_TREE_NODES} "
                             "(lower the width or the depth)")

    def widths_for(self, gamma: int) -> list[int]:
        """The expansion configuration of a pass: given widths, else `width` at every depth (depth, else γ)."""
        if self.fixed_widths is not None:
            return list(self.fixed_widths)
        return [self.width] * int(self.depth if self.depth is not None else gamma)

    def first_width(self, gamma: int) -> int:
        return self.widths_for(gamma)[0]

    def guess_uniforms(self, gamma: int) -> int:
        return node_count(self.widths_for(gamma))

    def validate(self, gamma: int) -> None:
        widths = self.widths_for(gamma)
        self._check_nodes(widths)
        self.base.validate(len(widths))

    def propose(self, rows, context, gamma, u) -> TreeProposal:
        widths = self.widths_for(gamma)
        self.validate(gamma)
        parents, tokens, depths, paths, q_of, backed, heads = [], [], [], [], [], [], []
        q_list: list[np.ndarray] = []
        shared: dict[int, int] = {}                  # heads + iid: one row per depth, shared by every node there
        frontier = [-1]
        for d, k in enumerate(widths, start=1):
            nxt = []
            for par in frontier:
                path = paths[par] if par >= 0 else []
                base_row, bo = self.base.row_at(rows, context, path, d)
                base_row = np.asarray(base_row, dtype=np.float64)
                if self.sampling == "iid":
                    # i.i.d. siblings share their parent's row (heads: one row for the whole depth).
                    if self.base.name == "heads" and d in shared:
                        qi_par = shared[d]
                    else:
                        q_list.append(base_row)
                        qi_par = shared[d] = len(q_list) - 1
                for j, (x, row) in enumerate(draw_children(base_row, k, self.sampling, u[len(tokens):])):
                    if self.sampling == "iid":
                        qi = qi_par
                    else:
                        q_list.append(row)
                        qi = len(q_list) - 1
                    node = len(tokens)
                    parents.append(par)
                    tokens.append(int(x))
                    depths.append(d)
                    paths.append(path + [int(x)])
                    q_of.append(qi)
                    backed.append(bool(bo))
                    heads.append(d + 1)
                    nxt.append(node)
            frontier = nxt
        return TreeProposal(parents, tokens, depths, paths, np.array(q_list), q_of, backed, self.base.name,
                            self.sampling, widths, heads if self.base.name == "heads" else None)

    def first_guess(self, rows, context) -> FirstGuess:
        row = np.asarray(self.base.row_at(rows, context, [], 1)[0], dtype=np.float64)
        return FirstGuess(row, width=self.widths_for(1)[0], sampling=self.sampling)

    def cost(self, gamma: int) -> DraftCost:
        depth = len(self.widths_for(gamma))
        if self.base.name == "heads":
            return DraftCost(heads=depth, note="the heads once per pass; every node is a lane of the target's pass")
        # One draft run per depth: the candidates of a depth are computed together (one read of the draft's weights).
        return DraftCost(draft_runs=depth, note="the draft model once per depth (its nodes batched), c × a target pass each")

    def describe(self) -> dict:
        return {"drafter": self.name, "tree_from": self.base.name, "tree_sampling": self.sampling,
                "tree_width": self.width, "tree_depth": self.depth, "tree_widths": self.fixed_widths}
