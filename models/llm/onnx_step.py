"""A whole pass of the model as one ONNX Runtime graph: the same layers, run without a Python call per operation.

On a CPU a small model's pass is mostly the dispatch of its operations (a few µs each, some forty a layer), not
its arithmetic: the shipped target spends about half of each eager pass there. This builds the model's forward as
one ONNX graph (ONNX Runtime's contrib operators: SimplifiedLayerNormalization for RMSNorm, GroupQueryAttention
with the rotary embedding and the KV cache, MatMul / MatMulNBits for the matrices) over the model's own weights,
and runs it through I/O bindings on the model's own buffers:

- the KV cache is the model's KVCache tensors (past and present share them: GroupQueryAttention writes the new
  positions in place, in the same layout the eager path writes), so rollback by position works as it does there
  and the eager path and this one can take turns on one cache;
- the rotary tables are the model's, bound as inputs (setup_caches' length, no copy in the graph);
- seqlens_k = start + T - 1 tells GroupQueryAttention where the text ends: later positions are ignored, then
  overwritten.

The numbers are the eager path's up to the order of sums for fp32; int8 and int4 use MatMulNBits with int8
activations (models.llm.kernels' int8-activation family). models.llm.tuning times this pass against the eager
one for 1 and γ+1 positions and keeps the faster for each (a batch above 1 and compiled steps stay eager).
"""
from __future__ import annotations

import numpy as np
import torch

from models.llm.kernels import FP32, INT8_ACT, PackedLinear, Source, _ort, _OrtKernel, nbits_matmul

KEEP_BINDINGS = 8          # row counts (and outputs) with an I/O binding of their own (1, γ+1, ...); others bind afresh


def available(cfg=None) -> str | None:
    """None where this model's pass can run as a graph here, else why not."""
    why = _OrtKernel.available()
    if why is None and cfg is not None and cfg.head_dim % 16:
        why = f"ONNX Runtime's grouped-query attention wants a head size that is a multiple of 16 ({cfg.head_dim})"
    return why


def family(fmt: str) -> str:
    """The arithmetic of the graph's matrix products for a weight format (models.llm.kernels' families)."""
    return FP32 if fmt == "fp32" else INT8_ACT


def _source(module) -> tuple[Source, str]:
    """A matrix of the model as the graph takes it, and its format."""
    if isinstance(module, PackedLinear):
        src = module.source if module.source is not None else Source(module.dequantize())
        return src, module.fmt
    return Source(module.weight), "fp32"


