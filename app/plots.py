"""Matplotlib (Agg) figures for the panels and for export: speedup vs γ, tokens per pass, roofline, tubes, drafters.

Each plot takes plain numbers already computed by models/ (never computes physics itself) and the
current strings and palette; figure_rgba() turns it into a texture, save_figure() into PNG/SVG. The figure helpers
(_figure, _title, _legend ...) are shared with app.alpha_plots, chapter 7's pictures of α.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import font_manager  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from corpus.atomic import atomic_path  # noqa: E402
from models.drafters import BASES, kind_of, kinds

_font_added: set[str] = set()


def use_font(path: str | None) -> None:
    """Chinese labels need the shipped CJK font; DejaVu stays as fallback for math symbols."""
    if not path or path in _font_added:
        return
    font_manager.fontManager.addfont(path)
    name = font_manager.FontProperties(fname=path).get_name()
    matplotlib.rcParams["font.family"] = [name, "DejaVu Sans"]
    matplotlib.rcParams["axes.unicode_minus"] = False
    _font_added.add(path)


DPI = 100            # figures are laid out in pixels: size_px / DPI inches, text_px * 72 / DPI points
# A light theme for print (plots exported for a handout or a worksheet): dark ink on white.
PRINT_COLORS = {"mpl_bg": "#ffffff", "mpl_fg": "#111111", "accent": (0.70, 0.36, 0.05, 1.0),
                "reject": (0.75, 0.12, 0.10, 1.0), "target": (0.10, 0.35, 0.70, 1.0)}


def points(px: float) -> float:
    return px * 72.0 / DPI


def _figure(pal: dict, size_px=(640, 400), text_px: float = 16.0):
    """A figure of exactly size_px pixels whose smallest text (ticks, legend) is text_px tall: drawn at the
    size it is shown, so a panel plot is never scaled down into unreadable text."""
    fig = plt.figure(figsize=(size_px[0] / DPI, size_px[1] / DPI), dpi=DPI, facecolor=pal["mpl_bg"])
    fig.text_px = float(text_px)
    ax = fig.add_subplot(111, facecolor=pal["mpl_bg"])
    fg = pal["mpl_fg"]
    for spine in ax.spines.values():
        spine.set_color(fg)
    ax.tick_params(colors=fg, labelsize=points(text_px))
    ax.xaxis.label.set_color(fg)
    ax.yaxis.label.set_color(fg)
    ax.xaxis.label.set_fontsize(points(text_px * 1.1))
    ax.yaxis.label.set_fontsize(points(text_px * 1.1))
    ax.title.set_color(fg)
    ax.title.set_fontsize(points(text_px * 1.2))
    ax.grid(True, alpha=0.25, color=fg)
    return fig, ax


def _title(ax, text: str, fontsize: float | None = None) -> None:
    """The plot's title at 1.2 × the figure's text size (or `fontsize` points). (Axes.set_title applies rcParams'
    axes.titlesize, 12 pt = 16.7 px, whatever size the axes' title had: at 1080p that is under the legibility
    floor.)"""
    size = fontsize or points(ax.figure.text_px * 1.2)
    ax.set_title(text, fontsize=size, color=ax.title.get_color())
    # A line wider than the figure is broken where it is narrowest to break (a space, a '·', after a '：'), as many
    # times as it takes: a long rule's name is read whole, not cut off at the figure's edge.
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    room = fig.bbox.width * 0.8           # centred over the axes, which the y labels push right
    lines = []
    for line in text.split("\n"):
        while True:
            t = ax.title
            t.set_text(line)
            if t.get_window_extent(renderer).width <= room or len(line) < 8:
                lines.append(line)
                break
            cuts = [k for k, ch in enumerate(line) if ch in " ·：:，,"] or list(range(1, len(line)))
            fits = []
            for k in cuts:
                t.set_text(line[:k].rstrip())
                if t.get_window_extent(renderer).width <= room:
                    fits.append(k)
            k = max(fits) if fits else len(line) // 2
            lines.append(line[:k + (1 if line[k] in "：:，," else 0)].rstrip())
            line = line[k + 1:].lstrip() if line[k] in " ·：:，," else line[k:]
            if not line:
                break
    ax.set_title("\n".join(lines), fontsize=size, color=ax.title.get_color())


def _tight(fig) -> None:
    """tight_layout, quietly: in a very small window the margins cannot fit, and the plot is drawn as it is."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()


