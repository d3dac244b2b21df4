"""Matrices kept packed for decoding: weight-only int8 per output channel, int4 in groups of 32, and fp32 in
oneDNN's blocked layout.

A decode step reads every matrix once, so its time is about the bytes read / the memory bandwidth: an int8
matrix is read in a quarter of the time of its fp32 copy, an int4 one in an eighth (plus its scales). The
weights stay packed in memory and are multiplied by torch's own kernels for packed weights:

    int8  aten._weight_int8pack_mm(x, q, scales)          y = x · (q · s)^T,  s per output row
    int4  aten._weight_int4pack_mm_for_cpu(x, packed, 32, sz)   w = (q − 8) · scale + zero per group of 32

Both kernels take bf16 activations (fp32 ones fall to a path ten times slower, measured): the model's
norms, attention and KV cache stay in its float dtype and the activations cross to bf16 at the product only.
Elsewhere than a CPU, int8 multiplies by the matrix converted on the fly (gpt-fast's formulation, which
torch.compile fuses) and int4 is refused in one line: no kernel for it here was ever run on such a device.
Where a kernel is missing from the torch in use, quantising is refused in one line, never run in fp32.

fp32 on a CPU is packed too, by oneDNN (the library torch's own compiler packs linear weights with): blocked for
a few rows at once, so one product of γ+1 = 5 rows costs about what one of a single row costs (measured on the
shipped target's 25 products: 2.5 ms for 1 row and for 5, against 2.2 and 4.4 ms with plain BLAS). Values are
the checkpoint's; only the order of the sums differs (|Δ| ~ 1e-6 relative).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from corpus.errors import InputError

FLOAT_FORMATS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
PACKED_FORMATS = ("int8", "int4")                       # quantised (fp32 packing keeps the values)
WEIGHT_FORMATS = ("fp32", "bf16", "int8", "int4")      # what --dtype offers (fp16 too where a GPU runs it)
GROUP = 32                                              # int4 group: a scale and a zero per 32 weights of a row
ROW_ALIGN = 16                                          # the int4 packing wants rows in multiples of 16
SMALL_FOR_TWO_LAYOUTS = 50_000_000                      # parameters: below this fp32 keeps a one-row layout too
DNN_ROWS = 5                                            # oneDNN's blocking hint: γ+1 rows, the verify pass
KERNEL_ACT = torch.bfloat16                             # the activations the packed kernels take

# Bits a streamed weight costs, scales included (what the hardware model and the roofline read):
# int8: 8 bits + one bf16 scale per row (negligible); int4: 4 bits + a bf16 scale and zero per 32.
BITS_PER_WEIGHT = {"fp32": 32.0, "bf16": 16.0, "fp16": 16.0, "int8": 8.0, "int4": 4.0 + 2 * 16 / GROUP}


def _op(name: str):
    return getattr(torch.ops.aten, name, None)


def check_kernels(fmt: str, device: torch.device) -> None:
    """Refuse, in one line, a format this torch cannot multiply packed on this device."""
    if fmt not in PACKED_FORMATS:
        return
    if device.type != "cpu":
        if fmt == "int4":
            raise InputError("int4 weights run on the CPU here (torch's CPU int4 kernel); on "
                             f"{device.type} use int8 or bf16")
        return
    need = ("_weight_int8pack_mm",) if fmt == "int8" else ("_weight_int4pack_mm_for_cpu",
                                                            "_convert_weight_to_int4pack_for_cpu")
    missing = [n for n in need if _op(n) is None]
    if missing:
        raise InputError(f"this torch ({torch.__version__}) has no {missing[0]} kernel: {fmt} weights cannot run "
                         "packed here (use fp32 or bf16)")


class PackedLinear(nn.Module):
    """y = x · W^T with W (out, in) held packed. Built from a float matrix; `dequantize()` gives back the matrix
    the kernel multiplies by (what accuracy is measured against)."""

    def __init__(self, weight: torch.Tensor, fmt: str, head: bool = False, keep_one_row: bool = False):
        super().__init__()
        if fmt not in PACKED_FORMATS + ("fp32",):
            raise InputError(f"unknown packed format {fmt!r} ({', '.join(PACKED_FORMATS)})")
        w = weight.detach().float()
        self.out_features, self.in_features = w.shape
        self.device_type = w.device.type
        self.head = head
        if fmt == "fp32":
            self.fmt = fmt
            self.register_buffer("w", torch.ops.mkldnn._reorder_linear_weight(w.contiguous(), DNN_ROWS),
                                 persistent=False)
            # one row: a small matrix is faster through BLAS with W^T contiguous (oneDNN's call costs ~30 µs)
            self.one_row = w.t().contiguous().t() if keep_one_row else None
            return
        check_kernels(fmt, w.device)
        if fmt == "int4" and self.in_features % GROUP:
            fmt = "int8"           # a row that is not whole groups: int8 keeps it exact to the channel's scale
        self.fmt = fmt
        if fmt == "int8":
            self._pack_int8(w)
        else:
            self._pack_int4(w)

    # --- packing -----------------------------------------------------------------------------------------
    def _pack_int8(self, w: torch.Tensor) -> None:
        amax = w.abs().amax(1)
        # the scale as the kernel will read it (bf16), and the integers rounded against that very scale: each
        # weight within half a step of what is multiplied
        scale = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax)).to(KERNEL_ACT)
        q = torch.round(w / scale.float()[:, None]).clamp_(-127, 127).to(torch.int8)
        self.register_buffer("q", q.contiguous(), persistent=False)
        self.register_buffer("scales", scale, persistent=False)

    def _pack_int4(self, w: torch.Tensor) -> None:
        N, K = w.shape
        pad = -N % ROW_ALIGN
        if pad:
            w = torch.cat([w, w.new_zeros(pad, K)])
        Np = N + pad
        g = w.view(Np, K // GROUP, GROUP)
        lo, hi = g.amin(-1), g.amax(-1)
        scale = ((hi - lo) / 15.0).to(KERNEL_ACT).float()        # as the kernel reads it
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        zero = (lo + 8.0 * scale).to(KERNEL_ACT).float()          # the kernel's form: w = (q - 8) * scale + zero
        base = zero - 8.0 * scale                                  # what q = 0 stands for, after rounding
        q = torch.round((g - base[..., None]) / scale[..., None]).clamp_(0, 15).to(torch.int32).view(Np, K)
        self._store_int4(q, scale, zero)

    def _store_int4(self, q: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> None:
        """q (N', K) codes 0..15, scale and zero (N', K/32), N' a multiple of 16: packed for the kernel."""
        sz = torch.stack([scale, zero], -1).transpose(0, 1).contiguous().to(KERNEL_ACT)   # (K/32, N', 2)
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q.to(torch.int32).contiguous(), 1)
        self.register_buffer("packed", packed, persistent=False)
        self.register_buffer("scales_zeros", sz, persistent=False)
        self.padded_out = q.shape[0]

    @classmethod
    def from_int4_codes(cls, codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> "PackedLinear":
        """A matrix already stored as 4-bit codes in groups of 32 with w = (q - 8)·scale + zero (a GGUF file's
        Q4_0 / Q4_1 blocks): packed as they are, no requantisation (scale and zero rounded to bf16)."""
        check_kernels("int4", codes.device)
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        N, K = codes.shape
        self.out_features, self.in_features, self.device_type = N, K, codes.device.type
        self.head, self.fmt = False, "int4"
        pad = -N % ROW_ALIGN
        q, scale, zero = codes.to(torch.int32), scale.float(), zero.float()
        if pad:
            q = torch.cat([q, q.new_full((pad, K), 8)])                   # code 8 with zero 0: a zero weight
            scale = torch.cat([scale, scale.new_ones(pad, K // GROUP)])
            zero = torch.cat([zero, zero.new_zeros(pad, K // GROUP)])
        self._store_int4(q, scale, zero)
        return self

    # --- use ---------------------------------------------------------------------------------------------
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        if self.fmt == "fp32":
            if self.one_row is not None and (x.numel() == shape[-1] or torch.compiler.is_compiling()):
                return F.linear(x, self.one_row)          # (a compiled graph takes plain tensors only)
            y = torch.ops.mkldnn._linear_pointwise(x.reshape(-1, shape[-1]), self.w, None, "none", [], "")
            return y.view(*shape[:-1], self.out_features)
        x2 = x.reshape(-1, shape[-1]).to(KERNEL_ACT)
        if self.fmt == "int8":
            if self.device_type == "cpu":
                y = torch.ops.aten._weight_int8pack_mm(x2.contiguous(), self.q, self.scales)
            else:
                y = F.linear(x2, self.q.to(x2.dtype)) * self.scales
        else:
            y = torch.ops.aten._weight_int4pack_mm_for_cpu(x2.contiguous(), self.packed, GROUP, self.scales_zeros)
            if self.padded_out != self.out_features:
                y = y[:, :self.out_features]
        return y.to(x.dtype).reshape(*shape[:-1], self.out_features)

    def dequantize(self) -> torch.Tensor:
        """The (out, in) float32 matrix the kernel multiplies by: its product with x in fp32 is the reference."""
        if self.fmt == "fp32":
            return self.w.to_dense()
        if self.fmt == "int8":
            return self.q.float() * self.scales.float()[:, None]
        eye = torch.eye(self.in_features, dtype=KERNEL_ACT, device=self.packed.device)
        w = torch.ops.aten._weight_int4pack_mm_for_cpu(eye, self.packed, GROUP, self.scales_zeros)   # (K, N)
        return w.float().t()[:self.out_features].contiguous()

    @property
    def nbytes(self) -> int:
        """Bytes one product reads: the packed weights and their scales."""
        if self.fmt == "fp32":
            return self.out_features * self.in_features * 4
        bufs = [self.q, self.scales] if self.fmt == "int8" else [self.packed, self.scales_zeros]
        return sum(b.numel() * b.element_size() for b in bufs)

    def extra_repr(self) -> str:
        return f"{self.in_features} -> {self.out_features}, {self.fmt}"


def compute_dtype(fmt: str) -> torch.dtype:
    """The float dtype a weight format computes in: its own, or fp32 around packed int8/int4 matrices."""
    if fmt in PACKED_FORMATS:
        return torch.float32
    if fmt in FLOAT_FORMATS:
        return FLOAT_FORMATS[fmt]
    raise InputError(f"unknown weight format {fmt!r} ({', '.join(WEIGHT_FORMATS)})")


def dnn_available() -> bool:
    return (torch.backends.mkldnn.is_available() and _op_mkldnn("_reorder_linear_weight")
            and _op_mkldnn("_linear_pointwise"))


def _op_mkldnn(name: str) -> bool:
    return getattr(torch.ops.mkldnn, name, None) is not None


def prepare_weights(model, fmt: str) -> list[str]:
    """Put a loaded model's matrices in the form its decode steps read: int8/int4 packed (quantize_model), fp32 on
    a CPU in oneDNN's layout where torch has it; bf16/fp16 as they are. Returns notes for the user."""
    if fmt in PACKED_FORMATS:
        return quantize_model(model, fmt)
    model.weight_format = fmt
    if fmt == "fp32" and model.device.type == "cpu" and model.act_dtype == torch.float32 and dnn_available():
        # A small model also keeps each matrix for one-row products (twice the memory, a few MB): its one-row
        # step is dispatch-bound and BLAS's call is the cheaper one there.
        small = model.config.param_count() < SMALL_FOR_TWO_LAYOUTS
        pack = lambda m, head=False: PackedLinear(m.weight, "fp32", head=head, keep_one_row=small)  # noqa: E731
        with torch.no_grad():
            for layer in model.layers:
                a, f = layer.attention, layer.feed_forward
                a.wqkv, a.wo, f.w13, f.w2 = pack(a.wqkv), pack(a.wo), pack(f.w13), pack(f.w2)
            model.output = pack(model.output, head=True)
    return []


def quantize_model(model, fmt: str) -> list[str]:
    """Replace every matrix a decode step streams (q/k/v, o, gate/up, down, the output head) by its packed form
    (int4: the head int8). The token embedding stays in the float dtype: a step looks up one row of it, it is not
    streamed (a tied head is packed as a copy). Returns notes for the user (matrices kept at int8, and why)."""
    device = next(model.parameters()).device
    check_kernels(fmt, device)
    notes: list[str] = []
    stored = getattr(model, "int4_codes", {}) if fmt == "int4" else {}    # a GGUF's own 4-bit blocks

    def pack(name: str, m, head=False):
        if name in stored:
            return PackedLinear.from_int4_codes(*stored[name])
        # int4 keeps the output head at int8, as llama.cpp's 4-bit files keep theirs at 8 bits: the head's error
        # lands on every logit (measured on SmolLM2: max |Δlogit| 4.5 with a 4-bit head, see the docs)
        return PackedLinear(m.weight, "int8" if head and fmt == "int4" else fmt, head=head)
    with torch.no_grad():
        for i, layer in enumerate(model.layers):
            a, f, p = layer.attention, layer.feed_forward, f"layers.{i}."
            a.wqkv, a.wo = pack(p + "attention.wqkv.weight", a.wqkv), pack(p + "attention.wo.weight", a.wo)
            f.w13, f.w2 = pack(p + "feed_forward.w13.weight", f.w13), pack(p + "feed_forward.w2.weight", f.w2)
        model.output = pack("output.weight", model.output, head=True)
    model.int4_codes = {}                 # packed now: the codes' memory goes
    kept = sorted({m.in_features for m in model.modules()
                   if isinstance(m, PackedLinear) and m.fmt != fmt and not m.head})
    if fmt == "int4":
        notes.append("the output head is int8 (as in llama.cpp's 4-bit files)")
    if kept:
        notes.append(f"rows of {', '.join(map(str, kept))} weights are not whole groups of {GROUP}: those matrices "
                     "are int8")
    model.weight_format = fmt
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