class OnnxStep:
    """model(idx, input_pos) for batch 1 as one ONNX Runtime run. Built after the model's weights are in their
    format (the graph takes each matrix's source or its dequantised values), for the caches set up now."""

    name = "onnx graph"

    def __init__(self, model, threads: int, *, reads_features_of=None):
        """reads_features_of: the target whose features an EAGLE layer (model, models.llm.selfdraft) pushes
        forward: the graph reads [features, the target's embedding of each token] through the layer's fc, and its
        rows go through the target's output layer."""
        # lazy: onnx only when an ONNX file is read or written
        from onnx import TensorProto as TP
        from onnx import helper
        cfg = model.config
        self.model, self.cfg, self.threads = model, cfg, threads
        self.reads_features = reads_features_of is not None
        words = reads_features_of if self.reads_features else model      # the embedding and the output layer
        H, KV, hd = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        nodes, inits = [], []
        self.nbytes = 0

        def tensor(name, t):
            return _OrtKernel._tensor(name, t)

        def init(name, t):
            inits.append(tensor(name, t))
            return name

        def node(op, ins, outs, domain="", **kw):
            nodes.append(helper.make_node(op, ins, outs, domain=domain, **kw))
            return outs[0] if len(outs) == 1 else outs

        def matmul(x, module, name):
            src, fmt = _source(module)
            if fmt == "fp32":
                self.nbytes += src.weight.numel() * 4
                return node("MatMul", [x, init(name + "_w", src.weight.detach().float().t())], [name])
            n, more, nbytes = nbits_matmul(x, name, name, src, fmt, tensor)
            nodes.append(n)
            inits.extend(more)
            self.nbytes += nbytes
            return name

        def rms(x, w, name):
            return node("SimplifiedLayerNormalization", [x, init(name + "_w", w.detach().float())], [name], axis=-1,
                        epsilon=cfg.rms_norm_eps, stash_type=1)

        value = helper.make_tensor_value_info
        inputs = [value("input_ids", TP.INT64, [1, "T"]), value("seqlens_k", TP.INT32, [1]),
                  value("total_len", TP.INT32, []), value("cos", TP.FLOAT, ["S", hd // 2]),
                  value("sin", TP.FLOAT, ["S", hd // 2])]
        V = words.config.vocab_size
        outputs = [value("logits", TP.FLOAT, [1, "T", V])]
        x = node("Gather", [init("embedding", words.tok_embeddings.weight.detach().float()), "input_ids"], ["x0"])
        if self.reads_features:
            inputs.append(value("features", TP.FLOAT, [1, "T", cfg.dim]))
            fc = model.fc
            x = node("Add", [matmul(node("Concat", ["features", x], ["fe"], axis=-1), fc, "fc"),
                             init("fc_b", fc.bias.detach().float())], ["x0f"])
        qkv_split = init("qkv_split", torch.tensor([H * hd, KV * hd, KV * hd]))
        ff_split = init("ff_split", torch.tensor([cfg.intermediate_size] * 2))
        for i, layer in enumerate(model.layers):
            a, f = layer.attention, layer.feed_forward
            qkv = matmul(rms(x, layer.attention_norm.weight, f"n{i}"), a.wqkv, f"qkv{i}")
            q, k, v = node("Split", [qkv, qkv_split], [f"q{i}", f"k{i}", f"v{i}"], axis=-1)
            for kv in ("k", "v"):
                inputs.append(value(f"past_{kv}{i}", TP.FLOAT, [1, KV, "S", hd]))
                outputs.append(value(f"present_{kv}{i}", TP.FLOAT, [1, KV, "S", hd]))
            att = node("GroupQueryAttention", [q, k, v, f"past_k{i}", f"past_v{i}", "seqlens_k", "total_len", "cos",
                                               "sin"], [f"att{i}", f"present_k{i}", f"present_v{i}"],
                       domain="com.microsoft", num_heads=H, kv_num_heads=KV, do_rotary=1, rotary_interleaved=0)[0]
            x = node("Add", [x, matmul(att, a.wo, f"o{i}")], [f"xa{i}"])
            gate, up = node("Split", [matmul(rms(x, layer.ffn_norm.weight, f"m{i}"), f.w13, f"gu{i}"), ff_split],
                            [f"gate{i}", f"up{i}"], axis=-1)
            silu = node("Mul", [gate, node("Sigmoid", [gate], [f"sg{i}"])], [f"silu{i}"])
            x = node("Add", [x, matmul(node("Mul", [silu, up], [f"swiglu{i}"]), f.w2, f"down{i}")], [f"x{i + 1}"])
        matmul(rms(x, model.norm.weight, "final"), words.output, "logits")
        outputs.append(value("final", TP.FLOAT, [1, "T", cfg.dim]))       # the features the output layer reads
        # The draw a proposer makes from its last row, in the graph (run only when `guess` asks for it): q =
        # softmax(logits / temperature), then acceptance.sample_index's inverse CDF in fp64, the first index whose
        # cumulative mass exceeds u·total, or the last positive one where u·total rounds up to the total.
        inputs += [value("u", TP.DOUBLE, [1]), value("inv_temperature", TP.FLOAT, [1])]
        q = node("Softmax", [node("Mul", [node("Gather", ["logits", init("last", torch.tensor(-1))], ["last_logits"],
                                                axis=1), "inv_temperature"], ["scaled"])], ["q"], axis=-1)
        cdf = node("CumSum", [node("Cast", [q], ["q64"], to=TP.DOUBLE), init("axis", torch.tensor(-1))], ["cdf"])
        total = node("Gather", [cdf, init("last_col", torch.tensor([-1]))], ["total"], axis=1)
        above = node("Cast", [node("Greater", [cdf, node("Mul", [total, "u"], ["bar"])], ["above_b"])], ["above"],
                     to=TP.INT32)
        first = node("ArgMax", [above], ["first"], axis=-1, keepdims=0)
        last_pos = node("ArgMax", [node("Cast", [node("Greater", [q, init("zero", torch.tensor(0.0))], ["pos_b"])],
                                        ["pos"], to=TP.INT32)], ["last_pos"], axis=-1, keepdims=0,
                        select_last_index=1)
        found = node("Cast", [node("ReduceMax", [above], ["any_i"], keepdims=0)], ["found"], to=TP.BOOL)
        node("Where", [found, first, last_pos], ["token"])
        outputs += [value("q", TP.FLOAT, [1, V]), value("token", TP.INT64, [1])]
        graph = helper.make_graph(nodes, "llama_pass", inputs, outputs, inits)
        onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                             helper.make_opsetid("com.microsoft", 1)])
        import onnx  # lazy: onnx only when an ONNX file is read or written
        onnx_model.ir_version = min(onnx_model.ir_version, onnx.IR_VERSION)
        ort = _ort()
        so = ort.SessionOptions()
        so.intra_op_num_threads = max(1, threads)
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(onnx_model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        self.V = V
        self._bound: dict[tuple, dict] = {}
        self._tables = None

    @torch.inference_mode(False)      # buffers written in place on every call, inside inference mode or not
    def _binding(self, T: int, draw: bool) -> dict:
        """An I/O binding for T positions over the model's caches and rotary tables as they are now; with draw,
        its outputs are the draw's (q and the token), else the logits (bound per call: callers keep them)."""
        model, cfg = self.model, self.cfg
        hd = cfg.head_dim
        if self._tables is None or self._tables[0] is not model.rope_cos:
            # the first half of each rotary row (the second repeats it), contiguous; made again after setup_caches
            self._tables = (model.rope_cos, model.rope_cos[:, :hd // 2].contiguous(),
                            model.rope_sin[:, :hd // 2].contiguous())
        b = {"ids": torch.zeros(1, T, dtype=torch.long), "seqlens": torch.zeros(1, dtype=torch.int32),
             "total": torch.zeros((), dtype=torch.int32), "u": torch.zeros(1, dtype=torch.float64),
             "inv_t": torch.ones(1), "cache": model.layers[0].attention.kv_cache.k_cache}
        io = b["io"] = self.session.io_binding()
        io.bind_input("input_ids", "cpu", 0, np.int64, [1, T], b["ids"].data_ptr())
        io.bind_input("seqlens_k", "cpu", 0, np.int32, [1], b["seqlens"].data_ptr())
        io.bind_input("total_len", "cpu", 0, np.int32, [], b["total"].data_ptr())
        io.bind_input("u", "cpu", 0, np.float64, [1], b["u"].data_ptr())
        io.bind_input("inv_temperature", "cpu", 0, np.float32, [1], b["inv_t"].data_ptr())
        cos, sin = self._tables[1:]
        for name, t in (("cos", cos), ("sin", sin)):
            io.bind_input(name, "cpu", 0, np.float32, list(t.shape), t.data_ptr())
        for i, layer in enumerate(model.layers):
            c = layer.attention.kv_cache
            for kv, buf in (("k", c.k_cache), ("v", c.v_cache)):
                io.bind_input(f"past_{kv}{i}", "cpu", 0, np.float32, list(buf.shape), buf.data_ptr())
                io.bind_output(f"present_{kv}{i}", "cpu", 0, np.float32, list(buf.shape), buf.data_ptr())
        if self.reads_features:
            b["features"] = torch.zeros(1, T, cfg.dim)
            io.bind_input("features", "cpu", 0, np.float32, [1, T, cfg.dim], b["features"].data_ptr())
        if draw:
            b["q"], b["token"] = torch.empty(1, self.V), torch.empty(1, dtype=torch.long)
            io.bind_output("q", "cpu", 0, np.float32, [1, self.V], b["q"].data_ptr())
            io.bind_output("token", "cpu", 0, np.int64, [1], b["token"].data_ptr())
            if self.reads_features:          # EAGLE's step: the features it predicted, read by its next step
                b["final"] = torch.empty(1, T, cfg.dim)
                io.bind_output("final", "cpu", 0, np.float32, [1, T, cfg.dim], b["final"].data_ptr())
        return b

    def _bound_for(self, T: int, draw: bool = False, features: bool = False) -> dict:
        key = (T, draw, features)
        cache = self.model.layers[0].attention.kv_cache.k_cache
        b = self._bound.get(key)
        if b is None or b["cache"] is not cache or self._tables[0] is not self.model.rope_cos:
            if b is not None:
                self._bound.clear()        # new caches (setup_caches): every binding points at the old ones
            b = self._binding(T, draw)
            if len(self._bound) < KEEP_BINDINGS:
                self._bound[key] = b
        return b

    def guess(self, token: torch.Tensor, pos: int, u: torch.Tensor, temperature: float, features=None):
        """One draft step: token (1, 1) at pos -> (q (V,) fp32 = softmax(logits / temperature), the token drawn
        from q with the uniform u), both computed in the graph (new tensors: the caller keeps them). An EAGLE
        layer's graph also reads the features before the token (dim,) and gives (q, token, predicted features);
        it may read T tokens (1, T) at positions pos.. with their features (T, dim), the draw from the last row
        (the kept guesses fed again and the next pass's first step in one run)."""
        T = token.numel()
        b = self._bound_for(T, draw=True)
        b["ids"].copy_(token.view(1, T))
        if self.reads_features:
            b["features"].copy_(features.view(1, T, -1))
        b["seqlens"].fill_(pos + T - 1)
        b["total"].fill_(pos + T)
        b["u"].copy_(u.view(1))
        b["inv_t"].fill_(1.0 / temperature)
        self.session.run_with_iobinding(b["io"])
        if self.reads_features:
            return b["q"][0].clone(), b["token"][0].clone(), b["final"][0, -1].clone()
        return b["q"][0].clone(), b["token"][0].clone()

    def __call__(self, idx: torch.Tensor, start: int, features: bool = False):
        """idx (1, T) at positions start.. -> logits (1, T, V) fp32 (new tensors each call: callers keep them);
        features=True: (logits, features (1, T, dim)), the output layer's input."""
        T = idx.shape[1]
        b = self._bound_for(T, draw=False, features=features)
        b["ids"].copy_(idx)
        b["seqlens"].fill_(start + T - 1)
        b["total"].fill_(start + T)
        out = torch.empty(1, T, self.V)
        b["io"].bind_output("logits", "cpu", 0, np.float32, [1, T, self.V], out.data_ptr())
        if features:
            h = torch.empty(1, T, self.cfg.dim)
            b["io"].bind_output("final", "cpu", 0, np.float32, [1, T, self.cfg.dim], h.data_ptr())
        self.session.run_with_iobinding(b["io"])
        return (out, h) if features else out

    def push(self, features: torch.Tensor, idx: torch.Tensor, start: int) -> torch.Tensor:
        """An EAGLE layer's graph: features (1, T, dim) before the tokens idx (1, T) at positions start.. -> the
        predicted features (1, T, dim), the inputs written to the layer's cache (no rows through the output)."""
        T = idx.shape[1]
        b = self._bound_for(T, draw=False, features=True)
        b["ids"].copy_(idx)
        b["features"].copy_(features)
        b["seqlens"].fill_(start + T - 1)
        b["total"].fill_(start + T)
        h = torch.empty(1, T, self.cfg.dim)
        b["io"].bind_output("final", "cpu", 0, np.float32, [1, T, self.cfg.dim], h.data_ptr())
        self.session.run_with_iobinding(b["io"])
        return h
