"""Chapter 8's picture of what a speculative pass costs (matplotlib, as app.plots draws the chapters' plots): one
pass's time in turns of the big drum (the target writing one token alone = 1), the draft's guesses and the check
stacked, as measured and on paper, beside the tokens the pass writes. The speedup is the tokens over the bar's turns."""
from __future__ import annotations

from app.lesson.measured import in_run_cost
from app.plots import _figure, _hex, _legend_below, _small, _tight, _title


def pass_rows(d: dict) -> list[dict]:
    """The two bars of a pair's measurement file: {'guesses', 'c', 'verify', 'tokens', 'speedup'} as timed in the
    runs (the guesses they made, their own c and check) and on paper (γ guesses, bytes read alone)."""
    paper = d["on_paper"]
    gamma = int(d["settings"]["gamma"])
    measured = {"guesses": float(d.get("guesses_per_pass") or gamma), "c": in_run_cost(d, "c"),
                "verify": in_run_cost(d, "verify_ratio"),
                "tokens": float(d["tokens_per_pass"])}
    on_paper = {"guesses": float(gamma), "c": float(paper["c"]), "verify": float(paper.get("verify_ratio", 1.0)),
                "tokens": float(paper.get("tokens_per_pass", d["tokens_per_pass"]))}
    for r in (measured, on_paper):
        r["turns"] = r["guesses"] * r["c"] + r["verify"]
        r["speedup"] = r["tokens"] / r["turns"]
    return [measured, on_paper]


def pass_time_plot(t, pal, rows: list[dict], labels: list[str], size_px=(640, 400), text_px: float = 16.0):
    """Each row a bar: the guesses × c (the draft's colour), one token's check (1 turn) and what checking γ + 1
    costs more (hatched), each with its turns written in it, the total and the speedup under the row's name; a
    dashed line at the tokens the pass writes (the turns the target alone would take to write them)."""
    fig, ax = _figure(pal, size_px, text_px)
    dft, tgt, fg, bg = _hex(pal["draft"]), _hex(pal["target"]), pal["mpl_fg"], pal["mpl_bg"]
    ys = list(range(len(rows)))[::-1]
    tokens = rows[0]["tokens"]
    right = max(max(r["turns"] for r in rows), tokens)
    handles = []
    for y, r in zip(ys, rows):
        parts = [(r["guesses"] * r["c"], dft, {}, t("plot.pass_draft")),
                 (1.0, tgt, {}, t("plot.pass_check_one")),
                 (max(0.0, r["verify"] - 1.0), tgt, {"alpha": 0.45, "hatch": "//", "edgecolor": fg, "lw": 0},
                  t("plot.pass_check_more"))]
        left = 0.0
        for k, (w, colour, kw, name) in enumerate(parts):
            bar = ax.barh(y, w, left=left, height=0.6, color=colour, zorder=2, label=name, **kw)
            if len(handles) < len(parts):
                handles.append(bar)
            if w >= 0.3:                       # its turns written in it, where they fit
                ax.text(left + w / 2, y, f"{w:.2f}" if k != 1 else "1", ha="center", va="center",
                        color=fg if kw else bg,                         # on the hatching: the text colour
                        fontsize=_small(fig), fontweight="bold", zorder=4)
            left += w
    ax.axvline(tokens, color=fg, lw=1.6, ls="--", zorder=3)
    ax.annotate(t("plot.pass_tokens", tokens=f"{tokens:.2f}"), (tokens, max(ys) + 0.45), xytext=(-4, 0),
                textcoords="offset points", ha="right", va="bottom", color=fg, fontsize=_small(fig), zorder=4)
    ax.set_yticks(ys)
    # each row's sum under its name, its own tokens over its turns (beside the bar, a long figure ran out of the
    # axes): the paper's tokens are the formula's, not the runs' on the dashed line
    ax.set_yticklabels([f"{name}\n" + t("plot.pass_total", tokens=f"{r['tokens']:.2f}", turns=f"{r['turns']:.2f}",
                                         speedup=f"{r['speedup']:.2f}") for name, r in zip(labels, rows)])
    ax.set_ylim(min(ys) - 0.5, max(ys) + 1.0)
    ax.set_xlim(0, right * 1.12)
    ax.set_xticks([0, 1, 2, 3] if right < 3.5 else None)
    ax.grid(False, axis="y")
    ax.set_xlabel(t("plot.pass_x"))
    _title(ax, t("plot.pass_title"))
    if not _legend_below(fig, pal, handles):
        _tight(fig)
    return fig
