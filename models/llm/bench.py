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
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from corpus import jsonio
from models import analytics
from corpus.errors import InputError
from models.llm.model import DTYPES, RANDOM_WEIGHTS_NOTE, LlamaConfig, Transformer, load_model, read_checkpoint_config
from models.llm.speculative import (PlainDecoder, SpeculativeDecoder, StepRunner, compile_blocks, compile_step,
                                    decode_one_token, eager_blocks, forward_positions, sync)
from models.measurements import PAIR_SCHEMA, slow_cause

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


class Progress:
    """One status line on stderr: [k/n] what is running, seconds so far (stdout stays for --json)."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.k, self.t0, self.enabled = total, 0, time.perf_counter(), enabled

    def __call__(self, what: str) -> None:
        self.k += 1
        if self.enabled:
            bar = "#" * self.k + "." * max(self.total - self.k, 0)
            print(f"bench [{bar}] {self.k}/{self.total} {what} ({time.perf_counter() - self.t0:.0f} s)",
                  file=sys.stderr, flush=True)


# --- the device ---------------------------------------------------------------------------------
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
    from models.llm.formats import compute_dtype
    return compute_dtype(name)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


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


def memory_needed(target: LlamaConfig, draft: LlamaConfig, dtype: torch.dtype, batch: int, seq: int,
                  tokens_per_step: int = 1) -> int:
    """Weights of both models + the target's KV cache for `batch` x `seq` + the step's largest activations."""
    item = torch.empty((), dtype=dtype, device="meta").element_size()
    weights = target.weight_bytes(dtype) + draft.weight_bytes(dtype)
    kv = batch * seq * target.kv_bytes_per_token(dtype)
    rows = batch * tokens_per_step
    # logits (+ fp32 probabilities) and the widest activation (SwiGLU's 2 x ffn), a few live at once
    act = rows * (target.vocab_size * (item + 8) + 4 * 2 * target.intermediate_size * 4) \
        + batch * target.n_heads * tokens_per_step * seq * 4
    return weights + kv + act


def check_fits(s: BenchSettings, target: LlamaConfig, draft: LlamaConfig, dtype, device) -> dict:
    """Estimate before allocating anything: the largest batch of the sweep must fit beside both models."""
    free = available_bytes(device)
    seq_sweep = sweep_seq_len(s.context)
    need = max(memory_needed(target, draft, dtype, b, seq_sweep) for b in s.batches)
    need_e2e = memory_needed(target, draft, dtype, 1, e2e_seq_len(s), s.gamma + 1)
    need = max(need, need_e2e)
    margin = 1.10 if device.type == "cpu" else 1.05
    if need * margin > free:
        b = max(s.batches)
        raise InputError(f"{target.name} + {draft.name} in {s.dtype} with batch {b} x {s.context} context needs "
                         f"about {need / 1e9:.1f} GB; {device.type} has {free / 1e9:.1f} GB free "
                         "(use a smaller --batch/--context or model)")
    return {"estimated_bytes": int(need), "free_bytes_before": int(free)}


def sweep_seq_len(context: int) -> int:
    # room for the step's own token; a multiple of 16 keeps attention kernels on aligned paths
    return -(-(context + 1) // 16) * 16


def e2e_seq_len(s: BenchSettings) -> int:
    return -(-(s.prompt_len + s.tokens + 2 * (s.gamma + 1)) // 16) * 16


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
            except Exception as exc:  # noqa: BLE001 - a failed compile/capture must not lose a one-shot GPU run
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
        from models import hardware
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


def run_bench(s: BenchSettings, progress: bool = True) -> dict:
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
    step = Progress(6 + len(s.batches), enabled=progress)
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
    out["kernels"] = {role: kernel_lines(m) for role, m in (("target", target), ("draft", draft))
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
    from corpus.atomic import write_text_atomic
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


# --- a checkpoint pair, measured live: the hardware panel's figures and `spectable bench --pair` ------------


@torch.no_grad()
def measure_pair(target: Transformer, draft: Transformer | None, prompt_ids: list[int], *, gamma: int = 4,
                 tokens: int = 64, temperature: float = 1.0, reps: int = 7, seed: int = 0, dtype_name: str = "fp32",
                 progress=None, drafter: str = "chain", compile_draft: bool | None = None) -> dict:
    """Plain vs speculative tokens/s of this pair on its device from interleaved runs, and beside the measured
    speed-up the formula's prediction from the same runs' measured costs: c and the verify ratio timed inside the
    speculative runs (the draft's and the target's share of each pass) against the plain runs' time per token,
    and α counted there. Also each forward timed alone (warm caches: faster than inside a run, where the two
    models evict each other's weights) and the memory roofline of the same shapes. drafter: "chain" (the draft
    model) or "lookup" (guesses copied from the text: no draft model). compile_draft (None: on a CPU) runs the
    draft's one-token step as one compiled graph (models.llm.speculative.compile_step), eagerly if that fails,
    and the file says which. Leaves both models' caches set up for
    the run's length: a caller that keeps its own caches sets them up again (measure_llama_pair does)."""
    from models.llm.speculative import ModelProposer
    say = progress or (lambda _s: None)
    device, dtype = target.device, target.act_dtype
    if not 1 <= gamma <= 64 or tokens < 2 or reps < 1 or not prompt_ids:
        raise InputError("need 1 <= gamma <= 64, tokens >= 2, reps >= 1 and a prompt of at least one token")
    from models.drafters import LEAN_MODEL, kind, lean_names
    if drafter not in lean_names():
        raise InputError(f"a checkpoint pair runs the {' or the '.join(lean_names())} drafter, not {drafter!r}")
    uses_draft = kind(drafter).lean == LEAN_MODEL
    if uses_draft and draft is None:
        raise InputError("no draft model: measure the lookup drafter (--drafter lookup), or give a draft")
    P = len(prompt_ids)
    seq = -(-(P + tokens + 2 * (gamma + 1)) // 16) * 16
    target.setup_caches(1, seq)
    if uses_draft:
        draft.setup_caches(1, seq)
    tok1 = torch.tensor([[prompt_ids[-1]]], device=device)
    pos1 = torch.tensor([P], device=device)
    toks_k = torch.tensor([prompt_ids[-1:] * (gamma + 1)], device=device)
    pos_k = torch.arange(P, P + gamma + 1, device=device)
    notes: list[str] = []
    compiled = None
    if compile_draft is None:
        # on a CPU, unless the draft's passes already run as one graph (models.llm.onnx_step, measured at load)
        compile_draft = device.type == "cpu" and not (uses_draft and draft.graph_rows[0])
    if uses_draft and compile_draft:
        say("compiling the draft model's forward")
        compiled, why = compile_step(draft)
        if why:
            notes.append(why)
    say("copy bandwidth")
    bw = measure_copy_bandwidth(device, 3)
    B = bw["GB_per_s"] * 1e9
    say("target and draft forwards")
    t_target = time_step(StepRunner(_decode_fn(target)), (tok1, pos1), reps, device)
    t_verify = time_step(StepRunner(_forward_fn(target)), (toks_k, pos_k), reps, device)
    t_draft = time_step(StepRunner(_decode_fn(draft)), (tok1, pos1), reps, device) if uses_draft else 0.0
    if compiled is not None:
        t_compiled = time_step(compiled, (tok1, pos1), reps, device)
        if t_compiled < t_draft:
            t_draft = t_compiled
        else:                               # measured slower than the draft's own pass: not used
            notes.append(f"the compiled draft pass ({t_compiled * 1e3:.2f} ms) was slower than its eager pass "
                         f"({t_draft * 1e3:.2f} ms): not used")
            compiled = None

    def proposer():
        if uses_draft:
            return ModelProposer(draft, compiled=compiled)
        from models.llm.speculative import lookup_proposer
        return lookup_proposer(target.config.vocab_size)

    def speculative(k: int) -> SpeculativeDecoder:
        return SpeculativeDecoder(target, None, gamma=gamma, temperature=temperature, seed=seed + k,
                                  proposer=proposer())
    say(f"plain and speculative decoding, {tokens} tokens, {reps} runs each")
    runs = {"plain": [], "spec": [], "draft": [], "verify": [], "rest": [], "formula": []}
    spec_written, records, same = 0, [], True
    PlainDecoder(target, temperature=temperature, seed=seed).generate(prompt_ids, min(tokens, 4))   # warm-up
    speculative(0).generate(prompt_ids, 2 * gamma)
    for k in range(reps):
        # alternate the order, so a change in the machine's load does not favour one side
        for side in (("plain", "spec") if k % 2 == 0 else ("spec", "plain")):
            if side == "plain":
                dec = PlainDecoder(target, temperature=temperature, seed=seed + k)
                plain_ids = dec.generate(prompt_ids, tokens)
                runs["plain"].append(dec.decode_seconds / (tokens - 1))
            else:
                sd = speculative(k)
                res = sd.generate(prompt_ids, tokens)
                written = sum(len(r.tokens) for r in res.records)
                guesses = max(sum(r.gamma for r in res.records), 1)
                n_pass = max(len(res.records), 1)
                runs["spec"].append(sd.decode_seconds / written)
                runs["draft"].append(sd.draft_seconds / guesses)
                runs["verify"].append(sd.verify_seconds / n_pass)
                runs["rest"].append((sd.decode_seconds - sd.draft_seconds - sd.verify_seconds) / n_pass)
                run_tpp = written / n_pass
                run_costs = (guesses * sd.draft_seconds / guesses + sd.verify_seconds) / n_pass   # s per pass
                spec_written += written
                records += res.records
        # this round's formula, its costs over this round's plain seconds per token
        runs["formula"].append(run_tpp * runs["plain"][-1] / run_costs)
        if temperature == 0:
            same = same and res.tokens == plain_ids
    med = {k: _median(v) for k, v in runs.items()}
    plain_tps, spec_tps = 1 / med["plain"], 1 / med["spec"]
    tested = sum(min(r.n_accepted + 1, r.gamma) for r in records)
    alpha = sum(r.n_accepted for r in records) / max(tested, 1)
    tpp = spec_written / max(len(records), 1)
    guesses_per_pass = sum(r.gamma for r in records) / max(len(records), 1)
    c = t_draft / t_target
    c_run, v_run = med["draft"] / med["plain"], med["verify"] / med["plain"]
    formula_run = med["formula"]
    pass_s = guesses_per_pass * med["draft"] + med["verify"] + med["rest"]
    tc = target.config
    from models.llm.formats import streamed_bytes
    t_bytes = streamed_bytes(target) + P * tc.kv_bytes_per_token(dtype)
    d_bytes = (streamed_bytes(draft) + P * draft.config.kv_bytes_per_token(dtype)) if uses_draft else 0
    c_paper = d_bytes / t_bytes
    out = {
        "schema": PAIR_SCHEMA,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "device": {"type": device.type, "name": device_name(device), "torch": torch.__version__,
                   "threads": torch.get_num_threads(), "cpu_capability": torch.backends.cpu.get_cpu_capability()},
        "dtype": dtype_name, "drafter": drafter,
        "draft_step": None if not uses_draft else ("compiled" if compiled else "eager"), "notes": notes,
        "models": {"target": model_summary(tc, dtype) | {"streamed_bytes": streamed_bytes(target)},
                   "draft": (model_summary(draft.config, dtype) | {"streamed_bytes": streamed_bytes(draft)})
                   if uses_draft else None},
        "settings": {"gamma": gamma, "tokens": tokens, "temperature": temperature, "reps": reps, "seed": seed,
                     "prompt_tokens": P},
        "copy_bandwidth_GBps": bw["GB_per_s"],
        "target_ms": t_target * 1e3, "draft_ms": t_draft * 1e3, "verify_ms": t_verify * 1e3,
        "verify_ratio": t_verify / t_target, "c": c,
        "alpha": alpha, "tokens_per_pass": tpp, "guesses_per_pass": guesses_per_pass, "passes": len(records),
        "tokens_written": spec_written,
        "plain_tokens_per_s": plain_tps, "speculative_tokens_per_s": spec_tps, "speedup": spec_tps / plain_tps,
        "same_tokens_as_plain": same if temperature == 0 else None,
        "in_run": {
            "plain_ms_per_token": med["plain"] * 1e3, "draft_ms_per_guess": med["draft"] * 1e3,
            "verify_ms_per_pass": med["verify"] * 1e3, "rest_ms_per_pass": med["rest"] * 1e3,
            "c": c_run, "verify_ratio": v_run,
            "share_of_pass": {"draft": guesses_per_pass * med["draft"] / pass_s, "verify": med["verify"] / pass_s,
                              "rest": med["rest"] / pass_s},
            "speedup_formula": formula_run, "measured_over_formula": (spec_tps / plain_tps) / formula_run,
        },
        "on_paper": {
            "target_ms": t_bytes / B * 1e3, "draft_ms": d_bytes / B * 1e3, "c": c_paper, "verify_ratio": 1.0,
            "tokens_per_pass": tokens_per_pass(alpha, gamma),
            "plain_tokens_per_s": B / t_bytes,
            "speedup": speedup_on_paper(alpha, gamma, c_paper, 1.0),
            "speedup_from_measured_costs": formula_run,
            "speedup_from_forwards_alone": speedup_on_paper(alpha, gamma, c, t_verify / t_target),
            "fraction_of_roofline_plain": (t_bytes / B) / med["plain"],
        },
        "method": (f"{device.type}, {dtype_name}, {torch.get_num_threads()} threads, {drafter} drafter: {reps} runs "
                   f"each of plain and speculative decoding ({tokens} tokens after the prompt, temperature "
                   f"{temperature}, decode phase timed, prefill excluded, order alternating, one warm-up run each), "
                   "median seconds per token; α and tokens per pass over all speculative runs. The formula "
                   "tokens per pass / (g·c + v) is fed with each round's own costs: c = the drafter's seconds per "
                   "guess and v = the verify pass's seconds (forward and rule), each over the same round's plain "
                   "seconds per token, g the guesses per pass, then the median over rounds; what it leaves out is "
                   "the rest of the pass (in_run.rest). "
                   f"Forwards alone: one of 1 token and of γ+1 = {gamma + 1} at position {P}, median of {reps}. On "
                   "paper: the memory roofline, bytes a pass reads (the matrices as stored, once; the KV cache so "
                   "far) / the copy bandwidth measured here"),
    }
    if device.type == "cpu":
        try:
            out["device"]["load_average_1min"] = os.getloadavg()[0]
        except OSError:
            pass
        say("this computer's roofline")
        out["machine"] = machine_section(target, draft if uses_draft else None, t_target, t_verify, t_draft, alpha,
                                         gamma, c_run, v_run)
        out["measured"] = {"read_bandwidth_Bps": out["machine"]["read_Bps"], "flops": out["machine"]["flops"]}
        out["kernels"] = {role: kernel_lines(m) for role, m in (("target", target), ("draft", draft))
                          if m is not None and getattr(m, "kernel_report", None)}
        out["cause"] = slow_cause(out)
    return out


def machine_section(target, draft, t_target: float, t_verify: float, t_draft: float, alpha: float, gamma: int,
                    c_run: float, v_run: float) -> dict:
    """This computer's roofline for the target (models.llm.machine) and what it predicts beside what was
    measured: checking γ+1 tokens against one, and the speed-up at each γ (with c as measured alone)."""
    from models.llm import machine
    roof = machine.measure(target, t_target)
    k = gamma + 1
    c = t_draft / t_target if draft is not None else 0.0
    speed = machine.predicted_speedups(roof, min(max(alpha, 0.0), 1.0), c)
    best = max(speed, key=speed.get)
    return roof.as_dict() | {
        "rows": k, "predicted_verify_ratio": roof.verify_ratio(k), "measured_verify_ratio": t_verify / t_target,
        "predicted_speedup": {str(g): v for g, v in speed.items()}, "best_gamma": best,
        "best_speedup": speed[best], "draft_pass_ms": t_draft * 1e3,
        "in_run_verify_ratio": v_run, "in_run_c": c_run}


def kernel_lines(model) -> list[str]:
    """Which path each of a model's products took, and what the alternatives cost (µs a product, 1 | γ+1 rows)."""
    r = model.kernel_report
    lines = []
    p = r.get("pass") or {}
    if p.get("us"):
        ways = ", ".join(f"{w} {u['1'] / 1e3:.2f} | {u[str(max(int(x) for x in u))] / 1e3:.2f} ms"
                         for w, u in p["us"].items())
        lines.append(f"the pass: {p['one_position']} for one position, {p['several_positions']} for several ({ways})")
    for g in r["groups"]:
        alts = ", ".join(f"{n} {'|'.join(f'{t:.0f}' for t in us.values())}" for n, us in g["us"].items())
        head = " head" if g["head"] else ""
        lines.append(f"{g['matrices']} × {g['shape'][0]}×{g['shape'][1]}{head} {g['format']}: {g['one_row']} for one "
                     f"row, {g['several_rows']} for several" + (f" ({alts} µs)" if alts else ""))
    lines.append(f"threads: {r['threads']}" + (" (" + ", ".join(f"{t}: {sum(v) / 1e3:.2f} ms"
                                                              for t, v in r['thread_pass_us'].items()) + ")"
                                              if r.get("thread_pass_us") else ""))
    return lines


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2] if xs else float("nan")