def _small(fig) -> float:
    """The figure's smallest text size, in points."""
    return points(fig.text_px)


def _plain_ticks(ax) -> None:
    """Log axes labelled 1, 2, 4 ... 1,000 rather than 2^3 and 10^3 (read from the back of a classroom)."""

    def fmt(v, _pos):
        if v >= 1:
            return f"{v:,.0f}"
        return f"{v:.3g}"
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log" and getattr(axis.get_transform(), "base", 10) == 10:
            lo, hi = sorted(axis.get_view_interval())
            wide = lo > 0 and hi / lo > 1e3           # many decades: one label a decade, or they crowd
            narrow = lo > 0 and hi / lo <= 10         # under a decade: 1-2-5 left two labels to read it by
            subs = (1.0,) if wide else (1.0, 2.0, 3.0, 5.0) if narrow else (1.0, 2.0, 5.0)
            axis.set_major_locator(LogLocator(base=10, subs=subs))
        axis.set_major_formatter(FuncFormatter(fmt))
        axis.set_minor_formatter(NullFormatter())


def _hex(rgba) -> tuple:
    return tuple(rgba[:3])


def _legend(ax, pal, handles=None, loc="best"):
    kw = {} if handles is None else {"handles": handles, "labels": [h.get_label() for h in handles]}
    leg = ax.legend(fontsize=_small(ax.figure), loc=loc, framealpha=0.85, facecolor=pal["mpl_bg"],
                    edgecolor=pal["mpl_fg"], **kw)
    for text in leg.get_texts():
        text.set_color(pal["mpl_fg"])
    return leg


def speedup_plot(t, pal, curves: dict, toy_alpha: float, toy_curve, gammas, best_gamma: int, c: float,
                 pair_label: str = "plot.toy_alpha", size_px=(640, 400), text_px: float = 16.0,
                 gamma: int | None = None):
    """curves: {alpha: speedups over gammas} (alphas cited from the papers); toy_curve: the toy's own. The
    reference curves are named at their right ends; the legend keeps to the toy pair's own lines. `gamma`: the
    γ the table runs, marked."""
    fig, ax = _figure(pal, size_px, text_px)
    marked = []
    if gamma in gammas:       # named in the legend: a dotted line alone says nothing to a class
        marked = [ax.axvline(gamma, color=pal["mpl_fg"], lw=1.2, ls=":", zorder=1,
                             label=t("plot.gamma_on_table", gamma=gamma))]
    # Bright, distinct hues that stay readable on the dark and the projector's black background.
    hues = ("#8da0cb", "#66c2a5", "#a6d854", "#ffd92f", "#e78ac3")
    ends = []
    for j, (alpha, ys) in enumerate(curves.items()):
        col = hues[j % len(hues)]
        ax.plot(gammas, ys, color=col, lw=1.6, ls="--")
        ends.append((f"α={alpha:.1f}", ys[-1], col))
    mine = ax.plot(gammas, toy_curve, color=_hex(pal["accent"]), lw=3,
                   label=t(pair_label, alpha=f"{toy_alpha:.3f}"))
    bi = list(gammas).index(best_gamma) if best_gamma in gammas else None
    if bi is not None:
        mine += ax.plot([best_gamma], [toy_curve[bi]], "o", color=_hex(pal["reject"]), ms=9,
                        label=t("plot.best_gamma", gamma=best_gamma, speedup=f"{toy_curve[bi]:.2f}"))
    ax.set_xlim(gammas[0] - 0.3, gammas[-1] + 1.6)       # room for the names at the curves' right ends
    ax.axhline(1.0, color=_hex(pal["reject"]), lw=1, ls="--")
    ax.set_xlabel(t("plot.gamma"))
    ax.set_ylabel(t("plot.speedup"))
    _title(ax, t("plot.speedup_title", c=f"{c:g}"))
    # Under the axes, where no curve runs (inside, it covered the α = 0.9 curve's rise); inside where too short,
    # the pair's own lines only (a third line would run over the axis' numbers in the lab's short strip).
    if not _legend_below(fig, pal, mine + marked):
        _legend(ax, pal, handles=mine, loc="upper left")
        _tight(fig)
    _end_labels(ax, gammas[-1], ends)       # after the layout: the gaps are in the final pixels
    return fig


