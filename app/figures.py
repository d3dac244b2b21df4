"""Builds the four plots from the live numbers (the data side of app/plots.py): app.derived and the run."""
from __future__ import annotations

import numpy as np

from app import derived
from corpus.errors import InputError
from app.derived import GAMMAS, REFERENCE_ALPHAS

PLOT_NAMES = ("speedup", "tpp", "roofline", "tubes", "drafters")


def plot_names(ctl) -> tuple[str, ...]:
    """The plots this pair has: the drafters are compared on the counted n-gram pair only (heads and trees are
    built on its counts)."""
    return tuple(n for n in PLOT_NAMES if not (n == "drafters" and ctl.session.neural))
# What each plot is drawn from besides the language and the palette: the settings make() reads for it, and
# "run" for the run on the table (the session's version). A panel redraws a plot only when one of these
# changed (tests/test_app_units.py changes every other setting and checks the picture stays the same); a
# plot not listed is redrawn on any change (the drafters plot: its points come from the long-run file or a run
# counted at the lab's settings, its speedups from the device, model, context and c).
PLOT_INPUTS = {
    "speedup": ("run", "c"),
    "tpp": ("run", "tokens", "prompt", "temperature", "top_k", "top_p", "seed", "steps"),
    "roofline": ("device", "model", "context", "lanes", "computer"),
    # the tubes are run on the pair with its drafter, not part of the run
    "tubes": ("pair", "tube_rule", "tokens", "drafter", "tree_width", "tree_depth", "tree_from", "tree_sampling"),
}


def inputs_key(ctl, name: str) -> tuple:
    """What plot `name` is drawn from now: equal keys give the same figure."""
    deps = PLOT_INPUTS.get(name)
    if deps is None:
        return ("any", ctl.session.version, ctl.revision)
    s = ctl.settings

    def value(d):
        if d == "run":
            return ctl.session.version
        if d == "computer":                 # this computer's measured roofline: the file's, then the live one
            from app.facts import computer_roofline
            r = computer_roofline(ctl)
            return None if r is None else (r["source"], r["lanes"])
        return getattr(s, d)
    return (s.language, s.palette) + tuple(value(d) for d in deps)


SLIDE_PX = (1920, 1080)       # exported plots: a slide's size
SLIDE_TEXT_PX = 30.0


def make(ctl, name: str, size_px=(640, 400), text_px: float = 16.0, theme: str = "screen"):
    """A matplotlib Figure for plot `name`, in the controller's language, size_px pixels with text_px text;
    theme 'screen' (the palette on screen) or 'print' (dark ink on white)."""
    from app import plots      # matplotlib loads with the first plot, not with the window (0.5 s)
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
                                  **look)
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
                                          alpha, label, **look)
    if name == "roofline":
        lanes, tps, busy = derived.lane_sweep(s.device, s.model, s.context)
        from models import hardware
        from app.facts import computer_roofline
        mine = computer_roofline(ctl)
        computer = None if mine is None else (t("plot.computer_busy", lanes=f"{mine['lanes']:.1f}"), mine["lanes"])
        return plots.roofline_plot(t, pal, lanes, tps, busy, s.lanes, hardware.get_device(s.device).label,
                                   hardware.get_model(s.model).label, f"{s.context:,}", computer=computer, **look)
    if name == "tubes":
        res = ctl.tube_worker.get()
        tv_l, tv_r = tube_tv_curves(res)
        draws = np.arange(1, len(tv_l) + 1) * int(res.draws)
        return plots.tubes_plot(t, pal, draws, tv_l, tv_r, t(f"rule.{s.tube_rule}"), **look)
    if name == "drafters":
        fig = drafter_points(ctl, wait=True)
        if fig["source"] == "none":
            raise InputError("the drafters are compared on the counted n-gram pair only")
        note = t("plot.drafters_long" if fig["source"] == "long" else "plot.drafters_short",
                 tokens=f"{fig['chars']:,}", seed=fig["seed"])
        from models import hardware
        return plots.drafters_plot(t, pal, fig["points"], s.gamma, hardware.get_device(s.device).label, note, **look)
    raise KeyError(name)


def drafter_points(ctl, wait: bool = False) -> dict | None:
    """Every drafter's counted tokens and lanes per pass (long run or short, ctl.drafter_figures) with its speedup
    under the roofline for the lab's device, model, context and c; None while they are being counted."""
    from models.drafter_analytics import with_speedups
    s = ctl.settings
    fig = ctl.drafter_figures(wait=wait)
    if fig is None:
        return None
    return dict(fig, points=with_speedups(fig["points"], s.device, s.model, s.context, s.c))
def long_alpha(ctl) -> float:
    """The pair's α from the long run (Controller.long_run), the figure the panels print beside the plot."""
    return float(ctl.long_run(wait=True).alpha)


TPP_LONG_TOKENS = 20_000            # tokens written at each γ for the counted bars (0.05 s each on the n-gram pair)
LONG_RUN_PLOTS = ("speedup", "tpp")     # plots drawn at the long run's α (the panel waits for it to land)


def tube_tv_curves(res) -> tuple[np.ndarray, np.ndarray]:
    """TV distance of each tube's cumulative counts to the target p after every round (from models.tubes)."""
    return np.asarray(res.tv_left_series, float), np.asarray(res.tv_right_series, float)