def tokens_per_pass(alpha: float, gamma: int) -> float:
    return analytics.tokens_per_pass_formula(min(max(alpha, 0.0), 1.0), gamma)


def measure_llama_pair(pair, prompt_ids: list[int], **kw) -> dict:
    """measure_pair on a models.llm.pair.LlamaPair, holding its lock and restoring its caches afterwards."""
    with pair.lock:
        try:
            r = measure_pair(pair.target, pair.draft, prompt_ids, **kw)
        finally:
            for m in (pair.target, pair.draft):
                if m is not None:
                    m.setup_caches(1, pair.window)
            pair.owner = None
    r["pair"] = {"name": pair.name, **{k: _shown_source(v) for k, v in pair.sources.items()},
                 "random_weights": pair.random_weights}
    return r


def _shown_source(label):
    """A checkpoint as a measurement file names it: the shipped pair's name or the file/folder's own name, never
    the absolute path of this machine's folders."""
    from corpus.validate import shown_name
    return None if label is None else shown_name(Path(str(label)).name)      # a name not UTF-8, escaped


def pair_summary_lines(r: dict) -> list[str]:
    p, d, run = r["on_paper"], r["device"], r["in_run"]
    from models.drafters import LEAN_MODEL, kind_of
    chain = kind_of(r.get("drafter", "chain")).lean == LEAN_MODEL     # a draft model ran: its own figures
    lines = [
        f"{r['pair']['name'] if 'pair' in r else ''} on {d['name']} · {r['dtype']} · {d['threads']} threads · "
        f"{r.get('drafter', 'chain')} drafter · torch {d['torch']}",
        f"target, one pass       {r['target_ms']:8.2f} ms     on paper {p['target_ms']:.3f} ms "
        f"({100 * p['fraction_of_roofline_plain']:.0f}% of the roofline in plain decoding)"]
    if chain:
        lines += [f"draft, one guess       {r['draft_ms']:8.2f} ms     on paper {p['draft_ms']:.3f} ms",
                  f"c = draft / target     {r['c']:8.3f}        on paper {p['c']:.3f}   in the runs {run['c']:.3f}"]
    lines += [
        f"verify γ+1 / verify 1  {r['verify_ratio']:8.2f}        on paper {p['verify_ratio']:.2f}   in the runs "
        f"{run['verify_ratio']:.2f}",
        f"α (measured)           {r['alpha']:8.3f}",
        f"tokens per pass        {r['tokens_per_pass']:8.2f}        formula {p['tokens_per_pass']:.2f}",
        f"plain                  {r['plain_tokens_per_s']:8.1f} tokens/s   on paper {p['plain_tokens_per_s']:.0f}",
        f"speculative γ={r['settings']['gamma']:<2}       {r['speculative_tokens_per_s']:8.1f} tokens/s",
        f"speedup                {r['speedup']:8.2f}×       formula with the runs' costs "
        f"{p['speedup_from_measured_costs']:.2f}× ({100 * run['measured_over_formula']:.0f}% of it); on paper "
        f"{p['speedup']:.2f}×",
        f"a pass                 draft {100 * run['share_of_pass']['draft']:.0f}% · verify "
        f"{100 * run['share_of_pass']['verify']:.0f}% · the rest {100 * run['share_of_pass']['rest']:.0f}%"]
    m = r.get("machine")
    if m:
        k = m["rows"]
        lines += [
            f"this computer          reads {m['read_Bps'] / 1e9:.1f} GB/s (the model's {m['weight_bytes'] / 1e6:.1f} MB), "
            f"multiplies {m['flops'] / 1e9:.1f} GFLOP/s: ridge {m['ridge_ops_per_byte']:.1f} operations a byte "
            f"(H100: 295), {m['lanes_to_saturate']:.1f} lanes before the arithmetic is busy",
            f"fixed cost of a pass   {m['fixed_s'] * 1e3:8.2f} ms     of {m['pass_1_s'] * 1e3:.2f} ms (beyond the matrices' "
            "roofline)",
            f"verify {k} / verify 1     predicted {m['predicted_verify_ratio']:.2f}, measured "
            f"{m['measured_verify_ratio']:.2f} alone, {m['in_run_verify_ratio']:.2f} in the runs",
            "predicted speedup      " + ", ".join(f"γ={g} ×{v:.2f}" for g, v in m["predicted_speedup"].items()
                                                   if int(g) <= 8) + f"; best γ = {m['best_gamma']}"]
        cause = r.get("cause")
        if cause:
            lines.append(f"what holds it back     {cause['kind']}: drafting {cause['draft_turns']:.2f} target turns a "
                         f"pass, checking {cause['verify_extra_turns']:.2f} turns beyond one, a one-position pass "
                         f"{100 * cause['fixed_share']:.0f}% fixed cost")
    for role, ks in (r.get("kernels") or {}).items():
        lines.append(f"{role} products:")
        lines += [f"  {x}" for x in ks]
    lines.append(f"method: {r['method']}")
    return lines
