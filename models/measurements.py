"""Measurement files (assets/measurements/*.json, what `spectable bench` writes, or any file a user points at):
read and validated once, here, for both readers: models.hardware (measured devices) and the hardware panel
(app.lesson.facts). A file that fails is one InputError line (the readers list it and skip it); in a file that
passes, every field either reader uses has the right type and a finite value in a sane range.

Checked where present (other keys are ignored): the bandwidth and arithmetic keys models.hardware reads, at
the top level, in `device` and in `measured` (bytes/s 1e6..1e16, ops/s 1e6..1e19; 1e308, Infinity and
1e-300 are refused), `device` (an object or a name) with name/label/type/torch/id text and memory 0..1e16 B,
`date`, `dtype`, `weights.note`, `settings.target/draft`, `models.target/draft.name` as text, and every figure
the panel shows (0, or 1e-12..1e15; null = not measured) with its `method` text. At most 4 MB, nested at
most 64 deep.
"""
from __future__ import annotations

import re
from pathlib import Path

from corpus.errors import InputError
from corpus.validate import mapping, number, read_json, text, type_name, whole
from models.acceptance import MAX_GAMMA

MAX_BYTES = 4 << 20

# Keys models.hardware looks up (value x scale = bytes/s or operations/s), in the order it tries them.
BANDWIDTH_KEYS = {"hbm_bandwidth_Bps": 1.0, "bandwidth_Bps": 1.0, "read_bandwidth_Bps": 1.0,
                  "copy_bandwidth_Bps": 1.0, "bandwidth_GBps": 1e9, "copy_bandwidth_GBps": 1e9,
                  "bandwidth_TBps": 1e12}
FLOP_KEYS = {"dense_bf16_flops": 1.0, "flops": 1.0, "matmul_flops": 1.0, "bf16_flops": 1.0,
             "matmul_tflops": 1e12, "bf16_tflops": 1e12, "tflops": 1e12}
MEMORY_KEYS = {"memory_bytes": 1.0, "memory_GB": 1e9}
BANDWIDTH_RANGE = (1e6, 1e16)       # bytes/s: a slow disk .. 100x today's HBM
FLOPS_RANGE = (1e6, 1e19)           # operations/s
MEMORY_RANGE = (0.0, 1e16)          # bytes
FIGURE_RANGE = (1e-12, 1e15)        # a shown figure (ms, tokens/s, GB/s, ratios): 0, or in this range

# The figures the hardware panel reads: group -> numeric fields.
FIGURES = {
    "copy_bandwidth": ("GB_per_s",),
    "matmul": ("TFLOP_per_s",),
    "decode_batch1": ("ms_per_token", "on_paper_ms", "fraction_of_roofline"),
    "verify_cost": ("tokens", "ratio", "on_paper_ratio"),
    "draft_cost": ("c", "on_paper_c"),
    "speculative": ("speedup", "on_paper_speedup", "alpha"),
}
POINT_FIELDS = ("batch", "context", "tokens_per_s", "on_paper_tokens_per_s", "fraction_of_roofline")
# A checkpoint pair measured live (`spectable bench --pair neural`, models.llm.bench.measure_pair): the figures at
# the top level and their roofline values under on_paper.
PAIR_SCHEMA = "spectable-pair-bench/4"            # /2 adds the in-run costs, the drafter, streamed bytes; /3 this
PAIR_SCHEMAS = ("spectable-pair-bench/1", "spectable-pair-bench/2", "spectable-pair-bench/3",   # computer's roofline,
                PAIR_SCHEMA)                      # kernels; /4 every drafter measured side by side (side_by_side)
SIDE_BY_SIDE = ("chain", "lookup", "heads", "eagle", "tree-chain", "tree-heads", "tree-eagle")
SIDE_FIGURES = ("alpha", "tokens_per_pass", "guesses_per_pass", "lanes_per_pass", "tokens_per_s",
                "draft_turns_per_pass", "verify_turns_per_pass", "rest_turns_per_pass", "c", "speedup",
                "speedup_formula", "measured_over_formula")
PAIR_MACHINE = ("read_Bps", "flops", "fixed_s", "pass_1_s", "ridge_ops_per_byte", "lanes_to_saturate",
                "predicted_verify_ratio", "measured_verify_ratio", "best_speedup", "draft_pass_ms")
