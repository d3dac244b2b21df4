"""Live numbers for narration and panels, each computed from a model, the run's traces or the hardware model.

facts(ctl) returns formatted strings by name; a narration page writes {alpha} and gets the toy pair's α.
Two kinds of numbers, labelled apart: the pair's own properties (α, tokens per pass, best γ, best speedup)
come from one long run per table (models.analytics.pair_facts, what `spectable alpha` reports; ctl.long_run());
what the short run on the table counted is named as that run's count (run_count: "9 / 21"), never as α.
A number that cannot be computed shows '—'; one still being computed on a worker thread shows '…'.
"""
from __future__ import annotations

import math

import numpy as np

from app import derived, pairs
from app.lesson.measured import (computer_roofline, fmt_bandwidth, fmt_ms, fmt_ops_count, fmt_prob, fmt_threads,
                                 fmt_tps, in_run_cost, memory_words, pair_measurement, section, sig)
from corpus.errors import InputError
from models.tubes import DEFAULT_PREFIX, tv_noise
from app.figures import KV_CONTEXTS, OVERLAP_CONTEXT, TPP_LONG_TOKENS, drafter_points, overlap_rows, tube_tv_curves
from models import analytics, hardware
from models.drafter_analytics import count_traces, speedup_model
from models.drafters import node_count
from models.measurements import slow_cause

