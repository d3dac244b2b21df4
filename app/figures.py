"""Builds the four plots from the live numbers (the data side of app/plots.py): app.derived and the run."""
from __future__ import annotations

import numpy as np

from app import derived
from corpus.errors import InputError
from app.derived import GAMMAS, LOOKAHEAD_OPS, REFERENCE_ALPHAS
from models.tubes import DEFAULT_PREFIX
from app.lesson.measured import computer_roofline, pair_measurement, section
from models import hardware
from models.drafter_analytics import with_speedups
from models.drafters import FEATURES

PLOT_NAMES = ("speedup", "tpp", "roofline", "tubes", "drafters")
# Pictures a tour page draws for its own sentence (app.lesson.tour.Page.plot), beside the chapters' plots: the weights
# alone before the KV cache is explained, Pope's crossover of the two reads, Σ min(p, q) as an overlap, short counts of
# α beside the long run, α at each place in a pass, the pair's α among the published ones, and what 1×, a check's
# and Lookahead decoding's 120× the arithmetic keep busy, on the mill's GPU and on this computer, and the acceptance
# rule as a line with every test the run made, and what a timed speculative pass of the network pair cost; and
# before all of these, one token's time: reading the weights beside the arithmetic, on one axis.
PAGE_PLOTS = ("token_time", "roofline_weights", "roofline_computer", "kv_bytes", "overlap", "alpha_counts",
              "alpha_depth", "alpha_scale", "arith_multiples", "keep_chance", "pass_time")
OVERLAP_CONTEXT = DEFAULT_PREFIX      # the running example: the tubes' prefix (chapter 6), the quiz's and the handout's
KV_CONTEXTS = (4096, 512)    # the crossover plot's texts: chapter 2's long one and a short one


def plot_names(ctl) -> tuple[str, ...]:
    """The plots this pair has: the drafters are compared on the counted n-gram pair, and on a network pair with
    self-drafters trained on its features (a network with a draft model alone has nothing to compare it with)."""
    compared = not ctl.session.neural or FEATURES in getattr(ctl.session.pair(), "offers", ())
    return tuple(n for n in PLOT_NAMES if not (n == "drafters" and not compared))
# What each plot is drawn from besides the language and the palette: the settings make() reads for it, and
# "run" for the run on the table (the session's version). A panel redraws a plot only when one of these
# changed (tests/test_app_units.py changes every other setting and checks the picture stays the same); a
# plot not listed is redrawn on any change (the drafters plot: its points come from the long-run file or a run
# counted at the lab's settings, its speedups from the device, model, context and c).
PLOT_INPUTS = {
    "speedup": ("run", "c"),
    "tpp": ("run", "tokens", "prompt", "temperature", "top_k", "top_p", "seed", "steps", "gamma"),
    "roofline": ("device", "model", "context", "lanes"),
    "roofline_computer": ("device", "model", "context", "lanes", "computer", "decoder", "gamma", "drafter", "tree_width",
                          "tree_depth"),
    "roofline_weights": ("device", "model", "lanes"),
    "kv_bytes": ("device", "model", "context", "lanes"),
    "overlap": ("pair", "tokens"),
    "alpha_counts": ("pair", "tokens", "gamma", "temperature", "top_k", "top_p"),
    "alpha_depth": ("pair", "tokens", "gamma", "temperature", "top_k", "top_p"),
    "alpha_scale": ("pair", "tokens", "gamma", "temperature", "top_k", "top_p"),
    "arith_multiples": ("device", "model", "context", "gamma"),
    "token_time": ("device", "model", "context", "lanes"),
    "keep_chance": ("run", "played", "tokens", "prompt", "temperature", "top_k", "top_p", "seed", "steps", "gamma",
                    "decoder", "drafter"),
    # the tubes are run on the pair with its drafter, not part of the run
    "tubes": ("pair", "tube_rule", "tokens", "drafter", "tree_width", "tree_depth", "tree_from", "tree_sampling"),
}