PAIR_FIGURES = ("target_ms", "draft_ms", "verify_ms", "verify_ratio", "c", "alpha", "tokens_per_pass",
                "plain_tokens_per_s", "speculative_tokens_per_s", "speedup", "copy_bandwidth_GBps")
PAIR_ON_PAPER = ("target_ms", "draft_ms", "c", "verify_ratio", "tokens_per_pass", "plain_tokens_per_s", "speedup",
                 "speedup_from_measured_costs")
PAIR_IN_RUN = ("plain_ms_per_token", "draft_ms_per_guess", "verify_ms_per_pass", "rest_ms_per_pass", "c",
               "verify_ratio", "speedup_formula", "measured_over_formula")
PAIR_SETTINGS = {"gamma": (1, MAX_GAMMA), "tokens": (1, 10_000_000), "reps": (1, 100_000), "prompt_tokens": (0, 1 << 24)}
MAX_POINTS = 1000
DEVICE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def measurement_paths(folder: str | Path) -> list[Path]:
    """The measurement files of a folder, by name: every *.json but hidden ones (a temp file that a killed
    `bench` left, `.<name>.<random>.tmp.json`, is no measurement). A missing folder has none."""
    folder = Path(folder)
    try:
        return sorted(p for p in folder.glob("*.json") if not p.name.startswith(".")) if folder.is_dir() else []
    except OSError:
        return []


def read_measurement(path: str | Path) -> dict:
    """The JSON object of a measurement file, validated; InputError (one line) for anything else."""
    path = Path(path)
    return validate_measurement(read_json(path, "a measurement file", MAX_BYTES), path.name)


def validate_measurement(data, where: str) -> dict:
    mapping(data, f"{where}: the file")
    dev = data.get("device")
    if dev is not None and not isinstance(dev, (dict, str)):
        raise InputError(f"{where}: device must be an object or a name, not {type_name(dev)}")
    if isinstance(dev, str):
        text(dev, f"{where}: device")
    sections = [("", data)]
    if isinstance(dev, dict):
        sections.append(("device.", dev))
        for key in ("name", "label", "type", "torch", "cuda", "cpu_capability", "python"):
            _optional_text(dev, key, f"{where}: device.{key}")
        if dev.get("id") is not None and not DEVICE_ID.fullmatch(text(dev["id"], f"{where}: device.id")):
            raise InputError(f"{where}: device.id {dev['id']!r} is not a name of letters, digits, '.', '_', '-'")
        for key in MEMORY_KEYS:
            _optional_number(dev, key, f"{where}: device.{key}", *_scaled(MEMORY_RANGE, MEMORY_KEYS[key]))
    if data.get("measured") is not None:
        sections.append(("measured.", mapping(data["measured"], f"{where}: measured")))
    for prefix, section in sections:
        for keys, bounds in ((BANDWIDTH_KEYS, BANDWIDTH_RANGE), (FLOP_KEYS, FLOPS_RANGE)):
            for key, scale in keys.items():
                _optional_number(section, key, f"{where}: {prefix}{key}", *_scaled(bounds, scale))
    for key in ("date", "dtype", "schema"):
        _optional_text(data, key, f"{where}: {key}")
    for group, key in (("weights", "note"), ("settings", "target"), ("settings", "draft")):
        if data.get(group) is not None:
            _optional_text(mapping(data[group], f"{where}: {group}"), key, f"{where}: {group}.{key}", 2000)
    if data.get("models") is not None:
        models = mapping(data["models"], f"{where}: models")
        for role in ("target", "draft"):
            if models.get(role) is not None:
                _optional_text(mapping(models[role], f"{where}: models.{role}"), "name", f"{where}: models.{role}.name")
    if data.get("figures") is not None:
        _check_figures(mapping(data["figures"], f"{where}: figures"), where)
    if data.get("schema") in PAIR_SCHEMAS:
        _check_pair(data, where)
    return data


