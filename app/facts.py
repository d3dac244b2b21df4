"""Live numbers for narration and panels, each computed from a model, the run's traces or the hardware model.

facts(ctl) returns formatted strings by name; a narration page writes {alpha} and gets the toy pair's α.
Two kinds of numbers, labelled apart: the pair's own properties (α, tokens per pass, best γ, best speedup)
come from one long run per table (models.analytics.pair_facts, what `spectable alpha` reports; ctl.long_run());
what the short run on the table counted is named as that run's count (run_count: "9 / 21"), never as α.
A number that cannot be computed shows '—'; one still being computed on a worker thread shows '…'.
"""
from __future__ import annotations

import numpy as np

from app import derived, pairs
from corpus.errors import InputError

PREFIX = "慢慢"     # the test-tube prefix of SCIENCE.md chapter 6


# What computing a live number may meet that is not a bug: a model or file that cannot load (InputError,
# OSError), a number out of a model's range (ValueError, ArithmeticError), a figure the measurement does not
# hold (LookupError). The number shows '—' and its cause goes to Facts.errors, which the status line says
# (Controller.facts); anything else is a bug and is raised.
UNAVAILABLE = (InputError, OSError, ValueError, ArithmeticError, LookupError)


class Facts(dict):
    """name -> formatted number. Costly numbers (`lazy`) are computed the first time a page asks for them.
    errors: name -> why it shows '—' (one line); asked: the names among them something read (a panel, a page),
    so the status line speaks only of a '—' someone sees."""

    def __init__(self):
        super().__init__()
        self.lazy: dict = {}
        self.errors: dict[str, str] = {}
        self.asked: set[str] = set()

    def __getitem__(self, key):
        value = super().__getitem__(key)          # a name not computed yet goes through __missing__
        if key in self.errors:
            self.asked.add(key)
        return value

    def failed(self, name: str, exc: Exception) -> None:
        self.errors[name] = f"{name}: {exc}" if str(exc) else f"{name}: {type(exc).__name__}"

    def __missing__(self, key):
        fn = self.lazy.get(key)
        if fn is not None:
            try:
                value = fn()
            except UNAVAILABLE as exc:
                self.lazy.pop(key, None)
                self.failed(key, exc)
                return "—"
            if value is None:            # still computing on a worker thread: asked again next frame
                return "…"
            self.lazy.pop(key, None)
            self[key] = value
            return value
        return "—"


def pass_story(ctl, tr) -> str:
    """What one pass did, in words: a replacement and a bonus are told apart."""
    pair, t = ctl.session.pair(), ctl.t
    if not tr.guesses:
        return t("story.target", token=pair.display(tr.final_token))
    token = pair.display(tr.final_token)
    if tr.final_kind == "bonus":
        return t("story.bonus", gamma=tr.gamma, token=token, n=len(tr.tokens_written))
    if tr.n_accepted == 0:
        return t("story.first_rejected", token=token)
    return t("story.replaced", kept=tr.n_accepted, pos=tr.n_accepted + 1, token=token, n=len(tr.tokens_written))


def checkpoint_pass(ctl, kind: str) -> int:
    """The pass the tour chapter's checkpoint of this kind asks about (its action's "pass"; 0 when none)."""
    if getattr(ctl, "mode", None) == "tour":
        for page in ctl.tour.pages():
            a = page.action
            if a is not None and a.do == "checkpoint" and a.kind == kind:
                return a.pass_index or 0
    return 0


def checkpoint(ctl):
    """The guess a predict-then-reveal page asks about: the first tested guess with q > p (a real gamble) in the
    pass the checkpoint names, else in any pass."""
    run = ctl.session.ensure()
    if not run:
        return None
    k = min(checkpoint_pass(ctl, "test"), len(run.traces) - 1)
    for tr in (run.traces[k], *run.traces):
        for i in range(tr.tested):
            if tr.ratios[i] < 1.0:
                return tr, i
    tr = run.traces[k]
    return (tr, 0) if tr.guesses else None     # the target alone (tour chapters 1-2) guesses nothing


def count_reveal(ctl, tr) -> str:
    """The count checkpoint's answer, naming what the target wrote last: a replacement or the bonus token."""
    pair, t = ctl.session.pair(), ctl.t
    token, written = pair.display(tr.final_token), "".join(pair.display(g) for g in tr.tokens_written)
    if tr.final_kind == "bonus":
        return t("check.count_reveal_bonus", kept=tr.n_accepted, token=token, written=written)
    if tr.n_accepted == 0:
        return t("check.count_reveal_none", token=token, written=written)
    return t("check.count_reveal_replaced", kept=tr.n_accepted, pos=tr.n_accepted + 1, token=token,
             written=written)


