"""Test-tube mode (试管): the convergence experiment, and 'break it' switches that apply a wrong rule.

The experiment plays one round every 1.6 s of the table's clock; the speed control (buttons, '[' and ']')
runs it at ×1, ×10, ×100 or shows every round at once. The rack, its readouts, the HUD, the side table and
the plot all show the round the table's clock is at: the table and the plot are read from the same
round's cumulative counts, never the experiment's end.
"""
from __future__ import annotations

import numpy as np
from imgui_bundle import imgui

from app import derived, ui
from app.lesson.facts import UNAVAILABLE
from app.modes.base import Panel
from app.settings import DEFAULTS, TUBE_RULES
from corpus.errors import InputError
from scenes.tubes import chosen_characters
from app.palette import u32
from models.tubes import TREE_RULES, chi2_pvalue

SPEEDS = (1.0, 10.0, 100.0, None)       # None: every round at once
# What PageDown steps through: the exact rule, the exact rule without the bonus token (still exact, slower),
# then each wrong rule.
# PageDown's order: the exact rule, then each way to break it (the demonstration a class came for), and last the
# exact rule without the bonus token (exact too: a variation, not a break).
STOPS = (("exact", False),) + tuple((r, False) for r in TUBE_RULES if r != "exact") + (("exact", True),)


