"""What each drafter buys and what it costs: tokens per pass counted from real runs, lanes per pass (tokens the
target computes at once), and the speed-up that gives under the hardware model (models.hardware's roofline).

    lanes per pass   chain, heads: γ + 1;  lookup: copied guesses + 1 (1 when nothing matched);  tree: nodes + 1
    pass time        max(weights + KV read, arithmetic at that many lanes)                 (models.hardware.pass_time)
                     + draft runs × c × one target step    (chain: γ runs; a tree from chain: one run per depth)
                     heads: their own weights read and their arithmetic inside the same pass; lookup: nothing
    speedup_model    tokens per pass × one target step / pass time        (the target alone writes 1 per step)

With lanes well under the device's ops-per-byte the pass costs one read of the weights, so a chain's speed-up is
the formula's (1 − α^(γ+1))/((1 − α)(γc + 1)) with the counted tokens per pass; a wide tree lights hundreds of
lanes and becomes arithmetic-bound.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corpus.errors import InputError
from models.acceptance import MAX_GAMMA
from corpus.build import default_table_path
from corpus.validate import parse_json, read_json
from models.drafters import DraftCost, kind, kinds, make_drafter
from models.hardware import get_model, pass_time, roofline
from models.heads import HeadModels
from models.sampler import SpeculativeSampler, make_sampler


@dataclass
class DrafterRun:
    """A seeded run of one drafter, counted pass by pass."""

    drafter: str
    label: str
    tokens: int                  # tokens written
    passes: int                  # target passes
    accepted: int                # candidates kept
    tested: int                  # candidates checked (a tree checks several per position)
    positions: int               # positions checked (a tree: once per depth its walk reached)
    filled: int                  # positions filled by a kept candidate
    lanes: int                   # lanes lit in all passes
    proposing_passes: int        # passes with at least one guess (lookup: the text had a match)
    gamma: int
    seed: int
    prompts: int = 1
    method: str = "sampler"
    extra: dict = field(default_factory=dict)

    @property
    def alpha(self) -> float:
        """Kept / checked candidates (for a chain: α)."""
        return self.accepted / self.tested if self.tested else float("nan")

    @property
    def alpha_per_position(self) -> float:
        """Chance a checked position is filled from the proposal (a chain: α; a tree: any of its candidates)."""
        return self.filled / self.positions if self.positions else float("nan")

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.passes if self.passes else float("nan")

    @property
    def lanes_per_pass(self) -> float:
        return self.lanes / self.passes if self.passes else float("nan")

    @property
    def proposing_share(self) -> float:
        return self.proposing_passes / self.passes if self.passes else float("nan")


def count_traces(traces, drafter_name: str, label: str, gamma: int, seed: int, prompts: int = 1) -> DrafterRun:
    """Totals over StepTraces of any drafter."""
    acc = tested = positions = filled = lanes = proposing = tokens = passes = 0
    for t in traces:                  # any iterable: a generator of passes is counted without keeping them
        passes += 1
        acc += t.n_accepted
        tested += len(t.tree.checks) if t.tree is not None else t.tested
        positions += t.tested
        filled += t.n_accepted
        lanes += t.lanes_lit
        proposing += bool(t.guesses)
        tokens += len(t.tokens_written)
    return DrafterRun(drafter_name, label, tokens, passes, acc, tested, positions, filled, lanes, proposing,
                      gamma, seed, prompts)


def drafter_generated(pair, settings, drafter, chars: int = 20_000, prefix: str = "\n", label: str | None = None
                      ) -> DrafterRun:
    """Run the sampler with `drafter` for about `chars` tokens from `prefix` (seeded by settings.seed)."""
    if not isinstance(chars, (int, np.integer)) or chars < 1 or chars > 10_000_000:
        raise InputError(f"chars must be between 1 and 10000000, got {chars!r}")
    sampler = make_sampler(pair, settings, drafter=drafter)          # the n-gram pair or a neural one
    sampler.reset(pair.encode(prefix))
    return count_traces(sampler.steps(chars), drafter.name, label or drafter.name, settings.gamma, settings.seed)


def speedup_model(tokens_per_pass: float, lanes_per_pass: float, cost, device="h100-sxm", model="llama-3.1-8b",
                  context: int = 0, c: float = 0.1) -> dict:
    """The speed-up over the target alone under the roofline (module docstring), with the pieces it is made of.
    cost: a models.drafters.DraftCost (draft runs per pass, heads per pass)."""
    if not (c >= 0 and np.isfinite(c)):
        raise InputError(f"c must be a finite number >= 0, got {c}")
    if not (np.isfinite(tokens_per_pass) and np.isfinite(lanes_per_pass)):
        raise InputError("tokens and lanes per pass must be finite (no passes were run)")
    m = get_model(model)
    step_ms = roofline(device, model, 1, context).ms_per_step
    head_params = cost.heads * m.medusa_head_params
    # Each head runs once a pass, on the hidden state of the last position kept: its weights are read and used once.
    target = pass_time(device, model, lanes_per_pass, context, extra_params=head_params, extra_ops=2.0 * head_params)
    draft_ms = cost.draft_runs * c * step_ms
    total = target["ms"] + draft_ms
    free = target["ms"]
    return {"speedup_model": tokens_per_pass * step_ms / total,
            "speedup_model_c0": tokens_per_pass * step_ms / free,
            "target_step_ms": step_ms, "pass_ms": total, "target_pass_ms": target["ms"],
            "read_ms": target["read_ms"], "arithmetic_ms": target["arithmetic_ms"], "bound": target["bound"],
            "draft_ms": draft_ms, "draft_runs_per_pass": cost.draft_runs, "heads_per_pass": cost.heads,
            "head_params": head_params, "device": device, "model": model, "context": context, "c": c,
            "cost_note": cost.note}


def runs_on(pair, name: str, opts: dict) -> bool:
    """Whether a drafter of these options can run on the pair (EAGLE's tree needs a network's features)."""
    if kind(name).problem_on(pair):
        return False
    try:
        make_drafter(name, pair, **opts)
    except InputError:
        return False
    return True


def default_specs(gamma: int) -> list[tuple[str, str, dict]]:
    """The drafters compared by default: (label, drafter name, make_drafter options): every registered drafter's
    compared variants at γ (models.drafters.registry)."""
    return [(label, k.name, opts) for k in kinds() for _key, label, opts in k.compared(gamma)]


def compare_drafters(pair, settings, prompts, tokens_per_prompt: int = 400, specs=None, device="h100-sxm",
                     model="llama-3.1-8b", context: int = 0, c: float = 0.1) -> list[dict]:
    """Every drafter on the same prompts, same seed and settings: tokens per pass against lanes per pass (what each
    buys and what it costs), with α and the roofline speed-up. One dict per drafter (plain numbers, for plots)."""
    if not prompts:
        raise InputError("give at least one prompt")
    if not isinstance(tokens_per_prompt, (int, np.integer)) or not 1 <= tokens_per_prompt <= 1_000_000:
        raise InputError(f"tokens per prompt must be 1..1000000, got {tokens_per_prompt!r}")
    ids = [pair.encode(pr) for pr in prompts]
    out = []
    for label, name, opts in (specs or [sp for sp in default_specs(settings.gamma) if runs_on(pair, sp[1], sp[2])]):
        drafter = make_drafter(name, pair, **opts)
        sampler = SpeculativeSampler(pair, settings, drafter=drafter)
        def passes():
            for start in ids:
                sampler.reset(start)
                yield from sampler.steps(tokens_per_prompt)
        run = count_traces(passes(), name, label, settings.gamma, settings.seed, len(ids))
        model_fig = speedup_model(run.tokens_per_pass, run.lanes_per_pass, drafter.cost(settings.gamma), device,
                                  model, context, c)
        out.append({"label": label, "drafter": name, "options": dict(opts), "tokens_per_pass": run.tokens_per_pass,
                    "lanes_per_pass": run.lanes_per_pass, "alpha": run.alpha,
                    "alpha_per_position": run.alpha_per_position, "passes": run.passes, "tokens": run.tokens,
                    "speedup_model": model_fig["speedup_model"], "bound": model_fig["bound"]})
    return out


# ---- the long runs: every drafter's tokens and lanes per pass as properties of the pair ----------------------------
# A short run's count speaks for that run; what a drafter buys and costs is measured on a long one. Running every
# drafter 20,000 tokens takes minutes (a wide tree computes a hundred rows a pass), so the figures for the default
# settings are counted once with `spectable drafters` and shipped beside the tables (corpus/tables/X-drafters.json);
# the program uses them only when they were counted on the same table (file digests) at the same settings.

LONG_RUN_SCHEMA = "spectable-drafters/1"
LONG_RUN_CHARS = 20_000
LONG_RUN_PREFIX = "\n"          # a run from the start of a paragraph, as `spectable alpha` runs


def long_run_specs(gamma: int) -> list[tuple[str, str, str, dict]]:
    """(key, label, drafter, make_drafter options) of the drafters the long runs compare: each registered drafter's
    variants (models.drafters.registry): the three one-per-position drafters, the table's default tree (2 wide,
    2 deep) and SpecInfer-sized trees (2 and 3 wide, γ deep, from the chain; 2 wide from the heads)."""
    return [(key, label, k.name, opts) for k in kinds() for key, label, opts in k.variants(gamma)]


_ARRAYS = ("bi_indptr", "bi_indices", "bi_counts", "tri_keys", "tri_indptr", "tri_indices", "tri_counts")


def _digest(vocab, arrays) -> str:
    h = hashlib.sha256()
    h.update("\x00".join(vocab).encode("utf-8"))
    for name, arr in arrays:
        arr = np.ascontiguousarray(arr)
        h.update(f"{name}:{arr.dtype}:{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def table_files(pair) -> dict:
    """What a long run depends on: the counts of the pair and of its heads, by digest (of the vocabulary and every
    count array, not of the files: a table saved again with another manifest counts the same); heads None when the
    pair has no heads table."""
    t = getattr(pair, "tables", None)
    if t is None:              # a network pair: its checkpoints (models.llm.pair.LlamaPair.key), no heads table
        return {"table": pair.key, "heads": None}
    out = {"table": _digest(pair.vocab, [("unigram", t.unigram)] + [(n, getattr(t, n)) for n in _ARRAYS]),
           "heads": None}
    try:
        heads = HeadModels.for_pair(pair)
    except InputError:
        return out
    out["heads"] = _digest(heads.tables.vocab, [(f"{k}.{n}", getattr(h, n)) for k, h in sorted(heads.tables.heads.items())
                                                for n in _ARRAYS])
    return out


def long_runs(pair, settings, chars: int = LONG_RUN_CHARS, specs=None, progress=None) -> dict:
    """Every drafter of long_run_specs, one seeded run of `chars` tokens each from a paragraph start, counted:
    the document `spectable drafters` writes (schema spectable-drafters/1). progress(label) is called per drafter."""
    out = []
    for key, label, name, opts in (specs or [sp for sp in long_run_specs(settings.gamma) if runs_on(pair, sp[2], sp[3])]):
        if progress is not None:
            progress(label)
        drafter = make_drafter(name, pair, **opts)
        drafter.validate(settings.gamma)
        run = drafter_generated(pair, settings, drafter, chars=chars, prefix=LONG_RUN_PREFIX, label=label)
        cost = drafter.cost(settings.gamma)
        out.append({"key": key, "label": label, "drafter": name, "options": dict(opts), "tokens": run.tokens,
                    "passes": run.passes, "tokens_per_pass": run.tokens_per_pass, "lanes_per_pass": run.lanes_per_pass,
                    "alpha": run.alpha, "alpha_per_position": run.alpha_per_position,
                    "cost": {"draft_runs": cost.draft_runs, "heads": cost.heads}})
    s = settings
    return {"schema": LONG_RUN_SCHEMA, "files": table_files(pair),
            "settings": {"gamma": s.gamma, "temperature": s.temperature, "top_k": s.top_k, "top_p": s.top_p,
                         "seed": s.seed, "chars": int(chars), "prefix": LONG_RUN_PREFIX},
            "method": "models.drafter_analytics.long_runs: SpeculativeSampler with each drafter, one seeded run of "
                      "`chars` tokens each from a paragraph start; tokens per pass = tokens / passes, lanes per pass "
                      "= lanes lit / passes (γ + 1 a chain pass, copied + 1 lookup, nodes + 1 a tree)",
            "points": out}


def _number(d: dict, key: str, lo: float, hi: float, whole: bool = False):
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or not lo <= v <= hi \
            or (whole and float(v) != int(v)):
        raise InputError(f"{key} must be a {'whole ' if whole else ''}number in {lo:g}..{hi:g}, not {v!r}"[:200])
    return int(v) if whole else float(v)


LONG_RUN_MAX_BYTES = 1_000_000


def parse_long_runs(text: str | bytes, where: str = "the long-run file") -> dict:
    """A long-run document read back: InputError unless it is bounded JSON (corpus.validate) and every field has its
    type, is finite and in range."""
    doc = parse_json(text, where, finite=True)
    if not isinstance(doc, dict) or doc.get("schema") != LONG_RUN_SCHEMA:
        raise InputError(f"not a {LONG_RUN_SCHEMA} document")
    s, files, pts = doc.get("settings"), doc.get("files"), doc.get("points")
    if not isinstance(s, dict) or not isinstance(files, dict) or not isinstance(pts, list) or not pts:
        raise InputError("needs settings, files and points")
    settings = {"gamma": _number(s, "gamma", 1, MAX_GAMMA, True), "temperature": _number(s, "temperature", 0, 100),
                "top_k": _number(s, "top_k", 0, 1e9, True), "top_p": _number(s, "top_p", 0, 1),
                "seed": _number(s, "seed", 0, 2**63, True), "chars": _number(s, "chars", 1, 1e8, True),
                "prefix": s.get("prefix") if isinstance(s.get("prefix"), str) else ""}
    for k in ("table", "heads"):
        if not (files.get(k) is None or isinstance(files.get(k), str)):
            raise InputError(f"files.{k} must be a digest")
    points = []
    for p in pts:
        if not isinstance(p, dict) or not all(isinstance(p.get(k), str) for k in ("key", "label", "drafter")):
            raise InputError("every point needs a key, a label and a drafter")
        cost = p.get("cost") if isinstance(p.get("cost"), dict) else {}
        points.append({"key": p["key"], "label": p["label"], "drafter": p["drafter"],
                       "options": p.get("options") if isinstance(p.get("options"), dict) else {},
                       "tokens": _number(p, "tokens", 1, 1e9, True), "passes": _number(p, "passes", 1, 1e9, True),
                       "tokens_per_pass": _number(p, "tokens_per_pass", 1, 1e4),
                       "lanes_per_pass": _number(p, "lanes_per_pass", 1, 1e6),
                       "alpha": _number(p, "alpha", 0, 1), "alpha_per_position": _number(p, "alpha_per_position", 0, 1),
                       "cost": {"draft_runs": _number(cost, "draft_runs", 0, 1e4, True),
                                "heads": _number(cost, "heads", 0, 1e4, True)}})
    return {"schema": LONG_RUN_SCHEMA, "settings": settings, "files": dict(files), "points": points,
            "method": doc.get("method") if isinstance(doc.get("method"), str) else ""}


def long_run_path(pair):
    """Where the long runs of this pair's table are shipped: beside it, X.npz -> X-drafters.json."""

    base = Path(pair.path) if getattr(pair, "path", None) is not None else Path(default_table_path(pair.tokens))
    return base.with_name(base.stem + "-drafters.json")


