"""Decoding on tensors: the plain decoder, the rows the rule reads, the proposers, and the speculative pass
(speculative_pass: draft γ, verify γ+1 in one forward, accept, roll back) that the table, the CLI and the bench
all run.

On a CPU the rule is models.acceptance.verify itself, on the rows; elsewhere its mirror on tensors
(models.llm.rule), so a GPU does not wait for the host inside a pass but for the one read of the verdict at its
end. Randomness is drawn as uniforms from one torch.Generator, so a run replays from its seed. The KV caches roll
back by position: nothing is erased, later positions are masked and overwritten.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from corpus.errors import InputError
from models import acceptance
from models.drafters import LookupDrafter
from models.llm.device import sync
from models.llm.model import Transformer
from models.llm.rule import raise_on_violation, sample_index, verify_on_device
from models.llm.steps import (StepRunner, compile_blocks, compile_step, decode_one_token, eager_blocks,  # noqa: F401
                              forward_positions, prefill)                      # (the decoders' names, read here too)


# --- plain decoding (the baseline) ----------------------------------------------------------------
class PlainDecoder:
    """One target pass per token."""

    def __init__(self, target: Transformer, *, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
                 seed: int = 0, graphs: bool = False):
        self.target, self.temperature = target, temperature
        self.device = target.device
        self.gen = torch.Generator(device=self.device).manual_seed(seed)
        shape = self.shape = RowShaper(temperature, top_k, top_p)

        def step(token, pos, u):
            probs = shape(decode_one_token(target, token, pos))[0]
            return sample_index(probs, u)[None, None]
        self.step_fn = StepRunner(torch.no_grad()(step), graphs)
        self.decode_seconds = 0.0

    @torch.inference_mode()
    def generate(self, prompt_ids: list[int], n_tokens: int, progress=None) -> list[int]:
        """Prefill (writes the first token), then n_tokens - 1 decode passes, timed in decode_seconds;
        progress(tokens written so far), if given, after each pass."""
        dev = self.device
        prompt = torch.tensor([prompt_ids], device=dev)
        probs = self.shape(prefill(self.target, prompt))[0]
        u = torch.rand(n_tokens, dtype=torch.float64, generator=self.gen, device=dev)
        tok = sample_index(probs, u[0])[None, None]
        out = [tok]
        sync(dev)
        t0 = time.perf_counter()
        for i in range(1, n_tokens):
            pos = len(prompt_ids) + i - 1
            tok = self.step_fn(tok, torch.arange(pos, pos + 1, device=dev), u[i]).clone()
            out.append(tok)
            if progress is not None:
                progress(i + 1)
        ids = torch.cat(out, 1)[0].tolist()  # the one host read, at the end
        self.decode_seconds = time.perf_counter() - t0
        return ids


# --- the speculative pass: one loop for the table, the CLI and the bench --------------------------------
def shape_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """The torch backend's one row shaper (the numpy one is models.sampler.shape_row, with the same knobs): every
    decoder, the pair's samplers and the bench read rows through it.
    fp32 rows (..., V) from logits. Temperature 0: one-hot on the most likely token (the lowest id on ties);
    then top-k keeps the k most likely, top-p the smallest most-likely set with mass >= top_p (ties by lower
    id), renormalised, as models.sampler.shape_row does on numpy rows. With temperature 1 and no top-k/top-p:
    the model's softmax."""
    x = logits.float()
    if temperature == 0:
        return torch.zeros_like(x).scatter_(-1, x.argmax(-1, keepdim=True), 1.0)
    probs = torch.softmax(x / temperature if temperature != 1.0 else x, dim=-1)
    if top_k <= 0 and top_p >= 1.0:
        return probs
    order = torch.sort(probs, dim=-1, descending=True, stable=True).indices
    ranked = probs.gather(-1, order)
    keep = torch.full(probs.shape[:-1] + (1,), probs.shape[-1], dtype=torch.long, device=probs.device)
    if top_k > 0:
        keep = keep.clamp(max=int(top_k))
    if top_p < 1.0:
        mass = ranked.double().cumsum(-1)
        need = top_p * probs.double().sum(-1, keepdim=True) * (1 - 1e-12)
        keep = torch.minimum(keep, torch.searchsorted(mass, need, side="left") + 1)
    ranks = torch.arange(probs.shape[-1], device=probs.device).expand_as(probs)
    kept = torch.zeros_like(probs).scatter_(-1, order, (ranks < keep).float())
    out = probs * kept
    return out / out.sum(-1, keepdim=True)