def under_over(pair):
    """For the prefix 慢慢: the token the draft under-proposes most (p - q largest) and over-proposes most."""
    ids = pair.encode(PREFIX)
    p, _ = pair.target_row(ids)
    q, _ = pair.draft_row(ids)
    d = p - q
    u, o = int(np.argmax(d)), int(np.argmin(d))
    return (pair.display(u), p[u], q[u]), (pair.display(o), p[o], q[o])


def facts(ctl) -> Facts:
    """Every live number by name, formatted, for the settings and the run now on the table."""
    f = Facts()
    s, ses, t = ctl.settings, ctl.session, ctl.t

    def put(name, fn):
        try:
            f[name] = fn()
        except UNAVAILABLE as exc:
            f.failed(name, exc)

    from models import analytics
    put("lanes", lambda: f"{s.lanes}")
    put("gamma", lambda: f"{s.gamma}")
    put("c", lambda: f"{s.c:g}")
    put("context", lambda: f"{s.context:,}")
    put("device", lambda: s.device)
    put("vocab", lambda: f"{ses.pair().V:,}")
    roof = None
    try:
        roof = derived.roofline(s.device, s.model, s.lanes, s.context)
    except UNAVAILABLE as exc:
        f.failed("roofline", exc)
    if roof is not None:
        put("bytes_per_step", lambda: f"{roof.bytes_per_step / 1e9:.2f} GB")
        put("ms_per_token", lambda: f"{roof.ms_per_token:.2f} ms")
        put("tokens_per_s", lambda: f"{roof.tokens_per_s:,.0f}")
        put("busy", lambda: f"{100 * roof.arithmetic_busy:.1f}%")
        put("lanes_to_saturate", lambda: f"{roof.lanes_to_saturate:.0f}")
        put("weights_gb", lambda: f"{roof.weight_bytes / 1e9:.2f} GB")
        put("bandwidth", lambda: fmt_bandwidth(roof.bandwidth_Bps))
        put("device_ops_per_byte", lambda: f"{roof.device_ops_per_byte:.0f}")
        put("kv_per_token", lambda: f"{roof.kv_bytes_per_token:,}")
        put("kv_gb", lambda: f"{roof.kv_bytes_per_step / 1e9:.1f} GB")
        put("arith_ms", lambda: f"{roof.arithmetic_ms_per_step:.3f} ms")
        ops = roof.ops_per_step
        put("ops_per_step", lambda: fmt_ops_count(ops, s.language))
        # Does the example fit the device it names? Weights and every cache against its memory, in words.
        put("memory_fit", lambda: memory_words(roof, t))
        # attention's arithmetic for one position over the context (the weights' is 2 × params)
        put("attn_ops", lambda: fmt_ops_count(roof.attention_ops_per_step / (roof.batch * roof.positions),
                                              s.language))
        # Pope et al.'s crossover: from how many sequences the caches read more than the weights
        put("kv_crossover", lambda: f"{roof.weight_bytes / (s.context * roof.kv_bytes_per_token):,.0f}")
        from app.figures import KV_CONTEXTS
        short = KV_CONTEXTS[-1]
        put("kv_short", lambda: f"{short:,}")
        put("kv_crossover_short", lambda: f"{roof.weight_bytes / (short * roof.kv_bytes_per_token):,.0f}")
    # The same batch reading the weights alone (no KV cache): chapter 2 starts there.
    weights_only = lambda lanes=s.lanes: derived.roofline(s.device, s.model, lanes, 0)  # noqa: E731
    put("tps_weights", lambda: f"{weights_only().tokens_per_s:,.0f}")
    put("busy_weights", lambda: f"{100 * weights_only().arithmetic_busy:.1f}%")
    gain = lambda: weights_only().tokens_per_s / weights_only(1).tokens_per_s  # noqa: E731
    put("batch_gain", lambda: f"{gain():.0f} 倍" if s.language == "zh" else f"{gain():.0f}×")
    # A speculative pass computes γ + 1 positions of each sequence at once (a tree: its nodes + 1); they read its KV
    # cache once.
    put("spec_lanes", lambda: f"{s.lanes * pass_positions(s)}")
    # What a pass costs in big-drum turns: γ turns of the small drum at c each, then one of the big drum.
    put("pass_cost", lambda: f"{s.gamma * s.c + 1:g}")
    put("busy_spec", lambda: f"{100 * derived.pass_busy(s.device, s.model, s.lanes, pass_positions(s), s.context):.1f}%")
    # Leviathan et al.'s own example (α = 0.6, γ = 2, the draft's cost left out), from the same formulas.
    put("lev_extra", lambda: f"{100 * (analytics.extra_arithmetic(0.6, 2) - 1):.0f}%")
    put("lev_faster", lambda: f"{100 * (analytics.speedup(0.6, 2, 0.0) - 1):.0f}%")

    # The pair's own properties: the long run (lazy: computed when a page or panel shows one).
    def long(fmt):
        def fn():
            pf = ctl.long_run()
            return None if pf is None else fmt(pf)
        return fn
    f.lazy["alpha"] = long(lambda pf: f"{pf.alpha:.3f}")
    f.lazy["long_tokens"] = long(lambda pf: f"{pf.tokens:,}")
    f.lazy["long_count"] = long(lambda pf: f"{pf.accepted:,} / {pf.tested:,}")

    def long_words(pf):
        """How long the long run is and how sure its α: a shipped count with its interval, else the live one's
        length (a network's live count is short: it says so)."""
        import math
        if math.isfinite(pf.alpha_ci95):
            return t("fact.long_shipped", tokens=f"{pf.tokens:,}", runs=pf.runs, ci=f"{pf.alpha_ci95:.3f}")
        return t("fact.long_live", tokens=f"{pf.tokens:,}")
    f.lazy["long_run_words"] = long(long_words)
    f.lazy["tpp_formula"] = long(lambda pf: f"{pf.tokens_per_pass_formula:.2f}")
    f.lazy["tpp_counted"] = long(lambda pf: f"{pf.tokens_per_pass_counted:.2f}")
    f.lazy["best_gamma"] = long(lambda pf: f"{pf.best(s.c)[0]}")
    f.lazy["best_speedup"] = long(lambda pf: f"{pf.best(s.c)[1]:.2f}×")
    f.lazy["speedup_now"] = long(lambda pf: f"{pf.speedup(s.c):.2f}×")
    # extra_arithmetic is a ratio to the target alone (1.53 = 53% more)
    f.lazy["extra_pct"] = long(lambda pf: f"{100 * (pf.extra_arithmetic() - 1):.0f}%")
    f.lazy["backed_off_pct"] = long(lambda pf: f"{100 * pf.backed_off_share:.0f}%")
    run = ses.ensure()
    if run:
        pair = ses.pair()
        # What the short run on the table counted: named as this run's count.
        count = analytics.count_run(run.traces)
        put("run_passes", lambda: f"{count.passes}")
        put("run_kept", lambda: f"{count.accepted}")
        put("run_tested", lambda: f"{count.tested}")
        put("run_count", lambda: f"{count.accepted} / {count.tested}")
        put("run_tpp", lambda: f"{count.tokens_per_pass:.2f}")
        for name, tr in zip(("story_1", "story_2", "story_3"), run.traces):
            put(name, lambda tr=tr: pass_story(ctl, tr))
        # The count checkpoint's pass (the first, unless the chapter's checkpoint names another).
        trc = run.traces[min(checkpoint_pass(ctl, "count"), len(run.traces) - 1)]
        put("step_written", lambda: f"{pair.decode(trc.tokens_written)} ({trc.n_accepted}+1)")
        put("count_guesses", lambda: "".join(pair.display(g) for g in trc.guesses))
        put("count_kept", lambda: f"{trc.n_accepted}")
        put("count_written", lambda: "".join(pair.display(g) for g in trc.tokens_written))
        put("count_reveal", lambda: count_reveal(ctl, trc))
        cp = checkpoint(ctl)
        if cp:
            tr, i = cp
            g = tr.guesses[i]
            put("check_guess", lambda: pair.display(g))
            put("check_pass", lambda: f"{tr.step_index + 1}")
            put("check_index", lambda: f"{i + 1}")
            put("check_p", lambda: f"{tr.p_rows[i][g]:.4f}")
            put("check_q", lambda: f"{tr.q_rows[i][g]:.4f}")
            put("check_ratio", lambda: f"{tr.ratios[i]:.3f}")
            put("check_r", lambda: f"{tr.r[i]:.3f}")
            put("check_verdict", lambda: t("verdict.accepted") if tr.accepted[i] else t("verdict.rejected"))
    put("alpha_corpus", lambda: f"{derived.alpha_corpus(ses.pair()):.3f}")
    # α over the book at temperature 0 and 1 (chapter 7): 0.4 s each, so only when a page shows them.
    f.lazy["alpha_t0"] = lambda: f"{derived.alpha_corpus(ses.pair(), 0.0):.3f}"
    f.lazy["alpha_t1"] = lambda: f"{derived.alpha_corpus(ses.pair(), 1.0):.3f}"
    f.lazy["t0_disagree"] = lambda: f"{100 * (1 - derived.alpha_corpus(ses.pair(), 0.0)):.0f}%"
    try:
        (uc, up, uq), (oc, op, oq) = under_over(ses.pair())
        f["under_char"] = f"{uc}  (p {up:.3f} > q {uq:.3f})"
        f["over_char"] = f"{oc}  (q {oq:.3f} > p {op:.3f})"
        f["under"], f["over"] = uc, oc
        from app.figures import OVERLAP_CONTEXT, overlap_rows
        f["overlap"] = f"{overlap_rows(ses.pair(), OVERLAP_CONTEXT)[-1]:.3f}"     # Σ min(p, q) after 慢慢
    except UNAVAILABLE as exc:
        f.failed("under_char", exc)
    neural_facts(ctl, f)
    drafter_facts(ctl, f, put)
    try:
        res = ctl.tubes()                # None while the experiment runs on its thread: asked again next frame
    except UNAVAILABLE as exc:
        res = None
        f.failed("tv_left", exc)
    if res is not None:
        from app.figures import tube_tv_curves
        from models.tubes import tv_noise
        tv_l, tv_r = tube_tv_curves(res)
        f["tv_left"] = f"{tv_l[-1]:.4f}"
        f["tv_right"] = f"{tv_r[-1]:.4f}"
        f["tube_draws"] = f"{res.rounds * res.draws:,}"
        f["tube_rounds"] = f"{res.rounds}"
        f["tube_round"] = f"{res.rounds} / {res.rounds}"     # the tour shows the round its table stands at
        # A perfect sampler's noise (400 simulated tubes, ~70 ms): computed only when a page asks for it, once.
        noise = lambda: tv_noise(res.target_p, res.rounds * res.draws)  # noqa: E731
        f.lazy["tv_noise"] = lambda: f"{noise()[0]:.4f}"
        f.lazy["tv_noise_range"] = lambda: "{1:.4f}–{2:.4f}".format(*noise())
    return f


