"""Builds the four plots from the live numbers (the data side of app/plots.py): app.derived and the run."""
from __future__ import annotations

import numpy as np

from app import derived
from app.derived import GAMMAS, REFERENCE_ALPHAS

PLOT_NAMES = ("speedup", "tpp", "roofline", "tubes")
# What each plot is drawn from besides the language and the palette: the settings make() reads for it, and
# "run" for the run on the table (the session's version). A panel redraws a plot only when one of these
# changed (tests/test_app_units.py changes every other setting and checks the picture stays the same); a
# plot not listed is redrawn on any change.
PLOT_INPUTS = {
    "speedup": ("run", "c"),
    "tpp": ("run", "tokens", "prompt", "temperature", "top_k", "top_p", "seed", "steps"),
    "roofline": ("device", "model", "context", "lanes"),
    "tubes": ("tube_rule", "tokens"),
}


def inputs_key(ctl, name: str) -> tuple:
    """What plot `name` is drawn from now: equal keys give the same figure."""
    deps = PLOT_INPUTS.get(name)
    if deps is None:
        return ("any", ctl.session.version, ctl.revision)
    s = ctl.settings
    return (s.language, s.palette) + tuple(ctl.session.version if d == "run" else getattr(s, d) for d in deps)


def make(ctl, name: str):
    """A matplotlib Figure for plot `name`, in the controller's language and palette."""
    from app import plots      # matplotlib loads with the first plot, not with the window (0.5 s)
    t, pal, s = ctl.t, ctl.colors, ctl.settings
    pair = ctl.session.pair()
    plots.use_font(str(ctl.font_file))
    if name == "speedup":
        alpha = derived.toy_alpha(ctl.session.ensure(), pair)
        g, _ = derived.best_gamma(alpha, s.c)
        curves = {a: derived.speedups(a, s.c) for a in REFERENCE_ALPHAS}
        return plots.speedup_plot(t, pal, curves, alpha, derived.speedups(alpha, s.c), list(GAMMAS), g, s.c)
    if name == "tpp":
        alpha = derived.toy_alpha(ctl.session.ensure(), pair)
        passes = max(40, s.steps)
        counted = derived.tokens_per_pass_counted(pair, s.prompt, s.temperature, s.top_k, s.top_p, s.seed, passes)
        return plots.tokens_per_pass_plot(t, pal, list(GAMMAS), derived.tokens_per_pass_formula(alpha), counted,
                                          alpha, passes)
    if name == "roofline":
        lanes, tps, busy = derived.lane_sweep(s.device, s.model, s.context)
        return plots.roofline_plot(t, pal, lanes, tps, busy, s.lanes, s.device, s.model, s.context)
    if name == "tubes":
        res = ctl.tube_worker.get()
        tv_l, tv_r = tube_tv_curves(res)
        draws = np.arange(1, len(tv_l) + 1) * int(res.draws)
        return plots.tubes_plot(t, pal, draws, tv_l, tv_r, t(f"rule.{s.tube_rule}"))
    raise KeyError(name)


def tube_tv_curves(res) -> tuple[np.ndarray, np.ndarray]:
    """TV distance of each tube's cumulative counts to the target p after every round (from models.tubes)."""
    return np.asarray(res.tv_left_series, float), np.asarray(res.tv_right_series, float)
