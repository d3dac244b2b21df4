"""Chapter 7's pictures of the acceptance rate α (matplotlib, as app.plots draws the chapters' plots): Σ min(p, q)
as the overlap of two bar charts, short counts of α beside the long run, α at each place in a pass, and the
pair's α among the published ones."""
from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import FuncFormatter, MultipleLocator

from app.plots import _figure, _hex, _legend, _small, _tight, _title


def overlap_plot(t, pal, labels, p, q, rest: float, total: float, context: str, size_px=(640, 400),
                 text_px: float = 16.0):
    """Σ min(p, q) as a picture: for each token after `context`, its p and q as two outlined bars on one spot and
    their overlap min(p, q) filled; the filled area is the chance one guess is accepted there (`total`, of which
    `rest` comes from the tokens not drawn)."""
    fig, ax = _figure(pal, size_px, text_px)
    tgt, dft, acc = _hex(pal["target"]), _hex(pal["draft"]), _hex(pal["accent"])
    x = np.arange(len(labels), dtype=float)
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    both = np.minimum(p, q)
    ax.bar(x, both, width=0.78, color=acc, alpha=0.85, label=t("plot.overlap_min"), zorder=2)
    ax.bar(x - 0.2, p, width=0.4, fill=False, edgecolor=tgt, lw=2.2, label=t("plot.overlap_p"), zorder=3)
    ax.bar(x + 0.2, q, width=0.4, fill=False, edgecolor=dft, lw=2.2, ls="--", label=t("plot.overlap_q"), zorder=3)
    ax.set_xticks(x)
    ax.set_xticklabels(labels)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylim(0, max(float(p.max()), float(q.max())) * 1.25)
    ax.set_ylabel(t("plot.probability"))
    ax.set_xlabel(t("plot.overlap_rest", rest=f"{rest:.3f}"))
    _title(ax, t("plot.overlap_title", context=context, total=f"{total:.3f}"))
    _legend(ax, pal, loc="upper right")
    _tight(fig)
    return fig