SHIPPED_PAIR = "nahan-target + nahan-draft"     # LlamaPair.name of the shipped neural pair


def shipped_pair_measurement() -> dict | None:
    """The newest measurement file of the shipped neural pair (`spectable bench --pair neural --out ...`): the
    measured figures the tour's neural passage quotes, with where and when they were measured."""
    from models.measurements import PAIR_SCHEMAS
    for e in measurement_files():
        d = e.get("data") or {}
        if d.get("schema") in PAIR_SCHEMAS and _dict(d, "pair").get("name") == SHIPPED_PAIR:
            return e
    return None


def pair_measurement(ctl) -> tuple[dict | None, str]:
    """The shipped neural pair's measurement the lesson quotes, and where it came from: "live" (measured on this
    computer since the program started, app.session.BenchWorker), "measuring" (the shipped file, while the live
    one runs) or "file" (the shipped file: another computer, named with its date)."""
    worker = ctl.bench_worker
    for (pair_key, _gamma), r in list(worker.results.items()):
        if pair_key == pairs.NEURAL and isinstance(r, dict) and _dict(r, "pair").get("name") == SHIPPED_PAIR:
            return r, "live"
    e = shipped_pair_measurement()
    return (e["data"] if e is not None else None), ("measuring" if worker.running() else "file")