def _end_labels(ax, x, ends) -> None:
    """Name each curve at its right end, nudged apart vertically so that no two names overlap."""
    fig = ax.figure
    ax.autoscale_view()
    gap = fig.text_px * 1.2
    ys = [float(ax.transData.transform((x, y))[1]) for _, y, _ in ends]
    order = sorted(range(len(ends)), key=lambda k: ys[k])
    placed = {}
    floor = float(ax.get_window_extent().y0) + gap / 2      # a name at the axes' foot was cut by the x axis
    for k in order:
        want = max(ys[k], floor)
        below = [placed[j] for j in placed]
        if below and want < max(below) + gap:
            want = max(below) + gap
        placed[k] = want
    # ... and none above the axes' top (in a short figure they climbed into the title): from the top down, each
    # at most half a line under the top, or a line under the one above it.
    top = float(ax.get_window_extent().y1) - gap / 2
    for k in sorted(placed, key=lambda j: -placed[j]):
        placed[k] = min(placed[k], top)
        top = placed[k] - gap
    for k, (text, y, col) in enumerate(ends):
        dy = (placed[k] - ys[k]) * 72.0 / fig.dpi
        ax.annotate(text, (x, y), xytext=(4, dy), textcoords="offset points", color=col, fontsize=_small(fig),
                    va="center", annotation_clip=False)


def tokens_per_pass_plot(t, pal, gammas, formula, counted, alpha: float, counted_label: str, size_px=(640, 400),
                         text_px: float = 16.0, gamma: int | None = None):
    """The formula against the counts at every γ; `gamma`: the γ in force, marked (a page's slider moves it)."""
    fig, ax = _figure(pal, size_px, text_px)
    if gamma in gammas:
        ax.axvline(gamma, color=_hex(pal["reject"]), lw=1.5, zorder=1)
    ax.plot(gammas, formula, "-o", color=_hex(pal["target"]), lw=2, label=t("plot.formula", alpha=f"{alpha:.3f}"))
    ax.bar(gammas, counted, width=0.45, color=_hex(pal["accent"]), alpha=0.85, label=counted_label)
    # the ceiling, dashed and as heavy as the formula's line: a dotted hairline vanished on a projector
    ax.plot(gammas, [g + 1 for g in gammas], "--", color=pal["mpl_fg"], lw=2, label=t("plot.max_tokens"))
    ax.set_xlabel(t("plot.gamma"))
    ax.set_ylabel(t("plot.tokens_per_pass"))
    _title(ax, t("plot.tpp_title"))
    if gamma in gammas:       # the formula's figure at the marked γ, in words, in the upper left where nothing is drawn
        i = list(gammas).index(gamma)
        ax.annotate(t("plot.tpp_at_formula", gamma=gamma, value=f"{formula[i]:.2f}"), (0.03, 0.96),
                    xycoords="axes fraction", color=_hex(pal["target"]), fontsize=_small(fig), va="top", ha="left")
    # under the axes (inside, it hid the γ + 1 ceiling's upper half); inside where the figure is too short
    handles = ax.get_legend_handles_labels()[0]
    if not _legend_below(fig, pal, handles):
        _legend(ax, pal)
        _tight(fig)
    return fig


