"""Where the networks run: the device, its free memory, and the one estimate of what a run needs there.

Every loader checks memory before a weight is read (a run that cannot fit is one InputError line, not an
out-of-memory kill): the bench's batch sweep, the pairs the window and the CLI load, llm-generate. They all ask
memory_needed, whose terms are each model's weights, its KV cache for batch × seq positions, the causal mask, a
step's logits (with their fp32 probabilities) and widest activations, and attention's scores.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from corpus.errors import InputError
from models.llm.formats import compute_dtype
from models.llm.kernel_cache import cpu_name

ALIGN = 16                 # cache lengths rounded up to a multiple of this: attention kernels take aligned rows


def aligned(n: int, to: int = ALIGN) -> int:
    """n rounded up to a multiple of `to`."""
    return -(-int(n) // to) * to


def resolve_device(name: str) -> torch.device:
    if name == "cuda":
        if not torch.cuda.is_available():
            raise InputError(f"--device cuda asked for, but this torch ({torch.__version__}) sees no CUDA device")
        return torch.device("cuda", torch.cuda.current_device())
    if name == "cpu":
        return torch.device("cpu")
    raise InputError(f"unknown device {name!r} (cpu or cuda)")


def resolve_dtype(name: str) -> torch.dtype:
    """The float dtype a weight format computes in (int8/int4: fp32 around the packed matrices)."""
    return compute_dtype(name)


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()


def available_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def sync(device) -> None:
    """Wait for the device: only for timing, outside passes."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def memory_needed(configs, dtype: torch.dtype, seq: int, batch: int = 1, tokens_per_step: int = 8) -> int:
    """Bytes a run of these models needs: for each, its weights, its KV cache for batch × seq positions, the
    causal mask (seq × seq booleans), a step's logits with their fp32 probabilities and its widest activations
    (SwiGLU's two halves, a few alive at once) for batch × tokens_per_step rows, and attention's scores."""
    item = torch.empty((), dtype=dtype, device="meta").element_size()
    need = 0
    for cfg in configs:
        rows = batch * tokens_per_step
        need += (cfg.weight_bytes(dtype) + batch * seq * cfg.kv_bytes_per_token(dtype) + seq * seq
                 + rows * (cfg.vocab_size * (item + 8) + 8 * cfg.intermediate_size * 4)
                 + batch * cfg.n_heads * tokens_per_step * seq * 4)
    return int(need)


def check_fits(configs, dtype: torch.dtype, device: torch.device, seq: int, *, batch: int = 1,
               tokens_per_step: int = 8, label: str = "", extra: int = 0) -> dict:
    """InputError (one line) when the models will not fit in what the device has free (10 % spare on a CPU, 5 % on a
    GPU); else {'estimated_bytes', 'free_bytes_before'}. extra: bytes needed besides (a GGUF file dequantised a
    tensor at a time holds one float32 copy of its largest)."""
    need = memory_needed(configs, dtype, seq, batch, tokens_per_step) + extra
    free = available_bytes(device)
    margin = 1.10 if device.type == "cpu" else 1.05
    if need * margin > free:
        names = " + ".join(c.name for c in configs)
        verb = "need" if len(configs) > 1 else "needs"
        raise InputError(f"{names}{f' in {label}' if label else ''} {verb} about {need / 1e9:.1f} GB; {device.type} "
                         f"has {free / 1e9:.1f} GB free")
    return {"estimated_bytes": int(need), "free_bytes_before": int(free)}