class RowShaper:
    """shape_probs with its knobs fixed: what the decoders pass around as `shape`. `plain` says the rows are the
    model's softmax at a temperature (no top-k or top-p), which a graph that samples can compute itself."""

    def __init__(self, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0):
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p
        self.plain = temperature > 0 and top_k <= 0 and top_p >= 1.0

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        return shape_probs(logits, self.temperature, self.top_k, self.top_p)


class Proposer(Protocol):
    """Guesses for one pass. `prefill(ids)`: the text at positions 0..len-1 (a fresh start or a refill).
    `propose(context, cur, pos, g, u, shape)`: g guesses after `context` (the text so far; `cur`, its last token,
    sits at position `pos`), drawn with the uniforms u (g,), and the (g, V) fp32 rows they were drawn from (a
    deterministic proposer gives one-hot rows: the rule stays exact); fewer than g when it has no more.
    `commit(n, g)`: n of the g were kept."""

    def prefill(self, ids: list[int]) -> None: ...           # (a self-drafter: prefill(ids, features=...))
    def propose(self, context: list[int], cur: torch.Tensor, pos: int, g: int, u: torch.Tensor,
                shape) -> tuple[torch.Tensor, torch.Tensor]: ...
    def commit(self, n_accepted: int, g: int) -> None: ...   # (a self-drafter: commit(n, g, features))


class ModelProposer:
    """A draft model with its own KV cache (the small drum). Its cache is one token behind after a pass whose
    every guess passed (it never read its own last guess): that token is read first in the next pass.
    compiled: its one-token step as one compiled graph (compile_step), where that was measured to pay."""

    def __init__(self, model: Transformer, graphs: bool = False, compiled=None):
        self.model = model
        self.step = compiled or StepRunner(torch.no_grad()(lambda tok, pos: decode_one_token(model, tok, pos)),
                                           graphs)
        self.behind = False
        self.last = None

    def prefill(self, ids: list[int]) -> None:
        if ids:
            prefill(self.model, torch.tensor([ids], device=self.model.device))
        self.behind, self.last = False, None

    @torch.inference_mode()
    def propose(self, context, cur, pos, g, u, shape):
        dev = cur.device
        if self.behind:
            self.step(self.last, torch.arange(pos - 1, pos, device=dev))
        tok, rows, xs = cur, [], []
        sampler = getattr(self.model.step_graph, "guess", None) if self.model.graph_rows[0] else None
        for i in range(g):
            if sampler is not None and getattr(shape, "plain", False):
                q, x = sampler(tok, pos + i, u[i], shape.temperature)      # the draw made inside the graph
            else:
                q = shape(self.step(tok, torch.arange(pos + i, pos + i + 1, device=dev))[0])
                x = sample_index(q, u[i])
            rows.append(q)
            xs.append(x)
            tok = x.view(1, 1)
        self.last = tok
        V = self.model.config.vocab_size
        return (torch.stack(xs) if xs else torch.zeros(0, dtype=torch.long, device=dev),
                torch.stack(rows) if rows else torch.zeros(0, V, device=dev))

    def commit(self, n_accepted: int, g: int) -> None:
        self.behind = n_accepted == g      # with g = 0 it was not asked to read `cur`: also one behind


@dataclass
class PassOutcome:
    """One pass, read back: the host values (one read) and the device tensors a trace is made of."""

    n_accepted: int
    final_token: int
    residual_fallback: bool
    guess_ids: list[int]
    guesses: torch.Tensor          # (k,)
    q: torch.Tensor                # (k, V) fp32: the rows the guesses were drawn from
    p: torch.Tensor                # (k+1, V) fp32: the target's rows at the k+1 positions
    ratios: torch.Tensor           # (k,)
    draft_s: float = 0.0           # seconds in the proposer, in the verify forward + rule, in the rest
    verify_s: float = 0.0
    final_row: np.ndarray | None = None   # the row the final token was drawn from (the rule on the host only)

    @property
    def tokens(self) -> list[int]:
        return self.guess_ids[:self.n_accepted] + [self.final_token]


