"""Chapter 10's picture of what guessing many tokens at once costs in arithmetic (matplotlib, as app.plots draws the
chapters' plots): the arithmetic's busy share at 1×, a chain's check and Lookahead decoding's ~120× the operations
a pass, on the mill's GPU on paper beside this computer as its measurement found it."""
from __future__ import annotations

import numpy as np

from app.plots import _figure, _hex, _legend, _legend_below, _small, _tight, _title


def arithmetic_multiples_plot(t, pal, multiples: list[tuple[str, float]], gpu_busy_one: float, gpu_label: str,
                              cpu_lanes: float | None, cpu_label: str | None, size_px=(640, 400),
                              text_px: float = 16.0):
    """multiples: (what, times the operations of one token's pass). gpu_busy_one: the GPU's arithmetic busy share
    writing one token a pass (the roofline's); cpu_lanes: lanes that fill this computer's arithmetic (1/lanes a
    lane), None without a measurement. A share past 1 is drawn to the line 'full' and its figure written: the
    pass then waits for the arithmetic, not the reads."""
    fig, ax = _figure(pal, size_px, text_px)
    gpu_c, cpu_c = _hex(pal["accent"]), _hex(pal["draft"])
    y = np.arange(len(multiples), dtype=float)[::-1]
    h = 0.36 if cpu_lanes else 0.6
    rows = [(gpu_busy_one, gpu_c, gpu_label, +h / 2 if cpu_lanes else 0.0)]
    if cpu_lanes:
        rows.append((1.0 / cpu_lanes, cpu_c, cpu_label, -h / 2))
    for one, color, label, dy in rows:
        shares = np.array([m * one for _, m in multiples])
        ax.barh(y + dy, np.minimum(shares, 1.0), height=h, color=color, alpha=0.9, label=label, zorder=2)
        for yy, sh in zip(y + dy, shares):
            text = t("plot.arith_over", times=f"{sh:.1f}" if sh < 10 else f"{sh:.0f}") if sh > 1.0 else f"{100 * sh:.2g}%" if sh < 0.1 \
                else f"{100 * sh:.0f}%"
            inside = sh > 0.55
            ax.annotate(text, (min(sh, 1.0), yy), xytext=(-4 if inside else 4, 0), textcoords="offset points",
                        ha="right" if inside else "left", va="center", fontsize=_small(fig), zorder=4,
                        color=pal["mpl_bg"] if inside else color)
    ax.axvline(1.0, color=_hex(pal["target"]), lw=2.5, ls="--", zorder=3)
    ax.set_yticks(y)
    ax.set_yticklabels([what for what, _ in multiples])
    ax.set_xlim(0, 1.12)
    ax.set_ylim(-0.7, len(multiples) - 0.3 + 0.6)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xticklabels(["0", "25%", "50%", "75%", t("plot.arith_full")])
    ax.grid(False, axis="y")
    ax.set_xlabel(t("plot.arith_x"))
    _title(ax, t("plot.arith_title"))
    # the legend under the axes (inside, it sat on the top bars' figures); a figure too short for that keeps it
    # inside, over room made above the bars
    if not _legend_below(fig, pal, ax.get_legend_handles_labels()[0]):
        ax.set_ylim(-0.7, len(multiples) + 0.9)
        _legend(ax, pal, loc="upper right")
        _tight(fig)
    return fig
