"""Weight formats: what a decode step reads of each matrix, and the modules that multiply by it.

A decode step reads every matrix once, so its time is about the bytes read / the memory bandwidth: an int8
matrix is read in a quarter of the time of its fp32 copy, an int4 one in about an eighth (plus its scales). The
weights stay packed in memory; models.llm.kernels holds the ways to multiply by them (torch's BLAS, oneDNN and
packed int8/int4 kernels, ONNX Runtime's MLAS) and models.llm.tuning measures which is fastest on this machine
for one row and for γ+1 rows, per shape. Activations, norms, attention and the KV cache stay in the model's
float dtype; int8 and int4 cross to the kernel's activations (bf16 or int8) at the product only.

    fp32  the checkpoint's values; only the order of the sums differs between kernels (|Δ| ~ 1e-6 relative)
    int8  one scale per output row, q in [-127, 127]
    int4  groups of 32 along a row, a scale and a zero each (the output head int8, as llama.cpp's 4-bit files)

Elsewhere than a CPU, int8 multiplies by the matrix converted on the fly (gpt-fast's formulation) and int4 is
refused in one line: no kernel for it here was ever run on such a device. Where no kernel for a format runs,
quantising is refused in one line, never run in fp32.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from corpus.errors import InputError
from models.llm import kernels, tuning
from models.llm.kernels import GROUP, PackedLinear

FLOAT_FORMATS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
PACKED_FORMATS = ("int8", "int4")                       # quantised (fp32 packing keeps the values)
WEIGHT_FORMATS = ("fp32", "bf16", "int8", "int4")      # what --dtype offers on a CPU (fp16 where a GPU runs it)

# Bits a streamed weight costs, scales included, in the formats' plainest layout (what the hardware model's
# on-paper variants read; a measured model counts its own kernels' bytes, streamed_bytes):
# int8: 8 bits + one bf16 scale per row (negligible); int4: 4 bits + a bf16 scale and zero per 32.
BITS_PER_WEIGHT = {"fp32": 32.0, "bf16": 16.0, "fp16": 16.0, "int8": 8.0, "int4": 4.0 + 2 * 16 / GROUP}


def check_kernels(fmt: str, device: torch.device) -> None:
    """Refuse, in one line, a format no kernel can multiply packed on this device (or a float format the device
    does not compute in)."""
    if fmt == "fp16" and device.type == "cpu":
        raise InputError("fp16 weights run on a GPU only (a CPU computes half precision in software); on the "
                         "CPU use fp32, bf16, int8 or int4")
    if fmt not in PACKED_FORMATS:
        return
    if device.type != "cpu":
        if fmt == "int4":
            raise InputError("int4 weights run on the CPU here (torch's CPU int4 kernel); on "
                             f"{device.type} use int8 or bf16")
        return
    why = [kernels.KERNELS[n].available() for n in kernels.CANDIDATES[fmt]]
    if all(why):
        raise InputError(f"{why[0]}: {fmt} weights cannot run packed here (use fp32 or bf16)")


def compute_dtype(fmt: str) -> torch.dtype:
    """The float dtype a weight format computes in: its own, or fp32 around packed int8/int4 matrices."""
    if fmt in PACKED_FORMATS:
        return torch.float32
    if fmt in FLOAT_FORMATS:
        return FLOAT_FORMATS[fmt]
    raise InputError(f"unknown weight format {fmt!r} ({', '.join(WEIGHT_FORMATS)})")


def prepare_weights(model, fmt: str, *, threads: int | None = None, measure: bool = True, progress=None) -> list[str]:
    """Put a loaded model's matrices in the form its decode steps read. On a CPU, fp32/int8/int4 go through the
    measured choice of kernels (models.llm.tuning; threads None: the thread count is measured too, else that
    count); elsewhere int8 is packed and bf16/fp16/fp32 stay as they are. The report is model.kernel_report.
    Returns notes for the user (matrices kept at int8, and why)."""
    check_kernels(fmt, model.device)
    model.weight_format = fmt
    model.kernel_report = None
    if model.device.type == "cpu" and fmt in ("fp32",) + PACKED_FORMATS and model.act_dtype == torch.float32:
        with torch.no_grad():
            model.kernel_report = tuning.prepare(model, fmt, threads=threads, measure=measure, progress=progress)
    elif fmt in PACKED_FORMATS:
        with torch.no_grad():
            for layer in model.layers:
                a, f = layer.attention, layer.feed_forward
                for owner, attr in ((a, "wqkv"), (a, "wo"), (f, "w13"), (f, "w2")):
                    setattr(owner, attr, PackedLinear(getattr(owner, attr).weight, fmt))
            model.output = PackedLinear(model.output.weight, fmt, head=True)
    model.int4_codes = {}                 # packed now: the codes' memory goes
    for m in model.modules():
        if isinstance(m, PackedLinear):
            m.source = None               # the float matrices the kernels were built from go too
    if fmt not in PACKED_FORMATS:
        return []
    notes = []
    kept = sorted({m.in_features for m in model.modules()
                   if isinstance(m, PackedLinear) and m.fmt != fmt and not m.head})
    if fmt == "int4":
        notes.append("the output head is int8 (as in llama.cpp's 4-bit files)")
    if kept:
        notes.append(f"rows of {', '.join(map(str, kept))} weights are not whole groups of {GROUP}: those matrices "
                     "are int8")
    return notes


def weight_operand(module):
    """What block_forward multiplies by: a float matrix, or the packed module itself."""
    return module if isinstance(module, PackedLinear) else module.weight


def linear(x: torch.Tensor, w) -> torch.Tensor:
    return w.forward(x) if isinstance(w, PackedLinear) else F.linear(x, w)    # forward: no module hooks to run


def streamed_bytes(model) -> int:
    """Bytes one decode pass reads from the model's weights (every matrix once, the norms; not the embedding,
    of which one row is looked up), counted from the tensors themselves."""
    total, seen = 0, set()
    head = model.output
    mats = [head]
    for layer in model.layers:
        mats += [layer.attention.wqkv, layer.attention.wo, layer.feed_forward.w13, layer.feed_forward.w2,
                 layer.attention_norm, layer.ffn_norm]
    mats.append(model.norm)
    for m in mats:
        if isinstance(m, PackedLinear):
            total += m.nbytes
        else:
            w = m.weight
            if id(w) not in seen:
                seen.add(id(w))
                total += w.numel() * w.element_size()
    return total
