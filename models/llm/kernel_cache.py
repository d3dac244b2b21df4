"""The kernel choices remembered per machine: kernels.json in the user's cache folder (models.llm.tuning writes and
reads it). What a decision depends on besides the model is this machine: the CPU, its cores, torch (its BLAS and
oneDNN) and ONNX Runtime. Read back, everything is checked; a file that is missing, unreadable, of another schema
or with any value out of place is an empty cache (measured again, then rewritten), never an error. Timings taken
while other programs kept the cores busy are not written.
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import time
from pathlib import Path

import torch

from corpus import jsonio
from corpus.atomic import write_text_atomic
from corpus.errors import InputError
from corpus.resources import cache_dir
from corpus.validate import mapping, number, parse_json, read_regular_file
from models.llm.kernels import KERNELS, MANY_ROWS, ort_version

SCHEMA = "spectable-kernels/1"
STEPS = ("eager", "graph")         # a pass operation by operation in torch, or as one ONNX Runtime graph
ROWS = (1, MANY_ROWS)              # one row (plain decoding), γ + 1 rows at the default γ (checking guesses)
MAX_FILE_BYTES = 4 << 20
MAX_MACHINES = 8


# --- this machine ---------------------------------------------------------------------------------------------
def cpu_name() -> str:
    """The CPU's model name (lscpu's), what the kernel cache is keyed by and the measurement files name."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def machine_key() -> str:
    """What a decision depends on besides the shape: the CPU, its cores, torch (its BLAS and oneDNN) and
    ONNX Runtime."""
    return (f"{cpu_name()} | {os.cpu_count()} cores | {torch.backends.cpu.get_cpu_capability()} | "
            f"torch {torch.__version__} | onnxruntime {ort_version() or 'absent'}")


def env_threads() -> int | None:
    """SPECTABLE_THREADS=N: that many threads, not measured (the tests run on one, as every machine can)."""
    v = os.environ.get("SPECTABLE_THREADS", "")
    return int(v) if v.isdigit() and int(v) > 0 else None


def thread_counts() -> list[int]:
    cores = max(1, os.cpu_count() or 1)
    counts, t = [], 1
    while t < cores:
        counts.append(t)
        t *= 2
    return counts + [cores]


# --- the cache file -------------------------------------------------------------------------------------------
def cache_path() -> Path:
    return cache_dir() / "kernels.json"


def _check_times(value, where: str) -> dict[str, list[float]]:
    out = {}
    for name, ts in mapping(value, where).items():
        if name not in KERNELS:
            raise InputError(f"{where}: unknown kernel {name!r}")
        if not isinstance(ts, list) or len(ts) != len(ROWS):
            raise InputError(f"{where}.{name}: expected {len(ROWS)} timings")
        out[name] = [number(t, f"{where}.{name}", 0.0, 1e7, lo_open=True) for t in ts]
    return out


def _check_group(value, where: str) -> dict:
    d = mapping(value, where)
    times = _check_times(d.get("us"), f"{where}.us")
    for k in ("one", "many"):
        if d.get(k) not in times:
            raise InputError(f"{where}.{k}: not one of the kernels timed")
    steady = d.get("steady")
    if not isinstance(steady, list) or not steady or any(n not in times for n in steady):
        raise InputError(f"{where}.steady: not a list of the kernels timed")
    if d["one"] not in steady or d["many"] not in steady:
        raise InputError(f"{where}: a chosen kernel is not among the steady ones")
    return {"us": times, "one": d["one"], "many": d["many"], "steady": steady}


def _check_pass(value, where: str) -> dict:
    d = mapping(value, where)
    us = mapping(d.get("us"), f"{where}.us")
    times = {}
    for k, ts in us.items():
        if k not in STEPS or not isinstance(ts, list) or len(ts) != len(ROWS):
            raise InputError(f"{where}.us: {k!r} is not a way to run a pass with {len(ROWS)} timings")
        times[k] = [number(t, f"{where}.us.{k}", 0.0, 1e8, lo_open=True) for t in ts]
    for k in ("one", "many"):
        if d.get(k) not in times:
            raise InputError(f"{where}.{k}: not one of the ways timed")
    return {"us": times, "one": d["one"], "many": d["many"]}