def played_passes(ctl) -> int | None:
    """The passes the tour has played on the table so far (a page's picture of them grows as they play, and gives
    away no pass a question still asks about); None outside the tour: the whole run."""
    if ctl.settings.mode != "tour":
        return None
    return int(getattr(ctl.panel, "plays", 0))


def inputs_key(ctl, name: str) -> tuple:
    """What plot `name` is drawn from now: equal keys give the same figure."""
    deps = PLOT_INPUTS.get(name)
    if deps is None:
        return ("any", ctl.session.version, ctl.revision)
    s = ctl.settings

    def value(d):
        if d == "run":
            return ctl.session.version
        if d == "played":
            return played_passes(ctl)
        if d == "computer":                 # this computer's measured roofline: the file's, then the live one
            r = computer_roofline(ctl)
            return None if r is None else (r["source"], r["lanes"])
        return getattr(s, d)
    return (s.language, s.palette) + tuple(value(d) for d in deps)


SLIDE_PX = (1920, 1080)       # exported plots: a slide's size
SLIDE_TEXT_PX = 30.0


def make(ctl, name: str, size_px=(640, 400), text_px: float = 16.0, theme: str = "screen", only=None):
    """A matplotlib Figure for plot `name`, in the controller's language, size_px pixels with text_px text;
    theme 'screen' (the palette on screen) or 'print' (dark ink on white); only: the drafters the drafters plot
    draws (None: every one counted)."""
    # lazy: pulls in matplotlib
    from app import alpha_plots, arithmetic_plots, pass_plots, plots, rule_plots      # matplotlib loads with the first plot, not with the window (0.5 s)
    t, s = ctl.t, ctl.settings
    pal = ctl.colors if theme == "screen" else dict(ctl.colors, **plots.PRINT_COLORS)
    look = {"size_px": tuple(int(v) for v in size_px), "text_px": float(text_px)}
    pair = ctl.session.pair()
    plots.use_font(str(ctl.font_file))
    if name == "speedup":
        alpha = long_alpha(ctl)
        g, _ = derived.best_gamma(alpha, s.c)
        curves = {a: derived.speedups(a, s.c) for a in REFERENCE_ALPHAS}
        label = {"ngram": "plot.toy_alpha", "custom": "plot.custom_alpha"}.get(s.pair, "plot.neural_alpha")
        return plots.speedup_plot(t, pal, curves, alpha, derived.speedups(alpha, s.c), list(GAMMAS), g, s.c, label,
                                  gamma=s.gamma, **look)
    if name == "tpp":
        alpha = long_alpha(ctl)
        if ctl.session.neural:
            # a neural pair runs two networks every pass: the lab's own number of passes at each γ, a short run
            passes = s.steps
            counted = derived.tokens_per_pass_counted(pair, s.prompt, s.temperature, s.top_k, s.top_p, s.seed, passes)
            label = t("plot.counted", passes=passes)
        else:
            # the counted pair: a long seeded run at each γ (the pair's figure, as the formula is), not luck
            counted = derived.tokens_per_pass_long(pair, ctl.session.sampler_settings(), TPP_LONG_TOKENS)
            label = t("plot.counted_long", tokens=f"{TPP_LONG_TOKENS:,}")
        return plots.tokens_per_pass_plot(t, pal, list(GAMMAS), derived.tokens_per_pass_formula(alpha), counted,
                                          alpha, label, gamma=s.gamma, **look)
    if name in ("roofline", "roofline_weights", "roofline_computer"):
        # the weights alone and, once the KV cache is on the page, with every sequence's own cache: side by side
        ctx = 0 if name == "roofline_weights" or s.context <= 1 else s.context      # (1: "as the mill counts")
        lanes, tps_w, busy_w = derived.lane_sweep(s.device, s.model, 0)
        tps_c = busy_c = fits = None
        if ctx > 0:
            _, tps_c, busy_c = derived.lane_sweep(s.device, s.model, ctx)
            fits = derived.lane_fits(s.device, s.model, ctx)
        dev, m = hardware.get_device(s.device), hardware.get_model(s.model)
        fit_lanes = (dev.memory_bytes - m.weight_bytes) / (ctx * m.kv_bytes_per_token) if ctx and dev.memory_bytes \
            else None
        computer = checking = None
        if name == "roofline_computer":      # this computer's own busy share beside, as its measurement found it
            # (its line counts lanes at no context: beside a long context's curves it would match nothing)
            mine = computer_roofline(ctl) if ctx == 0 else None
            if mine is not None:
                computer = (t("plot.computer_busy", lanes=f"{mine['lanes']:.1f}", device=mine["device"]), mine["lanes"])
            if s.decoder == "speculative":   # the pass the chapter checks: γ + 1 positions of each sequence
                k = derived.pass_positions(s)
                checking = (s.lanes, k, derived.pass_busy(s.device, s.model, s.lanes, k, s.context))
        return plots.roofline_plot(t, pal, lanes, tps_w, tps_c, busy_c if ctx > 0 else busy_w, s.lanes, dev.label,
                                   m.label, f"{ctx:,}", fits=fits, memory_gb=dev.memory_bytes / 1e9,
                                   fit_lanes=fit_lanes, computer=computer, checking=checking, **look)
    if name == "kv_bytes":
        dev, m = hardware.get_device(s.device), hardware.get_model(s.model)
        ctxs = tuple(dict.fromkeys((s.context if s.context > 1 else KV_CONTEXTS[0],) + KV_CONTEXTS))[:2]
        return plots.kv_bytes_plot(t, pal, list(derived.LANE_SWEEP), m.weight_bytes / 1e9,
                                   {f"{c:,}": c * m.kv_bytes_per_token / 1e9 for c in ctxs}, s.lanes,
                                   dev.memory_bytes / 1e9, dev.label, m.label, **look)
    if name == "overlap":
        labels, p, q, rest, total = overlap_rows(pair, OVERLAP_CONTEXT)
        return alpha_plots.overlap_plot(t, pal, labels, p, q, rest, total, OVERLAP_CONTEXT, **look)
    if name == "pass_time":
        d, _ = pair_measurement(ctl)
        if d is None:
            raise InputError("the network pair has no measurement to draw its passes' time from")
        device = str(section(d, "device").get("name") or "?")
        return pass_plots.pass_time_plot(t, pal, pass_plots.pass_rows(d), [t("plot.pass_measured", device=device),
                                                                             t("plot.pass_paper")], **look)
    if name == "keep_chance":
        run = ctl.session.ensure()
        traces = run.traces if run else ()
        n = played_passes(ctl)
        return rule_plots.keep_chance_plot(t, pal, rule_plots.run_tests(traces[:n] if n is not None else traces),
                                           **look)
    if name == "alpha_counts":
        if ctl.session.neural:
            raise InputError("short counts of α are laid out on a counted pair: a network's take minutes each")
        pf = ctl.long_run(wait=True)
        short, each = pf.alpha_parts(derived.SHORT_COUNTS)
        if not short:
            raise InputError("this pair's long run kept no texts' sums to split into parts")
        return alpha_plots.alpha_counts_plot(t, pal, short, int(round(each, -2)), pf.alpha, pf.alpha_ci95, pf.tokens,
                                             **look)
    if name == "alpha_depth":
        pf = ctl.long_run(wait=True)
        if not pf.alpha_by_depth:
            raise InputError("this pair's long run was not counted place by place in its passes")
        return alpha_plots.alpha_depth_plot(t, pal, pf.alpha_by_depth, pf.alpha, **look)
    if name == "arith_multiples":
        dev, m = hardware.get_device(s.device), hardware.get_model(s.model)
        one = derived.roofline(s.device, s.model, 1, s.context).arithmetic_busy      # one token a pass, as the mill
        mine = computer_roofline(ctl)
        multiples = [(t("plot.arith_one"), 1.0), (t("plot.arith_check", k=s.gamma + 1), float(s.gamma + 1)),
                     (t("plot.arith_lookahead"), float(LOOKAHEAD_OPS))]
        return arithmetic_plots.arithmetic_multiples_plot(
            t, pal, multiples, one, t("plot.arith_gpu", model=m.label, device=dev.label),
            mine["lanes"] if mine else None,
            t("plot.arith_cpu", device=mine["device"], lanes=f"{mine['lanes']:.1f}") if mine else None, **look)
    if name == "token_time":
        roof = derived.roofline(s.device, s.model, s.lanes, s.context)
        return arithmetic_plots.token_time_plot(t, pal, roof.ms_per_step, roof.arithmetic_ms_per_step,
                                                hardware.busy_text(roof.arithmetic_busy), roof.device_label,
                                                roof.model_label, **look)
    if name == "alpha_scale":
        pf = ctl.long_run(wait=True)
        return alpha_plots.alpha_scale_plot(t, pal, pf.alpha, pf.alpha_ci95, **look)
    if name == "tubes":
        res = ctl.tube_worker.get()
        tv_l, tv_r = tube_tv_curves(res)
        draws = np.arange(1, len(tv_l) + 1) * int(res.draws)
        # the rule by name (the tube mode's "break it:" belongs beside its switch, not in a lesson's plot title)
        rule = t(f"rule.{s.tube_rule}")
        for prefix in ("弄坏：", "break it: "):
            rule = rule.removeprefix(prefix)
        return plots.tubes_plot(t, pal, draws, tv_l, tv_r, rule, **look)
    if name == "drafters":
        fig = drafter_points(ctl, wait=True)
        if fig["source"] == "none":
            raise InputError("the drafters are compared on the counted n-gram pair, or on a network pair with "
                             "self-drafters")
        note = t("plot.drafters_long" if fig["source"] == "long" else "plot.drafters_short",
                 tokens=f"{fig['chars']:,}", seed=fig["seed"])
        # the speed-ups are the roofline's for the lab's device and c: on paper, and said so
        paper = t("plot.drafters_paper", model=hardware.get_model(s.model).label,
                  device=hardware.get_device(s.device).label, c=f"{s.c:g}")
        return plots.drafters_plot(t, pal, fig["points"], s.gamma, paper, note, only=only,
                                   network=ctl.session.neural, **look)
    raise KeyError(name)


