"""The measurement files as the screen shows them: which file the lesson quotes (live, else shipped), this
computer's roofline from it, and the hardware panel's rows and views, each measured figure beside its on-paper value
(pure functions of the file's data, so tests read what the panel shows). Numbers in adaptive units (sig, fmt_*).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from app import pairs, paths
from corpus.errors import InputError
from models import hardware
from models.measurements import PAIR_SCHEMAS, measurement_paths, read_measurement, slow_cause


SHIPPED_PAIR = "nahan-target + nahan-draft"     # LlamaPair.name of the shipped neural pair


def shipped_pair_measurement() -> dict | None:
    """The newest measurement file of the shipped neural pair (`spectable bench --pair neural --out ...`): the
    measured figures the tour's neural passage quotes, with where and when they were measured."""
    for e in measurement_files():
        d = e.get("data") or {}
        if d.get("schema") in PAIR_SCHEMAS and section(d, "pair").get("name") == SHIPPED_PAIR:
            return e
    return None


def pair_measurement(ctl) -> tuple[dict | None, str]:
    """The shipped neural pair's measurement the lesson quotes, and where it came from: "live" (measured on this
    computer since the program started, app.session.BenchWorker), "measuring" (the shipped file, while the live
    one runs) or "file" (the shipped file: another computer, named with its date)."""
    worker = ctl.bench_worker
    for (pair_key, _gamma), r in list(worker.results.items()):
        if pair_key == pairs.NEURAL and isinstance(r, dict) and section(r, "pair").get("name") == SHIPPED_PAIR:
            return r, "live"
    e = shipped_pair_measurement()
    return (e["data"] if e is not None else None), ("measuring" if worker.running() else "file")


def computer_roofline(ctl) -> dict | None:
    """This computer's roofline as the shipped pair measured it (live, else the shipped file's, which names its own
    computer): {'device', 'date', 'source', 'ridge', 'lanes', 'read_GBps', 'gflops'}; None without one."""
    d, source = pair_measurement(ctl)
    m = section(d or {}, "machine")
    if not m or m.get("lanes_to_saturate") is None:
        return None
    return {"device": str(section(d, "device").get("name") or "?"), "date": str(d.get("date", "?"))[:10],
            "source": source, "ridge": float(m["ridge_ops_per_byte"]), "lanes": float(m["lanes_to_saturate"]),
            "read_GBps": float(m["read_Bps"]) / 1e9, "gflops": float(m["flops"]) / 1e9}


# ---- Hardware panel: each measured figure (assets/measurements/*.json, `spectable bench`) beside its on-paper
# value from the same file, in adaptive units, with its method; pure functions so tests read what the panel shows.

RANDOM_NOTE = "random weights: timings are real, text is not"    # weights.note as the bench writes it


def sig(x: float, n: int = 3) -> str:
    """x with n significant figures, never in e-notation; thousands separated (1,234 / 20.3 / 0.0659)."""
    x = float(x)
    if x == 0 or not np.isfinite(x):
        return f"{x:g}" if not np.isfinite(x) else "0"
    digits = int(np.floor(np.log10(abs(x))))
    decimals = max(0, n - 1 - digits)
    rounded = round(x, decimals)
    if rounded != 0 and int(np.floor(np.log10(abs(rounded)))) > digits:    # 9.996 -> 10.0, not 10.00
        decimals = max(0, decimals - 1)
    return f"{x:,.{decimals}f}"


def _scaled(value: float, unit: str, steps) -> str:
    """value in base units; steps: [(factor, prefix)] largest first. Picks the largest step where value >= 1."""
    for factor, prefix in steps:
        if abs(value) >= factor:
            return f"{sig(value / factor)} {prefix}{unit}"
    factor, prefix = steps[-1]
    return f"{sig(value / factor)} {prefix}{unit}"


def fmt_ops_count(ops: float, lang: str) -> str:
    """A count of operations in the lesson's words: 161 亿 / 16.1 billion (the tour, the quiz and the guide)."""
    return f"{ops / 1e8:,.0f} 亿" if lang == "zh" else f"{ops / 1e9:.1f} billion"