def shipped_long_runs(pair, settings, path=None) -> dict | None:
    """The shipped long runs when they were counted on this very table (and heads table) at these settings (γ and
    row shaping), else None. A file that does not parse is an InputError naming it."""
    path = Path(path) if path is not None else long_run_path(pair)
    if not path.is_file():
        return None
    read_json(path, "a long-run file", LONG_RUN_MAX_BYTES, finite=True)      # size, depth, finiteness
    try:
        doc = parse_long_runs(path.read_bytes(), path.name)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except InputError as exc:
        msg = str(exc)
        raise InputError(msg if path.name in msg else f"{path.name}: {msg}") from None
    s = doc["settings"]
    if (s["gamma"], s["temperature"], s["top_k"], s["top_p"]) != (settings.gamma, settings.temperature,
                                                                  settings.top_k, settings.top_p):
        return None
    here = table_files(pair)
    if (doc["files"].get("table"), doc["files"].get("heads")) != (here["table"], here["heads"]):
        return None
    return doc


def with_speedups(points: list[dict], device="h100-sxm", model="llama-3.1-8b", context: int = 0, c: float = 0.1
                  ) -> list[dict]:
    """Each counted point with its speedup under the roofline for a device, model, context and c (cheap: the
    counting is the long part, the hardware model is arithmetic)."""
    out = []
    for p in points:
        cost = DraftCost(draft_runs=p["cost"]["draft_runs"], heads=p["cost"]["heads"])
        fig = speedup_model(p["tokens_per_pass"], p["lanes_per_pass"], cost, device, model, context, c)
        out.append(dict(p, speedup_model=fig["speedup_model"], bound=fig["bound"]))
    return out