def _check_pair(data: dict, where: str) -> None:
    """Every figure of a pair measurement the panel and the tour read: finite and in range, or null."""
    for key in PAIR_FIGURES:
        _figure(data.get(key), f"{where}: {key}")
    if data.get("on_paper") is not None:
        paper = mapping(data["on_paper"], f"{where}: on_paper")
        for key in PAIR_ON_PAPER:
            _figure(paper.get(key), f"{where}: on_paper.{key}")
    if data.get("in_run") is not None:
        run = mapping(data["in_run"], f"{where}: in_run")
        for key in PAIR_IN_RUN:
            _figure(run.get(key), f"{where}: in_run.{key}")
    if data.get("machine") is not None:
        machine = mapping(data["machine"], f"{where}: machine")
        for key in PAIR_MACHINE:
            _figure(machine.get(key), f"{where}: machine.{key}")
        if machine.get("best_gamma") is not None:
            whole(machine["best_gamma"], f"{where}: machine.best_gamma", 1, MAX_GAMMA)
        for g, v in mapping(machine.get("predicted_speedup") or {}, f"{where}: machine.predicted_speedup").items():
            if not str(g).isdigit() or not 1 <= int(g) <= MAX_GAMMA:
                raise InputError(f"{where}: machine.predicted_speedup has a γ {g!r} outside 1..{MAX_GAMMA}")
            _figure(v, f"{where}: machine.predicted_speedup.{g}")
    if data.get("cause") is not None:
        cause = mapping(data["cause"], f"{where}: cause")
        if cause.get("kind") not in ("draft", "verify", "fixed"):
            raise InputError(f"{where}: cause.kind must be draft, verify or fixed")
        for key in ("draft_turns", "verify_extra_turns", "fixed_share"):
            _figure(cause.get(key), f"{where}: cause.{key}")
    for role, lines in mapping(data.get("kernels") or {}, f"{where}: kernels").items():
        if not isinstance(lines, list) or len(lines) > 200:
            raise InputError(f"{where}: kernels.{role} must be a list of at most 200 lines")
        for i, line in enumerate(lines):
            text(line, f"{where}: kernels.{role}[{i}]", 2000)
    _optional_text(data, "drafter", f"{where}: drafter")
    _optional_text(data, "draft_step", f"{where}: draft_step")
    notes = data.get("notes")
    if notes is not None:
        if not isinstance(notes, list) or len(notes) > 100:
            raise InputError(f"{where}: notes must be a list of at most 100 lines, not {type_name(notes)}")
        for i, line in enumerate(notes):
            text(line, f"{where}: notes[{i}]", 2000)
    settings = mapping(data.get("settings") or {}, f"{where}: settings")
    for key, (lo, hi) in PAIR_SETTINGS.items():
        if settings.get(key) is not None:
            whole(settings[key], f"{where}: settings.{key}", lo, hi)
    if settings.get("temperature") is not None:
        number(settings["temperature"], f"{where}: settings.temperature", 0.0, 1000.0)
    _optional_text(settings, "prompt", f"{where}: settings.prompt", 2000)
    dev = data.get("device")
    if isinstance(dev, dict) and dev.get("threads") is not None:
        whole(dev["threads"], f"{where}: device.threads", 1, 4096)
    _optional_text(data, "method", f"{where}: method", 4000)
    if data.get("pair") is not None:
        pair = mapping(data["pair"], f"{where}: pair")
        for key in ("name", "target", "draft"):
            _optional_text(pair, key, f"{where}: pair.{key}", 2000)
    if data.get("side_by_side") is not None:
        _check_side_by_side(mapping(data["side_by_side"], f"{where}: side_by_side"), f"{where}: side_by_side")


def _check_side_by_side(sbs: dict, where: str) -> None:
    """Every drafter measured side by side: known drafters, each figure finite and in range; the order names them."""
    _figure(sbs.get("plain_tokens_per_s"), f"{where}.plain_tokens_per_s")
    drafters = mapping(sbs.get("drafters"), f"{where}.drafters")
    for name, d in drafters.items():
        if name not in SIDE_BY_SIDE:
            raise InputError(f"{where}.drafters: unknown drafter {name!r}")
        d = mapping(d, f"{where}.drafters.{name}")
        for key in SIDE_FIGURES:
            _figure(d.get(key), f"{where}.drafters.{name}.{key}")
    order = sbs.get("order")
    if order is not None and (not isinstance(order, list) or any(n not in drafters for n in order)):
        raise InputError(f"{where}.order must list the drafters measured")
    settings = mapping(sbs.get("settings") or {}, f"{where}.settings")
    widths = settings.get("tree_widths")
    if widths is not None and (not isinstance(widths, list) or len(widths) > 16
                               or any(isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 16 for w in widths)):
        raise InputError(f"{where}.settings.tree_widths must be at most 16 whole numbers 1..16")
    _optional_text(sbs, "method", f"{where}.method", 4000)


