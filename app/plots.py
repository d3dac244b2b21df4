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


def _figure(pal: dict, size=(6.4, 4.0)):
    fig = plt.figure(figsize=size, dpi=100, facecolor=pal["mpl_bg"])
    ax = fig.add_subplot(111, facecolor=pal["mpl_bg"])
    fg = pal["mpl_fg"]
    for spine in ax.spines.values():
        spine.set_color(fg)
    ax.tick_params(colors=fg, labelsize=11)
    ax.xaxis.label.set_color(fg)
    ax.yaxis.label.set_color(fg)
    ax.title.set_color(fg)
    ax.grid(True, alpha=0.25, color=fg)
    return fig, ax


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


def _legend(ax, pal):
    leg = ax.legend(fontsize=10, loc="best", framealpha=0.85, facecolor=pal["mpl_bg"], edgecolor=pal["mpl_fg"])
    for text in leg.get_texts():
        text.set_color(pal["mpl_fg"])


def speedup_plot(t, pal, curves: dict, toy_alpha: float, toy_curve, gammas, best_gamma: int, c: float):
    """curves: {alpha: speedups over gammas} (alphas cited from the papers); toy_curve: the toy's own."""
    fig, ax = _figure(pal)
    # Bright, distinct hues that stay readable on the dark and the projector's black background.
    hues = ("#8da0cb", "#66c2a5", "#a6d854", "#ffd92f", "#e78ac3")
    for j, (alpha, ys) in enumerate(curves.items()):
        col = hues[j % len(hues)]
        ax.plot(gammas, ys, color=col, lw=1.6, ls="--", label=f"α = {alpha:.1f}")
        ax.annotate(f"α={alpha:.1f}", (gammas[-1], ys[-1]), xytext=(4, 0), textcoords="offset points",
                    color=col, fontsize=10, va="center")
    ax.plot(gammas, toy_curve, color=_hex(pal["accent"]), lw=3,
            label=t("plot.toy_alpha", alpha=f"{toy_alpha:.3f}"))
    bi = list(gammas).index(best_gamma) if best_gamma in gammas else None
    if bi is not None:
        ax.plot([best_gamma], [toy_curve[bi]], "o", color=_hex(pal["reject"]), ms=9,
                label=t("plot.best_gamma", gamma=best_gamma, speedup=f"{toy_curve[bi]:.2f}"))
    ax.axhline(1.0, color=_hex(pal["reject"]), lw=1, ls="--")
    ax.set_xlabel(t("plot.gamma"))
    ax.set_ylabel(t("plot.speedup"))
    ax.set_title(t("plot.speedup_title", c=f"{c:g}"))
    _legend(ax, pal)
    fig.tight_layout()
    return fig


def tokens_per_pass_plot(t, pal, gammas, formula, counted, alpha: float, passes: int):
    fig, ax = _figure(pal)
    ax.plot(gammas, formula, "-o", color=_hex(pal["target"]), lw=2, label=t("plot.formula", alpha=f"{alpha:.3f}"))
    ax.bar(gammas, counted, width=0.45, color=_hex(pal["accent"]), alpha=0.85, label=t("plot.counted", passes=passes))
    ax.plot(gammas, [g + 1 for g in gammas], ":", color=pal["mpl_fg"], lw=1, label=t("plot.max_tokens"))
    ax.set_xlabel(t("plot.gamma"))
    ax.set_ylabel(t("plot.tokens_per_pass"))
    ax.set_title(t("plot.tpp_title"))
    _legend(ax, pal)
    fig.tight_layout()
    return fig