def fmt_flops(ops_per_s: float) -> str:
    """20.3e9 -> '20.3 GFLOP/s', 989e12 -> '989 TFLOP/s' (a CPU and a GPU on one scale would read 0.0)."""
    return _scaled(ops_per_s, "FLOP/s", ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")))


def fmt_bandwidth(bytes_per_s: float) -> str:
    """35.8e9 -> '35.8 GB/s', 4.8e12 -> '4.80 TB/s' (decimal units, as data sheets use)."""
    return _scaled(bytes_per_s, "B/s", ((1e12, "T"), (1e9, "G"), (1e6, "M")))


def memory_words(roof, t) -> str:
    """'50.4 GB of 80 GB: fits' or 'needs 291 GB, more than the 80 GB: does not fit' (the weights and every
    sequence's KV cache against the device's memory; a device of unknown memory says only what it needs)."""
    need = f"{sig(roof.bytes_per_step / 1e9)} GB"
    if not roof.memory_bytes:
        return t("fact.memory_need", need=need)
    have = f"{roof.memory_bytes / 1e9:g} GB"
    return t("fact.memory_fits" if roof.fits_in_memory else "fact.memory_no_fit", need=need, have=have)


def fmt_threads(n, t) -> str:
    """'1 thread' / '4 threads' / '4 个线程': a count of CPU threads in words (never '1 thread(s)')."""
    n = int(n)
    return t("word.threads_1") if n == 1 else t("word.threads", n=n)


def fmt_prob(x: float) -> str:
    """A probability: four decimals, or three significant digits under 0.01, so that a quotient of two shown
    (p/q beside its ratio) agrees with the ratio shown to its last digit (0.0014 / 0.0032 read as 0.4375 beside
    0.432), and a small p never reads as 0.0000 beside a larger r."""
    return f"{x:.4f}" if x == 0 or abs(x) >= 0.01 else f"{x:.3g}"


def fmt_ms(ms: float) -> str:
    return f"{sig(ms)} ms"


def fmt_tps(tokens_per_s: float) -> str:
    return sig(tokens_per_s)


def measurement_dir():
    """Read at call time so tests (and a user's copy) can point the panel at another folder."""
    return paths.MEASUREMENTS_DIR


def measurement_files(folder=None) -> list[dict]:
    """Every *.json in the folder: {'file', 'data'} (validated by models.measurements) or {'file', 'error'}
    (a bad file is listed with its one-line reason, not fatal). Newest date first; files without a date after
    them, by name."""
    folder = Path(folder) if folder is not None else measurement_dir()
    out = []
    for path in measurement_paths(folder):
        try:
            out.append({"file": path.name, "data": read_measurement(path)})
        except InputError as exc:
            out.append({"file": path.name, "error": str(exc)})
    dated = sorted((e for e in out if isinstance((e.get("data") or {}).get("date"), str)),
                   key=lambda e: e["data"]["date"], reverse=True)
    return dated + [e for e in out if e not in dated]


def _num(d, *keys):
    """d[k1][k2]... if it is a finite number, else None (files are user-editable: never trust a shape)."""
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not np.isfinite(d):
        return None
    return float(d)


def in_run_cost(d: dict, key: str) -> float:
    """A cost as measured inside the runs (schema /2), or the forward timed alone (older files)."""
    run = d.get("in_run")
    return float(run[key]) if isinstance(run, dict) and run.get(key) is not None else float(d[key])


def section(d, key) -> dict:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, dict) else {}


def sheet_device_of(name: str | None):
    """The data-sheet device (models.hardware.DEVICES, not a measured one) a reported GPU name is, or None:
    'NVIDIA H200' -> h200, 'NVIDIA H100 80GB HBM3' -> h100-sxm."""
    if not name:
        return None
    up = str(name).upper()
    for dev_id in hardware.PAPER_DEVICES:
        chip = dev_id.split("-")[0].upper()            # h100-sxm -> H100
        if chip in up:
            return hardware.DEVICES[dev_id]
    return None


# The rows the tour's page on the measured pair shows: the costs its sentence feeds the formula with and the speeds
# it quotes (the hardware panel shows every row).
TOUR_PAIR_ROWS = ("c", "verify_ratio", "plain_tokens_per_s", "speculative_tokens_per_s", "speedup")


