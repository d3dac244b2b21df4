"""The speculative step on tensors: prefill, decode one, draft γ, verify γ+1 in one forward, accept, roll back.

The acceptance rule mirrors models/acceptance.py operation for operation on fp32 probabilities (ratios
in fp32, comparisons and inverse-CDF draws in fp64), so the same uniforms give the same verdicts and
tokens; tests prove it. Randomness is drawn as uniforms from one torch.Generator, so a run replays from
its seed. The KV caches roll back by position: nothing is erased, later positions are masked and
overwritten. Inside a pass nothing waits for the device except the one read of the verdict at its end.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from corpus.errors import InputError
from models import acceptance
from models.acceptance import ROW_SUM_TOLERANCE, check_rule_shapes, violation_message
from models.llm.model import Transformer


# --- turning logits into the rows the rule reads --------------------------------------------------
def sample_index(rows: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Mirror of acceptance.sample_index: inverse-CDF draw with uniform u from unnormalised rows (..., V).

    cdf in fp64; the first index whose cumulative mass exceeds u·total (so a zero-mass token is never
    chosen); if u·total rounds up to the total, the last positive entry.
    """
    cdf = rows.double().cumsum(-1)
    i = torch.searchsorted(cdf, (u.double() * cdf[..., -1]).unsqueeze(-1), right=True).squeeze(-1)
    V = rows.shape[-1]
    if rows.device.type == "cpu" and i.dim() == 0 and int(i) < V:
        return i            # the usual case, read for free on a CPU: the fallback below is not needed
    last_positive = (V - 1) - (rows > 0).flip(-1).int().argmax(-1)
    return torch.where(i >= V, last_positive, i)


@dataclass
class DeviceVerdicts:
    """acceptance.Verdicts as device tensors (read them only when the pass is done)."""

    ratios: torch.Tensor             # (γ,) fp32 p_i(x_i) / q_i(x_i)
    accepted: torch.Tensor           # (γ,) bool
    n_accepted: torch.Tensor         # () int64
    final_token: torch.Tensor        # () int64: replacement or bonus
    residual_fallback: torch.Tensor  # () bool
    violation: torch.Tensor          # (2,) int64: [kind, position] of acceptance.VIOLATIONS, kind 0 = none