class TubesPanel(Panel):
    view = "tubes"
    free_play = False          # the experiment runs to its last round and stays there
    actions = ("tubes_slower", "tubes_faster")

    def __init__(self, ctl, driver):
        super().__init__(ctl, driver)
        self.plots = ui.PlotTextures(ctl)
        self.speed = 0             # index into SPEEDS

    # ---- the experiment's clock -----------------------------------------------------------------
    def restage(self) -> None:
        self.driver.loop = False
        self.driver.play(0.0)
        self.apply_speed()

    def act(self, action: str) -> None:
        self.set_speed(self.speed + (1 if action == "tubes_faster" else -1))

    def set_speed(self, k: int) -> None:
        self.speed = max(0, min(len(SPEEDS) - 1, int(k)))
        self.apply_speed()

    def apply_speed(self) -> None:
        tl = self.driver.timeline
        if tl is None:
            return
        speed = SPEEDS[self.speed]
        if speed is None:
            self.driver.hold(tl.duration)       # every round fallen
            tl.speed = 1.0
        else:
            tl.speed = speed
            if tl.paused and tl.t < tl.duration:
                self.driver.play(tl.t)

    def speed_name(self) -> str:
        speed = SPEEDS[self.speed]
        return "instant" if speed is None else f"x{speed:g}"

    def round_shown(self, res) -> int:
        """The round the table shows now (0-based); without a table, the last."""
        tl = self.driver.timeline
        if tl is None or not tl.tube_rounds:
            return res.rounds - 1
        return int(min(tl.state_at().tube_round, res.rounds - 1))

    def rules(self) -> tuple[str, ...]:
        """The rules the right tube can run with the lab's drafter: a tree (several candidates at a position) has
        the exact rule and typical acceptance only (models.tubes.TREE_RULES)."""
        s = self.ctl.settings
        try:
            several = self.ctl.session.drafter().first_width(s.gamma) > 1
        except InputError:
            several = False                   # a drafter this pair cannot run: the lab says why
        return tuple(r for r in TUBE_RULES if not several or r in TREE_RULES)

    def on_key(self, action: str) -> None:
        """Next/previous cycle through the rules: exact first, then each way to break it, then exact without the bonus."""
        s = self.ctl.settings
        stops = tuple(st for st in STOPS if st[0] in self.rules())
        here = (s.tube_rule, s.skip_bonus and s.tube_rule == "exact")
        i = stops.index(here) if here in stops else 0
        rule, skip = stops[(i + (1 if action == "next" else -1)) % len(stops)]
        self.ctl.update(tube_rule=rule, skip_bonus=skip)

    def draw_speed(self, scr, res) -> None:
        """The speed buttons and the round shown."""
        t, c = self.ctl.t, self.ctl.colors
        imgui.text(t("tubes.speed"))
        for k, speed in enumerate(SPEEDS):
            imgui.same_line()
            label = t("tubes.instant") if speed is None else f"×{speed:g}"
            active = k == self.speed
            if active:
                imgui.push_style_color(imgui.Col_.button, imgui.ImVec4(*c["accent"]))
                imgui.push_style_color(imgui.Col_.text, imgui.ImVec4(0, 0, 0, 1))
            if imgui.button(f"{label}##speed{k}"):
                self.set_speed(k)
            if active:
                imgui.pop_style_color(2)
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*c["muted"]), t("tubes.round", k=self.round_shown(res) + 1, n=res.rounds))

    @staticmethod
    def mask_future(dl, x, y, info, draws, res, bg, label: str = "") -> None:
        """Cover the curves past the round shown (the plot is drawn once for all rounds) and mark now: a red line
        named by `label` at its foot, or its top where the legend is (a bare red line was read as a limit)."""
        last = int(res.rounds) * int(res.draws)
        if draws >= last:
            return
        xn = info["to_px"](max(draws, int(res.draws)))
        col = tuple(int(bg[i:i + 2], 16) / 255 for i in (1, 3, 5)) + (1.0,)
        covered = (xn + 1, info["y0"] + 1, info["x1"] - 1, info["y1"] - 1)
        for x0, y0, x1, y1 in ui.rect_minus(covered, info.get("legend")):      # the legend stays readable
            dl.add_rect_filled((x + x0, y + y0), (x + x1, y + y1), u32(col))
        red = u32((0.86, 0.26, 0.22, 1.0))
        dl.add_line((x + xn, y + info["y0"]), (x + xn, y + info["y1"]), red, 2.0)
        if label:
            size = imgui.get_font_size()
            w = imgui.calc_text_size(label).x
            lx = x + xn + 0.3 * size
            # at the line's foot, or at its top where the legend sits at the foot (it covered the label)
            for ly in (info["y1"] - 1.4 * size, info["y0"] + 0.3 * size):
                box = (xn + 0.3 * size, ly, xn + 0.3 * size + w, ly + size)
                leg = info.get("legend")
                if leg is None or box[2] < leg[0] or box[0] > leg[2] or box[3] < leg[1] or box[1] > leg[3]:
                    break
            dl.add_text((lx, y + ly), red, label)

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

    def counts_shown(self, res):
        """(round shown, cumulative left counts, cumulative right counts) up to and including that round."""
        rnd = self.round_shown(res)
        return rnd, np.asarray(res.left_cumulative[rnd], float), np.asarray(res.right_cumulative[rnd], float)

    def rows(self, res) -> list[tuple[str, str, str, str, bool]]:
        """The table's rows, the rack's tubes left to right (its characters, then everything else) at the round
        the table shows: (token, p, left tube, right tube, right tube more than 3 standard errors from p)."""
        pair = self.ctl.session.pair()
        p = np.asarray(res.target_p, float)
        _, cum_l, cum_r = self.counts_shown(res)
        ids = chosen_characters(res)
        raw = [(pair.display(j), p[j], cum_l[j], cum_r[j]) for j in ids]
        raw.append((self.ctl.t("tubes.other"), 1.0 - p[ids].sum(), cum_l.sum() - cum_l[ids].sum(),
                    cum_r.sum() - cum_r[ids].sum()))
        n_l, n_r = max(cum_l.sum(), 1), max(cum_r.sum(), 1)
        out = []
        for label, pj, lj, rj in raw:
            bad = abs(rj / n_r - pj) > 3 * np.sqrt(max(pj * (1 - pj), 1e-9) / n_r)
            out.append((label, f"{pj:.3f}", f"{lj / n_l:.3f}", f"{rj / n_r:.3f}", bool(bad)))
        return out

    def chi2_shown(self, res) -> tuple[float, float]:
        p = np.asarray(res.target_p, float)
        _, cum_l, cum_r = self.counts_shown(res)
        return chi2_pvalue(cum_l, p), chi2_pvalue(cum_r, p)

    def facts_shown(self) -> dict[str, str]:
        """The table's p and tube frequencies per token and the chi-square p-values (at the round shown), and
        the skip-bonus note's α and tokens per pass when it is shown."""
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
            left, right = self.chi2_shown(res)
            out.update(chi2_p_left=f"{left:.3g}", chi2_p_right=f"{right:.3g}")
        return out

    def draw(self, scr) -> None:
        ctl, t, s = self.ctl, self.ctl.t, self.ctl.settings
        c = ctl.colors
        ui.begin_panel("##tubes", ui.panel_rect(scr))
        ui.heading(scr, t("tubes.title"))
        ui.wrapped(t("tubes.explain"))
        if s.drafter != DEFAULTS.drafter:
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
        except UNAVAILABLE as exc:     # a tube model that cannot be computed is a message in the panel
            ui.wrapped(f"{type(exc).__name__}: {exc}")
            imgui.end()
            return
        if res is None:
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("tubes.computing"))
            imgui.end()
            return
        if res.rule == "typical" and res.typical_threshold is not None:
            ui.wrapped(t("tubes.typical_note", threshold=f"{res.typical_threshold:.4f}"), c["muted"])
        self.draw_speed(scr, res)
        rnd = self.round_shown(res)
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
        left, right = self.chi2_shown(res)
        imgui.text(t("tubes.chi2", left=f"{left:.3g}", right=f"{right:.3g}"))
        imgui.end()
        # The distance to p against the draws so far gets the wide box under the table.
        draws = (rnd + 1) * int(res.draws)
        bg = ctl.colors["mpl_bg"]
        ui.begin_panel("##tubesplot", ui.narration_rect(scr), bg_alpha=0.9)
        avail = imgui.get_content_region_avail()
        now = t("plot.now_draws", draws=f"{draws:,}")
        self.plots.image(scr, "tubes", avail.x, height=avail.y,
                         overlay=lambda dl, x, y, w, h, info: self.mask_future(dl, x, y, info, draws, res, bg, now))
        imgui.end()

    def stage_rect(self, scr):
        x, y, w, h = ui.narration_rect(scr)
        top = ui.bar_h(scr)
        return 0.0, top, w, y - top