def read_cache(path: Path | None = None) -> dict:
    """{machine: {"models": {signature: {group: {"us": {kernel: [µs per row count]}, "one": kernel, "many":
    kernel}}}, "threads": {signature: {count: [µs a pass, per row count]}}}}. A file that is missing, unreadable,
    of another schema or with any value out of place is an empty cache (rewritten after the next measurement),
    never an error: it only costs that measurement."""
    path = path or cache_path()
    try:
        raw = parse_json(read_regular_file(path, "the kernel cache", MAX_FILE_BYTES), str(path), finite=True)
        d = mapping(raw, str(path))
        if d.get("schema") != SCHEMA:
            return {}
        machines = {}
        for m, entry in mapping(d.get("machines", {}), "machines").items():
            entry = mapping(entry, f"machines[{m!r}]")
            models = {}
            for sig, e in mapping(entry.get("models", {}), "models").items():
                e = mapping(e, f"models[{sig!r}]")
                if not isinstance(e.get("refined"), bool):
                    raise InputError(f"models[{sig!r}].refined: expected true or false")
                models[sig] = {"refined": e["refined"],
                               "groups": {k: _check_group(v, f"models[{sig!r}][{k!r}]")
                                          for k, v in mapping(e.get("groups"), sig).items()}}
            threads = {}
            for sig, per in mapping(entry.get("threads", {}), "threads").items():
                threads[sig] = {}
                for c, ts in mapping(per, f"threads[{sig!r}]").items():
                    if not str(c).isdigit() or not isinstance(ts, list) or len(ts) != len(ROWS):
                        raise InputError(f"threads[{sig!r}][{c!r}]: expected a count and {len(ROWS)} timings")
                    threads[sig][str(int(c))] = [number(t, f"threads[{sig!r}]", 0.0, 1e8, lo_open=True) for t in ts]
            passes = {sig: _check_pass(v, f"passes[{sig!r}]") for sig, v in mapping(entry.get("passes", {}),
                                                                                      "passes").items()}
            machines[str(m)] = {"models": models, "threads": threads, "passes": passes}
        return machines
    except (FileNotFoundError, InputError, ValueError, TypeError):
        return {}


def _machine_busy_s() -> float | None:
    """Seconds of CPU time every process on this machine has used since boot (Linux /proc/stat), None elsewhere."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
        return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class OtherLoad:
    """How many cores other processes kept busy while we measured: timings taken beside other work serve this
    run but are not kept for the next (a quiet start measures again). Linux only; elsewhere taken as quiet."""

    def __init__(self):
        self.t0, self.own0, self.all0 = time.perf_counter(), time.process_time(), _machine_busy_s()

    def cores(self) -> float:
        now = _machine_busy_s()
        if now is None or self.all0 is None:
            return 0.0
        wall = max(time.perf_counter() - self.t0, 1e-3)
        return max(0.0, (now - self.all0) - (time.process_time() - self.own0)) / wall


QUIET_CORES = 0.5                  # others' busy cores above which a measurement is not cached


# Timings taken beside other work, kept for this process only: a second load in the same run reuses its choices
# (the same kernels, the same numbers for the same seed) without writing them for the next start.
_THIS_RUN: dict[Path, dict] = {}


def recall(path: Path | None = None) -> dict:
    """What this process measured without writing it, else the file (read_cache)."""
    path = path or cache_path()
    return _THIS_RUN[path] if path in _THIS_RUN else read_cache(path)


def keep_for_this_run(machines: dict, path: Path | None = None) -> None:
    _THIS_RUN[path or cache_path()] = machines


def write_cache(machines: dict, path: Path | None = None) -> None:
    path = path or cache_path()
    _THIS_RUN.pop(path, None)
    keep = dict(list(machines.items())[-MAX_MACHINES:])
    try:
        write_text_atomic(path, jsonio.dumps({"schema": SCHEMA, "written": _dt.datetime.now(_dt.timezone.utc)
                                              .isoformat(timespec="seconds"), "machines": keep}, indent=1) + "\n")
    except OSError:
        pass            # a cache that cannot be written costs the next start its measurement, nothing else
