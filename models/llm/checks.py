"""Validation at the checkpoint edge, called by models.llm.model's loaders: config.json's fields (type, range,
finiteness, before anything is sized or allocated), the files a checkpoint names (inside its folder), and
each tensor's dtype and values. Every failure is one InputError line naming the file and the field.

Bounds (generous: the largest published Llama-style models are well inside them):
  vocab_size 1..1,048,576   hidden_size 1..65,536   num_hidden_layers 1..1,024   attention heads 1..1,024
  head_dim 2..1,024 (even)  intermediate_size 1..1,048,576   max_position_embeddings 1..16,777,216
  rms_norm_eps above 0 to 1   rope_theta above 1 to 1e12   llama3 factor above 0 to 10,000,
  low_freq_factor < high_freq_factor (both above 0 to 10,000), original_max_position_embeddings 1..16,777,216
Weights: float32, float16 or bfloat16 only (int8, bool, float64, float8 are refused, never cast silently);
NaN or infinite values (also after the cast to the run's dtype) are refused.
"""
from __future__ import annotations

import re
from pathlib import Path

from corpus.errors import InputError
from corpus.validate import mapping, number, short, text, type_name, whole

MAX_POSITIONS = 1 << 24
SIZES = {                      # config.json field -> (lo, hi, required)
    "vocab_size": (1, 1 << 20, True),
    "hidden_size": (1, 65_536, True),
    "num_hidden_layers": (1, 1_024, True),
    "num_attention_heads": (1, 1_024, True),
    "intermediate_size": (1, 1 << 20, True),
    "num_key_value_heads": (1, 1_024, False),
    "head_dim": (2, 1_024, False),
    "max_position_embeddings": (1, MAX_POSITIONS, False),
}
WEIGHT_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
MAX_CONFIG_BYTES = 1 << 20
MAX_INDEX_BYTES = 16 << 20
NAME_BREAKERS = re.compile("[\x00-\x1f\x7f-\x9f]")     # control characters, newline and tab included


def select_rope(d: dict) -> dict:
    """The rope settings of a config.json: `rope_parameters` (newer transformers; per layer type or flat) or
    `rope_scaling` with `rope_theta` beside it (older); {} when neither is given."""
    rope = d.get("rope_parameters")
    if isinstance(rope, dict) and "rope_theta" not in rope and isinstance(next(iter(rope.values()), None), dict):
        rope = next(iter(rope.values()))  # per-layer-type layout: llama has one type
    if not isinstance(rope, dict):
        rope = dict(d.get("rope_scaling") or {})
    return rope


def check_hf_config(d, where: str = "config.json") -> dict:
    """Every field LlamaConfig.from_hf reads has the right type and a value in range; returns d."""
    mapping(d, where)
    for key in ("model_type", "hidden_act"):
        if d.get(key) is not None:
            text(d[key], f"{where}: {key}")
    for key in ("attention_bias", "mlp_bias", "tie_word_embeddings"):
        if d.get(key) is not None and not isinstance(d[key], bool):
            raise InputError(f"{where}: {key} must be true or false, not {type_name(d[key])} {short(d[key])}")
    # A key that is present must hold a valid value (null included), except the two from_hf reads as
    # `value or default` (null there means "as many KV heads as heads", "hidden_size / heads").
    for key, (lo, hi, required) in SIZES.items():
        if key not in d or (d[key] is None and key in ("num_key_value_heads", "head_dim")):
            if required:
                raise InputError(f"{where} lacks {key!r}")
            continue
        whole(d[key], f"{where}: {key}", lo, hi)
    if "rms_norm_eps" in d:
        number(d["rms_norm_eps"], f"{where}: rms_norm_eps", 0.0, 1.0, lo_open=True)
    for key in ("rope_parameters", "rope_scaling"):
        if d.get(key) is not None:
            mapping(d[key], f"{where}: {key}")
    rope = select_rope(d)
    for holder in (rope, d):
        if "rope_theta" in holder:
            number(holder["rope_theta"], f"{where}: rope_theta", 1.0, 1e12, lo_open=True)
    kind = rope.get("rope_type", rope.get("type", "default"))
    text(kind, f"{where}: rope_type")
    if kind == "llama3":
        for key in ("factor", "low_freq_factor", "high_freq_factor"):
            if key in rope:
                number(rope[key], f"{where}: rope {key}", 0.0, 1e4, lo_open=True)
        if "original_max_position_embeddings" in rope:
            whole(rope["original_max_position_embeddings"], f"{where}: rope original_max_position_embeddings",
                  1, MAX_POSITIONS)
        low, high = rope.get("low_freq_factor"), rope.get("high_freq_factor")
        if low is not None and high is not None and not low < high:
            raise InputError(f"{where}: rope low_freq_factor ({low}) must be below high_freq_factor ({high})")
    return d