def device_verify(target: Transformer, shape, lenience: float = 1.0):
    """The verify forward and the rule on the device, as one function of tensors (what a CUDA graph captures):
    (chunk, positions, q_rows, u_tests, u_final) -> (packed host values, p rows, ratios)."""
    def verify(tokens, positions, q_rows, u_tests, u_final):
        p = shape(forward_positions(target, tokens, positions)[0])
        v = verify_on_device(tokens[0, 1:], q_rows, p, u_tests, u_final, lenience, check=False)
        packed = torch.cat([v.n_accepted.view(1), v.final_token.view(1), v.residual_fallback.long().view(1),
                            v.violation, tokens[0, 1:]])
        return packed, p, v.ratios
    return torch.no_grad()(verify)


@torch.inference_mode()
def speculative_pass(target: Transformer, proposer: Proposer, context: list[int], cur: torch.Tensor, pos: int,
                     g: int, u: torch.Tensor, shape, lenience: float = 1.0, verify_step=None) -> PassOutcome:
    """One pass of speculative decoding (Leviathan et al., Algorithm 1), as the table, the CLI and the bench run it.

    `cur`, the last token written, sits at position `pos`, in neither model's cache yet. u: the pass's 2g+1
    uniforms, [draws g | tests g | final 1], always all drawn (a run replays from its seed). verify_step: the
    verify forward and the rule captured as a CUDA graph (device_verify), else they run here."""
    t0 = time.perf_counter()
    # 1. The proposer guesses k <= g tokens, drawn with u[:g], and gives the rows it drew them from (the small
    #    drum; a copying proposer may have fewer, and its rows are one-hot).
    guesses, q = proposer.propose(context, cur, pos, g, u[:g], shape)
    k = int(guesses.shape[0])
    t1 = time.perf_counter()
    chunk = torch.cat([cur.view(1), guesses])[None]                       # cur, x_1..x_k
    positions = torch.arange(pos, pos + k + 1, device=cur.device)
    feats = None
    if verify_step is None and cur.device.type == "cpu":
        # 2. The target computes p at the k+1 positions in one forward (the big drum, k+1 lanes lit), and the
        #    features there for a proposer that drafts from them (Medusa's heads, EAGLE's layer).
        if getattr(proposer, "wants_features", False):
            logits, feats = forward_positions(target, chunk, positions, features=True)
            p, feats = shape(logits[0]), feats[0]
        else:
            p = shape(forward_positions(target, chunk, positions)[0])
        # 3. The rule on the host rows (models.acceptance.verify itself): the guesses up to the first
        #    rejection are kept, then the replacement from the residual or the bonus token from p_{k+1}.
        guess_ids = chunk[0, 1:].tolist()
        v = acceptance.verify(np.asarray(guess_ids, dtype=np.int64), q.numpy(), p.numpy(), u[g:g + k].numpy(),
                              float(u[2 * g]), lenience)
        n, final, fallback, final_row = v.n_accepted, v.final_token, v.residual_fallback, v.final_row
        ratios = torch.from_numpy(np.asarray(v.ratios, dtype=np.float32))
    else:
        if getattr(proposer, "wants_features", False):
            raise InputError("drafting from the target's features runs on the CPU here")
        # 2 and 3 on the device (a GPU does not wait for the host inside a pass), then its one host read
        step = verify_step or device_verify(target, shape, lenience)
        packed, p, ratios = step(chunk, positions, q, u[g:g + k], u[2 * g])
        n, final, fallback, kind, at, *guess_ids = packed.tolist()
        final_row = None
        raise_on_violation((kind, at), guess_ids, p.shape[1])           # e.g. NaN rows from a model that overflowed
    t2 = time.perf_counter()
    # 4. The proposer hears how many were kept; the caller moves on to pos + n + 1 (rollback is by position:
    #    the target wrote pos..pos+k, valid up to pos+n, the rest is overwritten by the next pass).
    if feats is not None:
        proposer.commit(n, k, feats)
    else:
        proposer.commit(n, k)
    return PassOutcome(n, final, bool(fallback), guess_ids, guesses, q, p, ratios, draft_s=t1 - t0, verify_s=t2 - t1,
                       final_row=final_row)