def roofline_plot(t, pal, lanes, tokens_per_s, busy, current_lanes: int, device: str, model: str, context: str):
    fig, ax = _figure(pal)
    ax.plot(lanes, tokens_per_s, color=_hex(pal["target"]), lw=2.5, label=t("plot.tokens_per_s"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _plain_ticks(ax)
    ax.set_xlabel(t("plot.lanes"))
    ax.set_ylabel(t("plot.tokens_per_s"))
    ax2 = ax.twinx()
    ax2.plot(lanes, [100 * b for b in busy], color=_hex(pal["accent"]), lw=2, ls="--", label=t("plot.busy"))
    ax2.set_ylabel(t("plot.busy"), color=_hex(pal["accent"]))
    ax2.tick_params(colors=pal["mpl_fg"], labelsize=11)
    ax2.set_ylim(0, 105)
    ax.axvline(current_lanes, color=_hex(pal["reject"]), lw=1.5)
    ax.set_title(t("plot.roofline_title", device=device, model=model, context=context))
    lines = ax.get_lines()[:1] + ax2.get_lines()
    leg = ax.legend(lines, [ln.get_label() for ln in lines], fontsize=10, facecolor=pal["mpl_bg"],
                    edgecolor=pal["mpl_fg"], loc="upper left")
    for text in leg.get_texts():
        text.set_color(pal["mpl_fg"])
    fig.tight_layout()
    return fig


def tubes_plot(t, pal, draws, tv_left, tv_right, rule_label: str):
    fig, ax = _figure(pal)
    ax.plot(draws, tv_left, color=_hex(pal["target"]), lw=2, label=t("plot.tube_left"))
    ax.plot(draws, tv_right, color=_hex(pal["accent"]), lw=2.5, label=t("plot.tube_right"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_ticks(ax)
    ax.set_xlabel(t("plot.draws"))
    ax.set_ylabel(t("plot.tv"))
    ax.set_title(t("plot.tubes_title", rule=rule_label))
    _legend(ax, pal)
    fig.tight_layout()
    return fig


def drafter_label(t, point: dict, gamma: int) -> str:
    """A drafter's name in the current language; a tree says its widths and what proposes its candidates."""
    name = point["drafter"]
    if name != "tree":
        return t(f"drafter.{name}")
    opts = point.get("options", {})
    if opts.get("tree_widths"):
        widths = ",".join(str(k) for k in opts["tree_widths"])
    else:
        widths = f"{opts.get('tree_width', 2)}×{opts.get('tree_depth') or gamma}"
    base = opts.get("tree_from", "chain")
    return t("drafter.tree", widths=widths, base=t(f"drafter.{base}"))


def drafters_plot(t, pal, points: list[dict], gamma: int, device: str, note: str | None = None):
    """Tokens per pass against lanes per pass for every drafter on the same prompts (the data:
    models.drafter_analytics.compare_drafters or long_runs): up is what a drafter buys, right what it costs the
    target. `note` says what the points were counted on (a long run, or a short one) under the title."""
    fig, ax = _figure(pal, size=(10.0, 4.4))
    hues = {"chain": _hex(pal["draft"]), "lookup": "#ffd92f", "heads": _hex(pal["target"]), "tree": _hex(pal["accent"])}
    markers = ("o", "s", "D", "^", "v", "P", "X")
    ax.plot([1], [1], "o", color=pal["mpl_fg"], ms=9, label=t("plot.target_alone"))
    for j, pt in enumerate(points):
        ax.plot([pt["lanes_per_pass"]], [pt["tokens_per_pass"]], markers[j % len(markers)], ms=11,
                color=hues.get(pt["drafter"], pal["mpl_fg"]), markeredgecolor=pal["mpl_fg"],
                label=t("plot.drafter_point", label=drafter_label(t, pt, gamma), speedup=f"{pt['speedup_model']:.2f}"))
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
    ax.set_ylabel(t("plot.tokens_per_pass_counted"))
    ax.set_title(t("plot.drafters_title", gamma=gamma, device=device) + (f"\n{note}" if note else ""))
    # Beside the axes, so no point is ever hidden behind it.
    leg = ax.legend(fontsize=10, loc="upper left", bbox_to_anchor=(1.02, 1.0), framealpha=0.85,
                    facecolor=pal["mpl_bg"], edgecolor=pal["mpl_fg"])
    for text in leg.get_texts():
        text.set_color(pal["mpl_fg"])
    fig.tight_layout()
    return fig


def figure_rgba(fig) -> np.ndarray:
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def save_figure(fig, path: Path) -> Path:
    """PNG or SVG by suffix, written atomically."""
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".").lower(), facecolor=fig.get_facecolor())
    return path


def close(fig) -> None:
    plt.close(fig)
