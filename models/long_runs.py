"""The shipped neural pair's long run: its α and tokens per pass counted once over many tokens, shipped beside it.

A network runs a few hundred tokens a second on a CPU, so the table cannot count tens of thousands of tokens
while a class waits; 2,000 (models.analytics.LONG_RUN_TOKENS_NEURAL) leave α uncertain by about ±0.02. This file
holds `runs` independent seeded runs of the same settings (seeds 0 .. runs-1), counted by the same code as the
live run (models.llm.pair.alpha_generated), with a 95 % interval from the spread between runs. It belongs to
the checkpoints' exact weights (their SHA-256): a retrained pair never reads it.

    {"schema": "spectable-long-run/1", "pair": "nahan-target + nahan-draft", "weights_sha256": "…",
     "dtype": "fp32", "gamma": 4, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "runs": 20, "tokens_each": 2000,
     "tokens": 40043, "tested": …, "accepted": …, "passes": …, "alpha": 0.68, "alpha_ci95": 0.004,
     "tokens_per_pass": 2.66, "date": "2026-12-03", "command": "tools/neural_long_run.py"}

Read back like every file the program reads: type, range and finiteness checked once, here (InputError).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path

from corpus.errors import InputError
from corpus.resources import ASSETS
from models.acceptance import MAX_GAMMA
from corpus.validate import read_json

SCHEMA = "spectable-long-run/1"
SHIPPED = ASSETS / "models" / "nahan-long-run.json"
MAX_BYTES = 1 << 16


@dataclass(frozen=True)
class LongRun:
    pair: str
    weights_sha256: str
    dtype: str
    gamma: int
    temperature: float
    top_k: int
    top_p: float
    runs: int
    tokens_each: int
    tokens: int
    tested: int
    accepted: int
    passes: int
    alpha: float
    alpha_ci95: float
    tokens_per_pass: float
    date: str
    command: str

    def matches(self, gamma: int, temperature: float, top_k: int, top_p: float) -> bool:
        return (self.gamma, self.temperature, self.top_k, self.top_p) == (int(gamma), float(temperature), int(top_k),
                                                                          float(top_p))


_INTS = {"gamma": (1, MAX_GAMMA), "top_k": (0, 1_000_000), "runs": (1, 10_000), "tokens_each": (1, 1_000_000),
         "tokens": (1, 10**10), "tested": (1, 10**10), "accepted": (0, 10**10), "passes": (1, 10**10)}
_FLOATS = {"temperature": (1e-6, 3.0), "top_p": (0.01, 1.0), "alpha": (0.0, 1.0), "alpha_ci95": (0.0, 1.0),
           "tokens_per_pass": (1.0, 65.0)}
_TEXTS = {"pair": 200, "weights_sha256": 64, "dtype": 8, "date": 40, "command": 300}


def parse(raw, where: str) -> LongRun:
    """A LongRun from parsed JSON: every field present, of its type, finite and in range, the counts consistent."""
    if not isinstance(raw, dict):
        raise InputError(f"{where}: not a JSON object")
    if raw.get("schema") != SCHEMA:
        raise InputError(f"{where}: schema must be {SCHEMA!r}")
    fields = {"schema", *_INTS, *_FLOATS, *_TEXTS}
    unknown = sorted(set(raw) - fields)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}"[:200])
    out = {}
    for k, (lo, hi) in _INTS.items():
        v = raw.get(k)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise InputError(f"{where}: {k} must be a whole number from {lo} to {hi}")
        out[k] = v
    for k, (lo, hi) in _FLOATS.items():
        v = raw.get(k)
        # (a 400-digit integer is out of range before it is turned into a float, which it would overflow)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi or not math.isfinite(v):
            raise InputError(f"{where}: {k} must be a finite number from {lo:g} to {hi:g}")
        out[k] = float(v)
    for k, n in _TEXTS.items():
        v = raw.get(k)
        if not isinstance(v, str) or not v or len(v) > n:
            raise InputError(f"{where}: {k} must be text of 1 to {n} characters")
        out[k] = v
    if out["accepted"] > out["tested"] or out["passes"] > out["tokens"]:
        raise InputError(f"{where}: the counts disagree (accepted ≤ tested, passes ≤ tokens)")
    if abs(out["accepted"] / out["tested"] - out["alpha"]) > 1e-6:
        raise InputError(f"{where}: alpha is not accepted / tested")
    return LongRun(**out)


def load(path: str | Path) -> LongRun:
    return parse(read_json(path, "long-run file", MAX_BYTES), f"long-run file {path}")


def weights_digest(pair) -> str:
    """SHA-256 over the pair's weight files (target, then draft): what the shipped long run belongs to."""
    h = hashlib.sha256()
    for label in pair.sources.values():
        path = Path(label) if label else None
        if path is None or not path.exists():
            return ""
        for f in sorted(path.glob("*.safetensors")) if path.is_dir() else [path]:
            h.update(_file_digest(str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns).encode())
    return h.hexdigest()


@lru_cache(maxsize=8)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


SHIPPED_ERRORS: list[str] = []      # a shipped file that failed its checks (the live 2,000-token run is used)


@lru_cache(maxsize=1)
def _shipped() -> LongRun | None:
    try:
        return load(SHIPPED)
    except InputError as exc:
        if SHIPPED.exists():
            SHIPPED_ERRORS.append(str(exc))
        return None


def shipped_for(pair, settings, dtype: str = "fp32") -> LongRun | None:
    """The shipped long run when it is this pair's (same weights, dtype) at these settings; else None."""
    lr = _shipped()
    if lr is None or lr.dtype != dtype or not lr.matches(settings.gamma, settings.temperature, settings.top_k,
                                                         settings.top_p):
        return None
    return lr if weights_digest(pair) == lr.weights_sha256 else None


def measure(pair, settings, runs: int, tokens_each: int, dtype: str, date: str, command: str,
            progress=None) -> LongRun:
    """`runs` independent seeded runs (seeds 0 .. runs-1) of `tokens_each` tokens; α pooled, its 95 % interval
    from the spread of the runs' own α (1.96 × their standard deviation / √runs)."""

    acc = tested = tokens = passes = 0
    alphas = []
    for seed in range(runs):
        r = pair.generated_run(replace(settings, seed=seed), tokens_each)
        acc, tested, tokens, passes = acc + r.accepted, tested + r.tested, tokens + r.tokens, passes + r.passes
        alphas.append(r.accepted / max(r.tested, 1))
        if progress is not None:
            progress(seed + 1, runs)
    mean = sum(alphas) / len(alphas)
    sd = math.sqrt(sum((a - mean) ** 2 for a in alphas) / max(len(alphas) - 1, 1))
    return LongRun(pair=pair.name, weights_sha256=weights_digest(pair), dtype=dtype, gamma=settings.gamma,
                   temperature=float(settings.temperature), top_k=int(settings.top_k), top_p=float(settings.top_p),
                   runs=runs, tokens_each=tokens_each, tokens=tokens, tested=tested, accepted=acc, passes=passes,
                   alpha=acc / tested, alpha_ci95=1.96 * sd / math.sqrt(len(alphas)), tokens_per_pass=tokens / passes,
                   date=date, command=command)


def to_json(lr: LongRun) -> dict:
    return {"schema": SCHEMA, **asdict(lr)}