def roofline_plot(t, pal, lanes, tps_weights, tps_cache, busy, current_lanes: int, device: str, model: str,
                  context: str, fits=None, memory_gb: float = 0.0, fit_lanes: float | None = None,
                  size_px=(640, 400), text_px: float = 16.0, computer=None, checking=None):
    """Tokens/s against lanes on paper: reading the weights alone, and (tps_cache, when the context holds tokens)
    with every sequence's own KV cache read too, side by side; the pair of figures at `current_lanes` written on
    the curves. fits: per lane count, whether the weights and the caches fit the device's `memory_gb` (the part
    of the cache's curve that does not is drawn faint and said; fit_lanes: the most sequences that fit). busy: the arithmetic's share (of the cache's
    curve when there is one), on the right axis. computer: (label, lanes to saturate) of
    this computer as measured: its own busy share, min(1, n / lanes), beside the device's. checking: (lanes lit,
    busy share) of a speculative pass checking γ + 1 positions of each sequence, marked on the busy axis; with
    either of these the legend goes under the axes (the curves rise through its corner)."""
    fig, ax = _figure(pal, size_px, text_px)
    tgt, acc, rej, fg = _hex(pal["target"]), _hex(pal["accent"]), _hex(pal["reject"]), pal["mpl_fg"]
    def at_lanes(ys) -> float:
        return float(np.exp(np.interp(np.log2(current_lanes), np.log2(lanes), np.log(ys))))
    # The figures at the lanes lit go in the legend (beside each curve's name): the panel's table's numbers
    handles = ax.plot(lanes, tps_weights, color=tgt, lw=2.5, ls="--" if tps_cache is not None else "-",
                      label=t("plot.tps_weights", lanes=current_lanes, tps=f"{at_lanes(tps_weights):,.0f}"))
    curve = tps_weights
    no_fit = None
    if tps_cache is not None:
        ok = np.asarray(fits if fits is not None else [True] * len(lanes), dtype=bool)
        xs, ys = np.asarray(lanes, dtype=float), np.asarray(tps_cache, dtype=float)
        solid_x, solid_y = xs[ok], ys[ok]
        if not ok.all():
            k = int(np.argmin(ok))              # the first lane count that does not fit
            edge = fit_lanes if fit_lanes else xs[max(0, k - 1)]
            if k > 0 and xs[k - 1] < edge < xs[k]:
                # up to the most sequences that fit, and no further: past it the shading says it does not fit (a
                # faint line on into the shading read as another curve the legend did not name)
                f = math.log(edge / xs[k - 1]) / math.log(xs[k] / xs[k - 1])
                edge_y = math.exp(math.log(ys[k - 1]) + f * (math.log(ys[k]) - math.log(ys[k - 1])))
                solid_x, solid_y = np.append(solid_x, edge), np.append(solid_y, edge_y)
            ax.axvspan(edge, xs[-1] * 1.5, color=fg, alpha=0.10, lw=0)
            # clear of the busy curve along the foot
            no_fit = ax.text(0.98, 0.29, t("plot.no_fit", memory=f"{memory_gb:g}"), transform=ax.transAxes, color=fg,
                             fontsize=_small(fig), ha="right", va="center")
        handles += ax.plot(solid_x, solid_y, color=tgt, lw=3, label=t("plot.tps_cache", context=context,
                                                                      lanes=current_lanes,
                                                                      tps=f"{at_lanes(tps_cache):,.0f}"))
        curve = tps_cache
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _plain_ticks(ax)
    ax.set_xlabel(t("plot.lanes"))
    ax.set_ylabel(t("plot.tokens_per_s"))
    ax2 = ax.twinx()
    busy_line = ax2.plot(lanes, [100 * b for b in busy], color=acc, lw=1.8, ls="-.",     # named by its axis, in
                         label=t("plot.busy_curve_cache" if tps_cache is not None else "plot.busy_curve",
                                 device=device))                                        # its colour
    ax2.set_ylabel(t("plot.busy"), color=acc, fontsize=points(text_px * 1.1))
    ax2.tick_params(colors=fg, labelsize=points(text_px))
    ax2.set_ylim(0, 105)
    if computer is not None:
        label, sat = computer
        handles += ax2.plot(lanes, [100 * min(1.0, n / sat) for n in lanes], color=_hex(pal["draft"]), lw=2.5,
                            ls=":", label=label)
    if checking is not None:        # (its legend also names the busy curve the mark sits by)
        seqs, k, share = checking
        handles += busy_line + ax2.plot([seqs], [100 * share], "*", color=acc, ms=17, markeredgecolor=fg, zorder=6,
                                        label=t("plot.checking_point_one" if seqs == 1 else "plot.checking_point",
                                                lanes=seqs, k=k, busy=f"{100 * share:.1f}%"))
    ax.axvline(current_lanes, color=rej, lw=1.5)
    for ys in (tps_weights, tps_cache):
        if ys is not None:
            ax.plot([current_lanes], [at_lanes(ys)], "o", color=rej, ms=8, zorder=5)
    lo, hi = min(min(tps_weights), min(curve)), max(tps_weights)
    ax.set_ylim(lo * 0.7, hi * 12)          # room above the curves for the legend
    _plain_ticks(ax)                        # (again: the ticks follow the final range)
    _title(ax, t("plot.roofline_title", device=device, model=model))
    # under the axes, the orange busy curve named too (not by its axis's colour alone); short of room, without
    # that entry first (its axis names it)
    named = handles if busy_line[0] in handles else handles + busy_line
    for shown in (named, [h for h in handles if h is not busy_line[0]]):
        if _legend_below(fig, pal, shown):
            return fig
    if checking is not None:             # too short for the legend below: the mark and its line left out
        handles.pop().remove()
        handles.pop()
    leg = _legend(ax, pal, handles=handles, loc="upper left")
    _tight(fig)
    _wrap_wide_legend(ax, pal, leg, handles, loc="upper left")
    if no_fit is not None:
        _clear_of_legend(ax, no_fit)
    return fig