# A measured speed-up this close to 1 is called even, not a gain or a loss: repeated runs of the same bench on
# one machine move by about this much (docs/architecture/torch.md).
EVEN_WITHIN = 0.05
PREFIX = DEFAULT_PREFIX     # the test-tube prefix of SCIENCE.md chapter 6


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

    put("lanes", lambda: f"{s.lanes}")
    put("gamma", lambda: f"{s.gamma}")
    put("c", lambda: f"{s.c:g}")
    put("context", lambda: f"{s.context:,}")
    put("device", lambda: s.device)
    put("vocab", lambda: f"{ses.pair().V:,}")
    # what the counted pair was counted from (its table's own list of pieces): the tape writes in their language
    manifest = lambda: getattr(ses.pair(), "manifest", {})      # noqa: E731 (a network pair has none: not shown)
    put("source", lambda: f"{len(manifest()['pieces'])}")
    put("corpus_tokens", lambda: f"{manifest()['N']:,}")
    roof = None
    try:
        roof = derived.roofline(s.device, s.model, s.lanes, s.context)
    except UNAVAILABLE as exc:
        f.failed("roofline", exc)
    if roof is not None:
        put("bytes_per_step", lambda: f"{roof.bytes_per_step / 1e9:.2f} GB")
        put("ms_per_token", lambda: f"{roof.ms_per_token:.2f} ms")
        put("tokens_per_s", lambda: f"{roof.tokens_per_s:,.0f}")
        put("busy", lambda: hardware.busy_text(roof.arithmetic_busy))
        put("idle", lambda: hardware.busy_text(roof.arithmetic_idle))       # the exhibit's "99.7% of the time"
        # Lookahead decoding's ~120× the operations a pass (its authors' 7B setting) on this mill, on paper
        put("busy_x120", lambda: f"{100 * derived.LOOKAHEAD_OPS * roof.arithmetic_busy:.0f}%")
        # one lane's share, finer: nine lanes' 3.0 % is 9 × 0.34 %, not 9 × the rounded 0.3 %
        put("busy_per_lane", lambda: f"{100 * roof.arithmetic_busy / max(s.lanes, 1):.2f}%")
        put("lanes_to_saturate", lambda: f"{roof.lanes_to_saturate:.0f}")
        put("weights_gb", lambda: f"{roof.weight_bytes / 1e9:.2f} GB")
        put("bandwidth", lambda: fmt_bandwidth(roof.bandwidth_Bps))
        put("device_ops_per_byte", lambda: f"{roof.device_ops_per_byte:.0f}")
        # the device's arithmetic, in trillions of operations a second (the figure arith_ms divides by)
        put("device_tera_ops", lambda: f"{roof.flops / 1e12:,.0f}")
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
        # Pope et al.'s crossover: from how many sequences the caches read more than the weights (the first whole
        # batch past the crossing: 239.3 sequences' caches still read less, 240's more; the plot marks ≈239.3)
        put("kv_crossover", lambda: f"{math.floor(roof.weight_bytes / (s.context * roof.kv_bytes_per_token)) + 1:,}")
        short = KV_CONTEXTS[-1]
        put("kv_short", lambda: f"{short:,}")
        put("kv_crossover_short",
            lambda: f"{math.floor(roof.weight_bytes / (short * roof.kv_bytes_per_token)) + 1:,}")
    # The same batch reading the weights alone (no KV cache): chapter 2 starts there.
    weights_only = lambda lanes=s.lanes: derived.roofline(s.device, s.model, lanes, 0)  # noqa: E731
    put("tps_weights", lambda: f"{weights_only().tokens_per_s:,.0f}")
    put("busy_weights", lambda: hardware.busy_text(weights_only().arithmetic_busy))
    gain = lambda: weights_only().tokens_per_s / weights_only(1).tokens_per_s  # noqa: E731
    put("batch_gain", lambda: f"{gain():.0f} 倍" if s.language == "zh" else f"{gain():.0f}×")
    # A speculative pass computes γ + 1 positions of each sequence at once (a tree: its nodes + 1); they read its KV
    # cache once.
    put("spec_lanes", lambda: f"{s.lanes * derived.pass_positions(s)}")
    # What a pass costs in big-drum turns: γ turns of the small drum at c each, then one of the big drum.
    put("pass_cost", lambda: f"{s.gamma * s.c + 1:g}")
    # How long a pass takes, one position of each sequence and γ + 1 of them: the same read, a little more arithmetic
    checking = lambda: derived.roofline(s.device, s.model, s.lanes, s.context, derived.pass_positions(s))  # noqa: E731
    one_turn = lambda: derived.roofline(s.device, s.model, s.lanes, s.context).ms_per_step  # noqa: E731
    put("pass_ms", lambda: f"{one_turn():.2f} ms")
    put("pass_ms_spec", lambda: f"{checking().ms_per_step:.2f} ms")
    # the small drum's γ turns, c of one token's pass each (what the big drum's check leaves out of a pass's time)
    put("draft_ms_spec", lambda: f"{s.gamma * s.c * one_turn():.2f} ms")
    put("arith_ms_spec", lambda: f"{checking().arithmetic_ms_per_step:.3f} ms")
    put("busy_spec", lambda: hardware.busy_text(derived.pass_busy(s.device, s.model, s.lanes, derived.pass_positions(s),
                                                                  s.context)))
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
    # the same figures under the neural pair's own labels (its pages: the panel says which pair they belong to)
    f.lazy["neural_pair_alpha"] = long(lambda pf: f"{pf.alpha:.3f}")
    f.lazy["neural_pair_tpp"] = long(lambda pf: f"{pf.tokens_per_pass_counted:.2f}")
    f.lazy["long_tokens"] = long(lambda pf: f"{pf.tokens:,}")
    f.lazy["long_count"] = long(lambda pf: f"{pf.accepted:,} / {pf.tested:,}")
    # what counting the verdicts gives: a little under α, guesses sit where the text is harder than on average
    f.lazy["alpha_kept"] = long(lambda pf: f"{pf.kept_share:.3f}")
    # how sure the long run's α is: the spread over its independent texts (or the shipped count's runs)
    f.lazy["alpha_ci"] = long(lambda pf: f"{pf.alpha_ci95:.3f}" if math.isfinite(pf.alpha_ci95) else None)
    f.lazy["long_text_count"] = long(lambda pf: f"{pf.runs:,}")

    def long_words(pf):
        """How long the long run is and how sure its α: a shipped count with its interval, else the live one's
        length (a network's live count is short: it says so)."""
        if math.isfinite(pf.alpha_ci95):
            key = ("fact.long_shipped" if pf.method == "shipped long run" else
                   "fact.long_texts_mean" if pf.alpha_measure == "text" else "fact.long_texts")
            return t(key, tokens=f"{pf.tokens:,}", runs=pf.runs, ci=f"{pf.alpha_ci95:.3f}")
        return t("fact.long_live", tokens=f"{pf.tokens:,}")
    f.lazy["long_run_words"] = long(long_words)
    f.lazy["tpp_formula"] = long(lambda pf: f"{pf.tokens_per_pass_formula:.2f}")
    f.lazy["tpp_counted"] = long(lambda pf: f"{pf.tokens_per_pass_counted:.2f}")
    f.lazy["tpp_plot_tokens"] = lambda: f"{TPP_LONG_TOKENS:,}"      # the plot's bars: a shorter run at every γ
    # Shorter counts beside the long run (chapter 7's picture of how sure a count is): the long run's own texts in
    # parts, where it kept each text's sums (a counted pair's vectorised run)
    def parts(fmt):
        return long(lambda pf: fmt(*pf.alpha_parts(derived.SHORT_COUNTS)) if pf.text_parts else None)
    f.lazy["short_counts"] = parts(lambda a, n: f"{len(a)}")
    f.lazy["short_tokens"] = parts(lambda a, n: f"{round(n, -2):,.0f}")
    f.lazy["short_alpha_lo"] = parts(lambda a, n: f"{min(a):.3f}")
    f.lazy["short_alpha_hi"] = parts(lambda a, n: f"{max(a):.3f}")

    # α place by place in a pass: the first guess (after a token the target wrote itself) and the later ones pooled
    def by_depth(fmt):
        return long(lambda pf: fmt(pf) if pf.alpha_by_depth else None)
    f.lazy["alpha_first"] = by_depth(lambda pf: f"{pf.alpha_by_depth[0]:.3f}")
    f.lazy["alpha_later"] = by_depth(lambda pf: f"{sum(pf.accepted_by_depth[1:]) / sum(pf.tested_by_depth[1:]):.3f}"
                                     if sum(pf.tested_by_depth[1:]) else None)
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
            put("check_p", lambda: fmt_prob(tr.p_rows[i][g]))
            put("check_q", lambda: fmt_prob(tr.q_rows[i][g]))
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
        key = "tour.neural_even" if abs(sp - 1) <= EVEN_WITHIN else "tour.neural_slower" if sp < 1 else \
            "tour.neural_faster"
        return t(key, speedup=f"×{sig(sp)}")

    def threads_words(d):
        n = int(d["device"]["threads"])
        return t("tour.threads_one" if n == 1 else "tour.threads_many", n=n)

    def source_words(_d):
        d, source = pair_measurement(ctl)
        dev = section(d, "device")
        where = dict(device=str(dev.get("name") or "?"), date=str(d.get("date", "?"))[:10], threads=threads_words(d))
        if source == "measuring":
            worker = ctl.bench_worker
            return t("tour.neural_measuring", step=worker.step, **where)
        return t("tour.neural_measured_here" if source == "live" else "tour.neural_measured_on", **where)

    def cause_words(d):
        cause = d.get("cause") or slow_cause(d)
        if cause is None:
            return ""
        m = section(d, "machine")
        k = int(d["settings"]["gamma"]) + 1
        return t(f"tour.neural_cause_{cause['kind']}", turns=f"{cause['draft_turns']:.2f}", c=sig(in_run_cost(d, "c")),
                 guesses=f"{float(d.get('guesses_per_pass') or d['settings']['gamma']):.1f}",
                 extra=f"{cause['verify_extra_turns']:.2f}",
                 k=k, verify=f"{in_run_cost(d, 'verify_ratio'):.2f}",
                 predicted=f"{float(m['predicted_verify_ratio']):.2f}" if m.get("predicted_verify_ratio") else "—",
                 lanes=f"{float(m['lanes_to_saturate']):.1f}" if m.get("lanes_to_saturate") else "—",
                 fixed=f"{100 * cause['fixed_share']:.0f}%")

    def run_turns(d) -> float:
        """A timed pass in turns of the target's plain pass: the guesses' cost and the check's (the formula the
        page writes out: tokens per pass ÷ (guesses × c + verify))."""
        return float(d["guesses_per_pass"]) * in_run_cost(d, "c") + in_run_cost(d, "verify_ratio")

    def ridge_words(d):
        m = section(d, "machine")
        if not m.get("ridge_ops_per_byte") or not m.get("lanes_to_saturate"):
            return ""
        # A lane's operations per byte read: 2 a weight over the bytes a weight is stored in (the bench's own
        # matrices), so the class can redo ridge ÷ that = lanes.
        per_byte = float(m["matrix_ops"]) / float(m["weight_bytes"]) if m.get("matrix_ops") and m.get("weight_bytes") \
            else float(m["ridge_ops_per_byte"]) / float(m["lanes_to_saturate"])
        return t("tour.neural_ridge", ridge=f"{float(m['ridge_ops_per_byte']):.2f}", h100=f["device_ops_per_byte"],
                 lanes=f"{float(m['lanes_to_saturate']):.1f}", dtype=str(d.get("dtype") or "?"),
                 bytes=f"{2 / per_byte:g}", per_byte=f"{per_byte:g}")

    def sbs_heads_verify(d):
        heads = section(section(section(d, "side_by_side"), "drafters"), "heads")
        turns = heads.get("verify_turns_per_pass")
        return f"{float(turns):.2f}" if turns is not None else "—"

    def fixed_words(d):
        """The fixed cost of a pass (no bytes behind it), which the paper column leaves out."""
        m = section(d, "machine")
        if not m.get("fixed_s") or not m.get("pass_1_s"):
            return ""
        # (the plain run's tokens/s is the forward and the sampling: 855/s is 1.17 ms beside a 1.03 ms forward)
        plain = float(d["plain_tokens_per_s"])
        return t("tour.neural_fixed", fixed=fmt_ms(1e3 * float(m["fixed_s"])), one=fmt_ms(1e3 * float(m["pass_1_s"])),
                 share=f"{100 * float(m['fixed_s']) / float(m['pass_1_s']):.0f}%", plain_tps=fmt_tps(plain),
                 per_token=fmt_ms(1e3 / plain))

    f.lazy.update({
        "neural_run_guesses": measured(lambda d: f"{float(d['guesses_per_pass']):.1f}"),
        "neural_run_turns": measured(lambda d: f"{run_turns(d):.2f}"),
        "neural_ridge_words": measured(ridge_words),
        "neural_fixed_words": measured(fixed_words),
        "neural_target_ms": measured(lambda d: fmt_ms(d["target_ms"])),
        "neural_draft_ms": measured(lambda d: fmt_ms(d["draft_ms"])),
        # the costs inside the measured runs (what the formula is fed with), the forwards alone in older files
        "neural_c": measured(lambda d: sig(in_run_cost(d, "c"))),
        "neural_c_paper": measured(lambda d: sig(d["on_paper"]["c"])),
        "neural_verify": measured(lambda d: f"{in_run_cost(d, 'verify_ratio'):.2f}"),
        # the formula fed with the timed runs' own costs, as the page writes it out (their totals, not a median)
        "neural_formula": measured(lambda d: f"×{sig(float(d['tokens_per_pass']) / run_turns(d))}"),
        # the bench's own figure: each round's costs, then the median over rounds
        "neural_formula_median": measured(lambda d: f"×{sig(v)}" if (v := section(d, "on_paper").get(
            "speedup_from_measured_costs")) is not None else "—"),
        "neural_threads": measured(lambda d: fmt_threads(d["device"]["threads"], t)),
        "neural_roofline": measured(lambda d: f"{100 * d['on_paper']['fraction_of_roofline_plain']:.0f}%"),
        "neural_verify_k": measured(lambda d: f"{d['settings']['gamma'] + 1}"),
        "neural_speedup": measured(lambda d: f"×{sig(d['speedup'])}"),
        "neural_run_tpp": measured(lambda d: f"{float(d['tokens_per_pass']):.2f}"),
        "neural_run_tokens": measured(lambda d: f"{int(d['settings']['tokens']):,}"),
        "neural_run_alpha": measured(lambda d: f"{float(d['alpha']):.3f}"),
        "neural_speedup_paper": measured(lambda d: f"×{sig(d['on_paper']['speedup'])}"),
        "neural_plain_tps": measured(lambda d: fmt_tps(d["plain_tokens_per_s"])),
        "neural_spec_tps": measured(lambda d: fmt_tps(d["speculative_tokens_per_s"])),
        "neural_speed_words": measured(speed_words),
        "neural_device": measured(lambda d: str(section(d, "device").get("name") or "?")),
        "neural_date": measured(lambda d: str(d.get("date", "?"))[:10]),
        "neural_threads_words": measured(threads_words),
        "neural_source": measured(source_words),
        "neural_cause": measured(cause_words),
        # the heads' check in the side-by-side run, in plain passes (chapter 10: not idle arithmetic there)
        "sbs_heads_verify": measured(sbs_heads_verify),
    })

    def cpu_lanes():
        r = computer_roofline(ctl)
        if r is None:
            raise InputError("no measurement of this computer's arithmetic and reading (spectable bench --pair neural)")
        return t("fact.cpu_lanes_value", lanes=f"{r['lanes']:.1f}", ridge=f"{r['ridge']:.1f}", device=r["device"])
    f.lazy["cpu_lanes"] = cpu_lanes
    # Lookahead's ~120× the operations on this computer: times over what its arithmetic keeps up with while it reads
    def cpu_x120():
        r = computer_roofline(ctl)
        return None if r is None else f"{derived.LOOKAHEAD_OPS / r['lanes']:.0f}"
    f.lazy["cpu_x120"] = cpu_x120

    def cpu_lanes_n():
        r = computer_roofline(ctl)
        return None if r is None else f"{r['lanes']:.0f}"
    f.lazy["cpu_lanes_n"] = cpu_lanes_n
    def params(role):           # the shipped pair's (the tour's passage names it), read from its checkpoints
        n = ses.pair_by_key("neural").params[role]
        if n is None:
            return "—"
        return f"{n / 1e4:,.0f} 万" if s.language == "zh" else f"{n / 1e6:.2f} million"
    f.lazy["neural_target_params"] = lambda: params("target")
    f.lazy["neural_draft_params"] = lambda: params("draft")

    def ngram_alpha():
        pf = analytics.pair_facts(ses.pair_by_key(pairs.key(pairs.COUNTED, s.tokens)), s.gamma, ses.sampler_settings(), seed=0)
        return f"{pf.alpha:.3f}"
    f.lazy["ngram_alpha"] = ngram_alpha


