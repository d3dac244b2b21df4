"""The tour's residual picture (chapter 5's last page): the rejection the page talks about, p and q of the tokens
that matter, and beside them the residual norm(max(0, p − q)) the replacement was drawn from, that token marked."""
from __future__ import annotations

import numpy as np
from imgui_bundle import imgui

from app import ui
from app.lesson.facts import checkpoint
from app.palette import u32


def residual_case(ctl):
    """(pass, guess index, trace) of the rejection the page talks about: the checkpoint's guess when it was
    rejected, else the first rejected guess of the run; None when the run rejected nothing."""
    run = ctl.session.ensure()
    if not run:
        return None
    cp = checkpoint(ctl)
    if cp is not None and cp[1] < cp[0].tested and not cp[0].accepted[cp[1]]:
        return cp[0].step_index, cp[1], cp[0]
    for k, tr in enumerate(run.traces):
        for i in range(tr.tested):
            if not tr.accepted[i]:
                return k, i, tr
    return None


def residual_rows(ctl, n: int = 4) -> dict | None:
    """What the residual picture draws, read from the trace: the guess, p and q over the tokens that matter
    (the largest of p, of q and of the residual, the guess and the token drawn), the residual the replacement
    was drawn from (the trace's own final row) and that token."""
    case = residual_case(ctl)
    if case is None:
        return None
    k, i, tr = case
    pair = ctl.session.pair()
    p, q, res = (np.asarray(r, dtype=np.float64) for r in (tr.p_rows[i], tr.q_rows[i], tr.final_row))
    g, x = int(tr.guesses[i]), int(tr.final_token)
    ids = [g, x, *np.argsort(-res, kind="stable")[:n], *np.argsort(-q, kind="stable")[:n],
           *np.argsort(-p, kind="stable")[:n]]
    # Tokens that show something (a bar of p, q or the residual a row's height can see), each once.
    ids = [j for j in dict.fromkeys(int(j) for j in ids) if j in (g, x) or max(p[j], q[j], res[j]) >= 0.01][:n]
    ids.sort(key=lambda j: (-res[j], -p[j]))
    rest = np.ones(len(p), dtype=bool)
    rest[ids] = False
    return {"pass": k + 1, "guess": pair.display(g), "guess_id": g, "token": pair.display(x), "token_id": x,
            "p": float(p[g]), "q": float(q[g]),
            "rows": [(pair.display(j), float(p[j]), float(q[j]), float(res[j]), j) for j in ids],
            # every other token together, so each column adds up to 1 on screen
            "rest": (float(p[rest].sum()), float(q[rest].sum()), float(res[rest].sum()))}


def _val(v: float) -> str:
    # a rejected guess's p and q are often under 0.01: one more place, or its q > p would read .00 = .00
    return "1" if v >= 0.995 else f"{v:.3f}".lstrip("0") if 0 < v < 0.01 else f"{v:.2f}".lstrip("0")


def draw_residual(ctl, scr) -> None:
    """p and q of each token that matters, and beside them the residual norm(max(0, p − q)): the guess that
    was rejected has none left, the token drawn from it is marked."""
    t, c = ctl.t, ctl.colors
    data = residual_rows(ctl)
    if data is None:
        ui.wrapped(t("tour.residual_none"), c["muted"])
        return
    imgui.spacing()
    ui.wrapped(t("tour.residual_head", pass_no=data["pass"], guess=data["guess"], p=f"{data['p']:.3f}",
                 q=f"{data['q']:.3f}", token=data["token"]))
    dl = imgui.get_window_draw_list()
    x0, y0 = imgui.get_cursor_screen_pos()
    w = imgui.get_content_region_avail().x
    fs = scr.font_size
    label_w, gap = fs * 1.8, fs * 0.6
    col_w = (w - label_w - 2 * gap) / 2           # left: p and q; right: the residual
    row = fs * 1.8                               # p's and q's bars each a line high, their values beside
    # The bars scale to the tokens listed (the rest, often most of p and q, would flatten them): its bar is cut at
    # the column's width, its value beside it.
    top = max(max(pp, qq) for _, pp, qq, _, _ in data["rows"]) or 1.0
    rows = data["rows"] + [(t("tour.residual_rest"), *data["rest"], None)]
    bar_w = col_w - fs * 2.4                     # room after each bar for its value
    txt, muted = u32(c["text"]), u32(c["muted"])
    dl.add_text((x0 + label_w, y0), u32(c["target"]), "p")
    dl.add_text((x0 + label_w + fs * 1.2, y0), u32(c["draft"]), "q")
    dl.add_text((x0 + label_w + col_w + gap, y0), u32(c["accent"]), t("tour.residual_col"))
    y = y0 + fs * 1.4
    for label, pp, qq, rr, j in rows:
        mark = j == data["token_id"]
        dl.add_text((x0, y + (row - fs) / 2), muted if j is None else txt, label)
        if j == data["guess_id"]:       # struck through, as on the tape (red is the token drawn, as the tubes' beads)
            dl.add_line((x0 - fs * 0.1, y + row / 2), (x0 + fs * 1.1, y + row / 2), txt, max(2.0, fs / 9))
        bx = x0 + label_w
        for v, lo, hi, col in ((pp, 0.02, 0.48, "target"), (qq, 0.52, 0.98, "draft")):
            end = bx + bar_w * min(1.0, v / top)
            dl.add_rect_filled((bx, y + row * (lo + 0.06)), (end, y + row * (hi - 0.06)), u32(c[col]))
            if v > top:                          # cut: a break in the bar says it runs on
                for dx in (fs * 0.9, fs * 0.6):
                    dl.add_line((end - dx, y + row * lo), (end - dx + fs * 0.2, y + row * hi), u32(c["clear"]), 3.0)
            dl.add_text((end + 3, y + row * (lo + hi) / 2 - fs / 2), u32(c[col]), _val(v))
        rx = bx + col_w + gap
        rw = (col_w - fs * 2.6) * rr
        dl.add_rect_filled((rx, y + row * 0.15), (rx + rw, y + row * 0.85),
                           u32(c["reject"] if mark else c["accent"]))
        dl.add_text((rx + rw + 4, y + (row - fs) / 2), txt if rr > 0 else muted, _val(rr))
        y += row
    imgui.dummy((w, y - y0))
    ui.wrapped(t("tour.residual_foot", token=data["token"], guess=data["guess"]), c["muted"])