def pair_rows(r: dict, t, only: tuple[str, ...] | None = None) -> list[tuple[str, str, str, str]]:
    """A checkpoint pair measured live (models.llm.bench.measure_pair, a live run or a `spectable bench --pair`
    file): (figure, measured, the roofline's value for the same shapes, method) rows; `only`: those figures."""
    paper = section(r, "on_paper")
    method = r.get("method") if isinstance(r.get("method"), str) else ""
    gamma = _num(r, "settings", "gamma")
    g = f"{gamma:.0f}" if gamma is not None else "γ"

    run = section(r, "in_run")

    def row(label, key, fmt, paper_key=None, run_key=None):
        # the costs inside the measured runs where the file has them (what the formula and ch. 8 use), else the
        # forward timed alone
        if only is not None and key not in only:
            return
        v = _num(run, run_key) if run_key and _num(run, run_key) is not None else _num(r, key)
        if v is None:
            return
        pv = _num(paper, paper_key or key)
        rows.append((label, fmt(v), fmt(pv) if pv is not None else "—", method))

    rows: list = []
    row(t("hw.pair_target_ms"), "target_ms", fmt_ms, run_key="plain_ms_per_token")
    row(t("hw.pair_draft_ms"), "draft_ms", fmt_ms, run_key="draft_ms_per_guess")
    row(t("fact.c"), "c", sig, run_key="c")
    row(t("hw.verify_k", k=f"{gamma + 1:.0f}" if gamma is not None else "γ+1"), "verify_ratio", lambda x: f"{x:.2f}×",
        run_key="verify_ratio")
    row(t("hw.pair_tpp", gamma=g), "tokens_per_pass", lambda x: f"{x:.2f}")
    row(t("hw.pair_plain_tps"), "plain_tokens_per_s", lambda x: t("hw.tokens_per_s", n=fmt_tps(x)))
    sp = _num(r, "speculative_tokens_per_s")
    if sp is not None and (only is None or "speculative_tokens_per_s" in only):
        # on paper: the roofline's plain rate times its speedup for the same α, γ and shapes
        pp, ps = _num(paper, "plain_tokens_per_s"), _num(paper, "speedup")
        rows.append((t("hw.pair_spec_tps", gamma=g), t("hw.tokens_per_s", n=fmt_tps(sp)),
                     t("hw.tokens_per_s", n=fmt_tps(pp * ps)) if pp is not None and ps is not None else "—", method))
    row(t("hw.pair_speedup"), "speedup", lambda x: f"×{sig(x)}")
    return rows


def pair_view(r: dict, t, file: str | None = None, only: tuple[str, ...] | None = None) -> dict:
    """What the panel shows for a pair measurement: the device line, the method (device, dtype, threads, warm-up,
    repeats), the rows, and what the roofline would have given with the costs measured here."""
    dev = section(r, "device")
    settings = section(r, "settings")
    pair = section(r, "pair")
    view = {"file": file, "error": None, "note": None, "where": None, "scaled": None, "notes": [],
            "rows": pair_rows(r, t, only), "pair": True}
    view["meta"] = [t("hw.pair_line", pair=pair.get("name") or "?", device=dev.get("name") or dev.get("type") or "?",
                      dtype=r.get("dtype", "?"), threads=dev.get("threads", "?"), torch=dev.get("torch", "?")),
                    t("hw.pair_method", reps=settings.get("reps", "?"), tokens=settings.get("tokens", "?"),
                      gamma=settings.get("gamma", "?"), temperature=settings.get("temperature", "?"),
                      date=str(r.get("date", "?")).replace("T", " ")[:19])]
    alpha = _num(r, "alpha")
    passes = _num(r, "passes")
    if alpha is not None and passes is not None:
        view["notes"].append(t("hw.pair_alpha_note", alpha=f"{alpha:.3f}", passes=f"{passes:.0f}"))
    costs = _num(r, "on_paper", "speedup_from_measured_costs")
    if costs is not None:
        view["notes"].append(t("hw.pair_costs_note", speedup=f"×{sig(costs)}"))
    if r.get("draft_step") in ("compiled", "eager"):
        view["notes"].append(t(f"hw.pair_draft_{r['draft_step']}"))
    m = section(r, "machine")
    if m.get("ridge_ops_per_byte") is not None:
        # this computer's roofline and what it predicts beside what was measured, then what held the gain back
        view["notes"].append(t("hw.pair_machine", read=f"{float(m['read_Bps']) / 1e9:.1f}",
                               gflops=f"{float(m['flops']) / 1e9:.1f}", ridge=f"{float(m['ridge_ops_per_byte']):.1f}",
                               lanes=f"{float(m['lanes_to_saturate']):.1f}",
                               fixed=f"{float(m['fixed_s']) * 1e3:.2f}", pass_ms=f"{float(m['pass_1_s']) * 1e3:.2f}"))
        speed = m.get("predicted_speedup") or {}
        view["notes"].append(t("hw.pair_predicted", k=m.get("rows", "?"),
                               predicted=f"{float(m['predicted_verify_ratio']):.2f}",
                               measured=f"{float(m['measured_verify_ratio']):.2f}",
                               best=m.get("best_gamma", "?"),
                               speedup=f"×{sig(float(speed[str(m['best_gamma'])]))}" if str(m.get("best_gamma")) in speed
                               else "—"))
    cause = r.get("cause") or slow_cause(r)
    if cause is not None and _num(r, "speedup") is not None and float(r["speedup"]) < 1.3:
        view["notes"].append(t(f"hw.pair_cause_{cause['kind']}", turns=f"{cause['draft_turns']:.2f}",
                               extra=f"{cause['verify_extra_turns']:.2f}", fixed=f"{100 * cause['fixed_share']:.0f}%"))
    for role, lines in (r.get("kernels") or {}).items():
        if isinstance(lines, list) and lines:
            view["notes"].append(t("hw.pair_kernels", role=t(f"hw.role_{role}")) + " " + "; ".join(lines[:2]))
    load = _num(dev, "load_average_1min")
    if load is not None:
        view["notes"].append(t("hw.pair_load", load=f"{load:.1f}"))
    if pair.get("random_weights"):
        view["note"] = t("hw.random_note")
    view["side_by_side"] = side_by_side_view(r, t)
    return view


