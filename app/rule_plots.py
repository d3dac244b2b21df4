"""Chapter 5's picture of the acceptance rule (matplotlib, as app.plots draws the chapters' plots): the chance a
guess is kept, min(1, p/q), as a line over p/q, and the tests of the run on the table as points (its p/q, its r;
on the tour, the passes played so far): under the line kept, over it rejected. The meters on the bridge draw the
same two numbers, a column and a line."""
from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D

from app.plots import _figure, _hex, _legend, _small, _tight, _title

KEEP_XMAX = 3.0       # p/q beyond this is kept for certain as at 3: drawn at the edge, not off the axes


def run_tests(traces) -> list[tuple[float, float, bool]]:
    """(p/q, r, kept) of every test the run's passes made, in order (a pass tests up to its first rejection)."""
    out = []
    for tr in traces:
        for i in range(tr.tested):
            out.append((float(tr.ratios[i]), float(tr.r[i]), bool(tr.accepted[i])))
    return out


def keep_chance_plot(t, pal, tests: list[tuple[float, float, bool]], size_px=(640, 400), text_px: float = 16.0):
    """min(1, p/q) over p/q, the area under it shaded (r lands there: kept), and each test as ○ (kept) or ×
    (rejected) at (p/q, r)."""
    fig, ax = _figure(pal, size_px, text_px)
    acc, rej, fg = _hex(pal["accent"]), _hex(pal["reject"]), pal["mpl_fg"]
    x = np.linspace(0.0, KEEP_XMAX, 301)
    y = np.minimum(1.0, x)
    ax.fill_between(x, 0.0, y, color=acc, alpha=0.16, lw=0, zorder=1)
    ax.plot(x, y, color=acc, lw=3.0, zorder=2)
    ax.annotate("min(1, p/q)", (0.55, 0.55), xytext=(text_px * 0.5, -text_px * 0.2), textcoords="offset points",
                ha="left", va="top", color=acc, fontsize=_small(fig), zorder=4)
    ax.annotate(t("plot.keep_sure"), (2.0, 1.0), xytext=(0, -text_px * 0.5), textcoords="offset points",
                ha="center", va="top", color=fg, fontsize=_small(fig), zorder=4)
    ms = max(8.0, text_px * 0.6)
    kept = [(min(v, KEEP_XMAX), r) for v, r, k in tests if k]
    out = [(min(v, KEEP_XMAX), r) for v, r, k in tests if not k]
    if kept:
        ax.plot(*zip(*kept), "o", ls="none", mfc="none", mec=acc, mew=2.2, ms=ms, zorder=3)
    if out:
        ax.plot(*zip(*out), "x", ls="none", color=rej, mew=2.6, ms=ms, zorder=3)
    handles = [Line2D([], [], marker="o", ls="none", mfc="none", mec=acc, mew=2.2, ms=ms,
                      label=t("plot.keep_kept", n=len(kept))),
               Line2D([], [], marker="x", ls="none", color=rej, mew=2.6, ms=ms,
                      label=t("plot.keep_rejected", n=len(out)))]
    if tests:
        _legend(ax, pal, handles=handles, loc="lower right")
    ax.set_xlim(0.0, KEEP_XMAX)
    ax.set_ylim(0.0, 1.12)
    ax.set_xticks([0, 0.5, 1, 2, 3])
    ax.set_xticklabels(["0", "0.5", "1", "2", t("plot.keep_edge", x=f"{KEEP_XMAX:g}")])
    ax.set_xlabel(t("plot.keep_x"))
    ax.set_ylabel(t("plot.keep_y"))
    _title(ax, t("plot.keep_title", n=len(tests)) if tests else t("plot.keep_title_none"))
    _tight(fig)
    return fig
