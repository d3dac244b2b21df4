"""Test-tube mode (试管): the convergence experiment, and 'break it' switches that apply a wrong rule."""
from __future__ import annotations

import numpy as np
from imgui_bundle import imgui

from app import derived, ui
from app.modes.base import Panel
from app.settings import TUBE_RULES
from corpus.errors import InputError

TOP_TOKENS = 6
# What PageDown steps through: the exact rule, the exact rule without the bonus token (still exact, slower),
# then each wrong rule.
STOPS = (("exact", False), ("exact", True)) + tuple((r, False) for r in TUBE_RULES if r != "exact")


class TubesPanel(Panel):
    view = "tubes"

    def __init__(self, ctl, driver):
        super().__init__(ctl, driver)
        self.plots = ui.PlotTextures(ctl)

    def rules(self) -> tuple[str, ...]:
        """The rules the right tube can run with the lab's drafter: a tree (several candidates at a position) has
        the exact rule and typical acceptance only (models.tubes.TREE_RULES)."""
        from models.tubes import TREE_RULES
        s = self.ctl.settings
        tree = s.drafter == "tree" and s.tree_width > 1
        return tuple(r for r in TUBE_RULES if not tree or r in TREE_RULES)

    def on_key(self, action: str) -> None:
        """Next/previous cycle through the rules: exact first, exact without the bonus, then each way to break it."""
        s = self.ctl.settings
        stops = tuple(st for st in STOPS if st[0] in self.rules())
        here = (s.tube_rule, s.skip_bonus and s.tube_rule == "exact")
        i = stops.index(here) if here in stops else 0
        rule, skip = stops[(i + (1 if action == "next" else -1)) % len(stops)]
        self.ctl.update(tube_rule=rule, skip_bonus=skip)

    def skip_bonus_note(self) -> str | None:
        """Why skipping the bonus is no wrong rule, with tokens per pass with and without it at the pair's
        long-run α (None while the long run is still being counted)."""
        ctl, s = self.ctl, self.ctl.settings
        pf = ctl.long_run()
        if pf is None:
            return None
        alpha = float(pf.alpha)
        with_b, without_b = derived.tokens_per_pass_bonus(alpha, s.gamma)
        return ctl.t("tubes.skip_bonus_note", alpha=f"{alpha:.3f}", gamma=s.gamma, with_bonus=f"{with_b:.2f}",
                     without_bonus=f"{without_b:.2f}")

    def rows(self, res) -> list[tuple[str, str, str, str, bool]]:
        """The table's rows for the top tokens of p: (token, p, left tube, right tube, right tube more than 3
        standard errors from p)."""
        pair = self.ctl.session.pair()
        p = np.asarray(res.target_p, float)
        cum_l = np.asarray(res.left_counts, float)
        cum_r = np.asarray(res.right_counts, float)
        fl, fr = cum_l / max(cum_l.sum(), 1), cum_r / max(cum_r.sum(), 1)
        out = []
        for j in np.argsort(-p)[:TOP_TOKENS]:
            bad = abs(fr[j] - p[j]) > 3 * np.sqrt(max(p[j] * (1 - p[j]), 1e-9) / max(cum_r.sum(), 1))
            out.append((pair.display(int(j)), f"{p[j]:.3f}", f"{fl[j]:.3f}", f"{fr[j]:.3f}", bool(bad)))
        return out

    def facts_shown(self) -> dict[str, str]:
        """The table's p and tube frequencies per token, the chi-square p-values, and the skip-bonus note's α and
        tokens per pass when it is shown."""
        ctl, s = self.ctl, self.ctl.settings
        out = {}
        if s.skip_bonus:
            pf = ctl.long_run()
            if pf is not None:
                with_b, without_b = derived.tokens_per_pass_bonus(float(pf.alpha), s.gamma)
                out.update(alpha=f"{pf.alpha:.3f}", tpp_with_bonus=f"{with_b:.2f}", tpp_without_bonus=f"{without_b:.2f}")
        res = ctl.tubes()
        if res is not None:
            for char, p, left, right, _ in self.rows(res):
                out.update({f"p[{char}]": p, f"left[{char}]": left, f"right[{char}]": right})
            out.update(chi2_p_left=f"{res.chi2_p_left:.3g}", chi2_p_right=f"{res.chi2_p_right:.3g}")
        return out

    def draw(self, scr) -> None:
        ctl, t, s = self.ctl, self.ctl.t, self.ctl.settings
        c = ctl.colors
        ui.begin_panel("##tubes", ui.panel_rect(scr))
        ui.heading(scr, t("tubes.title"))
        ui.wrapped(t("tubes.explain"))
        if s.drafter != "chain":
            ui.wrapped(t("tubes.drafter", drafter=t(f"lab.drafter_{s.drafter}")), c["muted"])
        imgui.text(t("tubes.break_it"))
        allowed = self.rules()
        for rule in TUBE_RULES:
            imgui.begin_disabled(rule not in allowed)
            if imgui.radio_button(t(f"rule.{rule}"), s.tube_rule == rule):
                ctl.update(tube_rule=rule)
            imgui.end_disabled()
        if s.tube_rule not in allowed:
            ui.wrapped(t("tubes.tree_rule"), c["reject"])
        imgui.spacing()
        changed, skip = imgui.checkbox(t("tubes.skip_bonus"), s.skip_bonus)
        if changed:
            ctl.update(skip_bonus=skip)        # saved at once (a classroom switch)
        if s.skip_bonus:
            ui.wrapped(self.skip_bonus_note() or t("plot.computing_long"), c["muted"])
        try:
            res = ctl.tubes()
        except InputError as exc:       # a rule the drafter's proposal has no meaning for: said above in words
            if s.tube_rule in allowed:
                ui.wrapped(str(exc), c["reject"])
            imgui.end()
            return
        except Exception as exc:  # noqa: BLE001 - the tube model may still be landing
            ui.wrapped(f"{type(exc).__name__}: {exc}")
            imgui.end()
            return
        if res is None:
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("tubes.computing"))
            imgui.end()
            return
        if res.rule == "typical" and res.typical_threshold is not None:
            ui.wrapped(t("tubes.typical_note", threshold=f"{res.typical_threshold:.4f}"), c["muted"])
        if imgui.begin_table("tubes", 4, imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_h):
            for h in ("tubes.token", "tubes.p", "tubes.left", "tubes.right"):
                imgui.table_setup_column(t(h))
            imgui.table_headers_row()
            for char, p, left, right, bad in self.rows(res):
                imgui.table_next_row()
                for value in (char, p, left):
                    imgui.table_next_column()
                    imgui.text(value)
                imgui.table_next_column()
                imgui.text_colored(imgui.ImVec4(*(c["reject"] if bad else c["text"])), right)
            imgui.end_table()
        imgui.text(t("tubes.chi2", left=f"{res.chi2_p_left:.3g}", right=f"{res.chi2_p_right:.3g}"))
        imgui.spacing()
        # The plot takes the height that is left (a flatter figure rather than one that scrolls out of sight).
        avail = imgui.get_content_region_avail()
        aspect = avail.x / max(avail.y - imgui.get_style().item_spacing.y, 1.0)
        self.plots.image(scr, "tubes", avail.x, aspect=round(min(3.5, aspect), 1) if aspect > 1.6 else None)
        imgui.end()
