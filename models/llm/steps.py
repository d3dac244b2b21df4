"""A forward pass of the model, the ways it can run: eagerly, compiled (inductor), or captured as a CUDA graph;
prefill, one token, several positions at once."""
from __future__ import annotations

import torch

from models.llm.model import Transformer, block_forward

# What torch.compile or a CUDA graph capture raises when it cannot do its part: dynamo's and inductor's errors
# (Unsupported, BackendCompilerFailed, a missing or failing C++ compiler) and a failed capture are RuntimeError;
# a compiler that cannot be started is OSError; a missing triton is ImportError.
COMPILE_FAILURES = (RuntimeError, OSError, ImportError)


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
    import torch._dynamo  # lazy: `import torch` leaves dynamo out; it loads only to compile
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
    import torch._dynamo  # lazy: `import torch` leaves dynamo out; it loads only to compile
    try:
        fn = torch.compile(lambda tok, pos: decode_one_token(model, tok, pos), dynamic=False, fullgraph=True)
        with torch.inference_mode():
            # a throwaway position past any text: the cache row it writes is overwritten before it is read
            last = torch.tensor([model.max_seq_length - 1], device=model.device)
            fn(torch.zeros(1, 1, dtype=torch.long, device=model.device), last)
        return fn, None
    except COMPILE_FAILURES as exc:     # a compiler failure means: run eagerly, and say so
        torch._dynamo.reset()
        return None, f"compiling the draft model's forward failed ({type(exc).__name__}: {str(exc).splitlines()[0][:160]}); ran eagerly"


def eager_blocks(model: Transformer) -> None:
    model.block_impl = block_forward


@torch.no_grad()
def prefill(model: Transformer, prompt: torch.Tensor, start: int = 0, features: bool = False):
    """Run the prompt (B, T) at positions start.. ; returns the last position's logits (B, V), and with features
    the features of every position (B, T, dim) too (a self-drafter reads them)."""
    pos = torch.arange(start, start + prompt.shape[1], device=prompt.device)
    if features:
        logits, h = model(prompt, pos, eager=True, features=True)
        return logits[:, -1], h
    return model(prompt, pos, eager=True, last_only=True)[:, -1]


def decode_one_token(model: Transformer, token: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
    """token (B, 1) at input_pos (1,) -> logits (B, V)."""
    return model(token, input_pos)[:, -1]


def forward_positions(model: Transformer, tokens: torch.Tensor, input_pos: torch.Tensor, features: bool = False):
    """tokens (B, T) at input_pos (T,) -> logits (B, T, V): verifying γ+1 positions is one of these; features=True:
    (logits, features), the output layer's input at each position (what self-drafting reads)."""
    return model(tokens, input_pos, features=features)
