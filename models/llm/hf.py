"""Hugging Face checkpoint folders: config.json and safetensors (sharded or not) read into our model, and our model
written back as one (for tests and demos). Never pickle; every tensor's name, dtype, shape and finiteness checked
against config.json before it is used (models.llm.checks)."""
from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import torch
import safetensors.torch
from safetensors import SafetensorError, safe_open

from corpus.atomic import atomic_path
from corpus.errors import InputError
from corpus.validate import read_json, shown_name, utf8_path
from models.llm.checks import (MAX_CONFIG_BYTES, MAX_INDEX_BYTES, check_bos_token_id, check_finite, check_tensor_dtype,
                               inside_checkpoint, shard_names)
from models.llm.formats import prepare_weights
from models.llm.model import LlamaConfig, Transformer, _materialise, build_random


def read_checkpoint_config(path) -> LlamaConfig:
    d = Path(path)
    if not d.is_dir():
        raise InputError(f"checkpoint directory {str(d)!r} does not exist")
    cfg_file = inside_checkpoint(d, "config.json", str(d))
    if not cfg_file.is_file():
        raise InputError(f"{str(d)!r} has no config.json: not a Hugging Face checkpoint directory")
    raw = read_json(cfg_file, "config.json", MAX_CONFIG_BYTES)
    if not isinstance(raw, dict):
        raise InputError(f"{cfg_file} is not a JSON object")
    return LlamaConfig.from_hf(raw, name=shown_name(d.name), where=shown_name(cfg_file))   # a name not UTF-8, escaped


def bos_token_id(path, cfg: LlamaConfig) -> int | None:
    """config.json's bos_token_id (the token a text starts from), checked by models.llm.checks; None when
    it gives none."""
    d = Path(path)
    raw = read_json(inside_checkpoint(d, "config.json", str(d)), "config.json", MAX_CONFIG_BYTES)
    return check_bos_token_id(raw, cfg.vocab_size, str(d / "config.json"))


def _checkpoint_files(d: Path) -> list[Path]:
    index = d / "model.safetensors.index.json"
    if index.is_file():
        names = shard_names(read_json(index, "a shard index", MAX_INDEX_BYTES), str(index))
        files = [inside_checkpoint(d, n, str(index)) for n in names]     # no '../other', no absolute path, no link out
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise InputError(f"{index.name} names shards that are missing: {', '.join(missing[:3])}")
        return files
    files = [inside_checkpoint(d, f.name, str(d)) for f in sorted(d.glob("*.safetensors"))
             if not f.name.startswith(".")]                           # a hidden temp file is no shard
    if not files:
        pickles = [p.name for p in d.iterdir() if p.suffix in (".bin", ".pt", ".pth", ".ckpt")]
        if pickles:
            raise InputError(f"{str(d)!r} holds only pickle weights ({pickles[0]}); only safetensors are loaded")
        raise InputError(f"{str(d)!r} has no *.safetensors weights")
    return files


def _hf_to_ours(name: str, cfg: LlamaConfig):
    """Map a transformers tensor name to (our parameter name, row slice into it) or None to skip."""
    qd, kvd, ff = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim, cfg.intermediate_size
    if name.startswith("model."):
        name = name[len("model."):]
    if name == "embed_tokens.weight":
        return "tok_embeddings.weight", None
    if name == "norm.weight":
        return "norm.weight", None
    if name == "lm_head.weight":
        return (None if cfg.tie_embeddings else "output.weight"), None
    parts = name.split(".")
    if len(parts) < 4 or parts[0] != "layers" or not parts[1].isdigit():
        return "?", None
    i, rest = int(parts[1]), ".".join(parts[2:])
    table = {
        "self_attn.q_proj.weight": ("attention.wqkv.weight", slice(0, qd)),
        "self_attn.k_proj.weight": ("attention.wqkv.weight", slice(qd, qd + kvd)),
        "self_attn.v_proj.weight": ("attention.wqkv.weight", slice(qd + kvd, qd + 2 * kvd)),
        "self_attn.o_proj.weight": ("attention.wo.weight", None),
        "mlp.gate_proj.weight": ("feed_forward.w13.weight", slice(0, ff)),
        "mlp.up_proj.weight": ("feed_forward.w13.weight", slice(ff, 2 * ff)),
        "mlp.down_proj.weight": ("feed_forward.w2.weight", None),
        "input_layernorm.weight": ("attention_norm.weight", None),
        "post_attention_layernorm.weight": ("ffn_norm.weight", None),
    }
    if rest.startswith("self_attn.rotary_emb"):
        return None, None  # old checkpoints store inv_freq; we compute it
    if rest not in table or i >= cfg.n_layers:
        return "?", None
    ours, rows = table[rest]
    return f"layers.{i}.{ours}", rows


