"""Tour mode (导览): narration per chapter, text -> key -> action, predict-then-reveal checkpoints."""
from __future__ import annotations

from imgui_bundle import imgui

from app import ui
from app.facts import fill
from app.modes.base import Panel
from app.settings import DEFAULTS, LAB_FIELDS
from app.tour import CHAPTERS, Action, narration


class TourPanel(Panel):
    free_play = False

    def __init__(self, ctl, driver):
        super().__init__(ctl, driver)
        self.plots = ui.PlotTextures(ctl)
        self.plays = 0
        self._fit: dict = {}          # (chapter, page, acted, language, size) -> the box's height it needs
        self._last_key = None

    @property
    def state(self):
        return self.ctl.tour

    def enter(self) -> None:
        self.apply_chapter()

    def restage(self) -> None:
        """Text pages show the table still; an action plays it (text -> key -> action)."""
        self.driver.loop = False
        tl = self.driver.timeline
        if tl is not None:
            self.driver.hold(tl.step_start(min(self.plays, max(0, len(tl.steps) - 1))) if tl.steps else 0.0)

    def apply_chapter(self) -> None:
        """A chapter sets its parameters (through the controller's update(), as the lab does) and its view."""
        ch = self.state.current
        # Every chapter starts from the same tour defaults (so jumping to a chapter shows what reading up to it
        # would), keeps the lab's prompt and seed (the text on the table), then sets its own parameters. The
        # lab's values are restored when the tour is left (Controller.leave_tour) and never saved over.
        values = {k: getattr(DEFAULTS, k) for k in LAB_FIELDS if k not in ("prompt", "seed")}
        values.update(ch.params)
        self.ctl.update(**values)
        self.plays = 0
        self.ctl.set_view(ch.view)
        self.restage()
        self.ctl.save()

    def on_key(self, action: str) -> None:
        st = self.state
        before = st.chapter
        res = st.next() if action == "next" else st.prev()
        if st.chapter != before:
            self.apply_chapter()
        elif res == "page" and action == "prev":
            self.restage()
        if res == "act":
            self.act(st.action())

    def act(self, action: Action) -> None:
        """The page's action: fly the camera to its view, then play the next pass on the table (the tubes' rounds
        on the tube view), or reveal a checkpoint by playing the moment that answers it."""
        ctl, drv = self.ctl, self.driver
        if action.view:
            ctl.set_view(action.view)
        tl = drv.timeline
        if tl is None or not tl.steps:
            return
        if action.do == "play":
            if (action.view or self.state.current.view) == "tubes":
                drv.play(0.0)                 # the tubes fill round after round
                return
            k = self.plays % len(tl.steps)
            self.plays = k + 1
            drv.play(tl.step_start(k), tl.step_end(k))
        elif action.kind == "count":
            drv.play(tl.step_start(0), tl.step_end(0))     # the reveal is the pass itself
        else:
            from app.facts import checkpoint
            cp = checkpoint(ctl)
            if cp:
                tr, i = cp
                a, b = tl.steps[tr.step_index].tests[i]
                drv.play(a, b)           # the meter fills and the red line r appears: the reveal

    @property
    def panel_frac(self) -> float:
        return 0.40 if self.state.current.plot else 0.30

    def _fit_key(self, scr) -> tuple:
        st = self.state
        return (st.chapter, st.page, st.acted, self.ctl.settings.language, scr.w, scr.h, scr.font_size)

    @property
    def narration_frac(self) -> float:
        """30% of the window's height, more when the page's words need it (measured when last drawn)."""
        return min(0.5, max(0.30, self._fit.get(self._last_key, 0.0)))

    def stage_rect(self, scr):
        x, y, w, h = ui.narration_rect(scr)
        top = ui.bar_h(scr)
        return 0.0, top, w, y - top

    def draw(self, scr) -> None:
        ctl, t, st = self.ctl, self.ctl.t, self.state
        self._last_key = self._fit_key(scr)
        lang = ctl.settings.language
        colors = ctl.colors
        ch = st.current
        data = narration(ch.slug)
        f = ctl.facts()
        # --- narration, lower left, large ---
        ui.begin_panel("##narration", ui.narration_rect(scr), bg_alpha=0.9)
        ui.heading(scr, f"{st.chapter + 1}. {data.title[lang]}", 1.35)
        where = "  " + t("tour.where", chapter=st.chapter + 1, chapters=len(CHAPTERS), page=st.page + 1,
                         pages=len(st.pages()))
        if imgui.get_item_rect_size().x + imgui.calc_text_size(where).x < imgui.get_content_region_avail().x:
            imgui.same_line()        # beside the title where it fits, else under it
        imgui.text_colored(imgui.ImVec4(*colors["muted"]), where)
        imgui.separator()
        page = st.page_data()
        ui.push_font(scr, 1.2)
        ui.wrapped(fill(page[lang], f))
        action = page.action
        # A reveal's words wait until the table has finished showing it (the animation is the answer).
        shown = st.acted and (self.driver.play_until is None or self.driver.stage is None)
        if action is not None and action.do == "checkpoint" and action.kind == "count":
            self.draw_count_checkpoint(f, revealed=shown)
        elif action is not None and action.do == "checkpoint":
            self.draw_checkpoint(f, revealed=shown)
        elif st.acted and action is not None and action.text.get(lang):
            ui.wrapped(fill(action.text[lang], f), colors["accent"])
        ui.pop_font()
        last = st.chapter == len(CHAPTERS) - 1 and st.page == len(st.pages()) - 1 and (action is None or st.acted)
        cue = t("tour.cue_end") if last else t("tour.cue_action") if (action and not st.acted) else t("tour.cue_next")
        # The box grows (the table above it shrinks) until the page's words clear the buttons: nothing is
        # drawn over them or cut off at the bottom.
        buttons = scr.font_size * 2.2
        need = (imgui.get_cursor_pos_y() + buttons + imgui.get_style().item_spacing.y) / scr.h
        self._fit[self._fit_key(scr)] = need
        imgui.set_cursor_pos_y(max(imgui.get_cursor_pos_y(), imgui.get_window_height() - buttons))
        if imgui.button(" ◀ "):          # the same beats as PageUp / PageDown, for a mouse
            self.on_key("prev")
        imgui.same_line()
        if imgui.button(" ▶ "):
            self.on_key("next")
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*colors["muted"]), cue)
        imgui.end()
        # --- right panel: live numbers and the chapter's plot ---
        ui.begin_panel("##tourpanel", ui.panel_rect(scr))
        ui.heading(scr, t("tour.live_numbers"))
        ui.facts_table(scr, [(t("fact." + k), "?" if k in self.unrevealed(shown) else f[k]) for k in ch.facts])
        if ch.plot:
            imgui.spacing()
            # Room kept under the plot for the parts in focus and the chapter menu.
            self.plots.image(scr, ch.plot, imgui.get_content_region_avail().x,
                             reserve=imgui.get_frame_height_with_spacing() * 2 + imgui.get_text_line_height_with_spacing() * 2)
        imgui.spacing()
        sep = "、" if lang == "zh" else ", "
        ui.wrapped(t("tour.focus") + " " + sep.join(t("part." + p) for p in ch.focus), colors["muted"])
        imgui.spacing()
        imgui.set_next_item_width(imgui.get_content_region_avail().x)
        if imgui.begin_combo("##chapter", t("tour.jump")):
            for i, c in enumerate(CHAPTERS):
                if imgui.selectable(f"{i + 1}. {narration(c.slug).title[lang]}", i == st.chapter)[0]:
                    st.goto(i)
                    self.apply_chapter()
            imgui.end_combo()
        imgui.end()

    def unrevealed(self, shown: bool) -> set[str]:
        """Live numbers that would give a checkpoint's answer away: hidden until its reveal has been shown."""
        st = self.state
        for k, page in enumerate(st.pages()):
            action = page.action
            if action is not None and action.do == "checkpoint" and action.kind == "count":
                if st.page < k or (st.page == k and not shown):
                    return {"step_written", "count_kept", "count_written"}
        return set()

    def draw_count_checkpoint(self, f, revealed: bool) -> None:
        """How many of the first pass's guesses will the target keep?"""
        t, colors = self.ctl.t, self.ctl.colors
        imgui.spacing()
        ui.wrapped(t("check.count_question", guesses=f["count_guesses"], gamma=f["gamma"]), colors["target"])
        if revealed:
            ui.wrapped(t("check.count_reveal", kept=f["count_kept"], written=f["count_written"]), colors["accent"])

    def draw_checkpoint(self, f, revealed: bool) -> None:
        t, colors = self.ctl.t, self.ctl.colors
        imgui.spacing()
        ui.wrapped(t("check.question", guess=f["check_guess"], p=f["check_p"], q=f["check_q"],
                     ratio=f["check_ratio"]), colors["target"])
        if revealed:
            col = colors["ok"] if f["check_verdict"] == t("verdict.accepted") else colors["reject"]
            ui.wrapped(t("check.reveal", r=f["check_r"], ratio=f["check_ratio"], verdict=f["check_verdict"]), col)
