"""The multi-candidate rule: several guesses for one position, and a tree of them checked in one target pass.

SpecInfer's multi-step speculative sampling (Miao et al., "SpecInfer: Accelerating Large Language Model Serving
with Tree-based Speculative Inference and Verification", ASPLOS 2024). Candidates x_1..x_k for one position,
drawn i.i.d. from q, are tried in order:

    keep x_i  iff  r_i < p_i(x_i) / q(x_i)          p_1 = p, the target's row; r_i ~ U[0, 1)
    rejected:      p_{i+1} = norm(max(0, p_i − q))   what p still owes after this round
    all k out:     write a token drawn from norm(max(0, p_k − q))

Each round is one step of the single-candidate rule (models.acceptance.verify) against the current p_i, so the
token written is exactly p-distributed: P(y) = min(p_i, q)(y) + (1 − Σ min(p_i, q))·p_{i+1}(y) = p_i(y).

Without replacement (SpecTr, Sun et al., NeurIPS 2023; recursive rejection sampling, Jeon et al. 2024): x_i is drawn
from q with x_1..x_{i−1} removed and renormalised (the corrected q_i), and round i uses q_i both in the ratio and in
the residual, p_{i+1} = norm(max(0, p_i − q_i)). A rejected x_i had p_i(x_i) < q_i(x_i), so p_{i+1}(x_i) = 0: it can
never come back, and the output is still exactly p. The rule takes each candidate's own row (the row its token was
drawn from), so the one function serves both ways of drawing.

A tree: each node is a guess for the position after its parent's path; a node's children are that position's
candidates, in the order they were drawn. From the root (the context) the rule runs over the children; a kept
child's children are checked next, against p computed after that child (the target computed every node in the
same pass: tree attention). Tokens written = the accepted path + 1: the last is drawn from the last residual (every
child rejected) or from p at an accepted leaf (the bonus). On a chain (one child per node) this is
models.acceptance.verify, comparison for comparison and draw for draw (tests/test_core_drafters.py checks it).

Pure functions: the uniforms come in, nothing is drawn here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.acceptance import check_guesses, check_rows_and_uniforms, residual, sample_index


@dataclass(frozen=True)
class Check:
    """One round of the rule: a candidate tested against the running target p_i."""

    node: int                    # the candidate's node id (its index among the candidates for verify_position)
    round: int                   # 1-based: the how-many-th candidate tried at this position
    p_x: float                   # p_i(x): the running target's probability of the candidate
    q_x: float                   # q_i(x): the probability of the row it was drawn from
    ratio: float                 # p_i(x) / q_i(x)
    r: float                     # the uniform it was compared with
    accepted: bool               # r < ratio
    target_row: int              # index (into target_rows) of p_i
    residual_row: int | None     # after a rejection: index of p_{i+1} = norm(max(0, p_i − q_i)); None if kept
    fallback: bool = False       # that residual summed to 0 in floating point: p_{i+1} = p_i (see acceptance.verify)


@dataclass
class PositionVerdict:
    """The rule at one position: which candidate was kept (or none), every round, the running targets."""

    kept: int | None             # index of the kept candidate, None when all were rejected
    checks: list[Check]
    target_rows: list[np.ndarray]            # the rows Check.target_row / residual_row index: p_1 = p, then
                                             # each residual p_{i+1}, normalised (a tree's list holds all positions)
    last_residual: np.ndarray | None = None  # unnormalised max(0, p_k − q_k) when every candidate was rejected
    residual_fallback: bool = False


def verify_position(tokens, q_rows: np.ndarray, p_row: np.ndarray, r, node_ids=None,
                    rows_out: list | None = None) -> PositionVerdict:
    """Try the candidates `tokens` for one position in order. q_rows[i] is the row tokens[i] was drawn from (the
    same row for all with i.i.d. draws, the corrected rows without replacement); p_row the target's row there;
    r[i] the uniform for candidate i. rows_out: a list the running targets are appended to (a tree keeps one list
    for the whole pass; Check.target_row / residual_row index it). Inputs that are no step (a guess outside
    [0, V) or with q = 0, rows that are no distribution, uniforms outside [0, 1]) are the InputError
    models.acceptance.verify gives."""
    q_rows = np.asarray(q_rows, dtype=np.float64)
    if q_rows.ndim != 2 or q_rows.shape[0] != len(tokens):
        raise ValueError("need one q row per candidate")
    p_row = np.asarray(p_row)
    if p_row.shape != (q_rows.shape[1],):
        raise ValueError("need a p row as long as the q rows")
    r = np.asarray(r, dtype=np.float64)
    if r.ndim != 1 or len(r) < len(tokens):
        raise ValueError("need one uniform per candidate")
    check_guesses(tokens, q_rows)                # ids in [0, V) and q(x) > 0, the one guard
    check_rows_and_uniforms(q_rows, p_row[None], r[:len(tokens)], None, tokens)
    return _verify_position(tokens, q_rows, p_row, r, node_ids, rows_out)


def _verify_position(tokens, q_rows: np.ndarray, p_row: np.ndarray, r, node_ids, rows_out) -> PositionVerdict:
    """verify_position on inputs already checked (verify_tree checks the whole tree once)."""
    rows = rows_out if rows_out is not None else []
    ids = list(range(len(tokens))) if node_ids is None else list(node_ids)
    target = p_row
    rows.append(target)
    t_idx = len(rows) - 1
    checks: list[Check] = []
    fell_back = False
    last = None
    for i, x in enumerate(tokens):
        x = int(x)
        q = q_rows[i]
        px = float(target[x])
        ratio = target[x] / q[x]
        # Strict "<" as in acceptance.verify: P(r < ratio) = min(1, ratio) for r ~ U[0, 1).
        ok = bool(r[i] < ratio)
        if ok:
            checks.append(Check(ids[i], i + 1, px, float(q[x]), float(ratio), float(r[i]), True, t_idx, None))
            return PositionVerdict(i, checks, rows, None, fell_back)
        res = residual(target, q)
        total = res.sum()
        fb = not total > 0.0
        if fb:
            # p_i <= q_i everywhere: equal up to rounding, so the rejection was a rounding artefact and the
            # residual is 0/0. Keep p_i (the limit exact arithmetic gives), as acceptance.verify does.
            res, total = target.astype(np.float64), float(target.sum())
            fell_back = True
        last = res
        target = res / total
        rows.append(target)
        checks.append(Check(ids[i], i + 1, px, float(q[x]), float(ratio), float(r[i]), False, t_idx,
                            len(rows) - 1, fb))
        t_idx = len(rows) - 1
    return PositionVerdict(None, checks, rows, last, fell_back)


@dataclass
class TreeVerdicts:
    """The outcome of checking a tree of guesses in one pass."""

    checks: list[Check]                  # every round, in the order the rule ran them (the bridge's order)
    accepted_path: list[int]             # node ids kept, depth 1 first
    final_token: int                     # drawn from the last residual (replacement) or p at the leaf (bonus)
    final_kind: str                      # "replacement" | "bonus"
    final_row: np.ndarray                # normalised row the final token was drawn from
    residual_fallback: bool              # some residual summed to 0 in floating point (see verify_position)
    target_rows: list[np.ndarray] = field(default_factory=list)  # running targets the checks index

    @property
    def n_accepted(self) -> int:
        return len(self.accepted_path)

    @property
    def tokens_written(self) -> int:
        return len(self.accepted_path) + 1


def children_of(parents) -> dict[int, list[int]]:
    """node id -> its children in node order (the order they were drawn); -1 is the root."""
    kids: dict[int, list[int]] = {-1: []}
    for i, par in enumerate(parents):
        kids.setdefault(int(par), []).append(i)
        kids.setdefault(i, [])
    return kids


def verify_tree(parents, tokens, q_rows: np.ndarray, q_of, p_rows: np.ndarray, r, u_final: float) -> TreeVerdicts:
    """Check a tree of guesses against the target in one pass.

    parents: (n,) parent node id per node (-1 = the root, the context), a parent before its children and siblings
    in the order they were drawn; tokens: (n,) token ids; q_rows: (R, V) the rows tokens were drawn from; q_of: (n,)
    the index in q_rows of each node's row; p_rows: (n + 1, V), row 0 the target after the context and row 1 + i
    the target after node i's path; r: (n,) one uniform per node (used only if it is checked); u_final: the uniform
    for the final token.
    """
    n = len(tokens)
    if len(parents) != n or len(q_of) != n or p_rows.shape[0] != n + 1 or len(r) < n:
        raise ValueError("need a parent, a q row index and a uniform per node, and n + 1 p rows")
    for i, par in enumerate(parents):
        if not -1 <= int(par) < i:
            raise ValueError(f"node {i}'s parent {par} must be -1 (the root) or an earlier node")
    q_rows, p_rows = np.asarray(q_rows, dtype=np.float64), np.asarray(p_rows)
    q_of = np.asarray(q_of)
    if q_rows.ndim != 2 or p_rows.ndim != 2 or q_rows.shape[1] != p_rows.shape[1]:
        raise ValueError("need q rows and p rows of the same width V")
    if n and (q_of.dtype.kind not in "iu" or q_of.min() < 0 or q_of.max() >= len(q_rows)):
        raise ValueError(f"each node's q row index must be a whole number in [0, {len(q_rows)})")
    # The guard and the row and uniform checks of models.acceptance.verify, once for the whole tree (every node,
    # reached or not, as verify checks every guess): the same InputError for the same fault.
    r = np.asarray(r, dtype=np.float64)[:n]
    check_guesses(tokens, q_rows, q_of)
    check_rows_and_uniforms(q_rows, p_rows, r, u_final, tokens)
    kids = children_of(parents)
    rows: list[np.ndarray] = []
    checks: list[Check] = []
    path: list[int] = []
    node, fallback = -1, False
    while True:
        cand = kids[node]
        p_row = p_rows[0] if node < 0 else p_rows[1 + node]
        if not cand:
            # A leaf kept (or a bare root): the target's own row there gives the bonus token.
            row = np.asarray(p_row, dtype=np.float64)
            rows.append(row)
            token = sample_index(row, u_final)
            return TreeVerdicts(checks, path, token, "bonus", row / row.sum(), fallback, rows)
        pv = _verify_position([tokens[c] for c in cand], q_rows[q_of[cand]], p_row, r[cand], cand, rows)
        checks.extend(pv.checks)
        fallback = fallback or pv.residual_fallback
        if pv.kept is None:
            row = pv.last_residual
            token = sample_index(row, u_final)
            return TreeVerdicts(checks, path, token, "replacement", row / row.sum(), fallback, rows)
        node = cand[pv.kept]
        path.append(node)