def _clear_of_legend(ax, text) -> None:
    """A note inside the axes that the legend covers goes to the axes' foot, or (no room there either) is left
    out: the panel's numbers say it too."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    leg = ax.get_legend()
    if leg is None or not leg.get_window_extent(renderer).overlaps(text.get_window_extent(renderer)):
        return
    text.set_y(0.07)
    fig.canvas.draw()
    if leg.get_window_extent(renderer).overlaps(text.get_window_extent(renderer)):
        text.remove()


def _legend_below(fig, pal, handles) -> bool:
    """The legend along the figure's foot, one entry a row, the axes laid out above it: no curve runs under it.
    False (and no legend) where the figure is too short for that: the axes would be left too little room."""
    # (rows a little closer than matplotlib's: four English rows, taller than Chinese ones, fit under the axes)
    def place(labels):
        leg = fig.legend(handles, labels, loc="lower center", ncol=1, fontsize=_small(fig), framealpha=0.85,
                         facecolor=pal["mpl_bg"], edgecolor=pal["mpl_fg"], labelspacing=0.3)
        for text in leg.get_texts():
            text.set_color(pal["mpl_fg"])
        fig.canvas.draw()
        return leg
    labels = [h.get_label() for h in handles]
    leg = place(labels)
    if leg.get_window_extent().width > 0.98 * fig.bbox.width:
        # wider than the figure (a long label in English): its ends were cut off; broken at the middle space
        leg.remove()
        leg = place([_break_middle(text) for text in labels])
    foot = leg.get_window_extent().height / fig.bbox.height
    if foot > 0.34:
        leg.remove()
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout(rect=(0.0, foot + 0.01, 1.0, 1.0))
    # Where the layout could not make the room (a small figure), the axes' numbers would sit under it.
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    if any(ax.get_tightbbox(renderer).y0 < leg.get_window_extent(renderer).y1 - 2 for ax in fig.axes):
        leg.remove()
        _tight(fig)
        return False
    return True


def _break_middle(text: str) -> str:
    """A long label broken onto two lines at the space nearest its middle (unchanged if short or unbroken)."""
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    if len(text) <= 16 or not spaces or "\n" in text:
        return text
    cut = min(spaces, key=lambda i: abs(i - len(text) / 2))
    return text[:cut] + "\n" + text[cut + 1:]


def _wrap_wide_legend(ax, pal, leg, handles, loc: str) -> None:
    """A legend wider than its axes (a long label, a long figure on another computer) runs over the right axis's
    numbers: its labels are broken at their middle space and the legend drawn again, at the same text size."""
    renderer = ax.figure.canvas.get_renderer()
    if leg.get_window_extent(renderer).width <= ax.get_window_extent(renderer).width * 0.97:
        return
    for h in handles:
        h.set_label(_break_middle(h.get_label()))
    leg.remove()
    _legend(ax, pal, handles=handles, loc=loc)
    _tight(ax.figure)


def kv_bytes_plot(t, pal, lanes, weights_gb: float, contexts: dict, current_lanes: int, memory_gb: float,
                  device: str, model: str, size_px=(640, 400), text_px: float = 16.0):
    """Pope et al.'s crossover: the bytes one pass reads, the weights' (the same whatever the batch) and the KV
    caches' (one per sequence: lanes × context × bytes per token) for each context in `contexts` ({label: GB per
    lane}); where a cache's line crosses the weights' it reads more than they do. Beyond the device's memory a
    line stops, where it says so. The legend sits in the empty corner above the weights' line (in the lower right
    it covered the short texts' line)."""
    fig, ax = _figure(pal, size_px, text_px)
    tgt, acc, rej, fg = _hex(pal["target"]), _hex(pal["accent"]), _hex(pal["reject"]), pal["mpl_fg"]
    xs = np.asarray(lanes, dtype=float)
    handles = ax.plot(xs, [weights_gb] * len(xs), color=tgt, lw=3, label=t("plot.read_weights"))
    styles = ("-", "--", ":")
    for j, (ctx, per_lane) in enumerate(contexts.items()):
        ys = xs * per_lane
        ok = ys + weights_gb <= memory_gb if memory_gb else np.ones_like(xs, dtype=bool)
        fit = (memory_gb - weights_gb) / per_lane if memory_gb else None      # the most sequences that fit
        line_x, line_y = xs[ok], ys[ok]
        if fit is not None and not ok.all() and line_x.size and fit > line_x[-1]:
            line_x, line_y = np.append(line_x, fit), np.append(line_y, fit * per_lane)   # up to the memory's edge
        handles += ax.plot(line_x, line_y, color=acc, lw=2.5 if j == 0 else 1.8, ls=styles[j % 3],
                           label=t("plot.read_cache", context=ctx))
        if not ok.all():                     # the line stops where the memory is full, and says so there
            ax.annotate(t("plot.memory_full"), (line_x[-1], line_y[-1]),
                        xytext=(0.3 * text_px, 0), textcoords="offset points", ha="left", va="center", color=acc,
                        fontsize=_small(fig), zorder=6)
        cross = weights_gb / per_lane
        if xs[0] <= cross <= xs[-1]:
            ax.plot([cross], [weights_gb], "o", color=rej, ms=8, zorder=5)      # named by its "≈n" (the panel's)
            ax.annotate(f"≈{cross:,.0f}", (cross, weights_gb),         # under the line: the legend is above
                        xytext=(0, -1.3 * text_px), textcoords="offset points",
                        ha="center", va="center", color=fg, fontsize=_small(fig))
    ax.axvline(current_lanes, color=rej, lw=1.2, alpha=0.7)
    ax.annotate(t("plot.batch_now", n=current_lanes), (current_lanes, 0.03), xycoords=("data", "axes fraction"),
                xytext=(0.3 * text_px, 0), textcoords="offset points", ha="left", va="bottom", color=rej,
                fontsize=_small(fig))        # the red line is the batch the table runs (it was read as a limit)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _plain_ticks(ax)
    ax.set_xlabel(t("plot.lanes"))
    ax.set_ylabel(t("plot.gb_per_pass"))
    ax.set_ylim(min(xs[0] * min(contexts.values()), weights_gb) * 0.5, weights_gb * 900)
    _plain_ticks(ax)
    _title(ax, t("plot.kv_bytes_title", device=device, model=model))
    _legend(ax, pal, handles=handles, loc="upper left")
    _tight(fig)
    return fig