def alpha_counts_plot(t, pal, short: list[float], short_tokens: int, long_alpha: float, long_ci: float,
                      long_tokens: int, size_px=(640, 400), text_px: float = 16.0):
    """How sure a count is, as a picture: α from each of several short seeded runs, one dot each (stacked where their
    third decimals agree), above the long run's α with its 95 % interval."""
    fig, ax = _figure(pal, size_px, text_px)
    acc, tgt = _hex(pal["accent"]), _hex(pal["target"])
    xs = [round(a, 3) for a in short]
    seen: dict = {}
    for x in xs:                       # a dot histogram: equal third decimals stack upwards
        k = seen.get(x, 0)
        seen[x] = k + 1
        ax.plot([x], [1.0 + 0.16 * k], "o", color=acc, ms=max(7.0, text_px * 0.55), zorder=3)
    if math.isfinite(long_ci):
        ax.errorbar([long_alpha], [0.0], xerr=[[long_ci], [long_ci]], fmt="o", color=tgt, ms=max(8.0, text_px * 0.6),
                    lw=3, capsize=text_px * 0.5, capthick=3, zorder=3)
    else:
        ax.plot([long_alpha], [0.0], "o", color=tgt, ms=max(8.0, text_px * 0.6), zorder=3)
    lo = min(xs + [long_alpha - (long_ci if math.isfinite(long_ci) else 0.0)])
    hi = max(xs + [long_alpha + (long_ci if math.isfinite(long_ci) else 0.0)])
    pad = max(0.002, 0.15 * (hi - lo))
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(-0.6, 1.0 + 0.16 * max(seen.values()) + 0.5)
    ax.set_yticks([0.0, 1.0])
    ax.set_yticklabels([t("plot.counts_long", tokens=f"{long_tokens:,}"),
                        t("plot.counts_short", n=len(short), tokens=f"{short_tokens:,}")])
    # ticks at whole thousandths, evenly apart (a locator's own steps read 0.637, 0.640, 0.642: uneven to a class)
    span = ax.get_xlim()[1] - ax.get_xlim()[0]
    ax.xaxis.set_major_locator(MultipleLocator(next(s for s in (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
                                                    if span / s <= 6)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.3f}"))
    ax.grid(False, axis="y")
    ax.set_xlabel(t("plot.counts_alpha"))
    _title(ax, t("plot.counts_title"))
    _tight(fig)
    return fig


def alpha_depth_plot(t, pal, rates: list[float], alpha: float, size_px=(640, 400), text_px: float = 16.0):
    """The share of guesses kept at each place in a pass (of those reached), against α over all of them: the
    first guess of a pass follows a token the target wrote itself, and is the hardest."""
    fig, ax = _figure(pal, size_px, text_px)
    x = np.arange(1, len(rates) + 1)
    bars = ax.bar(x, rates, width=0.6, color=_hex(pal["accent"]), alpha=0.9, zorder=2)
    ax.axhline(alpha, color=_hex(pal["target"]), lw=2.5, ls="--", zorder=3)
    # each bar's share half-way up it (at its top it sat on the α line); the line named at its right end, above it,
    # where no bar stands (a legend covered the bars' tops)
    for b, r in zip(bars, rates):
        ax.annotate(f"{r:.3f}", (b.get_x() + b.get_width() / 2, r / 2), ha="center", va="center",
                    color=pal["mpl_bg"], fontsize=_small(fig), zorder=4)
    ax.set_xlim(0.4, len(rates) + 2.0)
    ax.annotate(t("plot.depth_alpha", alpha=f"{alpha:.3f}"), (len(rates) + 0.45, alpha), xytext=(0, 4),
                textcoords="offset points", va="bottom", ha="left", color=_hex(pal["target"]), fontsize=_small(fig))
    ax.set_xticks(x)
    ax.set_ylim(0, 1.0)
    ax.set_xlabel(t("plot.depth_x"))
    ax.set_ylabel(t("plot.depth_y"))
    _title(ax, t("plot.depth_title"))
    _tight(fig)
    return fig


# Leviathan et al. (2023), section 3 and table 3: drafts about two orders of magnitude smaller than their target
# mostly reach α between 0.5 and 0.9; a bigram draft for T5-XXL on English-German translation about 0.2.
PUBLISHED_ALPHA_BAND = (0.5, 0.9)
PUBLISHED_BIGRAM_ALPHA = 0.2


def alpha_scale_plot(t, pal, alpha: float, ci: float, size_px=(640, 400), text_px: float = 16.0):
    """Where the pair's α stands among the published ones, on one line from 0 to 1: the band most drafts reach
    (shaded), the bigram draft for T5-XXL (a dot), and this table's pair with its interval (a dot, named)."""
    fig, ax = _figure(pal, size_px, text_px)
    tgt, dft = _hex(pal["target"]), _hex(pal["draft"])
    lo, hi = PUBLISHED_ALPHA_BAND
    ax.axvspan(lo, hi, color=dft, alpha=0.22, zorder=1)
    ax.annotate(t("plot.scale_band", lo=f"{lo:.1f}", hi=f"{hi:.1f}"), ((lo + hi) / 2, 2.6), ha="center",
                va="top", color=pal["mpl_fg"], fontsize=_small(fig), zorder=4)
    ax.plot([PUBLISHED_BIGRAM_ALPHA], [1.0], "o", color=dft, ms=max(8.0, text_px * 0.6), zorder=3)
    # each name where nothing else is: the bigram's above its dot, the pair's to its left (under it, a short panel
    # cut it at the axis)
    ax.annotate(t("plot.scale_bigram", alpha=f"{PUBLISHED_BIGRAM_ALPHA:.1f}"), (PUBLISHED_BIGRAM_ALPHA, 1.0),
                xytext=(0, text_px * 0.9), textcoords="offset points", ha="center", va="bottom", color=dft,
                fontsize=_small(fig), zorder=4)
    if math.isfinite(ci):
        ax.errorbar([alpha], [0.0], xerr=[[ci], [ci]], fmt="o", color=tgt, ms=max(9.0, text_px * 0.65), lw=3,
                    zorder=3)
    else:
        ax.plot([alpha], [0.0], "o", color=tgt, ms=max(9.0, text_px * 0.65), zorder=3)
    ax.annotate(t("plot.scale_pair", alpha=f"{alpha:.3f}"), (alpha, 0.0), xytext=(-text_px * 1.2, 0),
                textcoords="offset points", ha="right", va="center", color=tgt, fontsize=_small(fig), zorder=4)
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(-0.7, 2.7)
    ax.set_yticks([])
    ax.grid(False, axis="y")
    ax.set_xlabel(t("plot.scale_x"))
    _title(ax, t("plot.scale_title"))
    _tight(fig)
    return fig