def _drafter_cost(ses, s):
    """The drafter's cost per pass at γ (a neural pair's own draft model costs what the chain does)."""
    return ses.drafter().cost(s.gamma)


def drafter_facts(ctl, f: Facts, put) -> None:
    """Who drafts, counted: this run's kept/checked, tokens and lanes per pass and the roofline's speedup from them
    (drafter_run_*); every drafter's long run when it is ready (drafter_<key>_tpp, _lanes, _speedup, _alpha; drafters_source
    says whether they come from the shipped long runs or a short run counted now)."""
    s, ses = ctl.settings, ctl.session
    run = ses.ensure()
    put("drafter", lambda: ctl.t(f"lab.drafter_{s.drafter}"))
    put("heads_last", lambda: f"{s.gamma}")          # heads 1..γ (Medusa's numbering) propose γ guesses

    def heads_read():
        """What γ Medusa heads add to a pass on paper: each has its own hidden × vocabulary output layer, read once a
        pass (models.hardware.Model.medusa_head_params) -> (GB read, the pass's extra time over the target's own)."""
        m = hardware.get_model(s.model)
        extra = s.gamma * m.medusa_head_params
        base = hardware.pass_time(s.device, s.model, s.gamma + 1, s.context)["ms"]
        more = hardware.pass_time(s.device, s.model, s.gamma + 1, s.context, extra_params=extra, extra_ops=2.0 * extra)
        return extra * m.bytes_per_param / 1e9, more["ms"] / base - 1
    put("heads_read_gb", lambda: f"{heads_read()[0]:.1f} GB")
    put("heads_pass_extra", lambda: f"{100 * heads_read()[1]:.0f}%")
    # the tree the settings describe (tree_width children per node, tree_depth deep), drafting or not
    put("tree_nodes", lambda: f"{node_count([s.tree_width] * s.tree_depth)}")
    put("tree_lanes", lambda: f"{(node_count([s.tree_width] * s.tree_depth) + 1) * s.lanes}")
    if run and s.decoder == "speculative":
        counted = count_traces(run.traces, s.drafter, s.drafter, s.gamma, s.seed)
        put("drafter_run_kept", lambda: f"{counted.accepted}/{counted.tested}")
        put("drafter_run_tpp", lambda: f"{counted.tokens_per_pass:.2f}")
        lanes = counted.lanes_per_pass
        put("drafter_run_lanes", lambda: f"{lanes:.0f}" if float(lanes).is_integer() else f"{lanes:.1f}")
        put("drafter_run_speedup", lambda: f"{speedup_model(counted.tokens_per_pass, counted.lanes_per_pass, _drafter_cost(ses, s), s.device, s.model, s.context, s.c)['speedup_model']:.2f}×")  # noqa: E501
    try:
        fig = drafter_points(ctl)        # None while they are counted on their thread
    except UNAVAILABLE as exc:
        fig = None
        f.failed("drafters", exc)
    if fig is None:
        return
    f["drafters_source"] = fig["source"]
    f["drafters_chars"] = f"{fig['chars']:,}"

    def short_ci():
        """About how sure a count as short as the drafters' is: the long run's interval widened by the square
        root of how many times fewer tokens it counts (an interval shrinks as 1/√tokens)."""
        pf = ctl.long_run()
        if pf is None or not math.isfinite(pf.alpha_ci95) or not fig["chars"]:
            return None
        return f"{pf.alpha_ci95 * math.sqrt(pf.tokens / fig['chars']):.3f}"
    f.lazy["drafters_alpha_ci"] = short_ci
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