def tubes_plot(t, pal, draws, tv_left, tv_right, rule_label: str, size_px=(640, 400), text_px: float = 16.0):
    fig, ax = _figure(pal, size_px, text_px)
    ax.plot(draws, tv_left, color=_hex(pal["target"]), lw=2, label=t("plot.tube_left"))
    ax.plot(draws, tv_right, color=_hex(pal["accent"]), lw=2.5, label=t("plot.tube_right"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_ticks(ax)
    ax.set_xlabel(t("plot.draws"))
    ax.set_ylabel(t("plot.tv"))
    _title(ax, t("plot.tubes_title", rule=rule_label))
    _legend(ax, pal)
    _tight(fig)
    return fig


def drafter_label(t, point: dict, gamma: int) -> str:
    """A drafter's name in the current language; a tree says its widths and what proposes its candidates."""
    name = point["drafter"]
    if not _shaped(name):
        return t(f"drafter.{name}")
    opts = point.get("options", {})
    if opts.get("tree_widths"):
        widths = ",".join(str(k) for k in opts["tree_widths"])
    else:
        widths = f"{opts.get('tree_width', 2)}×{opts.get('tree_depth') or gamma}"
    base = opts.get("tree_from", BASES[0])
    return t(f"drafter.{name}", widths=widths, base=t(f"drafter.{base}"))


def drafter_short(t, point: dict, gamma: int) -> str:
    """A drafter's short name for a narrow legend: 链 / chain, or a tree's shape (and 'heads' when it grows from them)."""
    name = point["drafter"]
    if not _shaped(name):
        return t(f"lab.drafter_{name}")
    opts = point.get("options", {})
    shape = ",".join(str(k) for k in opts["tree_widths"]) if opts.get("tree_widths") else \
        f"{opts.get('tree_width', 2)}×{opts.get('tree_depth') or gamma}"
    base = opts.get("tree_from", BASES[0])        # the first base is the default: named only when another
    return f"{t(f'lab.drafter_{name}')} {shape}" + (f" · {t(f'lab.tree_from_{base}')}" if base != BASES[0] else "")


def _shaped(name: str) -> bool:
    """A drafter with a shape of its own (a tree's widths): its label says the shape."""
    return "tree_width" in kind_of(name).options


def drafters_plot(t, pal, points: list[dict], gamma: int, device: str, note: str | None = None, size_px=(1000, 440),
                  text_px: float = 16.0, network: bool = False, only=None):
    """Tokens per pass against lanes per pass for every drafter on the same prompts (the data:
    models.drafter_analytics.compare_drafters or long_runs): up is what a drafter buys, right what it costs the
    target. `note` says what the points were counted on (a long run, or a short one) under the title. network:
    the points are a network pair's (its chain is a draft network, not the bigram). only: the drafters drawn (None:
    all); the others still keep their marks and the axes, so a drafter's mark and the frame stay as pages add more."""
    if network:
        words = t
        t = lambda key, **kw: words("drafter.chain_network" if key == "drafter.chain" else key, **kw)  # noqa: E731
    fig, ax = _figure(pal, size_px, text_px)
    hues = {k.name: k.hue if k.hue.startswith("#") else _hex(pal[k.hue]) for k in kinds()}
    markers = ("o", "s", "D", "^", "v", "P", "X")
    ax.plot([1], [1], "o", color=pal["mpl_fg"], ms=9, label=t("plot.target_alone"))
    wide = size_px[0] >= 900 and size_px[0] > 1.6 * size_px[1]      # room for the legend beside the axes
    for j, pt in enumerate(points):
        if only is not None and pt["drafter"] not in only:
            continue
        # A narrow figure (a panel) keeps its legend short: the drafter's short name and its speedup.
        label = t("plot.drafter_point", label=drafter_label(t, pt, gamma), speedup=f"{pt['speedup_model']:.2f}") \
            if wide else f"{drafter_short(t, pt, gamma)} ×{pt['speedup_model']:.2f}"
        ax.plot([pt["lanes_per_pass"]], [pt["tokens_per_pass"]], markers[j % len(markers)], ms=11,
                color=hues.get(pt["drafter"], pal["mpl_fg"]), markeredgecolor=pal["mpl_fg"], label=label)
    top = max([pt["tokens_per_pass"] for pt in points] + [1.0])
    right = max([pt["lanes_per_pass"] for pt in points] + [2.0])
    xs = np.geomspace(1, right * 1.5, 50)
    ax.plot(xs, xs, ":", color=pal["mpl_fg"], lw=1, label=t("plot.lanes_ceiling"))
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(0.8, right * 1.5)
    ax.set_ylim(0.8, top + 0.6)
    ax.set_xlabel(t("plot.lanes_per_pass"))
    ax.set_ylabel(t("plot.tokens_per_pass_counted" if wide else "plot.tokens_per_pass_short"))
    _title(ax, t("plot.drafters_title", gamma=gamma, device=device) + "\n" + " · ".join(
        x for x in (note, device) if x), fontsize=_small(fig))
    # Beside the axes where the figure is wide; where it is narrow (a panel), along the figure's foot, the axes
    # laid out above it: no point is ever hidden behind it, and no text runs off the figure or into another.
    style = dict(fontsize=_small(fig), framealpha=0.85, facecolor=pal["mpl_bg"], edgecolor=pal["mpl_fg"])
    if wide:
        leg = ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), **style)
    else:
        handles, labels = ax.get_legend_handles_labels()
        leg = fig.legend(handles, labels, loc="lower center", ncol=2, **style)
    for text in leg.get_texts():
        text.set_color(pal["mpl_fg"])
    if wide:
        _tight(fig)
        return fig
    fig.canvas.draw()
    foot = leg.get_window_extent().height / fig.bbox.height
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout(rect=(0.0, min(0.9, foot + 0.01), 1.0, 1.0))
    return fig


