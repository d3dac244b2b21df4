"""A compact Llama 3 in PyTorch (gpt-fast style): config, model, static KV cache, random weights.

Reads top to bottom in the order data flows: LlamaConfig -> KVCache -> Transformer -> TransformerBlock
(attention + feed-forward, one functional `block_forward` so one compiled graph serves every layer)
-> RMSNorm -> rotary tables with the llama3 frequency scaling, computed in fp32.

Weights are random of the exact shapes from a seed (then timings are real and text is not), or read from a
checkpoint: a Hugging Face folder (models.llm.hf), a GGUF file (models.llm.gguf).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from corpus.errors import InputError
from models.llm.formats import linear, weight_operand
from models.llm.checks import check_config, check_hf_config, select_rope

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
RANDOM_WEIGHTS_NOTE = "random weights: timings are real, text is not"


@dataclass
class LlamaConfig:
    name: str = "custom"
    vocab_size: int = 128256
    dim: int = 4096                       # hidden_size
    n_layers: int = 32
    n_heads: int = 32                     # query heads
    n_kv_heads: int = 8                   # key/value heads (grouped-query attention)
    head_dim: int = 128
    intermediate_size: int = 14336        # SwiGLU width
    rms_norm_eps: float = 1e-5
    rope_theta: float = 500000.0
    # llama3 frequency scaling: {factor, low_freq_factor, high_freq_factor, original_max_position_embeddings}
    rope_scaling: dict | None = field(default_factory=lambda: dict(LLAMA31_ROPE))
    tie_embeddings: bool = False
    max_position_embeddings: int = 131072

    @classmethod
    def from_name(cls, name: str) -> "LlamaConfig":
        if name not in CONFIGS:
            raise InputError(f"unknown model {name!r}; known: {', '.join(CONFIGS)}")
        return replace(CONFIGS[name], rope_scaling=dict(CONFIGS[name].rope_scaling or {}) or None)

    @classmethod
    def from_hf(cls, d: dict, name: str = "checkpoint", where: str | None = None) -> "LlamaConfig":
        """Every size and epsilon from a transformers config.json, in either rope layout it has written."""
        where = where or f"{name}/config.json"
        check_hf_config(d, where)                      # types, ranges, finiteness: what follows trusts d
        if d.get("model_type", "llama") != "llama":
            raise InputError(f"config.json model_type is {d.get('model_type')!r}, not 'llama'")
        if d.get("hidden_act", "silu") != "silu":
            raise InputError(f"config.json hidden_act {d.get('hidden_act')!r} is not supported (need silu)")
        if d.get("attention_bias") or d.get("mlp_bias"):
            raise InputError("config.json asks for attention/MLP biases; Llama 3 has none and this model neither")
        try:
            heads = int(d["num_attention_heads"])
            dim = int(d["hidden_size"])
            cfg = cls(name=name, vocab_size=int(d["vocab_size"]), dim=dim,
                      n_layers=int(d["num_hidden_layers"]), n_heads=heads,
                      n_kv_heads=int(d.get("num_key_value_heads") or heads),
                      head_dim=int(d.get("head_dim") or dim // heads),
                      intermediate_size=int(d["intermediate_size"]),
                      rms_norm_eps=float(d.get("rms_norm_eps", 1e-6)),
                      tie_embeddings=bool(d.get("tie_word_embeddings", False)),
                      max_position_embeddings=int(d.get("max_position_embeddings", 2048)))
        except KeyError as exc:
            raise InputError(f"config.json lacks {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"config.json has a malformed size: {exc}") from None
        # Newer transformers write rope_parameters (theta inside); older ones rope_theta + rope_scaling.
        rope = select_rope(d)
        theta = rope.get("rope_theta", d.get("rope_theta", 10000.0))
        kind = rope.get("rope_type", rope.get("type", "default"))
        cfg.rope_theta = float(theta)
        if kind == "default":
            cfg.rope_scaling = None
        elif kind == "llama3":
            try:
                keys = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
                cfg.rope_scaling = {k: float(rope[k]) for k in keys}
            except KeyError as exc:
                raise InputError(f"config.json llama3 rope scaling lacks {exc.args[0]!r}") from None
        else:
            raise InputError(f"rope type {kind!r} is not supported (default or llama3)")
        check_config(cfg, where)
        return cfg

    def to_hf(self) -> dict:
        """The config.json transformers would write (rope_parameters layout)."""
        rope = {"rope_type": "llama3" if self.rope_scaling else "default", "rope_theta": self.rope_theta}
        rope.update({k: (int(v) if k == "original_max_position_embeddings" else v)
                     for k, v in (self.rope_scaling or {}).items()})
        return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": self.vocab_size,
                "hidden_size": self.dim, "num_hidden_layers": self.n_layers,
                "num_attention_heads": self.n_heads, "num_key_value_heads": self.n_kv_heads,
                "head_dim": self.head_dim, "intermediate_size": self.intermediate_size,
                "rms_norm_eps": self.rms_norm_eps, "rope_parameters": rope, "hidden_act": "silu",
                "tie_word_embeddings": self.tie_embeddings,
                "max_position_embeddings": self.max_position_embeddings,
                "attention_bias": False, "mlp_bias": False}

    # --- sizes: what the roofline needs --------------------------------------------------------------
    def param_count(self) -> int:
        """Counted on the meta device: no memory is touched, tied weights counted once."""
        with torch.device("meta"):
            model = Transformer(self)
        return sum(p.numel() for p in model.parameters())

    def weight_bytes(self, dtype: torch.dtype) -> int:
        return self.param_count() * _itemsize(dtype)

    def weight_bytes_read_per_token(self, dtype: torch.dtype) -> int:
        """A decode step streams every matrix once but only one row of an untied input embedding."""
        untied_embedding = 0 if self.tie_embeddings else self.vocab_size * self.dim
        return (self.param_count() - untied_embedding) * _itemsize(dtype)

    def kv_bytes_per_token(self, dtype: torch.dtype) -> int:
        # layers x KV heads x head dim x (K and V) x bytes
        return self.n_layers * self.n_kv_heads * self.head_dim * 2 * _itemsize(dtype)

    def as_dict(self) -> dict:
        return asdict(self)


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype, device="meta").element_size()


LLAMA31_ROPE = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192.0}

CONFIGS: dict[str, LlamaConfig] = {
    # meta-llama/Llama-3.1-8B: the target
    "llama-3.1-8b": LlamaConfig(name="llama-3.1-8b"),
    # meta-llama/Llama-3.2-1B: the draft (tied embeddings, its own rope scaling factor)
    "llama-3.2-1b": LlamaConfig(name="llama-3.2-1b", dim=2048, n_layers=16, n_heads=32, n_kv_heads=8,
                                head_dim=64, intermediate_size=8192, tie_embeddings=True,
                                rope_scaling=dict(LLAMA31_ROPE, factor=32.0)),
    # A small draft with the Llama 3 vocabulary, for a CPU bench against the 1B (not a published model).
    "mini-draft-128k": LlamaConfig(name="mini-draft-128k", dim=512, n_layers=2, n_heads=8, n_kv_heads=2,
                                   head_dim=64, intermediate_size=1536, tie_embeddings=True),
    # Test sizes: llama3 scaling kept on (short original context so every branch of it is exercised).
    "tiny": LlamaConfig(name="tiny", vocab_size=512, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16,
                        intermediate_size=160, rope_scaling=dict(LLAMA31_ROPE, original_max_position_embeddings=64.0),
                        max_position_embeddings=4096),
    "tiny-draft": LlamaConfig(name="tiny-draft", vocab_size=512, dim=32, n_layers=1, n_heads=4, n_kv_heads=1,
                              head_dim=8, intermediate_size=64, tie_embeddings=True,
                              rope_scaling=dict(LLAMA31_ROPE, factor=32.0, original_max_position_embeddings=64.0),
                              max_position_embeddings=4096),
}


# --- the KV cache: written by position; rollback is free (later positions are masked, then overwritten)
class KVCache(nn.Module):
    def __init__(self, batch: int, n_kv_heads: int, max_seq_length: int, head_dim: int, dtype, device=None):
        super().__init__()
        shape = (batch, n_kv_heads, max_seq_length, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)


class Transformer(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(TransformerBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.dim, config.rms_norm_eps)
        self.output = nn.Linear(config.dim, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.output.weight = self.tok_embeddings.weight
        self.max_batch_size = -1
        self.max_seq_length = -1
        self.block_impl = block_forward      # swapped for a compiled version on CUDA (same maths)
        self.weight_format = ""              # fp32 | bf16 | fp16 | int8 | int4 (models.llm.formats), "" = the dtype's
        self.step_graph = None               # models.llm.onnx_step.OnnxStep where measured faster (models.llm.tuning)
        self.graph_rows = (False, False)     # whether it runs passes of one position, of several

    @property
    def device(self) -> torch.device:
        return self.tok_embeddings.weight.device

    @property
    def act_dtype(self) -> torch.dtype:
        """The float dtype of activations, norms and the KV cache (packed weights keep it too)."""
        return self.tok_embeddings.weight.dtype

    @property
    def format_name(self) -> str:
        return self.weight_format or {torch.float32: "fp32", torch.bfloat16: "bf16",
                                      torch.float16: "fp16"}.get(self.act_dtype, str(self.act_dtype))

    def setup_caches(self, max_batch_size: int, max_seq_length: int) -> None:
        """Pre-allocate the KV cache, the rotary tables and the causal mask for a fixed shape."""
        cfg = self.config
        dtype, device = self.act_dtype, self.device
        for layer in self.layers:
            layer.attention.kv_cache = None  # free the old cache before allocating the new one
        for layer in self.layers:
            layer.attention.kv_cache = KVCache(max_batch_size, cfg.n_kv_heads, max_seq_length, cfg.head_dim,
                                               dtype, device)
        cos, sin = rope_tables(cfg, max_seq_length, device)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.register_buffer("causal_mask", torch.ones(max_seq_length, max_seq_length, dtype=torch.bool,
                                                       device=device).tril_(), persistent=False)
        self.max_batch_size, self.max_seq_length = max_batch_size, max_seq_length

    def forward(self, idx: torch.Tensor, input_pos: torch.Tensor, eager: bool = False,
                last_only: bool = False, features: bool = False, tree=None):
        """idx (B, T) token ids at the consecutive positions input_pos (T,) -> logits (B, T, V) in the model's
        dtype. eager=True skips a compiled block (a prompt's one-off shape is not worth a compilation);
        last_only=True computes the logits of the last position only (B, 1, V): all a prompt needs.
        features=True: (logits, features), the features being what the output layer reads (the last hidden state
        after the final norm: what Medusa's heads and EAGLE's drafter work on). tree: a TreeMask, the T tokens a
        guess tree's nodes (written to the cache slots input_pos, each attending to the context and its own
        ancestors, rotated at its own depth's position)."""
        if self.max_seq_length < 0:
            raise RuntimeError("call setup_caches first")
        cfg = self.config
        graph = self.step_graph
        if graph is not None and idx.shape[0] == 1 and tree is None and (
                self.graph_rows[0] if idx.shape[1] == 1 else self.graph_rows[1]) and not torch.compiler.is_compiling():
            # the pass as one ONNX Runtime graph, where it was measured faster (models.llm.onnx_step)
            out = graph(idx, int(input_pos[0]), features=features)
            if features:
                logits, h = out
                return (logits[:, -1:], h[:, -1:]) if last_only else (logits, h)
            return out[:, -1:] if last_only else out
        if (idx.device.type == "cpu" and (eager or self.block_impl is block_forward)
                and not torch.compiler.is_compiling()) or tree is not None:   # a compiled graph wants static shapes
            x = self._layers_cpu(self.tok_embeddings(idx), int(input_pos[0]), tree)
        else:
            block = block_forward if eager else self.block_impl
            mask = self.causal_mask[input_pos]                   # (T, S): a query sees positions <= its own
            cos, sin = self.rope_cos[input_pos], self.rope_sin[input_pos]
            x = self.tok_embeddings(idx)
            for layer in self.layers:
                a, f = layer.attention, layer.feed_forward
                x = block(x, layer.attention_norm.weight, weight_operand(a.wqkv), weight_operand(a.wo),
                          layer.ffn_norm.weight, weight_operand(f.w13), weight_operand(f.w2),
                          a.kv_cache.k_cache, a.kv_cache.v_cache, cos, sin, mask, input_pos,
                          cfg.rms_norm_eps, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim)
        if last_only:
            x = x[:, -1:]
        h = rms_norm(x, self.norm.weight, cfg.rms_norm_eps)
        logits = linear(h, weight_operand(self.output))
        return (logits, h) if features else logits

    def _layers_cpu(self, x: torch.Tensor, start: int, tree=None) -> torch.Tensor:
        """The same layers as block_forward for a CPU, where every operation costs its dispatch (1-2 µs, more than
        the arithmetic of a small model): positions known on the host, so attention reads the cache up to the
        last position written and no mask at all for one token; the mask and rotary rows sliced once per
        forward, not per layer; q and k rotated in one operation; q, k, v (and gate, up) in one product.
        x (B, T, dim): the embeddings of the T positions; tree: a TreeMask (its positions and mask instead)."""
        cfg = self.config
        B, T, _ = x.shape
        S = start + T
        H, KV, hd = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        G = H // KV
        if tree is not None:
            cos, sin = self.rope_cos[tree.positions], self.rope_sin[tree.positions]
            mask = tree.mask.repeat(G, 1)
        else:
            cos, sin = self.rope_cos[start:S], self.rope_sin[start:S]
            mask = None if T == 1 else self.causal_mask[start:S, :S].repeat(G, 1)
        eps = cfg.rms_norm_eps
        for layer in self.layers:
            a, f = layer.attention, layer.feed_forward
            qkv = linear(rms_norm(x, layer.attention_norm.weight, eps), weight_operand(a.wqkv))
            qkv = qkv.view(B, T, H + 2 * KV, hd)
            qk = apply_rope(qkv[:, :, :H + KV], cos, sin)                    # (B, T, H+KV, hd)
            kc, vc = a.kv_cache.k_cache, a.kv_cache.v_cache
            kc[:, :, start:S] = qk[:, :, H:].transpose(1, 2)
            vc[:, :, start:S] = qkv[:, :, H + KV:].transpose(1, 2)
            qg = qk[:, :, :H].transpose(1, 2).reshape(B, KV, G * T, hd)     # group G query heads per KV head
            y = F.scaled_dot_product_attention(qg, kc[:, :, :S], vc[:, :, :S], attn_mask=mask)
            y = y.view(B, H, T, hd).transpose(1, 2).reshape(B, T, H * hd)
            x = x + linear(y, weight_operand(a.wo))
            gu = linear(rms_norm(x, layer.ffn_norm.weight, eps), weight_operand(f.w13))
            gate, up = gu.chunk(2, dim=-1)
            x = x + linear(F.silu(gate) * up, weight_operand(f.w2))
        return x


class TransformerBlock(nn.Module):
    """Holds one layer's weights; the arithmetic is block_forward (functional, so it compiles once)."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.attention = Attention(config)
        self.feed_forward = FeedForward(config)
        self.attention_norm = RMSNorm(config.dim, config.rms_norm_eps)
        self.ffn_norm = RMSNorm(config.dim, config.rms_norm_eps)


class Attention(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        kv = config.n_kv_heads * config.head_dim
        # q, k and v in one matrix: one pass over the weights (the checkpoint's three are stacked on load)
        self.wqkv = nn.Linear(config.dim, config.n_heads * config.head_dim + 2 * kv, bias=False)
        self.wo = nn.Linear(config.n_heads * config.head_dim, config.dim, bias=False)
        self.kv_cache: KVCache | None = None


class FeedForward(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        # gate (w1) and up (w3) stacked: SwiGLU(x) = w2(silu(w1 x) * w3 x)
        self.w13 = nn.Linear(config.dim, 2 * config.intermediate_size, bias=False)
        self.w2 = nn.Linear(config.intermediate_size, config.dim, bias=False)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    # x / sqrt(mean(x^2) + eps), the mean taken in fp32 whatever the weights' dtype (as the reference does)
    if x.dtype == torch.float32:          # no conversions to dispatch: a small model's step is mostly dispatch
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * xf.to(x.dtype)


def block_forward(x, attn_norm_w, wqkv, wo, ffn_norm_w, w13, w2, k_cache, v_cache, cos, sin, mask, input_pos,
                  eps: float, n_heads: int, n_kv_heads: int, head_dim: int):
    """One transformer layer: x + attention(norm x), then + SwiGLU(norm x). Writes K/V at input_pos."""
    B, T, _ = x.shape
    h = rms_norm(x, attn_norm_w, eps)
    q, k, v = linear(h, wqkv).split([n_heads * head_dim, n_kv_heads * head_dim, n_kv_heads * head_dim], dim=-1)
    q = apply_rope(q.view(B, T, n_heads, head_dim), cos, sin).transpose(1, 2)      # (B, H, T, hd)
    k = apply_rope(k.view(B, T, n_kv_heads, head_dim), cos, sin).transpose(1, 2)   # (B, KV, T, hd)
    v = v.view(B, T, n_kv_heads, head_dim).transpose(1, 2)
    k_cache.index_copy_(2, input_pos, k)
    v_cache.index_copy_(2, input_pos, v)
    # Grouped-query attention without copying K/V: query head h uses KV head h // G, so fold each
    # group of G query heads into the query-length axis and repeat the mask rows to match.
    G = n_heads // n_kv_heads
    qg = q.reshape(B, n_kv_heads, G * T, head_dim)
    y = F.scaled_dot_product_attention(qg, k_cache, v_cache, attn_mask=mask.repeat(G, 1))
    y = y.view(B, n_heads, T, head_dim).transpose(1, 2).reshape(B, T, n_heads * head_dim)
    x = x + linear(y, wo)
    gate, up = linear(rms_norm(x, ffn_norm_w, eps), w13).chunk(2, dim=-1)
    return x + linear(F.silu(gate) * up, w2)


# --- rotary embeddings: frequencies and tables in fp32, llama3 scaling as Meta/transformers define it
def rope_inv_freq(config: LlamaConfig, device=None) -> torch.Tensor:
    dim = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64, device=device)
                                            .to(torch.float) / dim))
    s = config.rope_scaling
    if not s:
        return inv_freq
    factor, low, high, old_len = s["factor"], s["low_freq_factor"], s["high_freq_factor"], \
        s["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_len / low, old_len / high
    wavelen = 2 * math.pi / inv_freq
    # long wavelengths are slowed by `factor`, short ones kept, the band between interpolated smoothly
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, scaled)


def rope_tables(config: LlamaConfig, seq_len: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of shape (seq_len, head_dim), fp32; the two halves repeat (rotate-half layout)."""
    inv_freq = rope_inv_freq(config, device)
    t = torch.arange(seq_len, device=device, dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (B, T, H, hd); cos/sin (T, hd). Rotated in fp32, returned in x's dtype."""
    xf = x.float()
    half = xf.shape[-1] // 2
    rotated = torch.cat([-xf[..., half:], xf[..., :half]], dim=-1)
    out = xf * cos[:, None, :] + rotated * sin[:, None, :]
    return out.to(x.dtype)


# --- building a model: random weights or a checkpoint ----------------------------------------------
def build_random(config: LlamaConfig, *, seed: int = 0, dtype=torch.float32, device="cpu",
                 std: float = 0.02) -> Transformer:
    """Random weights of the exact shapes, drawn from a seed on the device (no host round trip)."""
    model = _materialise(config, dtype, device)
    gen = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:   # drawn in row order whatever the storage (column_major): a seed gives the same weights
                p.copy_(torch.empty(p.shape, dtype=p.dtype, device=p.device).normal_(0.0, std, generator=gen))
    return model.eval()


def _materialise(config: LlamaConfig, dtype, device) -> Transformer:
    with torch.device("meta"):
        model = Transformer(config).to(dtype)   # dtype first, on meta: no full-precision copy is ever made
    model = model.to_empty(device=device)
    if torch.device(device).type == "cpu" and dtype == torch.float32:
        column_major(model)
    if config.tie_embeddings:  # to_empty makes new tensors per module: tie them again
        model.tok_embeddings.weight = model.output.weight
    return model


def column_major(model: Transformer) -> None:
    """Store each streamed matrix W (out, in) transposed in memory (same shape, strides (1, out)): F.linear then
    multiplies by a contiguous W^T, the BLAS call without a transpose, measured 1.4-1.7× faster for one or a few
    rows on this project's CPUs (the shipped target's 25 products: 2.85 -> 1.65 ms). Values are unchanged; a tied
    embedding shares the head's layout (a lookup gathers one strided row)."""
    mats = [model.output] + [m for layer in model.layers
                             for m in (layer.attention.wqkv, layer.attention.wo, layer.feed_forward.w13,
                                       layer.feed_forward.w2)]
    for m in mats:
        if isinstance(m, nn.Linear) and m.weight.is_contiguous():
            m.weight = nn.Parameter(torch.empty_strided(m.weight.shape, (1, m.weight.shape[0]),
                                                        dtype=m.weight.dtype, device=m.weight.device),
                                    requires_grad=m.weight.requires_grad)