def computer_roofline(ctl) -> dict | None:
    """This computer's roofline as the shipped pair measured it (live, else the shipped file's, which names its own
    computer): {'device', 'date', 'source', 'ridge', 'lanes', 'read_GBps', 'gflops'}; None without one."""
    d, source = pair_measurement(ctl)
    m = _dict(d or {}, "machine")
    if not m or m.get("lanes_to_saturate") is None:
        return None
    return {"device": str(_dict(d, "device").get("name") or "?"), "date": str(d.get("date", "?"))[:10],
            "source": source, "ridge": float(m["ridge_ops_per_byte"]), "lanes": float(m["lanes_to_saturate"]),
            "read_GBps": float(m["read_Bps"]) / 1e9, "gflops": float(m["flops"]) / 1e9}


def _in_run(d: dict, key: str) -> float:
    """A cost as measured inside the runs (schema /2), or the forward timed alone (older files)."""
    run = d.get("in_run")
    return float(run[key]) if isinstance(run, dict) and run.get(key) is not None else float(d[key])


def neural_facts(ctl, f: Facts) -> None:
    """The tour's neural passage: the shipped neural pair's sizes (from the loaded checkpoints), its measured costs
    and speedup (from its measurement file: never typed in), and the n-gram pair's long-run α beside its own."""
    s, ses, t = ctl.settings, ctl.session, ctl.t

    def measured(fmt):
        def fn():
            d, _source = pair_measurement(ctl)
            return fmt(d) if d is not None else "—"
        return fn

    def speed_words(d):
        sp = float(d["speedup"])
        return t("tour.neural_slower" if sp < 1 else "tour.neural_faster", speedup=f"×{sig(sp)}")

    def threads_words(d):
        n = int(d["device"]["threads"])
        return t("tour.threads_one" if n == 1 else "tour.threads_many", n=n)

    def source_words(_d):
        d, source = pair_measurement(ctl)
        dev = _dict(d, "device")
        where = dict(device=str(dev.get("name") or "?"), date=str(d.get("date", "?"))[:10], threads=threads_words(d))
        if source == "measuring":
            worker = ctl.bench_worker
            return t("tour.neural_measuring", step=worker.step, **where)
        return t("tour.neural_measured_here" if source == "live" else "tour.neural_measured_on", **where)

    def cause_words(d):
        from models.measurements import slow_cause
        cause = d.get("cause") or slow_cause(d)
        if cause is None:
            return ""
        m = _dict(d, "machine")
        k = int(d["settings"]["gamma"]) + 1
        return t(f"tour.neural_cause_{cause['kind']}", turns=f"{cause['draft_turns']:.2f}", c=sig(_in_run(d, "c")),
                 k=k, verify=f"{_in_run(d, 'verify_ratio'):.2f}",
                 predicted=f"{float(m['predicted_verify_ratio']):.2f}" if m.get("predicted_verify_ratio") else "—",
                 lanes=f"{float(m['lanes_to_saturate']):.1f}" if m.get("lanes_to_saturate") else "—",
                 fixed=f"{100 * cause['fixed_share']:.0f}%")

    f.lazy.update({
        "neural_target_ms": measured(lambda d: fmt_ms(d["target_ms"])),
        "neural_draft_ms": measured(lambda d: fmt_ms(d["draft_ms"])),
        # the costs inside the measured runs (what the formula is fed with), the forwards alone in older files
        "neural_c": measured(lambda d: sig(_in_run(d, "c"))),
        "neural_c_paper": measured(lambda d: sig(d["on_paper"]["c"])),
        "neural_verify": measured(lambda d: f"{_in_run(d, 'verify_ratio'):.2f}"),
        "neural_formula": measured(lambda d: f"×{sig(d['in_run']['speedup_formula'])}"),
        "neural_threads": measured(lambda d: fmt_threads(d["device"]["threads"], t)),
        "neural_roofline": measured(lambda d: f"{100 * d['on_paper']['fraction_of_roofline_plain']:.0f}%"),
        "neural_verify_k": measured(lambda d: f"{d['settings']['gamma'] + 1}"),
        "neural_speedup": measured(lambda d: f"×{sig(d['speedup'])}"),
        "neural_speedup_paper": measured(lambda d: f"×{sig(d['on_paper']['speedup'])}"),
        "neural_plain_tps": measured(lambda d: fmt_tps(d["plain_tokens_per_s"])),
        "neural_spec_tps": measured(lambda d: fmt_tps(d["speculative_tokens_per_s"])),
        "neural_speed_words": measured(speed_words),
        "neural_device": measured(lambda d: str(_dict(d, "device").get("name") or "?")),
        "neural_date": measured(lambda d: str(d.get("date", "?"))[:10]),
        "neural_threads_words": measured(threads_words),
        "neural_source": measured(source_words),
        "neural_cause": measured(cause_words),
    })

    def cpu_lanes():
        r = computer_roofline(ctl)
        if r is None:
            raise InputError("no measurement of this computer's arithmetic and reading (spectable bench --pair neural)")
        return t("fact.cpu_lanes_value", lanes=f"{r['lanes']:.1f}", ridge=f"{r['ridge']:.1f}", device=r["device"])
    f.lazy["cpu_lanes"] = cpu_lanes
    def params(role):           # the shipped pair's (the tour's passage names it), read from its checkpoints
        n = ses.pair_by_key("neural").params[role]
        if n is None:
            return "—"
        return f"{n / 1e4:,.0f} 万" if s.language == "zh" else f"{n / 1e6:.2f} million"
    f.lazy["neural_target_params"] = lambda: params("target")
    f.lazy["neural_draft_params"] = lambda: params("draft")

    def ngram_alpha():
        from models import analytics
        pf = analytics.pair_facts(ses.pair_by_key(pairs.key(pairs.COUNTED, s.tokens)), s.gamma, ses.sampler_settings(), seed=0)
        return f"{pf.alpha:.3f}"
    f.lazy["ngram_alpha"] = ngram_alpha