def figure_rgba(fig) -> np.ndarray:
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def text_report(fig) -> tuple[float | None, list[tuple[str, str]], list[str]]:
    """After a draw: the smallest text drawn (px of em height), the pairs of texts (or a text and a legend)
    whose boxes overlap (a legend's own lines belong to it) and the texts cut off at the figure's edge. Tick
    labels outside the axis' view (made by the locator but not drawn) are left out."""
    # lazy: window/scenes side, not loaded with this module
    from scenes.legibility import group_boxes, overlapping_pairs
    renderer = fig.canvas.get_renderer()
    h = fig.bbox.height
    drawn = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():
                if lo - 1e-9 * abs(hi - lo) <= tick.get_loc() <= hi + 1e-9 * abs(hi - lo):
                    drawn += [tick.label1, tick.label2]
        drawn += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
    drawn += fig.texts
    legends = [lg for ax in fig.axes for lg in [ax.get_legend()] if lg is not None and lg.get_visible()]
    for lg in legends:
        drawn += list(lg.get_texts())
    smallest, boxes, cut = None, [], []
    for txt in drawn:
        if not isinstance(txt, Text) or not txt.get_visible() or not txt.get_text().strip():
            continue
        bb = txt.get_window_extent(renderer)
        if bb.width <= 0 or bb.x1 < 0 or bb.x0 > fig.bbox.width or bb.y1 < 0 or bb.y0 > h:
            continue
        if bb.x0 < -0.5 or bb.y0 < -0.5 or bb.x1 > fig.bbox.width + 0.5 or bb.y1 > h + 0.5:
            cut.append(txt.get_text())
        px = txt.get_fontsize() * fig.dpi / 72.0
        smallest = px if smallest is None else min(smallest, px)
        boxes.append((txt.get_text(), bb.x0, h - bb.y1, bb.width, bb.height))
    frames = []
    for k, lg in enumerate(legends):
        bb = lg.get_window_extent(renderer)
        frames.append((f"legend {k + 1}", bb.x0, h - bb.y1, bb.width, bb.height))
    return smallest, overlapping_pairs(group_boxes(frames, boxes), tolerance=0.5), cut


def save_figure(fig, path: Path) -> Path:
    """PNG or SVG by suffix, written atomically."""
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".").lower(), facecolor=fig.get_facecolor())
    return path


def close(fig) -> None:
    plt.close(fig)
