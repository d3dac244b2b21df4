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

import torch

from corpus.errors import InputError
from models.acceptance import ROW_SUM_TOLERANCE, check_rule_shapes, violation_message
from models.llama import Transformer


# --- turning logits into the rows the rule reads --------------------------------------------------
def probs_from_logits(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """fp32 probabilities; temperature 0 is greedy: a one-hot row on the argmax (the rule then accepts
    a guess iff it is the target's argmax and replaces it with the argmax: plain greedy decoding)."""
    if temperature <= 0:
        return torch.zeros_like(logits, dtype=torch.float32).scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    return torch.softmax(logits.float() / temperature, dim=-1)


def sample_index(rows: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Mirror of acceptance.sample_index: inverse-CDF draw with uniform u from unnormalised rows (..., V).

    cdf in fp64; the first index whose cumulative mass exceeds u·total (so a zero-mass token is never
    chosen); if u·total rounds up to the total, the last positive entry.
    """
    cdf = rows.double().cumsum(-1)
    i = torch.searchsorted(cdf, (u.double() * cdf[..., -1]).unsqueeze(-1), right=True).squeeze(-1)
    V = rows.shape[-1]
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
    violation, safe = find_violation_on_device(guesses, q_rows, p_rows, r, u_final)
    idx = torch.arange(gamma, device=guesses.device)
    ratios = p_rows[idx, safe] / q_rows[idx, safe]              # acceptance_ratio = p / q, fp32 as numpy
    passes = r.double() < (ratios / lenience).double()      # strict, as acceptance.verify: r ~ U[0, 1)
    n = passes.long().cumprod(0).sum()                                # leading passes = first rejection (γ if none)
    accepted = idx < n
    # Past the last guess q is zero, so the residual formula gives the bonus row too: max(0, p - 0) = p.
    q_pad = torch.cat([q_rows, q_rows.new_zeros(1, q_rows.shape[1])])
    p_n = p_rows.index_select(0, n.view(1))[0]
    q_n = q_pad.index_select(0, n.view(1))[0]
    res = torch.clamp_min(p_n - lenience * q_n, 0.0)                  # residual: max(0, p - q)
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
    from models.llama import block_forward
    cfg = torch._dynamo.config
    for knob in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, knob):
            setattr(cfg, knob, 64)  # one entry per (batch, tokens, model) shape
    model.block_impl = torch.compile(block_forward, dynamic=False, fullgraph=True)


def eager_blocks(model: Transformer) -> None:
    from models.llama import block_forward
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

    def __init__(self, target: Transformer, *, temperature: float = 0.0, seed: int = 0, graphs: bool = False):
        self.target, self.temperature = target, temperature
        self.device = target.output.weight.device
        self.gen = torch.Generator(device=self.device).manual_seed(seed)
        t = temperature

        def step(token, pos, u):
            probs = probs_from_logits(decode_one_token(target, token, pos), t)[0]
            return sample_index(probs, u)[None, None]
        self.step_fn = StepRunner(torch.no_grad()(step), graphs)
        self.decode_seconds = 0.0

    @torch.no_grad()
    def generate(self, prompt_ids: list[int], n_tokens: int, progress=None) -> list[int]:
        """Prefill (writes the first token), then n_tokens - 1 decode passes, timed in decode_seconds;
        progress(tokens written so far), if given, after each pass."""
        dev = self.device
        prompt = torch.tensor([prompt_ids], device=dev)
        probs = probs_from_logits(prefill(self.target, prompt), self.temperature)[0]
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


# --- speculative decoding ---------------------------------------------------------------------------
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
    """Draft γ tokens with the draft's cache, verify γ+1 positions in one target forward, accept by the
    exact rule, roll both caches back by position.

    State between passes: `cur`, the last written token, at position `pos`, in neither cache yet.
    """

    def __init__(self, target: Transformer, draft: Transformer, *, gamma: int = 4, temperature: float = 0.0,
                 seed: int = 0, graphs: bool = False, lenience: float = 1.0):
        if target.config.vocab_size != draft.config.vocab_size:
            raise ValueError("draft and target must share a vocabulary")
        if gamma < 1:
            raise ValueError("gamma must be at least 1")
        self.target, self.draft, self.gamma = target, draft, gamma
        self.temperature, self.lenience = temperature, lenience
        self.device = target.output.weight.device
        self.gen = torch.Generator(device=self.device).manual_seed(seed)
        t = temperature

        def draft_step(token, pos, u):
            # the q row and the guess drawn from it with uniform u: x ~ q(. | context)
            q = probs_from_logits(decode_one_token(draft, token, pos), t)[0]
            return q, sample_index(q, u)[None, None]

        def verify_step(tokens, pos, q_rows, u_tail):
            # p rows at γ+1 positions in one target forward, then the rule, all on the device;
            # packed = [n_accepted, final_token, residual_fallback, violation kind, its position, x_1..x_γ]
            g = tokens.shape[1] - 1
            p = probs_from_logits(forward_positions(target, tokens, pos), t)[0]
            v = verify_on_device(tokens[0, 1:], q_rows, p, u_tail[:g], u_tail[g], lenience, check=False)
            return torch.cat([v.n_accepted.view(1), v.final_token.view(1), v.residual_fallback.long().view(1),
                              v.violation, tokens[0, 1:]])

        self.draft_step = StepRunner(torch.no_grad()(draft_step), graphs)
        self.verify_step = StepRunner(torch.no_grad()(verify_step), graphs)
        self.draft_consume = StepRunner(torch.no_grad()(lambda tok, pos: decode_one_token(draft, tok, pos)), graphs)
        self.graphs = graphs
        self.decode_seconds = 0.0

    def _uniforms(self) -> torch.Tensor:
        # per pass: γ for the draft's draws, γ for the tests, 1 for the replacement/bonus; always all
        # drawn, so the stream of uniforms does not depend on verdicts (a run replays from its seed)
        return torch.rand(2 * self.gamma + 1, dtype=torch.float64, generator=self.gen, device=self.device)

    @torch.no_grad()
    def start(self, prompt_ids: list[int]) -> None:
        """Prefill both models with the prompt; the target's last row gives the first token (one pass)."""
        dev = self.device
        prompt = torch.tensor([prompt_ids], device=dev)
        p = probs_from_logits(prefill(self.target, prompt), self.temperature)[0]
        prefill(self.draft, prompt)
        u = torch.rand(1, dtype=torch.float64, generator=self.gen, device=dev)
        self.cur = sample_index(p, u[0])[None, None]
        self.pos = len(prompt_ids)
        self.draft_behind = False
        self.last_guess = self.cur

    @torch.no_grad()
    def step(self, max_tokens: int | None = None) -> PassRecord:
        """One speculative pass: γ draft forwards, one target forward of γ+1 positions, one host read.

        max_tokens: tokens still wanted. Eagerly (no CUDA graphs) a pass near the end guesses only
        max_tokens - 1, as a pass writes at most γ+1; graphed runs keep their static γ and trim the output.
        """
        G, dev, pos = self.gamma, self.device, self.pos
        g = G if (max_tokens is None or self.graphs) else max(0, min(G, max_tokens - 1))
        u = self._uniforms()        # always 2γ+1, used as [draws γ | tests γ | final]: the stream stays aligned
        if self.draft_behind:
            # all guesses passed last time: the draft never read its own last guess; feed it now (at pos - 1)
            self.draft_consume(self.last_guess, torch.arange(pos - 1, pos, device=dev))
        tok = self.cur
        guesses, q_rows = [], []
        for i in range(g):
            q, tok = self.draft_step(tok, torch.arange(pos + i, pos + i + 1, device=dev), u[i])
            q_rows.append(q.clone())
            tok = tok.clone()
            guesses.append(tok)
        chunk = torch.cat([self.cur] + guesses, dim=1)                      # (1, γ+1): cur, x_1..x_γ
        V = self.target.config.vocab_size
        q_all = torch.stack(q_rows) if q_rows else torch.zeros(0, V, device=dev)
        u_tail = torch.cat([u[G:G + g], u[2 * G:]])
        packed = self.verify_step(chunk, torch.arange(pos, pos + g + 1, device=dev), q_all, u_tail)
        # the draft's cache lacks the token at the last accepted position when every guess passed:
        # its own last guess (or, with no guesses, the token it was not asked to read)
        self.last_guess = guesses[-1] if guesses else self.cur
        self.cur = packed[1:2].view(1, 1).clone()
        n, final, fallback, kind, at, *guess_ids = packed.tolist()   # the one host read of the pass
        raise_on_violation((kind, at), guess_ids, V)      # e.g. NaN rows from a model that overflowed
        # Rollback by position: the target wrote pos..pos+γ, valid up to pos+n; the draft wrote pos..pos+γ-1.
        self.pos = pos + n + 1
        self.draft_behind = n == g
        return PassRecord(gamma=g, n_accepted=n, final_kind="bonus" if n == g else "replacement",
                          residual_fallback=bool(fallback), tokens=guess_ids[:n] + [final])

    @torch.no_grad()
    def generate(self, prompt_ids: list[int], n_tokens: int, progress=None) -> SpeculativeResult:
        """Prefill, then passes until n_tokens are written; decode_seconds times the passes;
        progress(tokens written so far), if given, after each pass."""
        self.start(prompt_ids)
        out, records = [int(self.cur.item())], []
        t0 = time.perf_counter()
        while len(out) < n_tokens:
            rec = self.step(n_tokens - len(out))
            records.append(rec)
            out.extend(rec.tokens)
            if progress is not None:
                progress(len(out))
        self.decode_seconds = time.perf_counter() - t0   # every pass ends in a host read: already synced
        return SpeculativeResult(tokens=out[:n_tokens], passes=len(records) + 1, gamma=self.gamma, records=records)
