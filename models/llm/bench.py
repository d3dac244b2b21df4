"""`spectable bench`: measure the Llama pair on a device and put each figure beside its on-paper value.

Measures the device's copy bandwidth (the roofline's denominator), batch-1 decode, verify(γ+1)/verify(1),
the draft/target cost ratio c, a batch sweep with a KV context, and speculative vs plain decoding end to
end. On paper = bytes moved / measured bandwidth (the memory roofline), from our own byte counts; where
models.hardware knows the device, its spec-sheet roofline is added. Writes one JSON file atomically.
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import time
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F

from corpus import jsonio
from models import analytics
from corpus.errors import InputError
from models.llm.model import RANDOM_WEIGHTS_NOTE, LlamaConfig, Transformer
from models.llm.hf import load_model, read_checkpoint_config
from models.llm.device import aligned, available_bytes, device_name, memory_needed, resolve_device, resolve_dtype, sync
from models.llm.steps import COMPILE_FAILURES
from models.llm.speculative import (PlainDecoder, SpeculativeDecoder, StepRunner, compile_blocks, decode_one_token, eager_blocks, forward_positions)
from models.llm.tuning import report_lines
from corpus.atomic import write_text_atomic

SCHEMA = "spectable-bench/1"


@dataclass
class BenchSettings:
    device: str = "cpu"
    target: str = "llama-3.1-8b"
    draft: str = "llama-3.2-1b"
    dtype: str = "bf16"
    gamma: int = 4
    batches: list[int] = field(default_factory=lambda: [1, 4, 16, 64])
    context: int = 4096
    tokens: int = 128
    checkpoint: str | None = None
    draft_checkpoint: str | None = None
    seed: int = 0
    prompt_len: int = 32          # batch-1 figures are taken at this position (short context: weights dominate)
    reps: int = 0                 # timed repetitions per figure; 0 = 50 on CUDA, 5 on CPU
    compile: str = "auto"         # auto | on | off  (auto: on for CUDA)
    graphs: str = "auto"          # auto | on | off  (auto: on for CUDA)


def check_fits(s: BenchSettings, target: LlamaConfig, draft: LlamaConfig, dtype, device) -> dict:
    """Estimate before allocating anything: the largest batch of the sweep must fit beside both models."""
    need = max(max(memory_needed([target, draft], dtype, sweep_seq_len(s.context), b, 1) for b in s.batches),
               memory_needed([target, draft], dtype, e2e_seq_len(s), 1, s.gamma + 1))
    free = available_bytes(device)
    margin = 1.10 if device.type == "cpu" else 1.05
    if need * margin > free:
        b = max(s.batches)
        raise InputError(f"{target.name} + {draft.name} in {s.dtype} with batch {b} x {s.context} context needs "
                         f"about {need / 1e9:.1f} GB; {device.type} has {free / 1e9:.1f} GB free "
                         "(use a smaller --batch/--context or model)")
    return {"estimated_bytes": int(need), "free_bytes_before": int(free)}


def sweep_seq_len(context: int) -> int:
    # room for the step's own token; a multiple of 16 keeps attention kernels on aligned paths
    return aligned(context + 1)


def e2e_seq_len(s: BenchSettings) -> int:
    return aligned(s.prompt_len + s.tokens + 2 * (s.gamma + 1))


# --- measurements --------------------------------------------------------------------------------
def measure_copy_bandwidth(device: torch.device, reps: int) -> dict:
    """dst.copy_(src) over a buffer far larger than any cache; bytes read + bytes written per second."""
    nbytes = (1 << 30) if device.type == "cuda" else (256 << 20)
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    for _ in range(2):
        dst.copy_(src)
    sync(device)
    n = max(reps, 5) if device.type == "cuda" else max(reps, 3)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        dst.copy_(src)
        sync(device)
        times.append(time.perf_counter() - t0)
    del src, dst
    best = min(times)
    median = sorted(times)[len(times) // 2]
    return {"GB_per_s": 2 * nbytes / median / 1e9, "GB_per_s_best": 2 * nbytes / best / 1e9,
            "buffer_bytes": nbytes, "repetitions": n,
            "method": "torch copy_ of one buffer into another, read + write bytes counted, median of repetitions"}


def measure_matmul(device: torch.device, dtype: torch.dtype, reps: int) -> dict:
    """Dense matmul rate in the bench dtype: the arithmetic side of the roofline (2·n³ operations per product)."""
    n = 8192 if device.type == "cuda" else 1024
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    for _ in range(2):
        F.linear(a, b)
    sync(device)
    k = max(reps // 2, 10) if device.type == "cuda" else 3
    t0 = time.perf_counter()
    for _ in range(k):
        F.linear(a, b)   # the kernel the model's layers use
    sync(device)
    per = (time.perf_counter() - t0) / k
    return {"TFLOP_per_s": 2 * n ** 3 / per / 1e12, "n": n, "repetitions": k,
            "method": f"F.linear of {n}x{n} by {n}x{n} in the bench dtype, back to back, mean time; 2·n³ operations "
                      "each"}


def time_step(runner: StepRunner, inputs: tuple, reps: int, device) -> float:
    """Median seconds per call after warm-up; on CUDA the calls of one batch run back to back, one sync."""
    for _ in range(2):
        runner(*inputs)
    sync(device)
    if torch.device(device).type == "cuda":
        # batches of back-to-back replays, one sync each: the time a decode loop without host syncs sees
        per, rounds = [], 5
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(max(reps // rounds, 1)):
                runner(*inputs)
            sync(device)
            per.append((time.perf_counter() - t0) / max(reps // rounds, 1))
        return sorted(per)[len(per) // 2]
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        runner(*inputs)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


class FastPath:
    """How decode/verify run on this device (compiled blocks, CUDA graphs), with a way down if a
    compiler or a graph capture fails: the run still finishes, and the file says what ran."""

    def __init__(self, s: BenchSettings, device: torch.device, models: list[Transformer]):
        cuda = device.type == "cuda"
        self.compile = {"auto": cuda, "on": True, "off": False}[s.compile]
        self.graphs = {"auto": cuda, "on": cuda, "off": False}[s.graphs]
        self.models, self.device, self.notes = models, device, []
        if s.graphs == "on" and not cuda:
            self.notes.append("CUDA graphs asked for on a CPU: not used")
        if self.compile:
            for m in models:
                compile_blocks(m)

    def describe(self) -> dict:
        return {"compiled_blocks": self.compile, "cuda_graphs": self.graphs, "fallbacks": self.notes}

    def timed(self, make_fn, inputs: tuple, reps: int) -> float:
        return self.guarded(lambda: time_step(StepRunner(make_fn(), self.graphs), inputs, reps, self.device))

    def guarded(self, run):
        """run() on the fast path; if compiling fails, again without compiling; if a graph capture fails,
        again eagerly. Each step down is recorded."""
        while True:
            try:
                return run()
            except COMPILE_FAILURES as exc:     # a failed compile/capture must not lose a one-shot GPU run
                if not (self.compile or self.graphs):
                    raise
                what = "compiled blocks" if self.compile else "CUDA graphs"
                self.notes.append(f"{what} failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); "
                                  "continued without")
                if self.compile:
                    self.compile = False
                    for m in self.models:
                        eager_blocks(m)
                else:
                    self.graphs = False
                if self.device.type == "cuda":
                    torch.cuda.synchronize()


def _decode_fn(model):
    return torch.no_grad()(lambda tok, pos: decode_one_token(model, tok, pos))


def _forward_fn(model):
    return torch.no_grad()(lambda toks, pos: forward_positions(model, toks, pos))


def model_summary(cfg: LlamaConfig, dtype) -> dict:
    return {"name": cfg.name, "params": cfg.param_count(), "weight_bytes": cfg.weight_bytes(dtype),
            "weight_bytes_read_per_token": cfg.weight_bytes_read_per_token(dtype),
            "kv_bytes_per_token": cfg.kv_bytes_per_token(dtype), "config": cfg.as_dict()}


def speedup_on_paper(alpha: float, gamma: int, c: float, verify_ratio: float) -> float:
    """Expected tokens per pass / cost of a pass in target decode steps: (1-α^(γ+1))/(1-α) / (γc + v)."""
    return analytics.speedup(min(max(alpha, 0.0), 1.0), gamma, c, verify_ratio)


def _hardware_roofline(device_label: str, model_name: str, batch: int, context: int):
    """The spec-sheet roofline from models.hardware, where that module knows this device and model."""
    try:
        from models import hardware  # lazy: a missing models.hardware is handled below
    except ImportError:              # the hardware model is optional here
        return None
    key = None
    low = device_label.lower()
    for needle, k in (("h200", "h200"), ("h100", "h100-sxm"), ("a100", "a100-80gb")):
        if needle in low:
            key = k
    if key is None or key not in getattr(hardware, "DEVICES", {}) or model_name not in getattr(hardware, "MODELS", {}):
        return None
    try:
        r = hardware.roofline(key, model_name, batch, context)
        return {"device": key, **{k: v for k, v in r.as_dict().items() if isinstance(v, (int, float, str))}}
    except InputError:               # a context or batch the roofline refuses: no figure on paper
        return None


def run_bench(s: BenchSettings, progress=None) -> dict:
    """The full bench (module docstring). progress(what), if given, hears each stage as it starts."""
    device, dtype = resolve_device(s.device), resolve_dtype(s.dtype)
    if s.gamma < 1 or s.tokens < 2 or s.context < 1 or not s.batches or min(s.batches) < 1 or s.prompt_len < 1:
        raise InputError("need --gamma >= 1, --tokens >= 2, --context >= 1 and batches >= 1")
    reps = s.reps or (50 if device.type == "cuda" else 5)
    tcfg = read_checkpoint_config(s.checkpoint) if s.checkpoint else LlamaConfig.from_name(s.target)
    dcfg = read_checkpoint_config(s.draft_checkpoint) if s.draft_checkpoint else LlamaConfig.from_name(s.draft)
    if tcfg.vocab_size != dcfg.vocab_size:
        raise InputError(f"draft {dcfg.name} (vocab {dcfg.vocab_size}) and target {tcfg.name} "
                         f"(vocab {tcfg.vocab_size}) must share a vocabulary")
    memory = check_fits(s, tcfg, dcfg, dtype, device)
    step = progress or (lambda _what: None)
    label = device_name(device)
    random_weights = s.checkpoint is None or s.draft_checkpoint is None
    out: dict = {
        "schema": SCHEMA,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "device": {"type": device.type, "name": label, "torch": torch.__version__,
                   "cuda": torch.version.cuda, "cpu_threads": torch.get_num_threads(),
                   "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                   "python": platform.python_version()},
        "dtype": s.dtype,
        "settings": asdict(s) | {"reps": reps},
        "weights": {"target": "checkpoint" if s.checkpoint else f"random (seed {s.seed})",
                    "draft": "checkpoint" if s.draft_checkpoint else f"random (seed {s.seed + 1})",
                    "note": RANDOM_WEIGHTS_NOTE if random_weights else "checkpoint weights"},
        "models": {"target": model_summary(tcfg, dtype), "draft": model_summary(dcfg, dtype)},
        "memory": memory,
        "figures": {},
        "notes": [],
    }
    fig = out["figures"]

    step("copy bandwidth, matmul rate")
    bw = measure_copy_bandwidth(device, reps)
    fig["copy_bandwidth"] = bw
    B = bw["GB_per_s"] * 1e9
    spec = _hardware_roofline(label, tcfg.name, 1, s.prompt_len)
    if spec:
        fig["copy_bandwidth"]["spec_sheet_roofline_batch1"] = spec

    mm = measure_matmul(device, dtype, reps)
    fig["matmul"] = mm
    # what models.hardware reads to add this run as a measured device (bandwidth and arithmetic rate)
    out["measured"] = {"copy_bandwidth_GBps": bw["GB_per_s"], "matmul_tflops": mm["TFLOP_per_s"]}
    if device.type == "cuda":
        out["device"]["memory_bytes"] = torch.cuda.get_device_properties(device).total_memory

    step(f"building {tcfg.name} + {dcfg.name} ({s.dtype}, {'random' if random_weights else 'checkpoint'})")
    t0 = time.perf_counter()
    target, _ = load_model(checkpoint=s.checkpoint, name=s.target, dtype=dtype, device=device, seed=s.seed,
                           fmt=s.dtype)
    draft, _ = load_model(checkpoint=s.draft_checkpoint, name=s.draft, dtype=dtype, device=device, seed=s.seed + 1,
                          fmt=s.dtype)
    sync(device)
    out["build_seconds"] = time.perf_counter() - t0
    fast = FastPath(s, device, [target, draft])
    seq1 = e2e_seq_len(s)
    target.setup_caches(1, seq1)
    draft.setup_caches(1, seq1)
    P = s.prompt_len
    tok1 = torch.zeros(1, 1, dtype=torch.long, device=device)
    pos1 = torch.tensor([P], device=device)

    step("batch-1 decode, verify(γ+1) vs verify(1), draft cost")
    with torch.no_grad():
        t_dec = fast.timed(lambda: _decode_fn(target), (tok1, pos1), reps)
        toks_k = torch.zeros(1, s.gamma + 1, dtype=torch.long, device=device)
        pos_k = torch.arange(P, P + s.gamma + 1, device=device)
        t_ver1 = fast.timed(lambda: _forward_fn(target), (tok1, pos1), reps)
        t_verk = fast.timed(lambda: _forward_fn(target), (toks_k, pos_k), reps)
        t_draft = fast.timed(lambda: _decode_fn(draft), (tok1, pos1), reps)
    t_bytes = tcfg.weight_bytes_read_per_token(dtype) + P * tcfg.kv_bytes_per_token(dtype)
    t_bytes_all = tcfg.weight_bytes(dtype) + P * tcfg.kv_bytes_per_token(dtype)
    d_bytes = dcfg.weight_bytes_read_per_token(dtype) + P * dcfg.kv_bytes_per_token(dtype)
    # The arithmetic bound uses the measured matmul rate on CUDA, where it is the device's peak. On a CPU the
    # GEMM rate depends on the shape (bf16 GEMM without AVX-512 BF16 converts on the fly, while the one-row
    # decode kernel streams), so there on paper is the memory roofline alone and the notes say why.
    FL = mm["TFLOP_per_s"] * 1e12 if device.type == "cuda" else float("inf")
    itemsize = torch.empty((), dtype=dtype).element_size()

    def paper_s(nbytes: int, cfg: LlamaConfig, rows: int) -> float:
        # the roofline: a step takes at least its bytes / bandwidth and its arithmetic / matmul rate
        # (2 operations per streamed weight per token computed)
        ops = 2 * rows * cfg.weight_bytes_read_per_token(dtype) / itemsize
        return max(nbytes / B, ops / FL)
    k = s.gamma + 1
    fig["decode_batch1"] = {
        "ms_per_token": t_dec * 1e3, "tokens_per_s": 1 / t_dec, "position": P,
        "on_paper_ms": t_bytes / B * 1e3,
        "fraction_of_roofline": (t_bytes / B) / t_dec,
        "on_paper_ms_all_params": t_bytes_all / B * 1e3,
        "fraction_of_roofline_all_params": (t_bytes_all / B) / t_dec,
        "on_paper_ms_with_arithmetic": paper_s(t_bytes, tcfg, 1) * 1e3,
        "bytes_per_step": t_bytes,
        "method": "median time of one target forward of 1 token at batch 1 (graph replays back to back on CUDA); "
                  "on paper = bytes read per pass (every matrix once, one embedding row, the KV so far) / "
                  "measured copy bandwidth (the weights-only roofline); *_all_params counts every parameter's "
                  "bytes instead; *_with_arithmetic also bounds by 2 ops per weight / measured matmul rate"}
    fig["verify_cost"] = {
        "tokens": k, "ms_verify_1": t_ver1 * 1e3, "ms_verify_k": t_verk * 1e3,
        "ratio": t_verk / t_ver1, "on_paper_ratio": paper_s(t_bytes, tcfg, k) / paper_s(t_bytes, tcfg, 1),
        "method": f"one target forward of {k} positions vs of 1, same position; on paper the weights are read "
                  f"once for all positions, so the ratio is 1 until {k} x the arithmetic outlasts the read "
                  "(the roofline with the measured bandwidth and matmul rate)"}
    fig["draft_cost"] = {
        "draft_ms": t_draft * 1e3, "target_ms": t_dec * 1e3, "c": t_draft / t_dec,
        "on_paper_c": paper_s(d_bytes, dcfg, 1) / paper_s(t_bytes, tcfg, 1),
        "method": "c = draft decode time / target decode time at batch 1; on paper = ratio of the two rooflines "
                  "(bytes read per pass, or arithmetic where that is longer)"}

    seq_sweep = sweep_seq_len(s.context)
    sweep = []
    for b in s.batches:
        step(f"batch sweep: batch {b} x {s.context} context")
        target.setup_caches(b, seq_sweep)
        tok_b = torch.zeros(b, 1, dtype=torch.long, device=device)
        pos_b = torch.tensor([s.context - 1], device=device)  # every step attends to `context` positions
        with torch.no_grad():
            t_b = fast.timed(lambda: _decode_fn(target), (tok_b, pos_b), max(reps // 2, 3))
        kv_bytes = b * s.context * tcfg.kv_bytes_per_token(dtype)
        bytes_b = tcfg.weight_bytes_read_per_token(dtype) + kv_bytes
        roof = paper_s(bytes_b, tcfg, b)
        entry = {"batch": b, "context": s.context, "ms_per_step": t_b * 1e3, "tokens_per_s": b / t_b,
                 "on_paper_ms": roof * 1e3, "on_paper_tokens_per_s": b / roof,
                 "fraction_of_roofline": roof / t_b, "kv_bytes": kv_bytes, "bytes_per_step": bytes_b,
                 "bound": "memory" if roof == bytes_b / B else "arithmetic"}
        spec = _hardware_roofline(label, tcfg.name, b, s.context)
        if spec:
            entry["spec_sheet_roofline"] = spec
        sweep.append(entry)
    fig["batch_sweep"] = {"points": sweep, "method": "median time of one decoding pass of every sequence at "
                          "position context-1 (each attends to `context` cached positions; cache contents are "
                          "not meaningful, their bytes are); on paper = (weights + batch x context x KV bytes "
                          "per token) / measured copy bandwidth, or the arithmetic / measured matmul rate where "
                          "that is longer (`bound`)"}
    target.setup_caches(1, seq1)
    if device.type == "cuda":
        torch.cuda.empty_cache()

    gen = torch.Generator().manual_seed(s.seed)
    prompt = torch.randint(0, tcfg.vocab_size, (P,), generator=gen).tolist()
    step(f"plain decoding, {s.tokens} tokens (greedy)")

    def run_plain():
        plain = PlainDecoder(target, temperature=0.0, graphs=fast.graphs)
        if fast.graphs or fast.compile:
            plain.generate(prompt, min(s.tokens, 8))             # warm-up: graph capture outside the timing
        return plain.generate(prompt, s.tokens), plain.decode_seconds
    plain_ids, plain_s = fast.guarded(run_plain)
    plain_tps = (s.tokens - 1) / plain_s

    step(f"speculative decoding, γ = {s.gamma} (greedy)")

    def run_spec():
        dec = SpeculativeDecoder(target, draft, gamma=s.gamma, temperature=0.0, graphs=fast.graphs)
        if fast.graphs or fast.compile:
            dec.generate(prompt, min(s.tokens, 2 * s.gamma + 2))
        return dec.generate(prompt, s.tokens), dec.decode_seconds
    res, spec_s = fast.guarded(run_spec)
    spec_written = sum(len(r.tokens) for r in res.records)
    spec_tps = spec_written / spec_s
    c, v = fig["draft_cost"]["c"], fig["verify_cost"]["ratio"]
    fig["speculative"] = {
        "gamma": s.gamma, "tokens": s.tokens, "plain_tokens_per_s": plain_tps, "speculative_tokens_per_s": spec_tps,
        "speedup": spec_tps / plain_tps, "alpha": res.alpha, "tokens_per_pass": res.tokens_per_pass,
        "passes": res.passes, "same_tokens_as_plain": res.tokens == plain_ids,
        "on_paper_speedup": speedup_on_paper(res.alpha, s.gamma, c, v),
        "projection_from_measured_costs": {f"alpha={a}": speedup_on_paper(a, s.gamma, c, v)
                                           for a in (0.6, 0.7, 0.8, 0.9)},
        "alpha_note": ("random weights: the draft and target are unrelated, so α (and the end-to-end speedup) is not "
                       "meaningful; the projection shows what the measured costs give at realistic α"
                       if random_weights else "α measured on these checkpoints and this prompt"),
        "method": "greedy decoding after a prompt of prompt_len random ids, decode phase timed (prefill excluded), "
                  "after one warm-up run where graphs or compilation are used; on paper = "
                  "(1-α^(γ+1))/(1-α) / (γc + verify ratio) with the measured α, c and verify ratio"}
    if not res.tokens == plain_ids:
        out["notes"].append("greedy speculative output differed from greedy plain output: in bf16 the verify "
                            "and decode forwards round differently, so near-ties can flip (fp32 tests prove equality)")
    out["fast_path"] = fast.describe()
    out["kernels"] = {role: report_lines(m.kernel_report) for role, m in (("target", target), ("draft", draft))
                      if getattr(m, "kernel_report", None)}
    if device.type == "cpu":
        out["notes"].append("CPU: on paper is the memory roofline only: a CPU's GEMM rate depends on the shape and, without AVX-512 BF16, "
                            "bf16 GEMMs of several rows convert on the fly (figures.matmul gives one rate), so "
                            "verifying several tokens or a batch can be arithmetic-bound and not free, while the "
                            "one-row decode kernel streams the weights")
    if device.type == "cpu":
        try:
            load1 = os.getloadavg()[0]
            out["device"]["load_average_1min"] = load1
            if load1 > 1.5 * (os.cpu_count() or 1):
                out["notes"].append(f"the CPU was shared (load average {load1:.1f} on {os.cpu_count()} cores): "
                                    "timings are inflated and noisy")
        except OSError:
            pass
    return out


def write_json_atomic(path, obj) -> None:
    """The measurement file, complete under its name or not at all: a full disk, a kill or any error leaves
    the old file (or none) and no temp file (corpus.atomic). A figure that came out NaN or infinite (a timer
    that read 0) is written as null, "not measured", which is what JSON and models.measurements accept."""
    text = jsonio.dumps(obj, indent=2) + "\n"
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def summary_lines(r: dict) -> list[str]:
    """The figures a person reads, each beside its on-paper value."""
    f = r["figures"]
    d, v, c, sp = f["decode_batch1"], f["verify_cost"], f["draft_cost"], f["speculative"]
    lines = [f"{r['device']['name']} · {r['dtype']} · torch {r['device']['torch']} · {r['weights']['note']}",
             f"copy bandwidth      {f['copy_bandwidth']['GB_per_s']:8.1f} GB/s",
             f"matmul              {f['matmul']['TFLOP_per_s'] * 1e3:8.1f} GFLOP/s",
             f"decode batch 1      {d['ms_per_token']:8.2f} ms/token   on paper {d['on_paper_ms']:.2f} ms "
             f"({100 * d['fraction_of_roofline']:.0f}% of roofline)",
             f"verify {v['tokens']}/verify 1  {v['ratio']:8.2f}           on paper {v['on_paper_ratio']:.2f}",
             f"c (draft/target)    {c['c']:8.3f}           on paper {c['on_paper_c']:.3f}"]
    for p in f["batch_sweep"]["points"]:
        lines.append(f"batch {p['batch']:>3} ctx {p['context']:>5} {p['tokens_per_s']:8.1f} tok/s      on paper "
                     f"{p['on_paper_tokens_per_s']:.1f} tok/s ({100 * p['fraction_of_roofline']:.0f}%)")
    for role, ks in (r.get("kernels") or {}).items():
        lines.append(f"{role} products:")
        lines += [f"  {x}" for x in ks]
    lines.append(f"speculative γ={sp['gamma']}    {sp['speculative_tokens_per_s']:8.1f} tok/s vs plain "
                 f"{sp['plain_tokens_per_s']:.1f} (x{sp['speedup']:.2f}); α={sp['alpha']:.2f}, "
                 f"{sp['tokens_per_pass']:.2f} tokens/pass; on paper x{sp['on_paper_speedup']:.2f}")
    return lines