@dataclass
class PassRecord:
    gamma: int               # guesses made this pass (γ, fewer only at the tail of an eager run)
    n_accepted: int
    final_kind: str          # "replacement" | "bonus"
    residual_fallback: bool
    tokens: list[int]        # accepted guesses + final token


@dataclass
class SpeculativeResult:
    tokens: list[int]        # new tokens only (n_tokens of them)
    passes: int              # target passes, the prompt's included (it writes the first token)
    gamma: int
    records: list[PassRecord] = field(default_factory=list)

    @property
    def tokens_per_pass(self) -> float:
        return len(self.tokens) / max(self.passes, 1)

    @property
    def alpha(self) -> float:
        """Fraction of tested guesses accepted (a pass tests up to its first rejection)."""
        tested = sum(min(r.n_accepted + 1, r.gamma) for r in self.records)
        return sum(r.n_accepted for r in self.records) / max(tested, 1)


class SpeculativeDecoder:
    """Speculative decoding from a prompt with the one pass (speculative_pass): a draft model (or any proposer,
    e.g. the lookup drafter's copies) guesses, the target verifies, the exact rule accepts.

    State between passes: `cur`, the last written token, at position `pos`, in neither cache yet.
    """

    def __init__(self, target: Transformer, draft: Transformer | None, *, gamma: int = 4, temperature: float = 0.0,
                 top_k: int = 0, top_p: float = 1.0, seed: int = 0, graphs: bool = False, lenience: float = 1.0,
                 proposer: Proposer | None = None):
        if draft is not None and target.config.vocab_size != draft.config.vocab_size:
            raise ValueError("draft and target must share a vocabulary")
        if gamma < 1:
            raise ValueError("gamma must be at least 1")
        if proposer is None:
            if draft is None:
                raise ValueError("give a draft model or a drafter")
            proposer = ModelProposer(draft, graphs)
        self.target, self.proposer, self.gamma = target, proposer, gamma
        self.temperature, self.lenience = temperature, lenience
        self.device = target.device
        self.gen = torch.Generator(device=self.device).manual_seed(seed)
        self.shape = RowShaper(temperature, top_k, top_p)                              # the one row shaper
        # on CUDA the verify forward and the rule are captured once as a graph, for one shape of rows
        self.verify_step = StepRunner(device_verify(target, self.shape, lenience), True) if graphs else None
        self.graphs = graphs
        self.decode_seconds = 0.0
        self.draft_seconds = self.verify_seconds = 0.0

    def _uniforms(self) -> torch.Tensor:
        # per pass: γ for the draft's draws, γ for the tests, 1 for the replacement/bonus; always all
        # drawn, so the stream of uniforms does not depend on verdicts (a run replays from its seed)
        return torch.rand(2 * self.gamma + 1, dtype=torch.float64, generator=self.gen, device=self.device)

    @torch.inference_mode()
    def start(self, prompt_ids: list[int]) -> None:
        """Prefill both models with the prompt; the target's last row gives the first token (one pass)."""
        dev = self.device
        prompt = torch.tensor([prompt_ids], device=dev)
        if getattr(self.proposer, "wants_features", False):       # a self-drafter reads the prompt's features
            logits, h = prefill(self.target, prompt, features=True)
            p = self.shape(logits)[0]
            self.proposer.prefill(list(prompt_ids), features=h[0])
        else:
            p = self.shape(prefill(self.target, prompt))[0]
            self.proposer.prefill(list(prompt_ids))
        u = torch.rand(1, dtype=torch.float64, generator=self.gen, device=dev)
        self.cur = sample_index(p, u[0])[None, None]
        self.pos = len(prompt_ids)
        self.ids = list(prompt_ids) + [int(self.cur)]         # the text a copying proposer reads

    @torch.inference_mode()
    def step(self, max_tokens: int | None = None) -> PassRecord:
        """One speculative pass: γ guesses, one target forward of γ+1 positions, one host read.

        max_tokens: tokens still wanted. Eagerly (no CUDA graphs) a pass near the end guesses only
        max_tokens - 1, as a pass writes at most γ+1; graphed runs keep their static γ and trim the output.
        """
        G = self.gamma
        g = G if (max_tokens is None or self.graphs) else max(0, min(G, max_tokens - 1))
        u = self._uniforms()        # always 2γ+1, used as [draws γ | tests γ | final]: the stream stays aligned
        u = torch.cat([u[:g], u[G:G + g], u[2 * G:]]) if g != G else u
        out = speculative_pass(self.target, self.proposer, self.ids, self.cur, self.pos, g, u, self.shape,
                               self.lenience, self.verify_step)
        self.draft_seconds += out.draft_s
        self.verify_seconds += out.verify_s
        n, k = out.n_accepted, len(out.guess_ids)
        self.cur = torch.tensor([[out.final_token]], device=self.device)
        self.pos += n + 1                                                # rollback by position
        self.ids.extend(out.tokens)
        return PassRecord(gamma=k, n_accepted=n, final_kind="bonus" if n == k else "replacement",
                          residual_fallback=out.residual_fallback, tokens=out.tokens)

    @torch.inference_mode()
    def generate(self, prompt_ids: list[int], n_tokens: int, progress=None) -> SpeculativeResult:
        """Prefill, then passes until n_tokens are written; decode_seconds times the passes;
        progress(tokens written so far), if given, after each pass."""
        self.start(prompt_ids)
        out, records = [int(self.cur.item())], []
        self.draft_seconds = self.verify_seconds = 0.0
        t0 = time.perf_counter()
        while len(out) < n_tokens:
            rec = self.step(n_tokens - len(out))
            records.append(rec)
            out.extend(rec.tokens)
            if progress is not None:
                progress(len(out))
        self.decode_seconds = time.perf_counter() - t0   # every pass ends in a host read: already synced
        return SpeculativeResult(tokens=out[:n_tokens], passes=len(records) + 1, gamma=self.gamma, records=records)


