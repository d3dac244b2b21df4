"""The tour's pictures of the arithmetic beside the reads (matplotlib, as app.plots draws the chapters' plots):
chapter 1's one token's time, reading the weights beside computing with them on one time axis; chapter 10's
arithmetic's busy share at 1×, a chain's check and Lookahead decoding's ~120× the operations a pass, on the mill's
GPU on paper beside this computer as its measurement found it."""
from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import NullFormatter

from app.plots import _figure, _hex, _legend, _legend_below, _small, _tight, _title, points


def arithmetic_multiples_plot(t, pal, multiples: list[tuple[str, float]], gpu_busy_one: float, gpu_label: str,
                              cpu_lanes: float | None, cpu_label: str | None, size_px=(640, 400),
                              text_px: float = 16.0):
    """multiples: (what, times the operations of one token's pass). gpu_busy_one: the GPU's arithmetic busy share
    writing one token a pass (the roofline's); cpu_lanes: lanes that fill this computer's arithmetic (1/lanes a
    lane), None without a measurement. A share past 1 (past the line 'full') is drawn to its length and its
    multiple written: the pass then waits for the arithmetic, not the reads."""
    fig, ax = _figure(pal, size_px, text_px)
    gpu_c, cpu_c = _hex(pal["accent"]), _hex(pal["draft"])
    y = np.arange(len(multiples), dtype=float)[::-1]
    h = 0.44 if cpu_lanes else 0.6       # a pair of bars about as tall as their figures
    rows = [(gpu_busy_one, gpu_c, gpu_label, +h / 2 if cpu_lanes else 0.0)]
    if cpu_lanes:
        rows.append((1.0 / cpu_lanes, cpu_c, cpu_label, -h / 2))
    # A log axis, decades apart: 0.34 % and 41 % both read, and a share past 'full' keeps its length (a pass that
    # takes 1.3× the read's time and one that takes 31× it are not drawn as the same capped bar).
    every = np.array([m * one for one, *_ in rows for _, m in multiples])
    lo = 10.0 ** math.floor(math.log10(every.min()))
    hi = max(10.0 ** math.ceil(math.log10(every.max())), 10.0)
    # every figure right of its bar (a pair's two figures then never stack: the bars end decades apart), with
    # room past the longest bar for its words
    right = hi * (100 if every.max() > 1.0 else 10)
    for one, color, label, dy in rows:
        shares = np.array([m * one for _, m in multiples])
        ax.barh(y + dy, shares - lo, left=lo, height=h, color=color, alpha=0.9, label=label, zorder=2)
        for yy, sh in zip(y + dy, shares):
            text = t("plot.arith_over", times=f"{sh:.1f}" if sh < 10 else f"{sh:.0f}") if sh > 1.0 else \
                f"{100 * sh:.2g}%" if sh < 0.1 else f"{100 * sh:.0f}%"
            ax.annotate(text, (sh, yy), xytext=(4, 0), textcoords="offset points", ha="left", va="center",
                        fontsize=_small(fig), zorder=4, color=color)
    ax.axvline(1.0, color=_hex(pal["target"]), lw=2.5, ls="--", zorder=3)
    ax.set_yticks(y)
    ax.set_yticklabels([what for what, _ in multiples])
    ax.set_xscale("log")
    ax.set_xlim(lo, right)
    ax.set_ylim(-0.7, len(multiples) - 0.3 + 0.6)
    ticks = [10.0 ** k for k in range(round(math.log10(lo)), round(math.log10(hi)) + 1)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([t("plot.arith_full") if v == 1.0 else f"{100 * v:g}%" if v < 1.0 else f"{v:g}×"
                        for v in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
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


def token_time_plot(t, pal, read_ms: float, arith_ms: float, share: str, device_label: str, model_label: str,
                    size_px=(640, 400), text_px: float = 16.0):
    """One token's pass on one time axis (ms): reading every weight once beside the arithmetic done with them
    (the roofline's figures, on paper); share: the arithmetic's busy share as the mill prints it. The arithmetic's
    bar is drawn to scale, a sliver beside the read: that sliver is the bottleneck's picture, its time and its share
    of the read written beside it."""
    fig, ax = _figure(pal, size_px, text_px)
    read_c, arith_c = _hex(pal["target"]), _hex(pal["accent"])
    rows = [(t("plot.time_read"), read_ms, read_c), (t("plot.time_arith"), arith_ms, arith_c)]
    y = np.array([1.0, 0.0])
    for yy, (_, ms, color) in zip(y, rows):
        ax.barh(yy, ms, height=0.5, color=color, alpha=0.9, zorder=2)
    small = _small(fig)
    ax.annotate(f"{read_ms:.2f} ms", (read_ms, y[0]), xytext=(-6, 0), textcoords="offset points", ha="right",
                va="center", fontsize=small * 1.15, color=pal["mpl_bg"], zorder=4)
    # the sliver gets a marker no thinner than a few pixels, so the eye finds where it ends
    ax.plot([arith_ms], [y[1]], marker="|", ms=max(8.0, points(ax.bbox.height / 2.2 * 0.5)), mew=3, color=arith_c,
            zorder=3)      # half a bar tall (the axes span 2.2 bar rows)
    ax.annotate(t("plot.time_arith_note", ms=f"{arith_ms:.3f}", share=share), (arith_ms, y[1]),
                xytext=(8, 0), textcoords="offset points", ha="left", va="center", fontsize=small * 1.15,
                color=arith_c, zorder=4)
    ax.set_yticks(y)
    ax.set_yticklabels([what for what, _, _ in rows])
    ax.set_xlim(0, read_ms * 1.05)
    ax.set_ylim(-0.6, 1.6)
    ax.grid(False, axis="y")
    ax.set_xlabel(t("plot.time_x"))
    _title(ax, t("plot.time_title", device=device_label, model=model_label))
    _tight(fig)
    return fig

