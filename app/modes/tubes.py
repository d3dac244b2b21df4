"""Test-tube mode (试管): the convergence experiment, and 'break it' switches that apply a wrong rule."""
from __future__ import annotations

import numpy as np
from imgui_bundle import imgui

from app import ui
from app.modes.base import Panel
from app.settings import TUBE_RULES

TOP_TOKENS = 6


class TubesPanel(Panel):
    view = "tubes"

    def __init__(self, app):
        super().__init__(app)
        self.plots = ui.PlotTextures(app)

    def on_key(self, action: str) -> None:
        """Next/previous cycle through the rules: exact first, then each way to break it."""
        s = self.app.settings
        i = TUBE_RULES.index(s.tube_rule) + (1 if action == "next" else -1)
        s.tube_rule = TUBE_RULES[i % len(TUBE_RULES)]

    def draw(self) -> None:
        app, t, s = self.app, self.app.t, self.app.settings
        c = app.colors
        ui.begin_panel("##tubes", ui.panel_rect(app))
        ui.heading(app, t("tubes.title"))
        imgui.text_wrapped(t("tubes.explain"))
        imgui.text(t("tubes.break_it"))
        for rule in TUBE_RULES:
            if imgui.radio_button(t(f"rule.{rule}"), s.tube_rule == rule):
                s.tube_rule = rule
        try:
            res = app.session.tubes() if app.fixed_step else app.session.tubes_ready()
        except Exception as exc:  # noqa: BLE001 - the tube model may still be landing
            imgui.text_wrapped(f"{type(exc).__name__}: {exc}")
            imgui.end()
            return
        if res is None:
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("tubes.computing"))
            imgui.end()
            return
        pair = app.session.pair()
        p = np.asarray(res.target_p, float)
        cum_l = np.asarray(res.left_counts, float)
        cum_r = np.asarray(res.right_counts, float)
        fl, fr = cum_l / max(cum_l.sum(), 1), cum_r / max(cum_r.sum(), 1)
        top = np.argsort(-p)[:TOP_TOKENS]
        if imgui.begin_table("tubes", 4, imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_h):
            for h in ("tubes.token", "tubes.p", "tubes.left", "tubes.right"):
                imgui.table_setup_column(t(h))
            imgui.table_headers_row()
            for j in top:
                imgui.table_next_row()
                imgui.table_next_column()
                imgui.text(pair.display(int(j)))
                imgui.table_next_column()
                imgui.text(f"{p[j]:.3f}")
                imgui.table_next_column()
                imgui.text(f"{fl[j]:.3f}")
                imgui.table_next_column()
                bad = abs(fr[j] - p[j]) > 3 * np.sqrt(max(p[j] * (1 - p[j]), 1e-9) / max(cum_r.sum(), 1))
                imgui.text_colored(imgui.ImVec4(*(c["reject"] if bad else c["text"])), f"{fr[j]:.3f}")
            imgui.end_table()
        imgui.text(t("tubes.chi2", left=f"{res.chi2_p_left:.3g}", right=f"{res.chi2_p_right:.3g}"))
        imgui.spacing()
        self.plots.image("tubes", imgui.get_content_region_avail().x)
        imgui.end()