def above_roofline_words(r: dict, t) -> str | None:
    """Why a plain pass measured faster than its memory roofline (the weights kept in the CPU's caches), or None
    where it did not."""
    share = section(r, "on_paper").get("fraction_of_roofline_plain")
    size = section(r, "machine").get("weight_bytes")
    copy, read = r.get("copy_bandwidth_GBps"), section(r, "machine").get("read_Bps")
    if share is None or size is None or float(share) <= 1.0 or copy is None or read is None:
        return None
    # Both rates on screen: the paper column divides by the copy rate, the weights were read at the other.
    return t("tour.neural_above_roofline", share=f"{100 * float(share):.0f}%", size=f"{float(size) / 1e6:.1f} MB",
             copy=f"{float(copy):.0f} GB/s", read=f"{float(read) / 1e9:.0f} GB/s")


def tour_sbs_title(r: dict, t) -> str:
    """The side-by-side table's title in the tour: where it was timed and from which prompt (the hardware panel's
    title carries the rounds and lengths)."""
    return t("tour.sbs_title", device=str(section(r, "device").get("name") or "?"),
             prompt=str(section(r, "settings").get("prompt") or "?"))


def tour_sbs_why(r: dict, t) -> str | None:
    """Why trees come last when timed on the file's computer: it is busy after a few lanes, a tree checks many."""
    lanes = section(r, "machine").get("lanes_to_saturate")
    trees = [float(d["lanes_per_pass"]) for k, d in section(section(r, "side_by_side"), "drafters").items()
             if k.startswith("tree") and isinstance(d, dict) and d.get("lanes_per_pass")]
    if not lanes or not trees:
        return None
    return t("tour.sbs_why", lanes=f"{float(lanes):.0f}", tree=f"{max(trees):.0f}")