def check_config(cfg, where: str = "config.json") -> None:
    """What only the whole config shows: query heads grouped evenly over the KV heads, an even head size."""
    if cfg.n_kv_heads > cfg.n_heads or cfg.n_heads % cfg.n_kv_heads:
        raise InputError(f"{where}: num_attention_heads ({cfg.n_heads}) must be a multiple of "
                         f"num_key_value_heads ({cfg.n_kv_heads})")
    if not 2 <= cfg.head_dim <= 1_024 or cfg.head_dim % 2:
        raise InputError(f"{where}: head_dim {cfg.head_dim} (given, or hidden_size / num_attention_heads) must be "
                         "even, from 2 to 1,024 (rotary embeddings rotate pairs)")


def check_bos_token_id(d, vocab_size: int, where: str = "config.json") -> int | None:
    """bos_token_id: absent or null (None), or a token id of the vocabulary."""
    v = mapping(d, where).get("bos_token_id")
    if v is None:
        return None
    return whole(v, f"{where}: bos_token_id", 0, vocab_size - 1)


def inside_checkpoint(folder: Path, name, where: str) -> Path:
    """folder/name, refused unless its name stays inside the folder: no absolute path, no '..', no folder on the
    way that links out. The file itself may be a link to a regular file anywhere: that is the Hugging Face cache's
    layout (hub/models--*/snapshots/<rev>/model.safetensors -> ../../blobs/<sha256>), and the user chose the
    folder; a link to a folder, or a name that leaves the folder, is what stays refused, and so is anything that is
    not a regular file (a folder, a FIFO, a device), linked or not. A name that does not exist is returned: the
    caller says what is missing."""
    if not isinstance(name, str) or not name:
        raise InputError(f"{where} names a file as {type_name(name)} {short(name)}, not a file name")
    rel = Path(name)
    if NAME_BREAKERS.search(name) or any(len(part.encode("utf-8", "replace")) > 255 for part in rel.parts):
        raise InputError(f"{where} names {short(name)}, which is no file name")
    if rel.is_absolute() or ".." in rel.parts:
        raise InputError(f"{where} names {name!r}, outside the checkpoint folder {folder}")
    path = folder / rel
    try:
        real, root, parent = path.resolve(), folder.resolve(), path.parent.resolve()
    except (OSError, RuntimeError) as exc:         # a link loop (RuntimeError before Python 3.13)
        raise InputError(f"{path} cannot be resolved: {exc}") from None
    if not parent.is_relative_to(root):
        raise InputError(f"{path} lies in {parent}, a folder linked from outside the checkpoint folder {folder}")
    if path.is_symlink():
        if real.is_file():
            return path
    elif real.exists() and not real.is_file():
        # a folder, a FIFO (reading it would wait forever), a device: never a checkpoint's file
        raise InputError(f"{path} is not a regular file (a folder, a FIFO or a device)")
    else:
        return path                     # a regular file, or nothing: the caller says what is missing
    raise InputError(f"{path} is a link to {real}, which is not a regular file (a link may point at a file "
                     "anywhere, as the Hugging Face cache's do, never at a folder, a FIFO or nothing)")


def shard_names(index, where: str) -> list[str]:
    """The shard file names of a model.safetensors.index.json."""
    weight_map = mapping(mapping(index, where).get("weight_map"), f"{where}: weight_map")
    if not weight_map:
        raise InputError(f"{where}: weight_map is empty")
    for key, name in weight_map.items():
        if not isinstance(name, str):
            raise InputError(f"{where}: weight_map[{key!r}] must be a file name, not {type_name(name)}")
    return sorted(set(weight_map.values()))


def check_tensor_dtype(file: Path, key: str, dtype: str) -> None:
    """dtype as safetensors spells it (F32, BF16, I8, BOOL, F64, ...), read before the tensor is."""
    if dtype not in WEIGHT_DTYPES:
        hint = ("convert it to float32 first" if dtype == "F64" else
                "quantised, integer and boolean tensors are not weights this model loads")
        raise InputError(f"{file}: {key} is {dtype}; only float32, float16 and bfloat16 weights are loaded ({hint})")


def check_finite(file: Path, key: str, loaded, source) -> None:
    """NaN or infinite weights (a broken checkpoint, or a value too large for the run's dtype) are refused."""
    import torch  # lazy: torch costs ~1 s; only the neural path needs it
    if not bool(torch.isfinite(loaded).all()):
        if bool(torch.isfinite(source).all()):
            raise InputError(f"{file}: {key} has values too large for {loaded.dtype} (finite in the file); "
                             "use --dtype fp32")
        raise InputError(f"{file}: {key} holds NaN or infinite values")
