"""The hardware model: bytes per pass, ms per token, tokens/s and arithmetic busy fraction (on paper), per device
and model; measured devices are read from assets/measurements/*.json when present.

A pass is one forward of the target over `batch` sequences, each computing `positions` tokens at once (1 when
decoding plainly; γ + 1 when checking γ guesses: those positions belong to one sequence and read its KV cache
once, they are not γ + 1 sequences).

    bytes per pass   = weights (params × 2 bytes, bf16) + batch × context × KV bytes per token
    KV bytes/token   = layers × KV heads × head dim × 2 (K and V) × 2 bytes
    pass time        >= bytes per pass / memory bandwidth       (decoding is a read-bound loop)
    arithmetic       = batch × positions × (2 ops per parameter + attention's ops over the context)
    attention ops    = 4 × layers × hidden × context per position computed (q·k over every cached key, then the
                       weighted sum of every cached value: 2 ops a multiply-add, query heads × head dim = hidden)
    busy fraction    = arithmetic time / pass time (weights only: batch × positions × model ops-per-byte /
                       device ops-per-byte)
    fits             = weights + batch × context × KV bytes per token <= the device's memory

Attention's arithmetic grows with the context: about 2.1 G operations a token at 4,096 tokens (an eighth of the
weights' 16.1 G for Llama 3.1 8B) and about 17.2 G at 32,768 (as much as the weights'). SCIENCE.md's figures for
the weights alone (a batch of 64: ~22% busy) read no cache and so have none.

The weights term is all parameters (16.06 GB for Llama 3.1 8B), as SCIENCE.md rounds it: a real decoder looks
up one row of the untied input embedding (1.05 GB) instead of streaming it, so it reads about 15.01 GB
(models.llm.model.LlamaConfig.weight_bytes_read_per_token, what `spectable model-info` and the bench report).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path

from corpus.errors import InputError
from corpus.resources import ASSETS
from models.measurements import BANDWIDTH_KEYS, FLOP_KEYS, MEMORY_KEYS, measurement_paths, read_measurement

MEASUREMENTS_DIR = ASSETS / "measurements"


@dataclass(frozen=True)
class Device:
    id: str
    label: str
    bandwidth_Bps: float       # memory (HBM) read bandwidth, bytes/s
    flops: float               # dense bf16 arithmetic, operations/s
    memory_bytes: float
    source: str
    measured: bool = False

    @property
    def ops_per_byte(self) -> float:
        return self.flops / self.bandwidth_Bps


@dataclass(frozen=True)
class LlamaShape:
    id: str
    label: str
    params: int
    layers: int
    kv_heads: int
    head_dim: int
    hidden: int
    vocab: int
    weight_bits: float = 16.0     # bits a weight costs as read (bf16 16; int8 8; int4 4.5 with its scales)
    weights: str = "bf16"         # the weight format: bf16 | int8 | int4
    base: str = ""                # the bf16 model this is a variant of ("" = itself)
    kv_bytes_per_value: int = 2   # the KV cache stays bf16 whatever the weights are

    @property
    def bytes_per_param(self) -> float:
        return self.weight_bits / 8

    @property
    def weight_bytes(self) -> int:
        return int(self.params * self.bytes_per_param)

    @property
    def kv_bytes_per_token(self) -> int:
        return self.layers * self.kv_heads * self.head_dim * 2 * self.kv_bytes_per_value

    @property
    def ops_per_byte(self) -> float:
        """One lane's arithmetic per weight byte read: 2 ops per parameter / 2 bytes per parameter = 1 in bf16,
        4 with int4 weights (the same arithmetic on a quarter of the bytes)."""
        return 2.0 / self.bytes_per_param

    def attention_ops(self, context: int) -> float:
        """Attention's arithmetic for one position over `context` cached tokens: q·k for every cached key and the
        weighted sum of V in every layer, 2 × 2 × (query heads × head dim = hidden) × context each (the weights' 2
        ops per parameter are counted apart)."""
        return 4.0 * self.layers * self.hidden * context

    @property
    def medusa_head_params(self) -> int:
        """One Medusa-1 head on this model (Cai et al. 2024): a residual block (hidden × hidden linear + bias, SiLU)
        and its own hidden × vocabulary output layer."""
        return self.hidden * self.hidden + self.hidden + self.hidden * self.vocab


# Public specifications (NVIDIA data sheets: H100 SXM5, H200 SXM, A100 80GB SXM; dense bf16 without sparsity).
DEVICES: dict[str, Device] = {
    "h100-sxm": Device("h100-sxm", "NVIDIA H100 SXM", 3.35e12, 989e12, 80e9, "NVIDIA H100 data sheet"),
    "h200": Device("h200", "NVIDIA H200", 4.8e12, 989e12, 141e9, "NVIDIA H200 data sheet"),
    "a100-80gb": Device("a100-80gb", "NVIDIA A100 80GB SXM", 2.039e12, 312e12, 80e9, "NVIDIA A100 data sheet"),
}
PAPER_DEVICES = tuple(DEVICES)

# Meta's published configs (config.json of meta-llama/Llama-3.1-8B and Llama-3.2-1B).
_BF16_MODELS = (
    LlamaShape("llama-3.1-8b", "Llama 3.1 8B", 8_030_261_248, 32, 8, 128, 4096, 128_256),
    LlamaShape("llama-3.2-1b", "Llama 3.2 1B", 1_235_814_400, 16, 8, 64, 2048, 128_256),
)
# Weight-only quantised variants (models/llm/formats.py: int8 per row, int4 in groups of 32 with a bf16 scale and zero):
# the same arithmetic on fewer bytes, so the memory roofline moves and the arithmetic does not.
WEIGHT_BITS = {"int8": 8.0, "int4": 4.0 + 2 * 16 / 32}
MODELS: dict[str, LlamaShape] = {m.id: m for m in _BF16_MODELS} | {
    f"{m.id}-{fmt}": replace(m, id=f"{m.id}-{fmt}", label=f"{m.label} · {fmt}", weight_bits=bits, weights=fmt,
                             base=m.id)
    for m in _BF16_MODELS for fmt, bits in WEIGHT_BITS.items()}
WEIGHT_FORMATS = ("bf16",) + tuple(WEIGHT_BITS)


def with_weights(model_id: str, fmt: str) -> str:
    """The id of the same model with its weights in `fmt` (the lab's weights switch)."""
    m = get_model(model_id)
    base = m.base or m.id
    return base if fmt == "bf16" else f"{base}-{fmt}"

MEASUREMENT_ERRORS: list[str] = []     # files in assets/measurements that could not be read (shown, not fatal)


def _first(d: dict, keys: dict) -> float | None:
    for k, scale in keys.items():
        v = d.get(k)
        if v is not None and v > 0:          # validated by models.measurements: a finite number in range
            return float(v) * scale
    return None


def device_from_measurement(data: dict, stem: str) -> Device | None:
    """A measured device from one validated measurement file (models.measurements.read_measurement): looks in
    data['device'], data['measured'], then the top level for a bandwidth (bytes/s, GB/s or TB/s keys) and an
    arithmetic rate (ops/s or TFLOP/s keys). None if it lacks either."""
    dev = data.get("device") if isinstance(data.get("device"), dict) else {}
    meas = data.get("measured") or {}
    bw = _first(dev, BANDWIDTH_KEYS) or _first(meas, BANDWIDTH_KEYS) or _first(data, BANDWIDTH_KEYS)
    fl = _first(dev, FLOP_KEYS) or _first(meas, FLOP_KEYS) or _first(data, FLOP_KEYS)
    if bw is None or fl is None:
        return None
    name = dev.get("name") or dev.get("label") or (data.get("device") if isinstance(data.get("device"), str) else None)
    dev_id = dev.get("id") or f"measured-{stem}"
    mem = _first(dev, MEMORY_KEYS) or 0.0
    return Device(dev_id, f"{name or stem} (measured)", bw, fl, mem, f"assets/measurements/{stem}.json", True)


def load_measurements(folder: Path | None = None) -> dict[str, Device]:
    """Measured devices from every *.json in the folder (a missing folder is fine: none); a file that fails
    validation is listed in MEASUREMENT_ERRORS and skipped."""
    folder = Path(folder) if folder is not None else MEASUREMENTS_DIR
    found: dict[str, Device] = {}
    MEASUREMENT_ERRORS.clear()
    for f in measurement_paths(folder):
        try:
            dev = device_from_measurement(read_measurement(f), f.stem)
        except InputError as exc:
            MEASUREMENT_ERRORS.append(f"{f.name}: {exc}")
            continue
        if dev is not None and dev.id not in PAPER_DEVICES:
            found[dev.id] = dev
    return found


def reload_measurements(folder: Path | None = None) -> None:
    for k in [k for k, d in DEVICES.items() if d.measured]:
        del DEVICES[k]
    DEVICES.update(load_measurements(folder))


reload_measurements()


def get_device(device) -> Device:
    if isinstance(device, Device):
        return device
    if device not in DEVICES:
        raise InputError(f"unknown device {device!r} (known: {', '.join(DEVICES)})")
    return DEVICES[device]


def get_model(model) -> LlamaShape:
    if isinstance(model, LlamaShape):
        return model
    if model not in MODELS:
        raise InputError(f"unknown model {model!r} (known: {', '.join(MODELS)})")
    return MODELS[model]


def busy_text(share: float) -> str:
    """A busy share as the table and the panels print it: one decimal of a percent, two under 1 % (one token a pass
    keeps an H100 0.34 % busy: "0.3 %" lost the figure a class multiplies, 120 × 0.34 % ≈ 41 %)."""
    pct = 100.0 * share
    return f"{pct:.2f}%" if pct < 1.0 else f"{pct:.1f}%"


def busy_fraction(device, model, lanes: int) -> float:
    """Share of time the arithmetic units work when `lanes` tokens are computed per weight read (weights only)."""
    d, m = get_device(device), get_model(model)
    if lanes < 0:
        raise InputError("lanes must be >= 0")
    return min(1.0, lanes * m.ops_per_byte / d.ops_per_byte)


def pass_busy(device, model, sequences: int = 1, positions: int = 1, context: int = 0) -> float:
    """Arithmetic busy share of one pass: `sequences` sequences of `context` tokens, each computing `positions`
    tokens (γ + 1 while checking guesses). The mill turns at this rate."""
    return float(roofline(device, model, sequences, context, positions).arithmetic_busy)


@dataclass(frozen=True)
class Roofline:
    """On-paper figures of one pass (roofline()): what the panels, the quiz, the handout and `spectable roofline`
    read, by name. as_dict() is the --json form."""

    device: str
    device_label: str
    measured_device: bool
    model: str
    model_label: str
    batch: int                         # sequences in the pass
    context: int                       # KV tokens each sequence holds
    positions: int                     # tokens each sequence computes (γ + 1 when checking)
    params: int
    weight_bytes: int
    kv_bytes_per_token: int
    kv_bytes_per_step: int
    bytes_per_step: int                # weights + every sequence's KV cache, read once a pass
    bandwidth_Bps: float
    flops: float
    ms_per_step: float
    ms_per_token: float                # a plain pass writes one token per sequence
    tokens_per_s: float
    tokens_per_s_per_sequence: float
    ops_per_step: float                # weights' and attention's arithmetic together
    attention_ops_per_step: float      # of which attention's over the context
    arithmetic_ms_per_step: float
    arithmetic_busy: float             # arithmetic time / pass time
    arithmetic_idle: float
    device_ops_per_byte: float
    model_ops_per_byte_per_lane: float
    lanes_to_saturate: float
    fits_in_memory: bool               # the weights and every sequence's KV cache fit the device's memory
    memory_bytes: int                  # the device's memory (0: not known, as for a measured CPU)
    bound: str                         # 'memory' | 'arithmetic'

    def as_dict(self) -> dict:
        return asdict(self)


def roofline(device, model, batch: int = 1, context: int = 0, positions: int = 1) -> Roofline:
    """On-paper figures of one pass over `batch` sequences, each holding `context` tokens of KV cache and
    computing `positions` tokens at once (γ + 1 when the target checks γ guesses; 1 for plain decoding).
    The KV cache of a sequence is read once per pass whatever `positions` is."""
    d, m = get_device(device), get_model(model)
    if not isinstance(batch, int) or batch < 1 or batch > 1_000_000:
        raise InputError(f"batch must be a whole number between 1 and 1000000, got {batch!r}")
    if not isinstance(context, int) or context < 0 or context > 10_000_000:
        raise InputError(f"context must be a whole number between 0 and 10000000, got {context!r}")
    if isinstance(positions, bool) or not isinstance(positions, int) or positions < 1 or positions > 1_000:
        raise InputError(f"positions must be a whole number between 1 and 1000, got {positions!r}")
    kv_step = batch * context * m.kv_bytes_per_token
    bytes_step = m.weight_bytes + kv_step
    read_s = bytes_step / d.bandwidth_Bps
    attn_step = batch * positions * m.attention_ops(context)
    ops_step = 2.0 * m.params * batch * positions + attn_step
    arith_s = ops_step / d.flops
    step_s = max(read_s, arith_s)
    return Roofline(
        device=d.id, device_label=d.label, measured_device=d.measured, model=m.id,
        model_label=m.label, batch=batch, context=context, positions=positions,
        params=m.params, weight_bytes=m.weight_bytes, kv_bytes_per_token=m.kv_bytes_per_token,
        kv_bytes_per_step=kv_step, bytes_per_step=bytes_step,
        bandwidth_Bps=d.bandwidth_Bps, flops=d.flops,
        # A plain pass writes one token per sequence; a checking pass writes 1..positions of them (that depends
        # on the acceptance rate, models.analytics), so tokens/s here is per pass written at one token each.
        ms_per_step=step_s * 1e3, ms_per_token=step_s * 1e3,
        tokens_per_s=batch / step_s, tokens_per_s_per_sequence=1.0 / step_s,
        ops_per_step=ops_step, attention_ops_per_step=attn_step, arithmetic_ms_per_step=arith_s * 1e3,
        arithmetic_busy=arith_s / step_s, arithmetic_idle=1.0 - arith_s / step_s,
        device_ops_per_byte=d.ops_per_byte, model_ops_per_byte_per_lane=m.ops_per_byte,
        lanes_to_saturate=d.ops_per_byte / m.ops_per_byte,
        fits_in_memory=(d.memory_bytes == 0) or bytes_step <= d.memory_bytes,
        memory_bytes=d.memory_bytes, bound="memory" if read_s >= arith_s else "arithmetic")


def pass_time(device, model, lanes: int, context: int = 0, extra_params: int = 0, extra_ops: float = 0.0) -> dict:
    """One target pass computing `lanes` tokens for one sequence with `context` tokens of KV cache, on paper:
    max(weights + KV read time, arithmetic time: the weights' and attention's). extra_params: more weights read in the same pass (Medusa heads);
    extra_ops: their arithmetic."""
    d, m = get_device(device), get_model(model)
    if not isinstance(lanes, (int, float)) or lanes < 1:
        raise InputError(f"lanes must be >= 1, got {lanes!r}")
    read_bytes = m.weight_bytes + context * m.kv_bytes_per_token + extra_params * m.bytes_per_param
    read_s = read_bytes / d.bandwidth_Bps
    ops = 2.0 * m.params * lanes + lanes * m.attention_ops(context) + extra_ops
    arith_s = ops / d.flops
    return {"read_ms": read_s * 1e3, "arithmetic_ms": arith_s * 1e3, "ms": max(read_s, arith_s) * 1e3,
            "bytes": read_bytes, "ops": ops, "bound": "memory" if read_s >= arith_s else "arithmetic"}