def load_checkpoint(path, *, dtype=torch.float32, device="cpu") -> Transformer:
    """A transformers Llama checkpoint directory -> our model; every tensor's shape checked against config.json."""
    d = Path(path)
    cfg = read_checkpoint_config(d)
    files = _checkpoint_files(d)
    model = _materialise(cfg, dtype, device)
    params = dict(model.named_parameters())
    filled: dict[str, int] = {n: 0 for n in params}   # rows written per parameter
    with torch.no_grad():
        for f in files:
            with utf8_path(f) as name:       # a folder whose name is not UTF-8 loads too
                try:
                    handle = safe_open(name, framework="pt", device="cpu")
                except (SafetensorError, OSError, ValueError) as exc:
                    raise InputError(f"{f} is not a readable safetensors file: {exc}") from None
                _fill_from(handle, f, cfg, params, filled, dtype)
    missing = [n for n, p in params.items() if filled[n] < p.shape[0]]
    if missing:
        raise InputError(f"checkpoint {str(d)!r} lacks weights for {', '.join(missing[:3])}"
                         f"{' and more' if len(missing) > 3 else ''}")
    return model.eval()


def _fill_from(handle, f: Path, cfg: LlamaConfig, params: dict, filled: dict, dtype) -> None:
    """Copy one safetensors file's tensors into the model's parameters, each checked (name, dtype, shape, finite)."""
    with handle:
        for key in handle.keys():
            ours, rows = _hf_to_ours(key, cfg)
            if ours is None:
                continue
            if ours == "?":
                raise InputError(f"{f}: tensor {key!r} is not part of a Llama model of this config.json")
            target = params[ours] if rows is None else params[ours][rows]
            view = handle.get_slice(key)             # dtype and shape before the tensor is read
            check_tensor_dtype(f, key, view.get_dtype())
            if tuple(view.get_shape()) != tuple(target.shape):
                raise InputError(f"{f}: {key} has shape {tuple(view.get_shape())}, config.json implies "
                                 f"{tuple(target.shape)}")
            tensor = handle.get_tensor(key)
            target.copy_(tensor.to(dtype))
            check_finite(f, key, target, tensor)
            filled[ours] += target.shape[0]


def hf_state_dict(model: Transformer) -> dict[str, torch.Tensor]:
    """Our weights under transformers' names (views, no copies): q/k/v and gate/up unstacked."""
    cfg = model.config
    qd, kvd, ff = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim, cfg.intermediate_size
    sd = {"model.embed_tokens.weight": model.tok_embeddings.weight, "model.norm.weight": model.norm.weight}
    if not cfg.tie_embeddings:
        sd["lm_head.weight"] = model.output.weight
    for i, layer in enumerate(model.layers):
        p = f"model.layers.{i}."
        wqkv, w13 = layer.attention.wqkv.weight, layer.feed_forward.w13.weight
        sd.update({p + "self_attn.q_proj.weight": wqkv[:qd], p + "self_attn.k_proj.weight": wqkv[qd:qd + kvd],
                   p + "self_attn.v_proj.weight": wqkv[qd + kvd:],
                   p + "self_attn.o_proj.weight": layer.attention.wo.weight,
                   p + "mlp.gate_proj.weight": w13[:ff], p + "mlp.up_proj.weight": w13[ff:],
                   p + "mlp.down_proj.weight": layer.feed_forward.w2.weight,
                   p + "input_layernorm.weight": layer.attention_norm.weight,
                   p + "post_attention_layernorm.weight": layer.ffn_norm.weight})
    return {k: v.detach() for k, v in sd.items()}


def save_checkpoint(model: Transformer, path, *, shards: int = 1) -> None:
    """Write our model as a transformers checkpoint (config.json + safetensors): for tests and demos. Every file
    goes to a hidden temp file beside it first (corpus/atomic.py) and they replace the old ones only when all are
    written, config.json last: a full disk or an error mid-write leaves the old checkpoint whole and no temp file
    (a kill leaves hidden temps, which no loader takes for a shard)."""
    cfg = model.config
    d = Path(path)
    d.mkdir(parents=True, exist_ok=True)
    sd = {k: v.contiguous().cpu() for k, v in hf_state_dict(model).items()}
    keys = list(sd)
    with ExitStack() as stack:       # unwinds in reverse: the weights are replaced first, config.json last
        config_tmp = stack.enter_context(atomic_path(d / "config.json"))
        if shards <= 1:
            safetensors.torch.save_file(sd, str(stack.enter_context(atomic_path(d / "model.safetensors"))),
                                        metadata={"format": "pt"})
        else:
            weight_map = {}
            index_tmp = stack.enter_context(atomic_path(d / "model.safetensors.index.json"))
            for s in range(shards):
                fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
                part = {k: sd[k] for k in keys[s::shards]}
                safetensors.torch.save_file(part, str(stack.enter_context(atomic_path(d / fname))),
                                            metadata={"format": "pt"})
                weight_map.update({k: fname for k in part})
            index_tmp.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}, indent=2), encoding="utf-8")
        config_tmp.write_text(json.dumps(cfg.to_hf(), indent=2), encoding="utf-8")


def load_model(*, checkpoint=None, name: str | None = None, dtype=torch.float32, device="cpu",
               seed: int = 0, fmt: str | None = None) -> tuple[Transformer, bool]:
    """A checkpoint directory or a named config with random weights, its matrices in the weight format `fmt`
    (models.llm.formats; None: as loaded); returns (model, random_weights)."""
    if checkpoint is not None:
        model, random = load_checkpoint(checkpoint, dtype=dtype, device=device), False
    else:
        model, random = build_random(LlamaConfig.from_name(name), seed=seed, dtype=dtype, device=device), True
    model.load_notes = prepare_weights(model, fmt) if fmt else []
    return model, random