def _check_figures(fig: dict, where: str) -> None:
    for group, fields in FIGURES.items():
        if fig.get(group) is None:
            continue
        g = mapping(fig[group], f"{where}: figures.{group}")
        for key in fields:
            _figure(g.get(key), f"{where}: figures.{group}.{key}")
        _optional_text(g, "method", f"{where}: figures.{group}.method", 4000)
    if fig.get("speculative") is not None:
        _optional_text(fig["speculative"], "alpha_note", f"{where}: figures.speculative.alpha_note", 4000)
    if fig.get("batch_sweep") is not None:
        sweep = mapping(fig["batch_sweep"], f"{where}: figures.batch_sweep")
        _optional_text(sweep, "method", f"{where}: figures.batch_sweep.method", 4000)
        points = sweep.get("points")
        if points is not None:
            if not isinstance(points, list) or len(points) > MAX_POINTS:
                raise InputError(f"{where}: figures.batch_sweep.points must be a list of at most {MAX_POINTS} objects")
            for i, p in enumerate(points):
                p = mapping(p, f"{where}: figures.batch_sweep.points[{i}]")
                for key in POINT_FIELDS:
                    _figure(p.get(key), f"{where}: figures.batch_sweep.points[{i}].{key}")


def _scaled(bounds, scale: float) -> tuple[float, float]:
    return bounds[0] / scale, bounds[1] / scale


def _optional_number(d: dict, key: str, where: str, lo: float, hi: float) -> None:
    if d.get(key) is not None:
        number(d[key], where, lo, hi)


def _optional_text(d: dict, key: str, where: str, max_len: int = 200) -> None:
    if d.get(key) is not None:
        text(d[key], where, max_len)


def _figure(value, where: str) -> None:
    """null = not measured; else 0 or a finite number from 1e-12 to 1e15 (1e-300 or 1e308 is no measurement)."""
    if value is None:
        return
    v = number(value, where, 0.0, FIGURE_RANGE[1])
    if 0 < v < FIGURE_RANGE[0]:
        raise InputError(f"{where} = {value!r} is too small to be a measurement (0, or at least {FIGURE_RANGE[0]:g})")


def slow_cause(r: dict) -> dict | None:
    """What holds a pair measurement's speed-up back, from its own numbers: the part of a speculative pass
    furthest above what the lesson's formula counts (a free draft, one target turn for checking). kind: "draft"
    (its guesses cost more target turns than checking adds), "verify" (checking γ+1 tokens costs more than one,
    and this computer's roofline says so: its arithmetic is busy before γ+1 lanes), "fixed" (checking costs
    more, but the roofline says it should be nearly free: the pass's own overhead, dispatch and attention)."""
    run = r.get("in_run")
    if not isinstance(run, dict) or run.get("c") is None or run.get("verify_ratio") is None:
        return None
    m = r.get("machine") if isinstance(r.get("machine"), dict) else {}
    g = float(r.get("guesses_per_pass") or (r.get("settings") or {}).get("gamma") or 1)
    draft_turns = g * float(run["c"])
    verify_extra = float(run["verify_ratio"]) - 1.0
    fixed_share = float(m["fixed_s"]) * 1e3 / float(r["target_ms"]) if m.get("fixed_s") is not None else 0.0
    kind = "draft" if draft_turns >= verify_extra else "verify"
    if kind == "verify" and m.get("predicted_verify_ratio") is not None \
            and float(m["predicted_verify_ratio"]) - 1.0 < 0.5 * verify_extra:
        kind = "fixed"
    return {"kind": kind, "draft_turns": draft_turns, "verify_extra_turns": verify_extra, "fixed_share": fixed_share}
