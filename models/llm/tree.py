"""Guess trees on a network pair: several candidates per position, every node checked in one target forward.

The tree is the toy's (models.drafters.tree.TreeDrafter: SpecInfer's expansion configuration, i.i.d. or distinct
siblings) and so is the rule (models.multi_candidate.verify_tree); what a network adds is where the rows come from
and how one forward checks them all:

- the rows: a tree base on the network (the draft model run over the node's path, Medusa's head for the node's
  depth, or EAGLE's layer pushed along the node's path from the target's features), each a models.drafters
  Drafter with row_at(), so TreeDrafter builds the tree as it does on the counted pair;
- the check: the context's last token and every node in one forward of the target (tree attention): node i sits
  in cache slot pos + 1 + i, is rotated at position pos + its depth, and attends to the context and its own
  ancestors only (TreeMask);
- the cache keeps only the accepted path: its nodes' keys and values are moved to the slots of their positions,
  so rollback by position holds as on a chain (later slots are overwritten by the next pass).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from corpus.errors import InputError
from models.drafters.base import DraftCost, Drafter, FirstGuess, TreeProposal
from models.drafters.tree import TreeDrafter
from models.llm.formats import linear, weight_operand
from models.llm.model import Transformer
from models.multi_candidate import TreeVerdicts, verify_tree
from models.llm.rule import sample_index
from models.llm.speculative import PassRecord, RowShaper, SpeculativeResult
from models.llm.steps import prefill


@dataclass(frozen=True)
class TreeMask:
    """The tree's rows in one forward: positions (T,) (the root's pos, then pos + each node's depth) and mask
    (T, S) bool, S = pos + T: the context's slots, then each row's own ancestors and itself."""

    positions: torch.Tensor
    mask: torch.Tensor


def tree_mask(parents: list[int], depths: list[int], pos: int, device=None) -> TreeMask:
    T = len(parents) + 1
    anc = torch.zeros(T, T, dtype=torch.bool, device=device)
    anc[0, 0] = True
    for i, par in enumerate(parents):
        anc[i + 1] = anc[par + 1]            # the root is row 0, node i row i + 1 (a parent before its children)
        anc[i + 1, i + 1] = True
    mask = torch.cat([torch.ones(T, pos, dtype=torch.bool, device=device), anc], 1)
    positions = pos + torch.tensor([0] + list(depths), dtype=torch.long, device=device)
    return TreeMask(positions, mask)


def keep_path(model: Transformer, pos: int, rows: list[int]) -> None:
    """Move the accepted path's keys and values (tree rows `rows`, depth 1 first) to slots pos + 1, pos + 2, ...:
    the cache then holds the text as a chain pass would have left it."""
    src = [pos + r for r in rows]
    dst = list(range(pos + 1, pos + 1 + len(rows)))
    if src == dst:
        return
    idx = torch.tensor(src, device=model.device)
    for layer in model.layers:
        c = layer.attention.kv_cache
        for buf in (c.k_cache, c.v_cache):
            buf[:, :, dst[0]:dst[-1] + 1] = buf.index_select(2, idx)


# --- where a network tree's rows come from ------------------------------------------------------------------
class NetworkTreeBase(Drafter):
    """A tree's source of rows on a network pair: begin() before the tree is drawn (the pass's last token `cur`
    at `pos`), row_at() for each node's children (TreeDrafter calls it breadth-first), commit_path() with the
    accepted path's tokens and the target's features along it (the root's row first)."""

    wants_features = False

    def begin(self, context, cur: torch.Tensor, pos: int, shape) -> None:
        raise NotImplementedError

    def can_draft(self) -> bool:
        """False while there is nothing to draft from (the features of a text of one token): a plain pass."""
        return True

    def commit_path(self, tokens: list[int], features: torch.Tensor | None) -> None:
        raise NotImplementedError

    def propose(self, rows, context, gamma, u):
        raise InputError(f"the {self.name} tree base draws its rows inside the network's pass")

    def _np(self, row: torch.Tensor) -> tuple[np.ndarray, bool]:
        return row.double().cpu().numpy(), False      # a network never backs off


class DraftModelTree(NetworkTreeBase):
    """The draft model: a node's row is the draft's after the context and the node's path (its cache holds the
    context; the path is written after it, each node in turn, and the accepted path last)."""

    name = "chain"

    def __init__(self, proposer):
        self.proposer = proposer                  # models.llm.speculative.ModelProposer (its model and cache)
        self.model = proposer.model

    def begin(self, context, cur, pos, shape):
        m = self.proposer
        if m.behind:                               # a chain pass left its last guess unread
            m.step(m.last, torch.arange(pos - 1, pos, device=cur.device))
            m.behind = False
        self.cur, self.pos, self.shape, self.memo = int(cur), pos, shape, {}

    def row_at(self, rows, context, path, depth):
        key = tuple(path)
        if key not in self.memo:
            ids = torch.tensor([[self.cur, *key]], device=self.model.device)
            logits = self.model(ids, torch.arange(self.pos, self.pos + len(key) + 1, device=self.model.device),
                                eager=True, last_only=True)[0, -1]
            self.memo[key] = self._np(self.shape(logits))
        return self.memo[key]

    def commit_path(self, tokens, features):
        ids = torch.tensor([[self.cur, *tokens]], device=self.model.device)
        self.model(ids, torch.arange(self.pos, self.pos + len(tokens) + 1, device=self.model.device), eager=True,
                   last_only=True)
        self.proposer.behind = False

    def first_guess(self, rows, context) -> FirstGuess:
        return FirstGuess(np.asarray(rows.draft_row(context)[0], dtype=np.float64))

    def cost(self, gamma: int) -> DraftCost:
        return DraftCost(draft_runs=gamma, note="the draft model over each node's path")


class MedusaTree(NetworkTreeBase):
    """Medusa's heads: every node of depth d is drawn from head d + 1's row (the heads do not see the path)."""

    name = "heads"
    wants_features = True

    def __init__(self, proposer, drafter):
        self.proposer, self.drafter = proposer, drafter   # models.llm.selfdraft.MedusaProposer, its FeatureDrafter

    def validate(self, depth: int) -> None:
        last = self.proposer.heads.last_head
        if depth + 1 > last:
            raise InputError(f"Medusa's heads are heads 2..{last}: a tree from them is at most {last - 1} deep, "
                             f"not {depth}")

    def begin(self, context, cur, pos, shape):
        p = self.proposer
        self.rows = {}
        if p.f is not None:
            D = p.heads.last_head - 1
            q = shape(linear(p.heads.head_features(p.f, D), weight_operand(p.target.output)))
            self.rows = {d: self._np(q[d - 1]) for d in range(1, D + 1)}

    def can_draft(self) -> bool:
        return self.proposer.f is not None

    def row_at(self, rows, context, path, depth):
        return self.rows[depth]

    def commit_path(self, tokens, features):
        self.proposer.f = features[-1]

    def first_guess(self, rows, context) -> FirstGuess:
        return self.drafter.first_guess(rows, context)

    def cost(self, gamma: int) -> DraftCost:
        return DraftCost(heads=gamma, note="the heads once per pass; every node is a lane of the target's pass")


class EagleTree(NetworkTreeBase):
    """EAGLE's layer: a node's row comes from the features it predicts along the node's path, starting from the
    target's true features before the pass's last token. Each node's step is written over its ancestors' (the
    whole path again, from the slot before the pass), so siblings never read each other."""

    name = "eagle"
    wants_features = True

    def __init__(self, proposer, drafter):
        self.proposer, self.drafter = proposer, drafter   # models.llm.selfdraft.EagleProposer, its FeatureDrafter

    def begin(self, context, cur, pos, shape):
        self.proposer._ready()
        self.proposer.flush()
        self.cur, self.pos, self.shape = cur.view(1), pos, shape
        self.feats: dict[tuple, torch.Tensor] = {}
        self.memo: dict[tuple, tuple] = {}

    def can_draft(self) -> bool:
        return self.proposer.f is not None

    def _features(self, path: tuple) -> torch.Tensor:
        """The features EAGLE predicts after the node whose path is `path` (the root: ())."""
        if path not in self.feats:
            p = self.proposer
            ins = [p.f] + [self._features(path[:i]) for i in range(len(path))]
            toks = torch.cat([self.cur, torch.tensor(path, dtype=torch.long, device=self.cur.device)])
            self.feats[path] = p._feed(torch.stack(ins), toks, self.pos - 1)[-1]
        return self.feats[path]

    def row_at(self, rows, context, path, depth):
        key = tuple(path)
        if key not in self.memo:
            f = self._features(key)
            self.memo[key] = self._np(self.shape(linear(f[None], weight_operand(self.proposer.target.output))[0]))
        return self.memo[key]

    def commit_path(self, tokens, features):
        p = self.proposer
        p.pos = self.pos
        p.guesses = torch.tensor(tokens, dtype=torch.long, device=self.cur.device)
        p.commit(len(tokens), len(tokens), features)

    def first_guess(self, rows, context) -> FirstGuess:
        return self.drafter.first_guess(rows, context)

    def cost(self, gamma: int) -> DraftCost:
        return DraftCost(draft_runs=gamma, note="EAGLE's layer along each node's path")


# --- one pass -------------------------------------------------------------------------------------------------
@dataclass
class TreeOutcome:
    """One tree pass, read back: the tree drawn, the target's rows at every node, the rule's verdicts."""

    proposal: object                 # models.drafters.base.TreeProposal
    p_rows: np.ndarray               # (nodes + 1, V): row 0 after the context, row 1 + i after node i's path
    verdicts: TreeVerdicts
    draft_s: float = 0.0
    verify_s: float = 0.0

    @property
    def n_accepted(self) -> int:
        return self.verdicts.n_accepted

    @property
    def final_token(self) -> int:
        return self.verdicts.final_token

    @property
    def residual_fallback(self) -> bool:
        return self.verdicts.residual_fallback

    @property
    def guess_ids(self) -> list[int]:
        return [self.proposal.tokens[a] for a in self.verdicts.accepted_path]

    @property
    def tokens(self) -> list[int]:
        return self.guess_ids + [self.final_token]

    @property
    def nodes(self) -> int:
        return len(self.proposal.tokens)


@torch.inference_mode()
def tree_pass(target: Transformer, tree: TreeDrafter, context: list[int], cur: torch.Tensor, pos: int, gamma: int,
              u_guess: np.ndarray, r: np.ndarray, u_final: float, shape) -> TreeOutcome:
    """One pass with a guess tree: the base draws the tree (u_guess, one uniform per node), the target computes
    every node in one forward with the tree mask, the multi-candidate rule walks it (r, one per node; u_final),
    the cache keeps the accepted path, the base hears the path (with the target's features along it)."""
    base = tree.base
    if not isinstance(base, NetworkTreeBase):
        raise InputError(f"a tree from {base.name!r} draws its rows from the counted pair, not from a network")
    t0 = time.perf_counter()
    base.begin(context, cur, pos, shape)
    if base.can_draft():
        prop = tree.propose(None, context, gamma, u_guess)
    else:                              # nothing to draft from yet: no nodes, the pass writes p's own token
        prop = TreeProposal([], [], [], [], np.zeros((0, target.config.vocab_size)), np.zeros(0, np.int64), [], base.name,
                            tree.sampling, tree.widths_for(gamma))
    n = len(prop.tokens)
    t1 = time.perf_counter()
    dev = cur.device
    chunk = torch.tensor([[int(cur), *prop.tokens]], device=dev)
    mask = tree_mask(prop.parents, prop.depths, pos, dev)
    logits, feats = target(chunk, torch.arange(pos, pos + n + 1, device=dev), tree=mask, features=True)
    p = shape(logits[0]).float().cpu().numpy()
    tv = verify_tree(prop.parents, prop.tokens, prop.q_rows, prop.q_of, p, np.asarray(r)[:n], float(u_final))
    rows = [1 + a for a in tv.accepted_path]
    keep_path(target, pos, rows)
    base.commit_path([prop.tokens[a] for a in tv.accepted_path], feats[0, [0] + rows])
    t2 = time.perf_counter()
    return TreeOutcome(prop, p, tv, draft_s=t1 - t0, verify_s=t2 - t1)


class TreeDecoder:
    """SpeculativeDecoder's loop with a guess tree each pass (the bench and the CLI): the same surface (start,
    step, generate; draft_seconds, verify_seconds, decode_seconds), the uniforms from one torch Generator, 2n + 1
    a pass for a tree of n nodes, always all drawn."""

    def __init__(self, target: Transformer, tree: TreeDrafter, *, gamma: int = 4, temperature: float = 0.0,
                 top_k: int = 0, top_p: float = 1.0, seed: int = 0):
        tree.validate(gamma)
        self.target, self.tree, self.gamma = target, tree, gamma
        self.shape = RowShaper(temperature, top_k, top_p)
        self.gen = torch.Generator(device=target.device).manual_seed(seed)
        self.n = tree.guess_uniforms(gamma)
        self.decode_seconds = self.draft_seconds = self.verify_seconds = 0.0

    @torch.inference_mode()
    def start(self, prompt_ids: list[int]) -> None:
        proposer = self.tree.base.proposer
        prompt = torch.tensor([prompt_ids], device=self.target.device)
        if getattr(proposer, "wants_features", False):
            logits, h = prefill(self.target, prompt, features=True)
            proposer.prefill(list(prompt_ids), features=h[0])
        else:
            logits = prefill(self.target, prompt)
            proposer.prefill(list(prompt_ids))
        u = torch.rand(1, dtype=torch.float64, generator=self.gen, device=self.target.device)
        self.cur = sample_index(self.shape(logits)[0], u[0])[None, None]
        self.pos = len(prompt_ids)
        self.ids = list(prompt_ids) + [int(self.cur)]

    @torch.inference_mode()
    def step(self, max_tokens: int | None = None):
        n = self.n
        u = torch.rand(2 * n + 1, dtype=torch.float64, generator=self.gen).numpy()
        out = tree_pass(self.target, self.tree, self.ids, self.cur, self.pos, self.gamma, u[:n], u[n:2 * n],
                        float(u[-1]), self.shape)
        self.draft_seconds += out.draft_s
        self.verify_seconds += out.verify_s
        self.cur = torch.tensor([[out.final_token]], device=self.target.device)
        self.pos += out.n_accepted + 1
        self.ids.extend(out.tokens)
        return PassRecord(gamma=out.nodes, n_accepted=out.n_accepted, final_kind=out.verdicts.final_kind,
                          residual_fallback=out.residual_fallback, tokens=out.tokens)

    @torch.inference_mode()
    def generate(self, prompt_ids: list[int], n_tokens: int, progress=None):
        self.start(prompt_ids)
        out, records = [int(self.cur.item())], []
        self.draft_seconds = self.verify_seconds = 0.0
        t0 = time.perf_counter()
        while len(out) < n_tokens:
            rec = self.step()
            records.append(rec)
            out.extend(rec.tokens)
            if progress is not None:
                progress(len(out))
        self.decode_seconds = time.perf_counter() - t0
        return SpeculativeResult(tokens=out[:n_tokens], passes=len(records) + 1, gamma=self.gamma, records=records)
