"""StepTrace: the plain-data record of one speculative step, everything needed to animate and explain it.

The sampler fills it; the scene's timeline, the step-through panel, the CSV log and the CLI read it.
It holds no references to models or generators.

Every drafter fills the chain fields (guesses … lanes_lit) so a reader written for the chain keeps working:
  chain, heads   γ guesses, one per position, checked by models.acceptance.verify: the fields mean what they
                 always meant.
  lookup         the k <= γ copied guesses (q_rows one-hot); k = 0 (no earlier occurrence) is a plain target step:
                 gamma 0, no guesses, final_kind 'bonus', lanes_lit 1. source_span says where they were copied from.
  tree           the chain fields hold the walk the rule took: the accepted path, then the last candidate rejected
                 where the walk stopped (if any), each with the q row it was drawn from and the running target it
                 was checked against (p_rows[i]; a residual when earlier siblings were rejected), so
                 p_rows[i][x] / q_rows[i][x] is ratios[i]; p_rows[-1] is p after the last node of that walk. The
                 whole tree, every check in order and every residual are in `tree`; lanes_lit = nodes + 1.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.multi_candidate import Check


def medusa_number(head: int) -> int:
    """The number a class reads for a head, as Medusa's paper and the exhibit count them: the target's own output
    layer guesses the next token, the k-th extra head the k-th token after that. Inside, head k is the table for the
    k-th token after the position (head 1 = the target), so the extra heads are 2..K+1 there and 1..K on screen."""
    return int(head) - 1


@dataclass
class TreeNode:
    """One guess in a guess tree."""

    id: int                         # index in TreeTrace.nodes (breadth-first: depth 1 first)
    parent: int                     # parent node id; -1 = the root (the context before the pass)
    token: int
    depth: int                      # 1 = the first position after the context
    q_row: int                      # index into TreeTrace.q_rows: the row this token was drawn from
    head: int | None = None         # heads-drafted trees: the head that proposed it (head 1 is the target)
    backed_off: bool = False        # its proposal row backed off (unseen history)


@dataclass
class TreeTrace:
    """A guess tree checked in one target pass with the multi-candidate rule (models.multi_candidate)."""

    base: str                       # who proposed the candidates: 'chain' (the bigram draft) | 'heads'
    sampling: str                   # 'iid' (SpecInfer) | 'distinct' (without replacement, corrected q)
    widths: list[int]               # children per node at each depth (SpecInfer's expansion configuration)
    nodes: list[TreeNode]
    q_rows: np.ndarray              # (R, V) proposal rows; i.i.d. siblings share one, distinct siblings have their own
    p_rows: np.ndarray              # (nodes + 1, V) target rows: row 0 after the context, row 1 + i after node i's path
    checks: list[Check]             # every round of the rule, in the order the bridge ran them
    target_rows: list[np.ndarray]   # running targets the checks index (Check.target_row, .residual_row): each
                                    # position's p row, then norm(max(0, p_i − q_i)) after each rejection
    accepted_path: list[int]        # node ids kept, depth 1 first
    target_backed_off: list[bool]   # (nodes + 1,) per p row

    @property
    def lanes_lit(self) -> int:
        return len(self.nodes) + 1

    def children(self, node: int) -> list[int]:
        """Node ids whose parent is `node` (-1: the root), in the order they were drawn."""
        return [n.id for n in self.nodes if n.parent == node]


@dataclass
class StepTrace:
    step_index: int                 # 0-based index of this target pass in the run
    context: list[int]              # token ids before the step (the whole text so far)
    gamma: int                      # γ guesses made
    guesses: list[int]              # (γ,) draft guesses, in order
    q_rows: np.ndarray              # (γ, V) the draft distributions each guess was drawn from (after temperature/top-k/top-p)
    p_rows: np.ndarray              # (γ+1, V) target distributions at the γ+1 positions (same transforms)
    ratios: list[float]             # (γ,) p_i(x_i) / q_i(x_i)
    r: list[float]                  # (γ,) the uniforms drawn for the tests (untested ones are still drawn, for replay)
    tested: int                     # how many tests were actually run: n_accepted + 1, capped at γ
    accepted: list[bool]            # (γ,) verdict per guess; False from the first rejection on
    n_accepted: int                 # guesses kept
    final_token: int                # replacement or bonus token
    final_kind: str                 # "replacement" | "bonus"
    final_row: np.ndarray           # (V,) normalised residual (replacement) or p_{γ+1} (bonus) it was drawn from
    residual_fallback: bool         # the residual summed to zero in floating point; drew from p (see acceptance.py)
    tokens_written: list[int]       # accepted guesses + final token
    draft_backed_off: list[bool]    # (γ,) bigram context unseen: q fell back to the unigram floor
    target_backed_off: list[bool]   # (γ+1,) trigram context unseen: p fell back wholly to q's bigram
    lanes_lit: int                  # tokens computed in the target pass = γ + 1
    exact: bool = True              # False when lenience < 1 (not the exact rule)
    extra: dict = field(default_factory=dict)
    drafter: str = "chain"          # who proposed the guesses: chain | lookup | heads | tree
    source_span: dict | None = None  # lookup: {"ngram": n, "match": [a, b], "copy": [c, d]}: context[a:b] is the
                                    # latest earlier occurrence of the last n tokens, context[c:d] the tokens copied
    heads: list[int] | None = None  # heads: the head that proposed each guess (guess i: head i + 1; head 1, the
                                    # target itself, writes the final token)
    tree: TreeTrace | None = None   # tree: the nodes, the checks in order, the residual updates, the accepted path

    @property
    def vocab_size(self) -> int:
        return int(self.p_rows.shape[1])

    @classmethod
    def of(cls, *, step_index: int, context, guesses, q_rows, p_rows, ratios, r, n_accepted: int, final_token: int,
           final_row, residual_fallback: bool = False, exact: bool = True, extra: dict | None = None,
           tested: int | None = None, accepted=None, final_kind: str | None = None, lanes_lit: int | None = None,
           draft_backed_off=None, target_backed_off=None, **more) -> "StepTrace":
        """The one way a pass becomes a trace: what follows from the verdict is derived here, not by each sampler —
        the guesses tested (up to the first rejection), kept (the first n), the kind of the final token (a bonus
        when every guess passed), the tokens written and the lanes lit (γ + 1); a tree passes its own."""
        k = len(guesses)
        return cls(step_index=step_index, context=list(context), gamma=k, guesses=[int(x) for x in guesses],
                   q_rows=q_rows, p_rows=p_rows, ratios=[float(x) for x in ratios], r=[float(x) for x in r],
                   tested=min(n_accepted + 1, k) if tested is None else tested,
                   accepted=[i < n_accepted for i in range(k)] if accepted is None else [bool(a) for a in accepted],
                   n_accepted=n_accepted, final_token=int(final_token),
                   final_kind=final_kind or ("bonus" if n_accepted == k else "replacement"), final_row=final_row,
                   residual_fallback=bool(residual_fallback),
                   tokens_written=[int(x) for x in guesses[:n_accepted]] + [int(final_token)],
                   draft_backed_off=[False] * k if draft_backed_off is None else list(draft_backed_off),
                   target_backed_off=[False] * (k + 1) if target_backed_off is None else list(target_backed_off),
                   lanes_lit=k + 1 if lanes_lit is None else lanes_lit, exact=exact, extra=extra or {}, **more)


@dataclass(frozen=True)
class PassTally:
    """What a long run counts of a pass it keeps no trace of (Sampler.tally_step): the guesses kept, the guesses
    tested (up to the first rejection) and Σ min(p, q) at each tested position."""

    n_accepted: int
    tested: int
    overlap: tuple[float, ...]


@dataclass
class GeneratedRun:
    """A seeded long speculative run: acceptance as measured (accepted / tested) and tokens per pass counted."""

    alpha: float               # accepted guesses / tested guesses
    alpha_expected: float      # mean β over the tested positions (same run, lower variance)
    tokens: int                # tokens written in completed passes
    passes: int                # completed target passes
    accepted: int
    tested: int
    gamma: int
    seed: int
    method: str                # "vectorised" (unshaped exact rows) | "sampler" (SpeculativeSampler loop)
    # tested positions whose two-token history never occurs in the book: the target backs off wholly to the
    # draft there (p = q), so the guess always passes (vectorised run only; -1 on the sampler path)
    backed_off: int = -1
    # half-width of α's 95 % interval from the run's independent texts (each chain of the vectorised run is its
    # own text: the ratio estimator's spread over them); NaN where the run is one text
    alpha_ci95: float = float("nan")
    chains: int = 1
    # guesses tested and accepted at each place in a pass (1st guess, 2nd, ...): a pass's first guess follows a
    # replaced or bonus token, its later ones follow accepted guesses, and they are not equally easy
    tested_by_depth: tuple = ()
    accepted_by_depth: tuple = ()
    # α as defined, E[Σ min(p, q)]: Σ min(p, q) averaged over every position of the text written (the `tokens`
    # of completed passes), with its 95 % half-width over the independent texts; NaN where the run did not
    # compute the overlap at every position (the sampler loop computes it where a guess was tested only)
    alpha_text: float = float("nan")
    alpha_text_ci95: float = float("nan")
    # each independent text's (Σ min(p, q), positions) behind alpha_text: shorter counts are its parts
    text_parts: tuple = ()

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.passes if self.passes else float("nan")
