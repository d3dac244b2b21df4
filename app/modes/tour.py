"""Tour mode (导览): narration per chapter, text -> key -> action, predict-then-reveal checkpoints."""
from __future__ import annotations

from imgui_bundle import imgui

from app import ui
from app.facts import fill
from app.modes.base import Panel
from app.settings import LAB_FIELDS, AppSettings
from app.tour import CHAPTERS, narration


def ch_view_is_tubes(action: dict, chapter) -> bool:
    return action.get("view", chapter.view) == "tubes"


class TourPanel(Panel):
    def __init__(self, app):
        super().__init__(app)
        self.plots = ui.PlotTextures(app)
        self.plays = 0

    @property
    def state(self):
        return self.app.tour

    free_play = False

    def enter(self) -> None:
        self.apply_chapter()

    def restage(self) -> None:
        """Text pages show the table still; an action plays it (text -> key -> action)."""
        self.app.loop_timeline = False
        tl = self.app.timeline
        if tl is not None:
            self.app.hold(tl.step_start(min(self.plays, max(0, len(tl.steps) - 1))) if tl.steps else 0.0)

    def apply_chapter(self) -> None:
        """A chapter sets its parameters (through the same settings the lab uses) and its camera view."""
        ch = self.state.current
        s = self.app.settings
        # Every chapter starts from the same tour defaults (so jumping to a chapter shows what reading up to it
        # would), keeps the lab's prompt and seed (the text on the table), then sets its own parameters. The
        # lab's values are restored when the tour is left (App.leave_tour) and never saved over.
        base = AppSettings()
        for k in LAB_FIELDS:
            if k not in ("prompt", "seed"):
                setattr(s, k, getattr(base, k))
        for k, v in ch.params.items():
            setattr(s, k, v)
        self.app.session.decoder = ch.decoder
        self.plays = 0
        self.app.set_view(ch.view)
        self.restage()
        self.app.save()

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
        elif res in ("page", "chapter"):
            # A page's own view (if any) applies as soon as its text shows.
            view = st.page_data().get("view")
            if view:
                self.app.set_view(view)

    def act(self, action: dict) -> None:
        """The page's action: play a step on the table, change the view, set lanes... or reveal a checkpoint."""
        app = self.app
        do = action.get("do")
        if "view" in action:
            app.set_view(action["view"])
        if "set" in action:
            for k, v in action["set"].items():
                setattr(app.settings, k, v)
        tl = app.timeline
        if do == "play" and tl is not None and tl.steps:
            if ch_view_is_tubes(action, self.state.current):
                app.play(0.0)                 # the tubes fill round after round
                return
            k = int(action.get("step", self.plays)) % len(tl.steps)
            self.plays = k + 1
            app.play(tl.step_start(k), tl.step_end(k))
        elif do == "checkpoint" and action.get("kind") == "count" and tl is not None and tl.steps:
            app.play(tl.step_start(0), tl.step_end(0))     # the reveal is the pass itself
        elif do == "checkpoint" and tl is not None and tl.steps:
            from app.facts import checkpoint
            cp = checkpoint(app)
            if cp:
                tr, i = cp
                a, b = tl.steps[tr.step_index].tests[i]
                app.play(a, b)           # the meter fills and the red line r appears: the reveal

    def get_facts(self):
        return self.app.live_facts()

    @property
    def panel_frac(self) -> float:
        return 0.40 if self.state.current.plot else 0.30

    def stage_rect(self):
        x, y, w, h = ui.narration_rect(self.app)
        top = ui.bar_h(self.app)
        return 0.0, top, w, y - top

    def draw(self) -> None:
        app, t, st = self.app, self.app.t, self.state
        lang = app.settings.language
        ch = st.current
        data = narration(ch.slug)
        f = self.get_facts()
        # --- narration, lower left, large ---
        ui.begin_panel("##narration", ui.narration_rect(app), bg_alpha=0.9)
        ui.heading(app, f"{st.chapter + 1}. {data['title'][lang]}", 1.35)
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*app.colors["muted"]),
                           f"  {st.chapter + 1}/{len(CHAPTERS)} · {st.page + 1}/{len(st.pages())}")
        imgui.separator()
        page = st.page_data()
        imgui.push_font(None, app.font_size * 1.2)
        ui.wrapped(fill(page[lang], f))
        action = page.get("action") or {}
        # A reveal's words wait until the table has finished showing it (the animation is the answer).
        shown = st.acted and (app.play_until is None or app.stage is None)
        if action.get("do") == "checkpoint" and action.get("kind") == "count":
            self.draw_count_checkpoint(f, revealed=shown)
        elif action.get("do") == "checkpoint":
            self.draw_checkpoint(f, revealed=shown)
        elif st.acted and action.get(lang):
            ui.wrapped(fill(action[lang], f), app.colors["accent"])
        imgui.pop_font()
        cue = t("tour.cue_action") if (action and not st.acted) else t("tour.cue_next")
        imgui.set_cursor_pos_y(imgui.get_window_height() - app.font_size * 2.2)
        if imgui.button(" ◀ "):          # the same beats as PageUp / PageDown, for a mouse
            self.on_key("prev")
        imgui.same_line()
        if imgui.button(" ▶ "):
            self.on_key("next")
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*app.colors["muted"]), cue)
        imgui.end()
        # --- right panel: live numbers and the chapter's plot ---
        ui.begin_panel("##tourpanel", ui.panel_rect(app))
        ui.heading(app, t("tour.live_numbers"))
        ui.facts_table(app, [(t("fact." + k), "?" if k in self.unrevealed(shown) else f[k]) for k in ch.facts])
        if ch.plot:
            imgui.spacing()
            self.plots.image(ch.plot, imgui.get_content_region_avail().x)
        imgui.spacing()
        sep = "、" if app.settings.language == "zh" else ", "
        ui.wrapped(t("tour.focus") + " " + sep.join(t("part." + p) for p in ch.focus), app.colors["muted"])
        imgui.spacing()
        imgui.set_next_item_width(imgui.get_content_region_avail().x)
        if imgui.begin_combo("##chapter", t("tour.jump")):
            for i, c in enumerate(CHAPTERS):
                if imgui.selectable(f"{i + 1}. {narration(c.slug)['title'][lang]}", i == st.chapter)[0]:
                    st.goto(i)
                    self.apply_chapter()
            imgui.end_combo()
        imgui.end()

    def unrevealed(self, shown: bool) -> set[str]:
        """Live numbers that would give a checkpoint's answer away: hidden until its reveal has been shown."""
        st = self.state
        for k, page in enumerate(st.pages()):
            action = page.get("action") or {}
            if action.get("do") == "checkpoint" and action.get("kind") == "count":
                if st.page < k or (st.page == k and not shown):
                    return {"step_written", "count_kept", "count_written"}
        return set()

    def draw_count_checkpoint(self, f, revealed: bool) -> None:
        """How many of the first pass's guesses will the target keep?"""
        app, t = self.app, self.app.t
        imgui.spacing()
        ui.wrapped(t("check.count_question", guesses=f["count_guesses"], gamma=f["gamma"]), app.colors["target"])
        if revealed:
            ui.wrapped(t("check.count_reveal", kept=f["count_kept"], written=f["count_written"]),
                       app.colors["accent"])

    def draw_checkpoint(self, f, revealed: bool) -> None:
        app, t = self.app, self.app.t
        imgui.spacing()
        ui.wrapped(t("check.question", guess=f["check_guess"], p=f["check_p"], q=f["check_q"],
                     ratio=f["check_ratio"]), app.colors["target"])
        if revealed:
            col = app.colors["ok"] if f["check_verdict"] == t("verdict.accepted") else app.colors["reject"]
            ui.wrapped(t("check.reveal", r=f["check_r"], ratio=f["check_ratio"], verdict=f["check_verdict"]), col)