def side_by_side_view(r: dict, t, met=None) -> dict | None:
    """Every drafter measured side by side (models.llm.drafter_bench): a title line and one row per drafter,
    (name, α, tokens a pass, speed-up measured, the formula with its own costs); `met`: only the drafters named
    (a tree's row needs "tree" and its base), None: all. 'trees': whether a tree's row is among them."""
    sbs = section(r, "side_by_side")
    drafters = section(sbs, "drafters")
    if not drafters:
        return None
    s = section(sbs, "settings")
    widths = ",".join(str(w) for w in s.get("tree_widths") or []) or "—"
    prompt = str(section(r, "settings").get("prompt") or "?")
    title = t("hw.sbs_title", prompt=prompt, reps=s.get("reps", "?"), tokens=s.get("tokens", "?"), gamma=s.get("gamma", "?"),
              widths=widths, plain=f"{float(sbs.get('plain_tokens_per_s') or 0):.0f}")

    def name(key: str) -> str:
        if key.startswith("tree-"):
            base = key.split("-", 1)[1]
            word = "lab.tree_from_chain_network" if base == "chain" else f"lab.tree_from_{base}"
            return t("hw.sbs_tree", base=t(word))
        # (a network pair: its chain is the draft network, named as the lesson names it)
        return t("drafter.chain_network") if key == "chain" else t(f"lab.drafter_{key}")
    rows, trees = [], False
    for key in sbs.get("order") or list(drafters):
        d = section(drafters, key)
        needs = {"tree", key.split("-", 1)[1]} if key.startswith("tree-") else {key}
        if not d or (met is not None and not needs <= set(met) | {"chain"}):
            continue
        trees = trees or key.startswith("tree-")
        rows.append((name(key), f"{float(d['alpha']):.3f}", f"{float(d['tokens_per_pass']):.2f}",
                     f"×{float(d['speedup']):.2f}", f"×{float(d['speedup_formula']):.2f}"))
    return {"title": title, "rows": rows, "trees": trees,
            "columns": [t(f"hw.sbs_col_{c}") for c in ("drafter", "alpha", "tpp", "speedup", "formula")]}