def pass_positions(s) -> int:
    """Positions one speculative pass computes per sequence at the settings: γ + 1, a tree's nodes + 1 (lookup: at
    most γ + 1, when it copies γ)."""
    from models.drafters import choice, kind
    name, opts = choice(s)
    return kind(name).positions(dict(opts), s.gamma) + 1


def _drafter_cost(ses, s):
    """The drafter's cost per pass at γ (a neural pair's own draft model costs what the chain does)."""
    return ses.drafter().cost(s.gamma)


def drafter_facts(ctl, f: Facts, put) -> None:
    """Who drafts, counted: this run's kept/checked, tokens and lanes per pass and the roofline's speedup from them
    (drafter_run_*); every drafter's long run when it is ready (drafter_<key>_tpp, _lanes, _speedup, _alpha; drafters_source
    says whether they come from the shipped long runs or a short run counted now)."""
    from models.drafter_analytics import count_traces, speedup_model
    s, ses = ctl.settings, ctl.session
    run = ses.ensure()
    put("drafter", lambda: ctl.t(f"lab.drafter_{s.drafter}"))
    put("heads_last", lambda: f"{s.gamma + 1}")                      # heads 2..γ+1 propose γ guesses
    # the tree the settings describe (tree_width children per node, tree_depth deep), drafting or not
    from models.drafters import node_count
    put("tree_nodes", lambda: f"{node_count([s.tree_width] * s.tree_depth)}")
    put("tree_lanes", lambda: f"{(node_count([s.tree_width] * s.tree_depth) + 1) * s.lanes}")
    if run and s.decoder == "speculative":
        counted = count_traces(run.traces, s.drafter, s.drafter, s.gamma, s.seed)
        put("drafter_run_kept", lambda: f"{counted.accepted}/{counted.tested}")
        put("drafter_run_tpp", lambda: f"{counted.tokens_per_pass:.2f}")
        lanes = counted.lanes_per_pass
        put("drafter_run_lanes", lambda: f"{lanes:.0f}" if float(lanes).is_integer() else f"{lanes:.1f}")
        put("drafter_run_speedup", lambda: f"{speedup_model(counted.tokens_per_pass, counted.lanes_per_pass, _drafter_cost(ses, s), s.device, s.model, s.context, s.c)['speedup_model']:.2f}×")  # noqa: E501
    from app.figures import drafter_points
    try:
        fig = drafter_points(ctl)        # None while they are counted on their thread
    except UNAVAILABLE as exc:
        fig = None
        f.failed("drafters", exc)
    if fig is None:
        return
    f["drafters_source"] = fig["source"]
    f["drafters_chars"] = f"{fig['chars']:,}"
    for p in fig["points"]:
        k = p["key"]
        f[f"drafter_{k}_tpp"] = f"{p['tokens_per_pass']:.2f}"
        lanes = p["lanes_per_pass"]
        f[f"drafter_{k}_lanes"] = f"{lanes:.0f}" if float(lanes).is_integer() else f"{lanes:.1f}"
        f[f"drafter_{k}_speedup"] = f"{p['speedup_model']:.2f}×"
        f[f"drafter_{k}_alpha"] = f"{p['alpha']:.3f}"
        f[f"drafter_{k}_alpha_pct"] = f"{100 * p['alpha']:.0f}%"


