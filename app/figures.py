"""Builds the four plots from the session's live numbers (the data side of app/plots.py)."""
from __future__ import annotations

import numpy as np

from app.session import GAMMAS, REFERENCE_ALPHAS

PLOT_NAMES = ("speedup", "tpp", "roofline", "tubes")


def make(app, name: str, size=(6.4, 4.0)):
    """A matplotlib Figure for plot `name`, in the app's language and palette."""
    from app import plots      # matplotlib loads with the first plot, not with the window (0.5 s)
    t, pal, ses, s = app.t, app.colors, app.session, app.settings
    plots.use_font(str(app.font_file))
    if name == "speedup":
        alpha = long_alpha(app)
        g, _ = ses.best_gamma(alpha)
        curves = {a: ses.speedups(a) for a in REFERENCE_ALPHAS}
        return plots.speedup_plot(t, pal, curves, alpha, ses.speedups(alpha), list(GAMMAS), g, s.c)
    if name == "tpp":
        alpha = long_alpha(app)
        passes = max(40, s.steps)
        return plots.tokens_per_pass_plot(t, pal, list(GAMMAS), ses.tokens_per_pass_formula(alpha),
                                          ses.tokens_per_pass_counted(passes), alpha, passes)
    if name == "roofline":
        lanes, tps, busy = ses.lane_sweep()
        from models import hardware
        return plots.roofline_plot(t, pal, lanes, tps, busy, s.lanes, hardware.get_device(s.device).label,
                                   hardware.get_model(s.model).label, f"{s.context:,}")
    if name == "tubes":
        res = ses.tubes()
        tv_l, tv_r = tube_tv_curves(res)
        draws = np.arange(1, len(tv_l) + 1) * int(getattr(res, "draws", 50))
        return plots.tubes_plot(t, pal, draws, tv_l, tv_r, t(f"rule.{s.tube_rule}"))
    raise KeyError(name)


def long_alpha(app) -> float:
    """The pair's α from the long run (app.facts.long_run), the figure the panels print beside the plot."""
    from app.facts import long_run
    return float(long_run(app, wait=True).alpha)


LONG_RUN_PLOTS = ("speedup", "tpp")     # plots drawn at the long run's α (the panel waits for it to land)


def tube_tv_curves(res) -> tuple[np.ndarray, np.ndarray]:
    """TV distance of each tube's cumulative counts to the target p after every round (from models.tubes)."""
    if getattr(res, "tv_left_series", None) is not None:
        return np.asarray(res.tv_left_series, float), np.asarray(res.tv_right_series, float)
    p = np.asarray(res.target_p, float)
    out = []
    for cum in (res.left_cumulative, res.right_cumulative):
        cum = np.asarray(cum, float)
        frac = cum / np.maximum(cum.sum(axis=1, keepdims=True), 1)
        out.append(0.5 * np.abs(frac - p[None, :]).sum(axis=1))
    return out[0], out[1]