def overlap_rows(pair, context: str, n: int = 7):
    """p and q after `context` for the n tokens where either is largest: (labels, p, q, Σ min(p, q) over the tokens
    not drawn, Σ min(p, q) over all of them: the chance one guess is accepted after `context`)."""
    ids = pair.encode(context)
    p = np.asarray(pair.target_row(ids)[0], dtype=np.float64)
    q = np.asarray(pair.draft_row(ids)[0], dtype=np.float64)
    top = [int(j) for j in np.argsort(-np.maximum(p, q), kind="stable")[:n]]
    both = np.minimum(p, q)
    total = float(both.sum())
    shown = float(both[top].sum())
    labels = [pair.display(j) for j in top]
    return labels, p[top], q[top], total - shown, total


def drafter_points(ctl, wait: bool = False) -> dict | None:
    """Every drafter's counted tokens and lanes per pass (long run or short, ctl.drafter_figures) with its speedup
    under the roofline for the lab's device, model, context and c; None while they are being counted."""
    s = ctl.settings
    fig = ctl.drafter_figures(wait=wait)
    if fig is None:
        return None
    return dict(fig, points=with_speedups(fig["points"], s.device, s.model, s.context, s.c))
def long_alpha(ctl) -> float:
    """The pair's α from the long run (Controller.long_run), the figure the panels print beside the plot."""
    return float(ctl.long_run(wait=True).alpha)


TPP_LONG_TOKENS = 20_000            # tokens written at each γ for the counted bars (0.05 s each on the n-gram pair)
# plots drawn from the long run (the panel waits for it to land)
LONG_RUN_PLOTS = ("speedup", "tpp", "alpha_counts", "alpha_depth", "alpha_scale")


def tube_tv_curves(res) -> tuple[np.ndarray, np.ndarray]:
    """TV distance of each tube's cumulative counts to the target p after every round (from models.tubes)."""
    return np.asarray(res.tv_left_series, float), np.asarray(res.tv_right_series, float)