def _first_true(flag: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(any, index of the first True) of a bool vector, also when it is empty (γ = 0): no host read."""
    f = torch.cat([flag, flag.new_zeros(1)])
    return f.any(), f.int().argmax()


def find_violation_on_device(guesses, q_rows, p_rows, r, u_final) -> tuple[torch.Tensor, torch.Tensor]:
    """acceptance.check_guesses + find_row_violation on tensors, the same tests in the same order
    (acceptance.VIOLATIONS): ([kind, position], guesses with the out-of-range ones replaced by 0 so the rule's
    gathers stay in bounds; on CUDA an out-of-range index would be a device-side assert, not an error)."""
    V = p_rows.shape[1]
    outside = (guesses < 0) | (guesses >= V)
    safe = torch.where(outside, torch.zeros_like(guesses), guesses)
    idx = torch.arange(guesses.shape[0], device=guesses.device)
    flags = [
        outside,
        ~(q_rows[idx, safe] > 0),
        ~(torch.isfinite(q_rows) & (q_rows >= 0)).all(1),
        ~(torch.isfinite(p_rows) & (p_rows >= 0)).all(1),
        (q_rows.double().sum(1) - 1.0).abs() > ROW_SUM_TOLERANCE,
        (p_rows.double().sum(1) - 1.0).abs() > ROW_SUM_TOLERANCE,
        ~((r >= 0) & (r <= 1)),
        ~((u_final >= 0) & (u_final <= 1)).view(1),
    ]
    anys, firsts = zip(*(_first_true(f) for f in flags))
    anys, firsts = torch.stack(anys), torch.stack(firsts)
    k = anys.int().argmax()
    has = anys.any()
    kind = torch.where(has, k + 1, torch.zeros_like(k))
    return torch.stack([kind, torch.where(has, firsts[k], torch.zeros_like(k))]), safe


def suspect_on_device(guesses, q_rows, p_rows, r, u_final) -> torch.Tensor:
    """A cheap flag that is True whenever find_violation_on_device would find something (never False then): a
    few reductions instead of the full check's forty operations. The full check runs only when it is raised, so
    the verdict and its message are the full check's. Row sums are flagged at half the tolerance in fp32, far
    wider than fp32's summation error, so a row the fp64 check refuses is always flagged."""
    V = p_rows.shape[1]
    tol = ROW_SUM_TOLERANCE / 2
    parts = [(guesses < 0) | (guesses >= V), ~((r >= 0) & (r <= 1)), ~((u_final >= 0) & (u_final <= 1)).view(1)]
    for rows in (q_rows, p_rows):
        if rows.numel():
            parts.append(~(rows.amin() >= 0).view(1))                  # a negative entry or a NaN
            # summed in fp32 whatever the rows' dtype: a bf16 sum rounds to 1/128 and would hide a row the fp64
            # check refuses
            parts.append(~((rows.sum(1, dtype=torch.float32) - 1.0).abs() <= tol))     # off by more, or infinite
    if guesses.numel():
        safe = guesses.clamp(0, V - 1)
        parts.append(~(q_rows.gather(1, safe.view(-1, 1)).view(-1) > 0))
    return torch.cat([p.view(-1) for p in parts]).any()


def raise_on_violation(violation, guesses, V: int) -> None:
    """The host side of the check: the InputError acceptance.verify raises for the same inputs."""
    kind, i = (int(x) for x in violation)
    if kind:
        raise InputError(violation_message(kind, i, list(guesses), V))


def _is_integer(dtype: torch.dtype) -> bool:
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


def verify_on_device(guesses: torch.Tensor, q_rows: torch.Tensor, p_rows: torch.Tensor, r: torch.Tensor,
                     u_final: torch.Tensor, lenience: float = 1.0, check: bool = True) -> DeviceVerdicts:
    """acceptance.verify on tensors: guesses (γ,), q_rows (γ, V) fp32, p_rows (γ+1, V) fp32, r (γ,) fp64.

    The inputs are checked as acceptance.verify checks them: shapes and lenience at once, the data on the
    device into `violation`. check=True reads it and raises the same InputError; the decoder passes
    check=False and reads it with the pass's one host read (a CUDA graph cannot stop to raise)."""
    gamma = guesses.shape[0] if guesses.dim() else -1
    check_rule_shapes(gamma, guesses.dim(), _is_integer(guesses.dtype),
                      q_rows.dtype.is_floating_point and p_rows.dtype.is_floating_point, q_rows.shape, p_rows.shape,
                      r.shape, u_final.dim(), lenience)
    if guesses.device.type == "cpu" and not bool(suspect_on_device(guesses, q_rows, p_rows, r, u_final)):
        # On a CPU a flag is read for free: the full check runs only when something looks wrong.
        violation, safe = torch.zeros(2, dtype=torch.long), guesses
    else:
        violation, safe = find_violation_on_device(guesses, q_rows, p_rows, r, u_final)
    idx = torch.arange(gamma, device=guesses.device)
    ratios = p_rows[idx, safe] / q_rows[idx, safe]              # acceptance_ratio = p / q, fp32 as numpy
    passes = r.double() < (ratios / lenience).double()      # strict, as acceptance.verify: r ~ U[0, 1)
    n = passes.long().cumprod(0).sum()                                # leading passes = first rejection (γ if none)
    accepted = idx < n
    # Past the last guess q is zero, so the residual formula gives the bonus row too: max(0, p - 0) = p.
    p_n = p_rows.index_select(0, n.view(1))[0]
    if guesses.device.type == "cpu":           # n read for free: no padded copy of the q rows
        k = int(n)
        res = torch.clamp_min(p_n - lenience * q_rows[k], 0.0) if k < gamma else torch.clamp_min(p_n, 0.0)
    else:
        q_pad = torch.cat([q_rows, q_rows.new_zeros(1, q_rows.shape[1])])
        q_n = q_pad.index_select(0, n.view(1))[0]
        res = torch.clamp_min(p_n - lenience * q_n, 0.0)              # residual: max(0, p - q)
    has_mass = (res > 0).any()
    # Zero residual (p <= q everywhere, i.e. p == q up to rounding): draw from p, as acceptance.py does.
    row = torch.where(has_mass, res, p_n)
    token = sample_index(row, u_final)
    verdicts = DeviceVerdicts(ratios=ratios, accepted=accepted, n_accepted=n, final_token=token,
                              residual_fallback=(n < gamma) & ~has_mass, violation=violation)
    if check:
        raise_on_violation(violation.tolist(), guesses.tolist(), p_rows.shape[1])
    return verdicts


# --- forward steps: eager on CPU; on CUDA captured once as a CUDA graph (static shapes) ---------------
class StepRunner:
    """Calls fn(*inputs). With graphs=True (CUDA), the first call warms up and captures fn into a CUDA
    graph over static input buffers; later calls copy the inputs in and replay: no launch overhead, no
    sync. The returned tensors are the graph's own buffers: use (or clone) them before the next call."""

    def __init__(self, fn, graphs: bool = False):
        self.fn, self.graphs = fn, graphs
        self.graph = None
        self.static_in: list[torch.Tensor] = []
        self.static_out = None

    def __call__(self, *inputs: torch.Tensor):
        if not self.graphs:
            return self.fn(*inputs)
        if self.graph is None:
            self._capture(inputs)
        for s, x in zip(self.static_in, inputs):
            s.copy_(x, non_blocking=True)
        self.graph.replay()
        return self.static_out

    def _capture(self, inputs) -> None:
        self.static_in = [x.clone() for x in inputs]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # compilation, cuBLAS workspaces and autotuning happen here, outside the graph
                self.fn(*self.static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.static_out = self.fn(*self.static_in)
        self.graph = graph


def compile_blocks(model: Transformer) -> None:
    """Compile the one block function (inductor fuses norms, rope and SwiGLU; the graph is shared by every
    layer of the same shape, so compile time does not grow with depth). Prefill stays eager."""
    import torch._dynamo
    from models.llm.model import block_forward
    cfg = torch._dynamo.config
    for knob in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, knob):
            setattr(cfg, knob, 64)  # one entry per (batch, tokens, model) shape
    model.block_impl = torch.compile(block_forward, dynamic=False, fullgraph=True)


def compile_step(model: Transformer):
    """The model's whole one-token step as one compiled graph (static shapes: the cache's full length under the
    causal mask, so no position recompiles it), warmed up once; None, with the reason, where compiling fails
    (no C++ compiler, an unsupported op). On this project's CPU it halves the shipped draft's step (0.59 ->
    0.29 ms, measured), whose time is the dispatch of ~80 small operations; the target's step, whose time is its
    matrices, gains nothing and stays eager."""
    import torch._dynamo
    try:
        fn = torch.compile(lambda tok, pos: decode_one_token(model, tok, pos), dynamic=False, fullgraph=True)
        with torch.inference_mode():
            # a throwaway position past any text: the cache row it writes is overwritten before it is read
            last = torch.tensor([model.max_seq_length - 1], device=model.device)
            fn(torch.zeros(1, 1, dtype=torch.long, device=model.device), last)
        return fn, None
    except Exception as exc:  # noqa: BLE001 - any compiler failure means: run eagerly, and say so
        torch._dynamo.reset()
        return None, f"compiling the draft model's forward failed ({type(exc).__name__}: {str(exc).splitlines()[0][:160]}); ran eagerly"


def eager_blocks(model: Transformer) -> None:
    from models.llm.model import block_forward
    model.block_impl = block_forward


@torch.no_grad()
def prefill(model: Transformer, prompt: torch.Tensor, start: int = 0) -> torch.Tensor:
    """Run the prompt (B, T) at positions start.. ; returns the last position's logits (B, V)."""
    pos = torch.arange(start, start + prompt.shape[1], device=prompt.device)
    return model(prompt, pos, eager=True, last_only=True)[:, -1]


def decode_one_token(model: Transformer, token: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
    """token (B, 1) at input_pos (1,) -> logits (B, V)."""
    return model(token, input_pos)[:, -1]


def forward_positions(model: Transformer, tokens: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
    """tokens (B, T) at input_pos (T,) -> logits (B, T, V): verifying γ+1 positions is one of these."""
    return model(tokens, input_pos)


def sync(device) -> None:
    """Wait for the device: only for timing, outside passes."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


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

    def prefill(self, ids: list[int]) -> None: ...
    def propose(self, context: list[int], cur: torch.Tensor, pos: int, g: int, u: torch.Tensor,
                shape) -> tuple[torch.Tensor, torch.Tensor]: ...
    def commit(self, n_accepted: int, g: int) -> None: ...


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

    @property
    def tokens(self) -> list[int]:
        return self.guess_ids[:self.n_accepted] + [self.final_token]


class SpeculativeLoop:
    """The speculative pass of the torch backend, whatever proposes the guesses: propose k <= g guesses, one
    target forward of k+1 positions, the exact rule on the device (verify_on_device), one host read, the
    proposer told how many were kept. Rollback is the caller's position: the target wrote pos..pos+k and is
    valid up to pos+n. With graphs=True (CUDA) the verify step is captured once, for one shape of rows."""

    def __init__(self, target: Transformer, proposer: Proposer, graphs: bool = False):
        self.target, self.proposer, self.graphs = target, proposer, graphs
        self._verify = None
        self.timed = target.device.type == "cpu"        # wall-clock splits only where the host waits anyway
        # On a CPU the rows are host memory already: models.acceptance.verify itself runs on them (a view, no
        # copy), the one rule, a third of the time of its torch mirror's forty small operations (measured).
        self.host_rule = target.device.type == "cpu" and not graphs

    def _verify_fn(self, shape, lenience: float):
        target = self.target

        def verify(tokens, pos, q_rows, u_tests, u_final):
            p = shape(forward_positions(target, tokens, pos)[0])
            v = verify_on_device(tokens[0, 1:], q_rows, p, u_tests, u_final, lenience, check=False)
            packed = torch.cat([v.n_accepted.view(1), v.final_token.view(1), v.residual_fallback.long().view(1),
                                v.violation, tokens[0, 1:]])
            return packed, p, v.ratios
        return torch.no_grad()(verify)

    @torch.inference_mode()
    def run(self, context: list[int], cur: torch.Tensor, pos: int, g: int, u: torch.Tensor, shape,
            lenience: float = 1.0) -> PassOutcome:
        """u: the pass's 2g+1 uniforms, used as [draws g | tests g | final 1] (always all drawn: replayable)."""
        dev = cur.device
        t0 = time.perf_counter()
        guesses, q = self.proposer.propose(context, cur, pos, g, u[:g], shape)
        t1 = time.perf_counter()
        k = int(guesses.shape[0])                                        # a copy may be shorter than γ
        chunk = torch.cat([cur.view(1), guesses])[None]                  # cur, x_1..x_k
        args = (chunk, torch.arange(pos, pos + k + 1, device=dev), q, u[g:g + k], u[2 * g])
        if self.host_rule:
            p = shape(forward_positions(self.target, chunk, args[1])[0])
            guess_ids = chunk[0, 1:].tolist()
            v = acceptance.verify(np.asarray(guess_ids, dtype=np.int64), q.numpy(), p.numpy(), u[g:g + k].numpy(),
                                  float(u[2 * g]), lenience)
            t2 = time.perf_counter()
            self.proposer.commit(v.n_accepted, k)
            return PassOutcome(v.n_accepted, v.final_token, v.residual_fallback, guess_ids, guesses, q, p,
                               torch.from_numpy(np.asarray(v.ratios, dtype=np.float32)), draft_s=t1 - t0,
                               verify_s=t2 - t1)
        if self.graphs:
            if self._verify is None:
                self._verify = StepRunner(self._verify_fn(shape, lenience), True)
            packed, p, ratios = self._verify(*args)
        else:
            packed, p, ratios = self._verify_fn(shape, lenience)(*args)
        n, final, fallback, kind, at, *guess_ids = packed.tolist()      # the one host read of the pass
        t2 = time.perf_counter()
        raise_on_violation((kind, at), guess_ids, p.shape[1])            # e.g. NaN rows from a model that overflowed
        self.proposer.commit(n, k)
        return PassOutcome(n, final, bool(fallback), guess_ids, guesses, q, p, ratios,
                           draft_s=t1 - t0, verify_s=t2 - t1)


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
    """Speculative decoding from a prompt with the one loop (SpeculativeLoop): a draft model (or any proposer,
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
        self.loop = SpeculativeLoop(target, proposer, graphs)
        self.shape = RowShaper(temperature, top_k, top_p)                              # the one row shaper
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
        out = self.loop.run(self.ids, self.cur, self.pos, g, u, self.shape, self.lenience)
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


def lookup_proposer(vocab_size: int) -> DrafterProposer:
    """The lookup drafter as a proposer for a model alone (the CLI, the bench): it reads only the vocabulary size."""
    from models.drafters import LookupDrafter
    vocab = type("Vocab", (), {"V": vocab_size})()
    return DrafterProposer(LookupDrafter(), type("Rows", (), {"pair": vocab})())
