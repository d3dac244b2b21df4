"""The ways this machine can multiply activations by one matrix: y = x · W^T, W (out, in) in a weight format.

Each kernel is built from the matrix as loaded (`Source`: its float values, and a GGUF file's own 4-bit codes
where it had them) and holds the weights in the layout it reads. Which one is fastest depends on the machine
(its vector units, caches, the BLAS and oneDNN builds in torch): models.llm.tuning times them where the program
runs and keeps the fastest for one row and for γ+1 rows. The candidates:

    fp32  blas-wt     torch's BLAS on W^T stored contiguously (no transpose in the call)
          blas-w      torch's BLAS on W as stored
          onednn      oneDNN's blocked layout (torch.ops.mkldnn), blocked for γ+1 rows
          ort         ONNX Runtime's MatMul (MLAS, the weights packed once)
    int8  torch-int8  aten._weight_int8pack_mm: int8 weights, a scale per row, bf16 activations
          ort-int8    ONNX Runtime's MatMulNBits: the same weights and scales, int8 activations
    int4  torch-int4  aten._weight_int4pack_mm_for_cpu: groups of 32, w = (q - 8)·scale + zero, bf16 activations
          ort-int4    ONNX Runtime's MatMulNBits: groups of 32, w = (q - z)·scale with a 4-bit zero z, int8
                      activations

A family is the arithmetic a kernel does, and so the numbers it gives: every fp32 kernel computes the same
products (only the order of the sums differs); the int8 and int4 kernels of one family round the activations
alike. A matrix multiplies one row and γ+1 rows with kernels of one family, so the target's rows do not depend
on how many positions a pass computes, and the int8-activation kernels quantise each row on its own (blocks of 32
along the row): a row's result never depends on the other rows of its pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
import numpy as np

from corpus.errors import InputError

GROUP = 32                                   # int4 group, ONNX Runtime's block: a scale (and zero) per 32 weights
ROW_ALIGN = 16                               # torch's int4 packing wants rows in multiples of 16
KERNEL_ACT = torch.bfloat16                  # the activations torch's packed kernels take
MANY_ROWS = 5                                # what oneDNN's layout is blocked for: γ + 1 at the default γ = 4

FP32, BF16_ACT, INT8_ACT = "fp32 products", "bf16 activations", "int8 activations"


@dataclass
class Source:
    """One matrix as loaded: its values (N, K) in the model's float dtype, and a GGUF file's own 4-bit codes
    (codes (N, K) 0..15, scale (N, K/32), zero (N, K/32) with w = (q - 8)·scale + zero) where it had them."""

    weight: torch.Tensor
    codes: tuple | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.weight.shape)


def _op(name: str):
    return getattr(torch.ops.aten, name, None)


class Kernel:
    """y = x · W^T for x (M, K) in the model's float dtype; built from a Source."""

    name = ""
    fmt = ""
    family = FP32
    traceable = False            # plain torch operations: a compiled graph can hold it

    def __init__(self, src: Source, threads: int):
        self.out_features, self.in_features = src.shape

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    @property
    def nbytes(self) -> int:
        """Bytes one product reads: the weights as this kernel holds them, with their scales."""
        raise NotImplementedError

    def dequantize(self) -> torch.Tensor:
        """The (out, in) float32 matrix this kernel multiplies by."""
        raise NotImplementedError

    @classmethod
    def available(cls) -> str | None:
        """None where this torch (or ONNX Runtime) can run it here, else why not."""
        return None


# --- fp32 ---------------------------------------------------------------------------------------------------
class BlasWT(Kernel):
    name, fmt, traceable = "blas-wt", "fp32", True

    def __init__(self, src, threads):
        super().__init__(src, threads)
        # W^T contiguous: the BLAS call multiplies x by it without a transpose
        self.w = src.weight.detach().float().t().contiguous().t()

    def __call__(self, x):
        return F.linear(x, self.w)

    @property
    def nbytes(self):
        return self.w.numel() * 4

    def dequantize(self):
        return self.w.contiguous()


class BlasW(BlasWT):
    name = "blas-w"

    def __init__(self, src, threads):
        Kernel.__init__(self, src, threads)
        self.w = src.weight.detach().float().contiguous()