# --- a models.drafters drafter as a proposer ----------------------------------------------------------------
class DrafterProposer:
    """A models.drafters drafter on the neural pair (lookup: guesses copied from the text, one-hot rows). It reads
    only the text, never a cache, so prefill and commit have nothing to do. The chain drafter is ModelProposer."""

    def __init__(self, drafter, rows):
        self.drafter, self.rows = drafter, rows
        self.last = None                       # the last proposal (its source span goes into the trace)

    def prefill(self, ids: list[int]) -> None:
        pass

    def propose(self, context, cur, pos, g, u, shape):
        prop = self.drafter.propose(self.rows, context, g, u.cpu().numpy())
        self.last = prop
        dev = cur.device
        guesses = torch.tensor(prop.guesses, dtype=torch.long, device=dev)
        V = self.rows.pair.V
        if self.drafter.deterministic:         # one-hot rows, made where the rule runs (no host copy of k x V)
            return guesses, torch.zeros(len(prop.guesses), V, device=dev).scatter_(1, guesses.view(-1, 1), 1.0)
        return guesses, torch.as_tensor(np.asarray(prop.q_rows, dtype=np.float32), device=dev).reshape(-1, V)

    def commit(self, n_accepted: int, g: int) -> None:
        pass


@dataclass(frozen=True)
class Vocabulary:
    """All the lookup drafter reads of a pair: its size."""

    V: int


@dataclass(frozen=True)
class VocabularyRows:
    """What a drafter reads from a sampler (models.sampler.Rows), for a drafter that reads only the vocabulary."""

    pair: Vocabulary


def lookup_proposer(vocab_size: int) -> DrafterProposer:
    """The lookup drafter as a proposer for a model alone (the CLI, the bench): it reads only the vocabulary size."""
    return DrafterProposer(LookupDrafter(), VocabularyRows(Vocabulary(vocab_size)))