def fill(text: str, f: Facts) -> str:
    """Fill {name} fields of a narration page; unknown names stay visible as '—'."""
    try:
        return text.format_map(f)
    except (ValueError, IndexError):
        return text


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


def fmt_ms(ms: float) -> str:
    return f"{sig(ms)} ms"


def fmt_tps(tokens_per_s: float) -> str:
    return sig(tokens_per_s)


def measurement_dir():
    """Read at call time so tests (and a user's copy) can point the panel at another folder."""
    from app import paths
    return paths.MEASUREMENTS_DIR


def measurement_files(folder=None) -> list[dict]:
    """Every *.json in the folder: {'file', 'data'} (validated by models.measurements) or {'file', 'error'}
    (a bad file is listed with its one-line reason, not fatal). Newest date first; files without a date after
    them, by name."""
    from pathlib import Path
    from corpus.errors import InputError
    from models.measurements import measurement_paths, read_measurement
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


def _dict(d, key) -> dict:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, dict) else {}


def sheet_device_of(name: str | None):
    """The data-sheet device (models.hardware.DEVICES, not a measured one) a reported GPU name is, or None:
    'NVIDIA H200' -> h200, 'NVIDIA H100 80GB HBM3' -> h100-sxm."""
    from models import hardware
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
    paper = _dict(r, "on_paper")
    method = r.get("method") if isinstance(r.get("method"), str) else ""
    gamma = _num(r, "settings", "gamma")
    g = f"{gamma:.0f}" if gamma is not None else "γ"

    run = _dict(r, "in_run")

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
    dev = _dict(r, "device")
    settings = _dict(r, "settings")
    pair = _dict(r, "pair")
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
    m = _dict(r, "machine")
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
    from models.measurements import slow_cause
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
    return view