def measurement_view(entry: dict, t, paper_device: str, paper_model: str) -> dict:
    """What the panel shows for one measurement file:
    {'file', 'error', 'meta': [lines], 'note', 'rows': [(label, measured, on_paper, method)],
     'where': line saying which device measured it, 'scaled': line or None, 'notes': [lines]}.
    Values are the file's numbers, formatted; on-paper values are the file's own (bench: measured bandwidth
    roofline) or, for copy bandwidth and matmul rate, the data sheet of the same chip where it is known."""
    view = {"file": entry.get("file", "?"), "error": entry.get("error"), "meta": [], "note": None, "rows": [],
            "where": None, "scaled": None, "notes": []}
    if view["error"]:
        view["error"] = t("hw.bad_file", file=view["file"], error=view["error"])
        return view
    data = entry.get("data") or {}
    if data.get("schema") in PAIR_SCHEMAS:
        return pair_view(data, t, view["file"])
    dev = section(data, "device")
    dev_name = dev.get("name") or dev.get("type") or (data.get("device") if isinstance(data.get("device"), str)
                                                       else "?")
    dev_type = str(dev.get("type") or "")
    models = section(data, "models")
    target = section(models, "target").get("name") or section(data, "settings").get("target") or "?"
    draft = section(models, "draft").get("name") or section(data, "settings").get("draft") or "?"
    view["meta"] = [t("hw.device_line", device=dev_name, type=dev_type or "?", dtype=data.get("dtype", "?"),
                      torch=dev.get("torch", "?")),
                    t("hw.date_line", date=str(data.get("date", "?")).replace("T", " ")[:19],
                      target=target, draft=draft)]
    note = section(data, "weights").get("note")
    if isinstance(note, str) and note:
        view["note"] = t("hw.random_note") if note.strip() == RANDOM_NOTE else note
    fig = section(data, "figures")
    sheet = sheet_device_of(dev_name) if dev_type != "cpu" else None
    rows = view["rows"]

    def method(group):
        m = section(fig, group).get("method")
        return m if isinstance(m, str) else ""

    bw = _num(fig, "copy_bandwidth", "GB_per_s")
    if bw is not None:
        rows.append((t("hw.copy_bandwidth"), fmt_bandwidth(bw * 1e9),
                     t("hw.sheet", value=fmt_bandwidth(sheet.bandwidth_Bps)) if sheet else "—",
                     method("copy_bandwidth")))
    mm = _num(fig, "matmul", "TFLOP_per_s")
    if mm is not None:
        rows.append((t("hw.matmul_rate"), fmt_flops(mm * 1e12),
                     t("hw.sheet", value=fmt_flops(sheet.flops)) if sheet else "—", method("matmul")))
    ms = _num(fig, "decode_batch1", "ms_per_token")
    if ms is not None:
        paper = _num(fig, "decode_batch1", "on_paper_ms")
        frac = _num(fig, "decode_batch1", "fraction_of_roofline")
        paper_s = fmt_ms(paper) if paper is not None else "—"
        if frac is not None:
            paper_s += " · " + t("hw.of_roofline", pct=f"{100 * frac:.0f}%")
        rows.append((t("hw.decode_b1"), f"{fmt_ms(ms)}/token", paper_s, method("decode_batch1")))
    ratio = _num(fig, "verify_cost", "ratio")
    if ratio is not None:
        k = _num(fig, "verify_cost", "tokens")
        paper = _num(fig, "verify_cost", "on_paper_ratio")
        rows.append((t("hw.verify_k", k=f"{k:.0f}" if k else "γ+1"), f"{ratio:.2f}×",
                     f"{paper:.2f}×" if paper is not None else "—", method("verify_cost")))
    c = _num(fig, "draft_cost", "c")
    if c is not None:
        paper = _num(fig, "draft_cost", "on_paper_c")
        rows.append((t("fact.c"), sig(c), sig(paper) if paper is not None else "—", method("draft_cost")))
    sweep = section(fig, "batch_sweep")
    points = sweep.get("points") if isinstance(sweep.get("points"), list) else []
    for p in points:
        tps = _num(p, "tokens_per_s")
        if tps is None:
            continue
        paper = _num(p, "on_paper_tokens_per_s")
        frac = _num(p, "fraction_of_roofline")
        paper_s = f"{fmt_tps(paper)} tokens/s" if paper is not None else "—"
        if frac is not None:
            paper_s += " · " + t("hw.of_roofline", pct=f"{100 * frac:.0f}%")
        b, ctx = _num(p, "batch"), _num(p, "context")
        rows.append((t("hw.batch_point", batch=f"{b:.0f}" if b else "?", context=f"{ctx:,.0f}" if ctx else "?"),
                     f"{fmt_tps(tps)} tokens/s", paper_s, method("batch_sweep")))
    sp = _num(fig, "speculative", "speedup")
    if sp is not None:
        paper = _num(fig, "speculative", "on_paper_speedup")
        alpha = _num(fig, "speculative", "alpha")
        rows.append((t("hw.spec_speedup", alpha=f"{alpha:.2f}" if alpha is not None else "?"), f"×{sig(sp)}",
                     f"×{sig(paper)}" if paper is not None else "—", method("speculative")))
        an = section(fig, "speculative").get("alpha_note")
        if isinstance(an, str) and an:
            view["notes"].append(t("hw.alpha_note") if "not meaningful" in an else an)
    if not rows:
        view["notes"].append(t("hw.no_figures"))
    # The bench's on-paper decode reads every matrix once but looks the input embedding up (one row per token):
    # say so beside the lesson's "about 16 GB", which is all the weights.
    tm = section(models, "target")
    read, whole = _num(tm, "weight_bytes_read_per_token"), _num(tm, "weight_bytes")
    if read is not None and whole is not None and whole > read and ms is not None:
        view["notes"].append(t("hw.embedding_note", read=f"{read / 1e9:.2f} GB", emb=f"{(whole - read) / 1e9:.2f} GB",
                               all=f"{whole / 1e9:.2f} GB"))

    # Which device measured this, and (GPU only) the same decode scaled to the on-paper device by bandwidth.
    paper_dev = hardware.DEVICES.get(paper_device)
    stem = view["file"].rsplit(".", 1)[0]
    if dev_type == "cpu":
        view["where"] = t("hw.this_cpu", device=dev_name)
    else:
        view["where"] = t("hw.measured_on", device=dev_name)
        same = paper_dev is None or paper_dev.measured and paper_dev.id == f"measured-{stem}" or \
            (sheet is not None and sheet.id == paper_device)
        if not same and paper_dev is not None and not paper_dev.measured and ms is not None:
            if target != paper_model:
                view["scaled"] = t("hw.scale_model_differs", model=target, paper_model=paper_model)
            else:
                if sheet is not None:
                    src_bw, src = sheet.bandwidth_Bps, t("hw.sheet_of")
                else:
                    src_bw, src = (bw or 0) * 1e9, t("hw.measured_copy")
                if src_bw > 0:
                    k = paper_dev.bandwidth_Bps / src_bw
                    view["scaled"] = t("hw.scaled", paper=paper_dev.label, device=dev_name,
                                       ratio=f"{sig(paper_dev.bandwidth_Bps / 1e12)}/{sig(src_bw / 1e12)} TB/s",
                                       src=src, ms=fmt_ms(ms / k), tps=fmt_tps(1000.0 / ms * k))
    return view