class OneDNN(Kernel):
    name, fmt = "onednn", "fp32"

    def __init__(self, src, threads):
        super().__init__(src, threads)
        self.w = torch.ops.mkldnn._reorder_linear_weight(src.weight.detach().float().contiguous(), MANY_ROWS)

    def __call__(self, x):
        return torch.ops.mkldnn._linear_pointwise(x, self.w, None, "none", [], "")

    @property
    def nbytes(self):
        return self.out_features * self.in_features * 4

    def dequantize(self):
        return self.w.to_dense()

    @classmethod
    def available(cls):
        ok = torch.backends.mkldnn.is_available() and all(
            getattr(torch.ops.mkldnn, n, None) is not None for n in ("_reorder_linear_weight", "_linear_pointwise"))
        return None if ok else "this torch has no oneDNN linear"


# --- int8: q in [-127, 127], one scale per row (rounded to bf16, the scale torch's kernel reads) --------------
def int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(q (N, K) int8, scale (N,) bf16): each weight within half a step of q·scale, the integers rounded against
    the very scale the kernels read."""
    w = w.detach().float()
    amax = w.abs().amax(1)
    scale = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax)).to(KERNEL_ACT)
    q = torch.round(w / scale.float()[:, None]).clamp_(-127, 127).to(torch.int8)
    return q.contiguous(), scale


class TorchInt8(Kernel):
    name, fmt, family = "torch-int8", "int8", BF16_ACT

    def __init__(self, src, threads):
        super().__init__(src, threads)
        self.q, self.scales = int8_rows(src.weight)
        self.cpu = self.q.device.type == "cpu"

    def __call__(self, x):
        x2 = x.to(KERNEL_ACT)
        if self.cpu:
            y = torch.ops.aten._weight_int8pack_mm(x2.contiguous(), self.q, self.scales)
        else:                    # gpt-fast's formulation elsewhere: the matrix converted on the fly
            y = F.linear(x2, self.q.to(x2.dtype)) * self.scales
        return y.to(x.dtype)

    @property
    def nbytes(self):
        return self.q.numel() + self.scales.numel() * 2

    def dequantize(self):
        return self.q.float() * self.scales.float()[:, None]

    @classmethod
    def available(cls):
        return None if _op("_weight_int8pack_mm") is not None else \
            f"this torch ({torch.__version__}) has no _weight_int8pack_mm kernel"


# --- int4: groups of 32 --------------------------------------------------------------------------------------
def int4_minmax(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(codes (N, K) 0..15, scale, zero (N, K/32)), w = (q - 8)·scale + zero: each group's range in 15 steps, scale
    and zero rounded to bf16 as torch's kernel reads them and the codes rounded against what they stand for."""
    N, K = w.shape
    g = w.detach().float().view(N, K // GROUP, GROUP)
    lo, hi = g.amin(-1), g.amax(-1)
    scale = ((hi - lo) / 15.0).to(KERNEL_ACT).float()
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    zero = (lo + 8.0 * scale).to(KERNEL_ACT).float()
    base = zero - 8.0 * scale                                  # what q = 0 stands for, after rounding
    q = torch.round((g - base[..., None]) / scale[..., None]).clamp_(0, 15).to(torch.uint8).view(N, K)
    return q, scale, zero


def int4_zero_points(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(codes (N, K) 0..15, scale (N, K/32) fp32, zero point (N, K/32) 0..15), w = (q - z)·scale: ONNX Runtime's
    fast int4 form, where the zero is a whole code (a group's range in 15 steps, the zero rounded onto the grid)."""
    N, K = w.shape
    g = w.detach().float().view(N, K // GROUP, GROUP)
    lo, hi = g.amin(-1).clamp(max=0.0), g.amax(-1).clamp(min=0.0)      # 0 on the grid: an exact zero stays 0
    scale = (hi - lo) / 15.0
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    z = torch.round(-lo / scale).clamp_(0, 15)
    q = torch.round(g / scale[..., None] + z[..., None]).clamp_(0, 15).to(torch.uint8).view(N, K)
    return q, scale, z.to(torch.uint8)


def _float_codes(codes) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    c, s, z = codes
    return c.to(torch.uint8), s.float(), z.float()


class TorchInt4(Kernel):
    name, fmt, family = "torch-int4", "int4", BF16_ACT

    def __init__(self, src, threads):
        super().__init__(src, threads)
        N, K = src.shape
        if src.codes is not None:                  # a GGUF's own Q4 codes: packed as they are
            q, scale, zero = _float_codes(src.codes)
        else:
            q, scale, zero = int4_minmax(src.weight)
        pad = -N % ROW_ALIGN
        q = q.to(torch.int32)
        if pad:
            q = torch.cat([q, q.new_full((pad, K), 8)])                  # code 8 with zero 0: a zero weight
            scale = torch.cat([scale, scale.new_ones(pad, K // GROUP)])
            zero = torch.cat([zero, zero.new_zeros(pad, K // GROUP)])
        self.scales_zeros = torch.stack([scale, zero], -1).transpose(0, 1).contiguous().to(KERNEL_ACT)
        self.packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q.contiguous(), 1)
        self.padded_out = q.shape[0]

    def __call__(self, x):
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(x.to(KERNEL_ACT).contiguous(), self.packed, GROUP,
                                                        self.scales_zeros)
        if self.padded_out != self.out_features:
            y = y[:, :self.out_features]
        return y.to(x.dtype)

    @property
    def nbytes(self):
        return self.packed.numel() * self.packed.element_size() + self.scales_zeros.numel() * 2

    def dequantize(self):
        eye = torch.eye(self.in_features, dtype=KERNEL_ACT)
        w = torch.ops.aten._weight_int4pack_mm_for_cpu(eye, self.packed, GROUP, self.scales_zeros)   # (K, N')
        return w.float().t()[:self.out_features].contiguous()

    @classmethod
    def available(cls):
        missing = [n for n in ("_weight_int4pack_mm_for_cpu", "_convert_weight_to_int4pack_for_cpu")
                   if _op(n) is None]
        return f"this torch ({torch.__version__}) has no {missing[0]} kernel" if missing else None


# --- ONNX Runtime: one small graph per matrix, the weights packed once by MLAS -------------------------------
def _ort():
    try:
        import onnxruntime  # lazy: a missing onnxruntime is handled below
    except ImportError:
        return None
    return onnxruntime


def ort_version() -> str | None:
    ort = _ort()
    return None if ort is None else ort.__version__


class _OrtKernel(Kernel):
    """A one-node ONNX graph over this matrix, run through an I/O binding: the input is copied into a buffer bound
    once per row count (the call then costs a few µs, not the tens a fresh binding costs) and the output is that
    count's buffer, overwritten by the next call with as many rows; a head's logits go to a new tensor each call,
    since its caller keeps them."""

    family = INT8_ACT
    KEEP_BINDINGS = 4            # row counts with a buffer of their own (1, γ+1, ...); others bind afresh

    def __init__(self, src, threads, head: bool = False):
        super().__init__(src, threads)
        self.threads, self.head = threads, head
        self._bound: dict[int, tuple] = {}

    def _session(self, node, inits):
        # lazy: onnx only when an ONNX file is read or written
        import onnx
        from onnx import TensorProto, helper
        ort = _ort()
        K, N = self.in_features, self.out_features
        graph = helper.make_graph([node], "linear", [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", K])],
                                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", N])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("com.microsoft", 1)])
        model.ir_version = min(model.ir_version, onnx.IR_VERSION)
        so = ort.SessionOptions()
        so.intra_op_num_threads = max(1, self.threads)
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        # no spinning: between two products the torch operations run, and a spinning pool would take their core
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])

    @staticmethod
    def _tensor(name, t: torch.Tensor):
        from onnx import TensorProto, helper  # lazy: onnx only when an ONNX file is read or written
        a = t.detach().cpu().contiguous().numpy()
        kind = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.uint8): TensorProto.UINT8,
                np.dtype(np.int64): TensorProto.INT64}[a.dtype]
        return helper.make_tensor(name, kind, a.shape, a.tobytes(), raw=True)

    @torch.inference_mode(False)      # buffers written in place on every call, inside inference mode or not
    def _binding(self, M: int):
        xi = torch.empty(M, self.in_features)
        y = torch.empty(M, self.out_features)
        io = self.session.io_binding()
        io.bind_input("A", "cpu", 0, np.float32, [M, self.in_features], xi.data_ptr())
        io.bind_output("Y", "cpu", 0, np.float32, [M, self.out_features], y.data_ptr())
        return xi, y, io

    def __call__(self, x):
        M = x.shape[0]
        bound = self._bound.get(M)
        if bound is None:
            bound = self._binding(M)
            if len(self._bound) < self.KEEP_BINDINGS:
                self._bound[M] = bound
        xi, y, io = bound
        xi.copy_(x)
        if self.head:
            y = torch.empty(M, self.out_features)
            io.bind_output("Y", "cpu", 0, np.float32, [M, self.out_features], y.data_ptr())
        self.session.run_with_iobinding(io)
        return y if x.dtype == torch.float32 else y.to(x.dtype)

    def dequantize(self):
        # every product is linear in x: the identity's rows give W^T (exact: a one-hot row quantises exactly)
        return self(torch.eye(self.in_features)).t().contiguous()

    @classmethod
    def available(cls):
        if _ort() is None:
            return "onnxruntime is not installed"
        try:
            # lazy: a missing onnx is handled below
            import onnx  # noqa: F401
        except ImportError:
            return "onnx is not installed"
        return None


class OrtMatMul(_OrtKernel):
    name, fmt, family = "ort", "fp32", FP32

    def __init__(self, src, threads, head=False):
        super().__init__(src, threads, head)
        from onnx import helper  # lazy: onnx only when an ONNX file is read or written
        self._session(helper.make_node("MatMul", ["A", "B"], ["Y"]),
                      [self._tensor("B", src.weight.detach().float().t())])

    @property
    def nbytes(self):
        return self.out_features * self.in_features * 4


def nbits_matmul(x: str, y: str, prefix: str, src: Source, fmt: str, tensor):
    """One MatMulNBits node y = x · W^T for a matrix in the int8 or int4 format, as ONNX Runtime's fast path takes
    it: (node, initializers, bytes held). int8: the format's per-row scales repeated for each block of 32, the
    codes offset to unsigned (zero point 128); int4: a GGUF's Q4_0 codes as they are (zero point 8), else groups
    of 32 with a 4-bit zero point (int4_zero_points). accuracy_level 4: int8 activations, each row quantised on
    its own in blocks of 32 (MLAS's integer dot products). tensor(name, torch tensor) makes an initializer."""
    from onnx import helper  # lazy: onnx only when an ONNX file is read or written
    N, K = src.shape
    blocks = -(-K // GROUP)                          # a row that is not whole blocks: its last one padded
    zero = None
    if fmt == "int8":
        q8, s8 = int8_rows(src.weight)
        q = (q8.to(torch.int16) + 128).to(torch.uint8)
        if K % GROUP:
            q = torch.cat([q, q.new_full((N, blocks * GROUP - K), 128)], 1)     # code 128: a zero weight
        scale, bits = s8.float()[:, None].expand(-1, blocks), 8
    elif src.codes is not None and not bool(src.codes[2].float().abs().max() > 0):
        q, scale, _ = _float_codes(src.codes)        # Q4_0: w = (q - 8)·d, the default zero point for every group
        bits = 4
    else:
        (q, scale, zero), bits = int4_zero_points(src.weight), 4
    if bits == 4:
        qq = q.view(N, blocks, GROUP // 2, 2)
        packed = (qq[..., 0] | (qq[..., 1] << 4)).contiguous()           # low nibble first
    else:
        packed = q.view(N, blocks, GROUP).contiguous()
    names = [x, prefix + "_q", prefix + "_s"]
    inits = [tensor(names[1], packed), tensor(names[2], scale.float().reshape(-1))]
    nbytes = packed.numel() + scale.numel() * 4
    if zero is not None:
        z = zero.to(torch.uint8).view(N, blocks)
        if blocks % 2:                                   # two zero points a byte, a row padded to whole bytes
            z = torch.cat([z, z.new_zeros(N, 1)], 1)
        z = z.view(N, -1, 2)
        z = (z[..., 0] | (z[..., 1] << 4)).contiguous().reshape(-1)
        names.append(prefix + "_z")
        inits.append(tensor(names[3], z))
        nbytes += z.numel()
    node = helper.make_node("MatMulNBits", names, [y], domain="com.microsoft", K=K, N=N, bits=bits,
                            block_size=GROUP, accuracy_level=4)
    return node, inits, nbytes


class _OrtNBits(_OrtKernel):
    def __init__(self, src, threads, head=False):
        super().__init__(src, threads, head)
        node, inits, self._bytes = nbits_matmul("A", "Y", "w", src, self.fmt, self._tensor)
        self._session(node, inits)

    @property
    def nbytes(self):
        return self._bytes


class OrtInt8(_OrtNBits):
    """The int8 format's weights and per-row scales, with the activations quantised to int8: the same matrix as
    torch-int8, another rounding of x."""
    name, fmt = "ort-int8", "int8"


class OrtInt4(_OrtNBits):
    name, fmt = "ort-int4", "int4"


KERNELS: dict[str, type[Kernel]] = {k.name: k for k in (BlasWT, BlasW, OneDNN, OrtMatMul, TorchInt8, OrtInt8,
                                                         TorchInt4, OrtInt4)}
CANDIDATES = {"fp32": ("blas-wt", "blas-w", "onednn", "ort"), "int8": ("torch-int8", "ort-int8"),
              "int4": ("torch-int4", "ort-int4")}
DEFAULT = {"fp32": "blas-wt", "int8": "torch-int8", "int4": "torch-int4"}      # what runs without measuring


def candidates(fmt: str) -> list[str]:
    """The kernels for a format that can run here (an unavailable one is left out, not an error)."""
    return [n for n in CANDIDATES.get(fmt, ()) if KERNELS[n].available() is None]


def build(name: str, src: Source, threads: int, head: bool = False) -> Kernel:
    cls = KERNELS[name]
    why = cls.available()
    if why:
        raise InputError(f"the {name} kernel cannot run here: {why}")
    if issubclass(cls, _OrtKernel):
        return cls(src, threads, head)
    return cls(src, threads)


class PackedLinear(nn.Module):
    """y = x · W^T with W held by the kernels chosen for it (models.llm.kernels, models.llm.tuning): one for a single
    row, one for several (the same object when one serves both). Built from a float matrix with a format's
    default kernel, or by the tuner with the kernels it measured."""

    def __init__(self, weight: torch.Tensor, fmt: str, head: bool = False, kernel: str | None = None):
        super().__init__()
        if fmt not in CANDIDATES:
            raise InputError(f"unknown packed format {fmt!r} ({', '.join(CANDIDATES)})")
        if fmt == "int4" and weight.shape[1] % GROUP:
            fmt = "int8"           # a row that is not whole groups: int8 keeps it exact to the channel's scale
        k = build(kernel or DEFAULT[fmt], Source(weight), torch.get_num_threads(), head)
        self._set(k, k, head)

    @classmethod
    def from_kernels(cls, one, many, head: bool = False, source=None, choice=None) -> "PackedLinear":
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self._set(one, many, head)
        self.source, self.choice = source, choice
        return self

    def _set(self, one, many, head: bool) -> None:
        self.one, self.many, self.head = one, many, head
        self.out_features, self.in_features = one.out_features, one.in_features
        self.device_type = "cpu"
        self.source = self.choice = None
        self._traced = None

    @property
    def fmt(self) -> str:
        return self.one.fmt

    @property
    def kernels(self) -> tuple[str, str]:
        """(the kernel for one row, for several rows), by name."""
        return self.one.name, self.many.name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        if torch.compiler.is_compiling():          # a compiled graph holds plain torch operations only
            y = self.traceable()(x2)
        else:
            y = (self.one if x2.shape[0] == 1 else self.many)(x2)
        return y.view(*shape[:-1], self.out_features)

    def traceable(self):
        """A kernel made of torch operations for this matrix: a chosen one, else the dequantised matrix through BLAS
        (made once, for a model whose step is compiled)."""
        for k in (self.one, self.many):
            if k.traceable:
                return k
        if self._traced is None:
            self._traced = BlasWT(Source(self.dequantize()), 1)
        return self._traced

    def dequantize(self) -> torch.Tensor:
        """The (out, in) float32 matrix the kernels multiply by: its product with x in fp32 is the reference."""
        return self.one.dequantize()

    @property
    def nbytes(self) -> int:
        """Bytes one product of a single row reads: the packed weights and their scales."""
        return self.one.nbytes

    @property
    def held_bytes(self) -> int:
        """Bytes the matrix holds in memory: each distinct kernel's layout."""
        return self.one.nbytes + (0 if self.many is self.one else self.many.nbytes)

    def extra_repr(self) -> str:
        return f"{self.in_features} -> {self.out_features}, {self.fmt}, {'/'.join(self.kernels)}"


class NullKernel(Kernel):
    """A product that costs nothing: what a pass costs without its matrices (the fixed cost of a pass)."""

    name = "none"

    def __init__(self, out_features: int, in_features: int):
        self.out_features, self.in_features = out_features, in_features
        self._out: dict[tuple, torch.Tensor] = {}

    def __call__(self, x):
        key = (x.shape[0], x.dtype)
        if key not in self._out:
            self._out[key] = torch.zeros(x.shape[0], self.out_features, dtype=x.dtype)
        return self._out[key]

    @property
    def nbytes(self):
        return 0
