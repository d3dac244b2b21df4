"""Matplotlib (Agg) figures for the panels and for export: speedup vs γ, tokens per pass, roofline, tubes, drafters.

Each plot takes plain numbers already computed by models/ (never computes physics itself) and the
current strings and palette; figure_rgba() turns it into a texture, save_figure() into PNG/SVG.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import font_manager  # noqa: E402

from corpus.atomic import atomic_path  # noqa: E402

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


def _tight(fig) -> None:
    """tight_layout, quietly: in a very small window the margins cannot fit, and the plot is drawn as it is."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()


def _small(fig) -> float:
    """The figure's smallest text size, in points."""
    return points(fig.text_px)


def _plain_ticks(ax) -> None:
    """Log axes labelled 1, 2, 4 ... 1,000 rather than 2^3 and 10^3 (read from the back of a classroom)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def fmt(v, _pos):
        if v >= 1:
            return f"{v:,.0f}"
        return f"{v:.3g}"
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log" and getattr(axis.get_transform(), "base", 10) == 10:
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
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
                 pair_label: str = "plot.toy_alpha", size_px=(640, 400), text_px: float = 16.0):
    """curves: {alpha: speedups over gammas} (alphas cited from the papers); toy_curve: the toy's own. The
    reference curves are named at their right ends; the legend keeps to the toy pair's own lines."""
    fig, ax = _figure(pal, size_px, text_px)
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
    ax.set_title(t("plot.speedup_title", c=f"{c:g}"))
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
    for k in order:
        want = ys[k]
        below = [placed[j] for j in placed]
        if below and want < max(below) + gap:
            want = max(below) + gap
        placed[k] = want
    for k, (text, y, col) in enumerate(ends):
        dy = (placed[k] - ys[k]) * 72.0 / fig.dpi
        ax.annotate(text, (x, y), xytext=(4, dy), textcoords="offset points", color=col, fontsize=_small(fig),
                    va="center", annotation_clip=False)


def tokens_per_pass_plot(t, pal, gammas, formula, counted, alpha: float, counted_label: str, size_px=(640, 400),
                         text_px: float = 16.0):
    fig, ax = _figure(pal, size_px, text_px)
    ax.plot(gammas, formula, "-o", color=_hex(pal["target"]), lw=2, label=t("plot.formula", alpha=f"{alpha:.3f}"))
    ax.bar(gammas, counted, width=0.45, color=_hex(pal["accent"]), alpha=0.85, label=counted_label)
    ax.plot(gammas, [g + 1 for g in gammas], ":", color=pal["mpl_fg"], lw=1, label=t("plot.max_tokens"))
    ax.set_xlabel(t("plot.gamma"))
    ax.set_ylabel(t("plot.tokens_per_pass"))
    ax.set_title(t("plot.tpp_title"))
    _legend(ax, pal)
    _tight(fig)
    return fig


def roofline_plot(t, pal, lanes, tokens_per_s, busy, current_lanes: int, device: str, model: str, context: str,
                  size_px=(640, 400), text_px: float = 16.0, computer=None):
    """computer: (label, lanes to saturate) of this computer as measured: its own busy share beside
    the device's (a pass of n lanes keeps min(1, n / lanes) of its arithmetic busy)."""
    fig, ax = _figure(pal, size_px, text_px)
    ax.plot(lanes, tokens_per_s, color=_hex(pal["target"]), lw=2.5, label=t("plot.tokens_per_s"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _plain_ticks(ax)
    ax.set_xlabel(t("plot.lanes"))
    ax.set_ylabel(t("plot.tokens_per_s"))
    ax2 = ax.twinx()
    ax2.plot(lanes, [100 * b for b in busy], color=_hex(pal["accent"]), lw=2, ls="--", label=t("plot.busy"))
    ax2.set_ylabel(t("plot.busy"), color=_hex(pal["accent"]), fontsize=points(text_px * 1.1))
    ax2.tick_params(colors=pal["mpl_fg"], labelsize=points(text_px))
    ax2.set_ylim(0, 105)
    ax.axvline(current_lanes, color=_hex(pal["reject"]), lw=1.5)
    lines = ax.get_lines()[:1] + ax2.get_lines()
    if computer is not None:
        label, sat = computer
        lines += ax2.plot(lanes, [100 * min(1.0, n / sat) for n in lanes], color=_hex(pal["draft"]), lw=2.5, ls=":",
                          label=label)
    ax.set_title(t("plot.roofline_title", device=device, model=model, context=context))
    _legend(ax, pal, handles=lines, loc="upper left")
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
    ax.set_title(t("plot.tubes_title", rule=rule_label))
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
    from models.drafters import BASES
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
    from models.drafters import BASES
    base = opts.get("tree_from", BASES[0])        # the first base is the default: named only when another
    return f"{t(f'lab.drafter_{name}')} {shape}" + (f" · {t(f'lab.tree_from_{base}')}" if base != BASES[0] else "")


def _shaped(name: str) -> bool:
    """A drafter with a shape of its own (a tree's widths): its label says the shape."""
    from models.drafters import kind_of
    return "tree_width" in kind_of(name).options


def drafters_plot(t, pal, points: list[dict], gamma: int, device: str, note: str | None = None, size_px=(1000, 440),
                  text_px: float = 16.0):
    """Tokens per pass against lanes per pass for every drafter on the same prompts (the data:
    models.drafter_analytics.compare_drafters or long_runs): up is what a drafter buys, right what it costs the
    target. `note` says what the points were counted on (a long run, or a short one) under the title."""
    from models.drafters import kinds
    fig, ax = _figure(pal, size_px, text_px)
    hues = {k.name: k.hue if k.hue.startswith("#") else _hex(pal[k.hue]) for k in kinds()}
    markers = ("o", "s", "D", "^", "v", "P", "X")
    ax.plot([1], [1], "o", color=pal["mpl_fg"], ms=9, label=t("plot.target_alone"))
    wide = size_px[0] >= 900 and size_px[0] > 1.6 * size_px[1]      # room for the legend beside the axes
    for j, pt in enumerate(points):
        # A narrow figure (a panel) keeps its legend short: the drafter's short name and its speedup.
        label = t("plot.drafter_point", label=drafter_label(t, pt, gamma), speedup=f"{pt['speedup_model']:.2f}") \
            if wide else f"{drafter_short(t, pt, gamma)} ×{pt['speedup_model']:.2f}"
        ax.plot([pt["lanes_per_pass"]], [pt["tokens_per_pass"]], markers[j % len(markers)], ms=11,
                color=hues.get(pt["drafter"], pal["mpl_fg"]), markeredgecolor=pal["mpl_fg"], label=label)
    top = max([pt["tokens_per_pass"] for pt in points] + [1.0])
    right = max([pt["lanes_per_pass"] for pt in points] + [2.0])
    xs = np.geomspace(1, right * 1.5, 50)
    ax.plot(xs, xs, ":", color=pal["mpl_fg"], lw=1, label=t("plot.lanes_ceiling"))
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(0.8, right * 1.5)
    ax.set_ylim(0.8, top + 0.6)
    ax.set_xlabel(t("plot.lanes_per_pass"))
    ax.set_ylabel(t("plot.tokens_per_pass_counted" if wide else "plot.tokens_per_pass_short"))
    ax.set_title(t("plot.drafters_title", gamma=gamma, device=device) + "\n" + " · ".join(
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
    import warnings
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
    from matplotlib.text import Text

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
