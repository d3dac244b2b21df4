"""Which kernel multiplies each matrix, and how many threads: measured on this machine, cached per machine.

At load, the matrices of a model are grouped by shape and format; for each group every candidate kernel
(models.llm.kernels) is built on the group's own matrices and timed, interleaved, for one row (plain decoding)
and for γ+1 rows (checking γ guesses). Per group the family (the arithmetic, so the numbers) with the smallest
sum of the two is kept, and within it the fastest kernel for each row count; one kernel serves both where it is
within the timing noise of the other (one copy of the weights, not two). The thread count is measured the same
way on the whole pass (1, 2, 4 ... cores). Decisions go to the user's cache folder (kernels.json, validated when
read back, rebuilt when this machine, torch or ONNX Runtime differ), so a second start measures nothing.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from models.llm import onnx_step
from models.llm.kernel_cache import (QUIET_CORES, ROWS, OtherLoad, env_threads, keep_for_this_run, machine_key,
                                     recall, thread_counts, write_cache)
from models.llm.kernels import (DEFAULT, GROUP, KERNELS, MANY_ROWS, NullKernel, PackedLinear, Source, build,
                                candidates)

BUDGET_S = 0.25                    # seconds of passes per round of candidates and row count (at least MIN_REPS)
MIN_REPS = 5
SAME_WITHIN = 1.05                 # one kernel for both row counts when within 5 % (the timings' own noise)
DRIFT = {"fp32": 1e-3}             # |Δ logit| between row counts above which a path is not used: fp32 sums in
                                   # another order (~1e-6); a quantised format must not move at all (below)
SAME_WITHIN_PASS = 1.02            # a kernel replaces the one in place when the whole pass is 2 % faster
SCREEN = 1.5                       # candidates tried in whole passes: within 1.5x of the fastest product
AB_BUDGET_S = 0.3                  # seconds of alternating passes per comparison (at least 2 x MIN_REPS each)


# --- groups of matrices ---------------------------------------------------------------------------------------
@dataclass
class Slot:
    """One matrix of the model: where it sits, what it is built from, whether it is the output head."""

    owner: torch.nn.Module
    attr: str
    source: Source
    head: bool = False
    fmt: str = ""


@dataclass
class Choice:
    """A group's decision: the kernel for one row and for several, every candidate's timings (µs per product)."""

    fmt: str
    shape: tuple[int, int]
    count: int
    head: bool
    one: str
    many: str
    times: dict[str, list[float]] = field(default_factory=dict)
    cached: bool = False

    @property
    def key(self) -> str:
        return group_key(self.fmt, self.shape, self.count, self.head)

    def as_dict(self) -> dict:
        return {"format": self.fmt, "shape": list(self.shape), "matrices": self.count, "head": self.head,
                "one_row": self.one, "rows": {str(r): (self.one if r == 1 else self.many) for r in ROWS},
                "several_rows": self.many, "family": KERNELS[self.one].family,
                "us": {k: {str(r): t for r, t in zip(ROWS, v)} for k, v in self.times.items()},
                "from_cache": self.cached}


def group_key(fmt: str, shape, count: int, head: bool) -> str:
    return f"{fmt} {shape[0]}x{shape[1]}{' head' if head else ''} x{count}"


@torch.inference_mode()
def row_count_drift(model, length: int = 40, chunk: int = MANY_ROWS) -> float:
    """The largest |Δ logit| between a text computed one position a pass and the same text in chunks of `chunk`
    positions a pass (after the same prompt): 0 up to the order of sums where a row does not depend on how many
    positions its pass computes. Activations quantised to int8 can turn a last-digit difference of two ways of
    computing attention into a step of the integer grid (measured: 0.02 in the logits), which would make greedy
    speculative decoding write another text than greedy plain decoding: such a path is not used."""
    if model.max_seq_length < length + chunk:
        model.setup_caches(1, max(64, length + chunk))
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (1, length), generator=gen)
    head = 8
    model(ids[:, :head], torch.arange(head))
    one = torch.cat([model(ids[:, i:i + 1], torch.tensor([i])) for i in range(head, length)], 1)
    model(ids[:, :head], torch.arange(head))
    parts = [model(ids[:, i:min(i + chunk, length)], torch.arange(i, min(i + chunk, length)))
             for i in range(head, length, chunk)]
    return float((one - torch.cat(parts, 1)).abs().max())


def choose(times: dict[str, list[float]]) -> tuple[str, str]:
    """(one row, several rows) from every candidate's timings: the family whose best one-row and best several-row
    times sum lowest, then its fastest for each; one kernel for both when it is within SAME_WITHIN of the other."""
    fams: dict[str, list[str]] = {}
    for name in times:
        fams.setdefault(KERNELS[name].family, []).append(name)

    def best(names, i):
        return min(names, key=lambda n: times[n][i])
    fam = min(fams.values(), key=lambda ns: times[best(ns, 0)][0] + times[best(ns, 1)][1])
    one, many = best(fam, 0), best(fam, 1)
    if one != many:
        if times[many][0] <= SAME_WITHIN * times[one][0]:
            one = many
        elif times[one][1] <= SAME_WITHIN * times[many][1]:
            many = one
    return one, many


class _Timed:
    """A kernel that records how long each of its calls takes, by row count (only while tuning)."""

    def __init__(self, kernel, sink: dict):
        self.kernel, self.sink = kernel, sink
        self.out_features, self.in_features = kernel.out_features, kernel.in_features
        self.traceable = False

    def __call__(self, x):
        t0 = time.perf_counter()
        y = self.kernel(x)
        self.sink.setdefault(x.shape[0], []).append(time.perf_counter() - t0)
        return y


@torch.inference_mode()
def time_in_pass(model, slots: list[Slot], names: dict[tuple, list[str]], threads: int,
                 rows=ROWS) -> dict[tuple, dict[str, list[float]]]:
    """Median µs per product of every candidate of every group, timed inside the model's own passes (the
    weights come from where they would, the caches or memory, and each call pays what it pays between the other
    operations of a pass): in round i every matrix runs its group's i-th candidate, passes of 1 and of
    several positions alternate."""
    steps = max(len(n) for n in names.values())
    out: dict[tuple, dict[str, list[float]]] = {g: {} for g in names}
    if model.max_seq_length < 64:
        model.setup_caches(1, 64)
    for i in range(steps):
        sinks: dict[tuple, dict] = {}
        for s in slots:
            g = (s.fmt, s.source.shape, s.head)
            cand = names[g][i] if i < len(names[g]) else names[g][0]
            k = build(cand, s.source, threads, s.head)
            if i < len(names[g]):
                k = _Timed(k, sinks.setdefault(g, {}))
            setattr(s.owner, s.attr, PackedLinear.from_kernels(k, k, head=s.head, source=s.source))
        feeds = [(torch.zeros(1, r, dtype=torch.long), torch.arange(8, 8 + r)) for r in rows]
        for toks, pos in feeds:                              # warm-up: first calls build bindings and caches
            model(toks, pos)
        for d in sinks.values():
            d.clear()
        t_start, reps = time.perf_counter(), 0
        while reps < MIN_REPS or (time.perf_counter() - t_start < BUDGET_S * len(rows) and reps < 100):
            for toks, pos in feeds:
                model(toks, pos)
            reps += 1
        for g, d in sinks.items():
            out[g][names[g][i]] = [sorted(d[r])[len(d[r]) // 2] * 1e6 for r in rows]
    return out


@torch.inference_mode()
def ab_passes(model, rows: int, swap, reps_budget_s: float = AB_BUDGET_S) -> tuple[float, float]:
    """Median seconds of a pass of `rows` positions as the model stands (A) and with swap(True) applied (B),
    alternating A and B so a change in the machine's load falls on both; swap(False) puts A back."""
    toks = torch.zeros(1, rows, dtype=torch.long)
    pos = torch.arange(8, 8 + rows)
    a, b = [], []
    swap(True)
    model(toks, pos)                       # warm-up of B's kernels (bindings, caches)
    swap(False)
    model(toks, pos)
    t_start = time.perf_counter()
    while len(a) < MIN_REPS * 2 or (time.perf_counter() - t_start < reps_budget_s and len(a) < 60):
        for side, sink in ((False, a), (True, b)):
            swap(side)
            t0 = time.perf_counter()
            model(toks, pos)
            sink.append(time.perf_counter() - t0)
    swap(False)
    return sorted(a)[len(a) // 2], sorted(b)[len(b) // 2]


def _refine(model, groups: dict, names: dict, start: dict, times: dict, threads: int, progress=None) -> dict:
    """Per row count, per group (the largest first), each candidate within SCREEN of the group's fastest product
    is tried in whole passes against the kernel in place (A/B, alternating), and kept when the pass is faster by
    more than the noise: a product's own time misses what it costs the operations around it (a kernel that packs
    its operand each call evicts the next matrix from the cache), the pass does not."""
    chosen = {r: dict(start[r]) for r in ROWS}
    attr = {ROWS[0]: "one", ROWS[1]: "many"}
    order = sorted(groups, key=lambda g: -g[1][0] * g[1][1] * len(groups[g]))
    for i, r in enumerate(ROWS):
        for g in order:
            best_t = min(times[g][n][i] for n in names[g])
            for cand in names[g]:
                if cand == chosen[r][g] or times[g][cand][i] > SCREEN * best_t:
                    continue
                if progress:
                    progress(f"trying {cand} for the {g[1][0]}×{g[1][1]} {g[0]} products in passes of {r}")
                mods = [getattr(s.owner, s.attr) for s in groups[g]]
                old = [getattr(m, attr[r]) for m in mods]
                new = [build(cand, s.source, threads, s.head) for s in groups[g]]

                def swap(b, mods=mods, old=old, new=new, which=attr[r]):
                    for m, o, n in zip(mods, old, new):
                        setattr(m, which, n if b else o)
                t_a, t_b = ab_passes(model, r, swap)
                if t_b < t_a / SAME_WITHIN_PASS:
                    swap(True)
                    chosen[r][g] = cand
    return chosen


def drift_limit(fmt: str) -> float:
    """How far a row may move between 1 and several positions a pass: the order of fp32 sums; with quantised
    weights nothing (their activations are rounded to a grid, bf16 or int8, where a last-digit difference can
    become a whole step: greedy speculative decoding must write what greedy plain decoding writes)."""
    return DRIFT.get(fmt, 0.0)


def _steady_families(model, slots, groups, times, threads) -> dict:
    """The timings of the kernels whose family keeps a row independent of how many positions its pass computes
    (row_count_drift within DRIFT with every matrix in that family's fastest kernels); where no family does, the
    one that drifts least. fp32 kernels are one family: nothing to check."""
    fams = sorted({KERNELS[n].family for g in groups for n in times[g]})
    if len(fams) < 2:
        return times
    drift = {}
    for fam in fams:
        pick = {g: [n for n in times[g] if KERNELS[n].family == fam] for g in groups}
        if not all(pick.values()):
            continue
        apply(slots, [Choice(g[0], g[1], len(m), g[2], *choose({n: times[g][n] for n in pick[g]}))
                      for g, m in groups.items()], threads)
        drift[fam] = row_count_drift(model)
    limit = min(drift_limit(g[0]) for g in groups)
    ok = [f for f, d in drift.items() if d <= limit] or [min(drift, key=drift.get)]
    return {g: {n: t for n, t in times[g].items() if KERNELS[n].family in ok} for g in groups}


def tune(model, slots: list[Slot], threads: int, *, measure: bool = True, cache: dict | None = None,
         progress=None, refine: bool = True) -> list[Choice]:
    """A Choice per group of slots (same format, shape and role), from the cache or measured now: every candidate
    timed per product inside the model's passes (the screen), then, with refine, the choice for each row count
    tried in whole passes (_refine; a cached screen is refined without timing the products again)."""
    groups: dict[tuple, list[Slot]] = {}
    for s in slots:
        groups.setdefault((s.fmt, s.source.shape, s.head), []).append(s)
    machine = f"{machine_key()} | {threads} threads"
    machines = cache if cache is not None else recall()
    known = machines.setdefault(machine, {"models": {}, "threads": {}, "passes": {}})["models"]
    sig = slots_signature(slots)
    names = {g: candidates(g[0]) for g in groups}
    keys = {g: group_key(g[0], g[1], len(m), g[2]) for g, m in groups.items()}
    entry = known.get(sig)
    screened = entry is not None and all(keys[g] in entry["groups"] and set(entry["groups"][keys[g]]["us"])
                                         == set(names[g]) for g in groups)
    if screened and (entry["refined"] or not refine or not measure):
        return [Choice(g[0], g[1], len(m), g[2], entry["groups"][keys[g]]["one"], entry["groups"][keys[g]]["many"],
                       entry["groups"][keys[g]]["us"], True) for g, m in groups.items()]
    if not measure:
        out = []
        for g, m in groups.items():
            d = DEFAULT[g[0]] if DEFAULT[g[0]] in names[g] else names[g][0]
            out.append(Choice(g[0], g[1], len(m), g[2], d, d))
        return out
    use_graph(model, None, ("eager", "eager"))           # the products are timed in eager passes
    if screened:
        times = {g: entry["groups"][keys[g]]["us"] for g in groups}
    else:
        if progress:
            progress(f"timing {sum(len(n) for n in names.values())} kernels on {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        times = time_in_pass(model, slots, names, threads)
    steady = _steady_families(model, slots, groups, times, threads) if not screened else \
        {g: {n: times[g][n] for n in entry["groups"][keys[g]]["steady"]} for g in groups}
    start = {r: {} for r in ROWS}
    for g in groups:
        start[ROWS[0]][g], start[ROWS[1]][g] = choose(steady[g])
    if refine:
        apply(slots, [Choice(g[0], g[1], len(m), g[2], start[ROWS[0]][g], start[ROWS[1]][g])
                      for g, m in groups.items()], threads)
        chosen = _refine(model, groups, {g: list(steady[g]) for g in groups}, start, steady, threads, progress)
    else:
        chosen = start
    out = []
    for g, m in groups.items():
        one, many = chosen[ROWS[0]][g], chosen[ROWS[1]][g]
        if KERNELS[one].family != KERNELS[many].family:
            # one family per matrix (its rows must not depend on the row count): the family whose pair sums lowest
            one, many = choose(steady[g])
        out.append(Choice(g[0], g[1], len(m), g[2], one, many, times[g], screened))
    known[sig] = {"refined": refine, "groups": {group_key(c.fmt, c.shape, c.count, c.head):
                                                {"us": c.times, "one": c.one, "many": c.many,
                                                 "steady": sorted(steady[(c.fmt, c.shape, c.head)])} for c in out}}
    if cache is None:
        write_cache(machines)
    return out


def slots_signature(slots: list[Slot]) -> str:
    """The model as the kernels see it: each group's format, shape and count, in order."""
    seen: dict[tuple, int] = {}
    for s in slots:
        k = (s.fmt, s.source.shape, s.head)
        seen[k] = seen.get(k, 0) + 1
    return "; ".join(group_key(f, sh, n, h) for (f, sh, h), n in seen.items())


# --- applying the choices to a model --------------------------------------------------------------------------
def model_slots(model, fmt: str) -> list[Slot]:
    """Every matrix a decode step streams (q/k/v, o, gate/up, down, the output head), with its source: the float
    weight and, for int4, a GGUF file's own codes. int4 keeps the head at int8 (as llama.cpp's 4-bit files do: the
    head's error lands on every logit) and a matrix whose rows are not whole groups of 32 at int8."""

    stored = getattr(model, "int4_codes", {}) if fmt == "int4" else {}
    slots = []

    def add(owner, attr, name, head=False):
        m = getattr(owner, attr)
        w = m.source.weight if hasattr(m, "source") else m.weight
        f = fmt
        if fmt == "int4" and (head or w.shape[1] % GROUP):
            f = "int8"
        slots.append(Slot(owner, attr, Source(w, stored.get(name) if f == "int4" else None), head, f))
    for i, layer in enumerate(model.layers):
        a, f, p = layer.attention, layer.feed_forward, f"layers.{i}."
        add(a, "wqkv", p + "attention.wqkv.weight")
        add(a, "wo", p + "attention.wo.weight")
        add(f, "w13", p + "feed_forward.w13.weight")
        add(f, "w2", p + "feed_forward.w2.weight")
    add(model, "output", "output.weight", head=True)
    return slots


def apply(slots: list[Slot], choices: list[Choice], threads: int) -> None:
    """Put each matrix in the kernels its group chose (models.llm.formats.PackedLinear)."""

    by_key = {(c.fmt, c.shape, c.head): c for c in choices}
    for s in slots:
        c = by_key[(s.fmt, s.source.shape, s.head)]
        one = build(c.one, s.source, threads, s.head)
        many = one if c.many == c.one else build(c.many, s.source, threads, s.head)
        setattr(s.owner, s.attr, PackedLinear.from_kernels(one, many, head=s.head, source=s.source,
                                                           choice=c))


@torch.inference_mode()
def time_pass(model, rows=ROWS, reps: int = 15) -> list[float]:
    """Median seconds of one forward of r positions at batch 1, for each r (the model's caches set up small)."""
    if model.max_seq_length < 64:
        model.setup_caches(1, 64)
    out = []
    for r in rows:
        toks = torch.zeros(1, r, dtype=torch.long, device=model.device)
        pos = torch.arange(8, 8 + r, device=model.device)
        for _ in range(3):
            model(toks, pos)
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            model(toks, pos)
            ts.append(time.perf_counter() - t0)
        out.append(sorted(ts)[len(ts) // 2])
    return out


@torch.inference_mode()
def fixed_cost(model, rows=ROWS, reps: int = 15) -> list[float]:
    """Seconds of a pass without its matrix products (every product replaced by one that costs nothing): the
    norms, attention, rotary tables, the KV cache's writes and the dispatch of each operation; for each row count."""

    mods = [m for m in model.modules() if isinstance(m, PackedLinear)]
    saved = [(m.one, m.many) for m in mods]
    try:
        for m in mods:
            m.one = m.many = NullKernel(m.out_features, m.in_features)
        return time_pass(model, rows, reps)
    finally:
        for m, (one, many) in zip(mods, saved):
            m.one, m.many = one, many


def families(choices: list[Choice]) -> set[str]:
    """The arithmetic of a model's eager products (one family, or several when groups chose differently)."""
    return {KERNELS[n].family for c in choices for n in (c.one, c.many)}


def time_steps(model, graph) -> dict[str, list[float]]:
    """µs of a pass of 1 and of MANY_ROWS positions run eagerly (the kernels in place) and as the graph, A/B."""
    out = {"eager": [], "graph": []}

    def swap(b):
        model.step_graph, model.graph_rows = (graph, (True, True)) if b else (None, (False, False))
    for r in ROWS:
        t_eager, t_graph = ab_passes(model, r, swap)
        out["eager"].append(t_eager * 1e6)
        out["graph"].append(t_graph * 1e6)
    return out


def choose_step(times: dict[str, list[float]], same_family: bool) -> tuple[str, str]:
    """(one position, several) among the ways timed: the fastest for each where they compute the same numbers,
    else the one way whose two passes sum lowest (a matrix's rows must not depend on the row count)."""
    ways = list(times)
    if same_family:
        return min(ways, key=lambda w: times[w][0]), min(ways, key=lambda w: times[w][1])
    best = min(ways, key=lambda w: sum(times[w]))
    return best, best


def _graph(model, fmt: str, threads: int, choices: list[Choice], known: dict | None, progress=None):
    """The pass decision for this model at this thread count: (OnnxStep or None, (one, many), timings). known: a
    cached decision (the graph is built only if it is used)."""
    if onnx_step.available(model.config) is not None or model.device.type != "cpu":
        return None, ("eager", "eager"), {}
    same = families(choices) == {onnx_step.family(fmt)}
    if known is not None:
        one, many = known["one"], known["many"]
        graph = onnx_step.OnnxStep(model, threads) if "graph" in (one, many) else None
        return graph, (one, many), known["us"]
    if progress:
        progress(f"timing the pass as one ONNX Runtime graph on {threads} thread{'s' if threads > 1 else ''}")
    try:
        graph = onnx_step.OnnxStep(model, threads)
        if fmt != "fp32":
            use_graph(model, graph, ("graph", "graph"))
            drift = row_count_drift(model)
            use_graph(model, None, ("eager", "eager"))
            if drift > drift_limit(fmt):
                model.graph_note = (f"the pass as one ONNX Runtime graph was not used: its rows moved by {drift:.2g} "
                                    f"between passes of 1 and of {MANY_ROWS} positions (its attention sums in another "
                                    "order, and int8 activations can turn that into a whole unit of their grid)")
                return None, ("eager", "eager"), {}
        times = time_steps(model, graph)
    except RuntimeError as exc:          # ONNX Runtime refused the graph or a run: the eager pass, and why
        model.graph_note = f"the pass as one ONNX Runtime graph failed ({str(exc).splitlines()[0][:160]}): eager"
        use_graph(model, None, ("eager", "eager"))
        return None, ("eager", "eager"), {}
    one, many = choose_step(times, same)
    return (graph if "graph" in (one, many) else None), (one, many), times


def use_graph(model, graph, ways: tuple[str, str]) -> None:
    model.step_graph = graph
    model.graph_rows = (ways[0] == "graph", ways[1] == "graph") if graph is not None else (False, False)


def model_signature(model, fmt: str) -> str:
    c = model.config
    return f"{fmt} {c.n_layers}L {c.dim}d {c.intermediate_size}f {c.n_heads}/{c.n_kv_heads}h {c.vocab_size}v"


def prepare(model, fmt: str, *, threads: int | None = None, measure: bool = True, progress=None) -> dict:
    """Choose and apply the kernels of a model on a CPU, and whether its passes run as one ONNX Runtime graph.
    threads None: measured (1, 2, 4 ... cores: at each count the kernels its products chose and the graph, a pass
    of 1 and of γ+1 positions timed, the count with the lowest sum kept); else that count. The eager choices are
    refined in whole passes where the eager path runs the model's single-sequence passes. Sets torch's thread
    count (a process has one). Returns the report the bench and the panel show."""
    slots = model_slots(model, fmt)
    machines = recall()
    base = machine_key()
    sig = slots_signature(slots)
    others = OtherLoad()
    threads = threads or env_threads()
    counts = [threads] if threads else thread_counts()
    if not measure:
        counts = [threads or torch.get_num_threads()]

    def at(t: int) -> dict:
        return machines.setdefault(f"{base} | {t} threads", {"models": {}, "threads": {}, "passes": {}})
    per_count: dict[int, list[float]] = {}
    if len(counts) > 1:
        known = machines.setdefault(base, {"models": {}, "threads": {}, "passes": {}})["threads"].get(sig, {})
        if all(str(t) in known for t in counts):
            per_count = {t: known[str(t)] for t in counts}
        else:
            for t in counts:
                torch.set_num_threads(t)
                survey = tune(model, slots, t, cache=machines, refine=False, progress=progress)
                apply(slots, survey, t)
                graph, ways, times = _graph(model, fmt, t, survey, at(t)["passes"].get(sig), progress)
                if times and sig not in at(t)["passes"]:
                    at(t)["passes"][sig] = {"us": times, "one": ways[0], "many": ways[1]}
                per_count[t] = ([times[ways[0]][0], times[ways[1]][1]] if times else
                                [x * 1e6 for x in time_pass(model)])
                use_graph(model, None, ("eager", "eager"))
            machines[base]["threads"][sig] = {str(t): v for t, v in per_count.items()}
        chosen = min(per_count, key=lambda t: sum(per_count[t]))
    else:
        chosen = counts[0]
    torch.set_num_threads(chosen)
    known = at(chosen)["passes"].get(sig)
    graph_both = known is not None and known["one"] == known["many"] == "graph"
    choices = tune(model, slots, chosen, measure=measure, cache=machines, progress=progress, refine=not graph_both)
    apply(slots, choices, chosen)
    graph, ways, pass_us = (None, ("eager", "eager"), {}) if not measure and known is None else \
        _graph(model, fmt, chosen, choices, known, progress)
    use_graph(model, graph, ways)
    if pass_us and known is None:
        at(chosen)["passes"][sig] = {"us": pass_us, "one": ways[0], "many": ways[1]}
    load = others.cores()
    if measure and load <= QUIET_CORES:
        write_cache(machines)
    elif measure:
        keep_for_this_run(machines)
    return {"threads": chosen, "thread_pass_us": {str(t): v for t, v in per_count.items()},
            "groups": [c.as_dict() for c in choices], "machine": base, "others_busy_cores": load,
            "cached": load <= QUIET_CORES,
            "pass": {"one_position": ways[0], "several_positions": ways[1],
                     "us": {w: {str(r): t for r, t in zip(ROWS, ts)} for w, ts in pass_us.items()}},
            "method": ("every candidate kernel timed inside the model's own passes of 1 and "
                       f"{MANY_ROWS} positions (round i: every matrix runs its group's i-th candidate), median µs per "
                       "product; per group the family whose best 1-row and best several-row times sum lowest, then "
                       "its fastest for each row count; then, per row count and group, each candidate within "
                       f"{SCREEN}x of the fastest product tried in whole passes against the kernel in place "
                       f"(alternating A/B, kept when the pass is {int(round((SAME_WITHIN_PASS - 1) * 100))} % "
                       f"faster); the pass: eager (the kernels above) against one ONNX Runtime graph, A/B for 1 and "
                       f"{MANY_ROWS} positions, the faster for each where both compute the same numbers; threads: a "
                       f"pass of 1 and {MANY_ROWS} positions timed at each count, the lowest sum kept")}


def report_lines(r: dict) -> list[str]:
    """A kernel report (prepare's) in words: which path each of a model's products took, and what the alternatives
    cost (µs a product, 1 | γ+1 rows)."""
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