def measurement_view(entry: dict, t, paper_device: str, paper_model: str) -> dict:
    """What the panel shows for one measurement file:
    {'file', 'error', 'meta': [lines], 'note', 'rows': [(label, measured, on_paper, method)],
     'where': line saying which device measured it, 'scaled': line or None, 'notes': [lines]}.
    Values are the file's numbers, formatted; on-paper values are the file's own (bench: measured bandwidth
    roofline) or, for copy bandwidth and matmul rate, the data sheet of the same chip where it is known."""
    from models import hardware
    view = {"file": entry.get("file", "?"), "error": entry.get("error"), "meta": [], "note": None, "rows": [],
            "where": None, "scaled": None, "notes": []}
    if view["error"]:
        view["error"] = t("hw.bad_file", file=view["file"], error=view["error"])
        return view
    data = entry.get("data") or {}
    from models.measurements import PAIR_SCHEMAS
    if data.get("schema") in PAIR_SCHEMAS:
        return pair_view(data, t, view["file"])
    dev = _dict(data, "device")
    dev_name = dev.get("name") or dev.get("type") or (data.get("device") if isinstance(data.get("device"), str)
                                                       else "?")
    dev_type = str(dev.get("type") or "")
    models = _dict(data, "models")
    target = _dict(models, "target").get("name") or _dict(data, "settings").get("target") or "?"
    draft = _dict(models, "draft").get("name") or _dict(data, "settings").get("draft") or "?"
    view["meta"] = [t("hw.device_line", device=dev_name, type=dev_type or "?", dtype=data.get("dtype", "?"),
                      torch=dev.get("torch", "?")),
                    t("hw.date_line", date=str(data.get("date", "?")).replace("T", " ")[:19],
                      target=target, draft=draft)]
    note = _dict(data, "weights").get("note")
    if isinstance(note, str) and note:
        view["note"] = t("hw.random_note") if note.strip() == RANDOM_NOTE else note
    fig = _dict(data, "figures")
    sheet = sheet_device_of(dev_name) if dev_type != "cpu" else None
    rows = view["rows"]

    def method(group):
        m = _dict(fig, group).get("method")
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
    sweep = _dict(fig, "batch_sweep")
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
        an = _dict(fig, "speculative").get("alpha_note")
        if isinstance(an, str) and an:
            view["notes"].append(t("hw.alpha_note") if "not meaningful" in an else an)
    if not rows:
        view["notes"].append(t("hw.no_figures"))
    # The bench's on-paper decode reads every matrix once but looks the input embedding up (one row per token):
    # say so beside the lesson's "about 16 GB", which is all the weights.
    tm = _dict(models, "target")
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
