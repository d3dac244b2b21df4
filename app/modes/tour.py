"""Tour mode (导览): narration per chapter, text -> key -> action, predict-then-reveal checkpoints."""
from __future__ import annotations

import string

from imgui_bundle import imgui

from app import derived, pairs, ui
from app.lesson.facts import checkpoint, fill
from app.modes import tour_measured, tour_residual
from app.modes.base import Panel
from app.settings import DEFAULTS, FIELDS, LAB_FIELDS
from app.lesson.tour import CHAPTERS, Action, narration
from corpus.errors import InputError
from app.figures import tube_tv_curves
from models.drafters import choice
from scenes.mill import busy_words
from scenes.timeline import TICK


class _Over(dict):
    """Some facts replaced, every other one read from the facts underneath (their lazy numbers included)."""

    def __init__(self, under):
        super().__init__()
        self.under = under

    def __missing__(self, key):
        return self.under[key]


# Beside the neural pair's pages: its long-run α and tokens per pass (its measured costs follow in a table).
NEURAL_FACTS = ("neural_pair_alpha", "neural_pair_tpp")


class TourPanel(Panel):
    free_play = False

    def __init__(self, ctl, driver):
        super().__init__(ctl, driver)
        self.plots = ui.PlotTextures(ctl)
        self.plays = 0
        self.partial: tuple[int, str] | None = None     # a pass played only up to a phase (Action.until)
        self._fit: dict = {}          # (chapter, page, acted, language, size) -> the box's height it needs
        self._last_key = None

    @property
    def state(self):
        return self.ctl.tour

    def enter(self) -> None:
        self.apply_chapter()

    # ---- where the table stands ----------------------------------------------------------------
    def hold_moment(self) -> float:
        """Where the table holds on a text page: the end of the last pass played (its result on the table: the
        inked tokens and marks, the meters' verdicts, the mill's figure), before any the chapter's `hold`; on a
        checkpoint page the moment just before its answer."""
        tl = self.driver.timeline
        if tl is None or not tl.steps:
            return 0.0
        st = self.state
        action = st.action()
        if action is not None and action.do == "checkpoint" and not st.acted:
            return self.checkpoint_span(action)[0]
        n = len(tl.steps)
        if st.page_data().panel == "residual":
            case = self.residual_case()
            if case is not None:            # the rejected pass written: struck guess, replacement, verdicts
                return tl.step_moment(case[0], "write")
        if self.partial is not None and self.partial[0] < n:     # a pass stopped after its draft or its verify
            return tl.step_moment(*self.partial)
        if st.page_data().hold == "end" and "tubes" not in st.beat()[0]:
            # a page about the whole run: its end ("finished"), after plays too; a tick past it, as the clock keeps
            # to ticks (at the end itself it could land in the last scroll)
            return min(tl.duration, tl.steps_end + TICK)
        if self.plays > 0:
            return tl.step_moment(min(self.plays, n) - 1, "write")
        # A page that set its own settings (a new drafter, a new prompt) shows its run from the start, unless it
        # says where its pass stands (a tree's page: the tree pencilled).
        hold = st.page_data().hold or ("start" if st.page_params()[0] else st.current.hold)
        if hold == "end" and "tubes" in st.beat()[0]:
            return tl.duration                  # the tubes after every round: what the page's numbers count
        if hold == "drafted":
            return tl.step_moment(0, "draft")
        if hold == "end":
            return tl.step_moment(n - 1, "write")
        return tl.step_start(0)

    def restage(self) -> None:
        """Text pages show the table still; an action plays it (text -> key -> action)."""
        self.driver.loop = False
        if self.driver.timeline is not None:
            self.driver.hold(self.hold_moment())

    def frame(self) -> None:
        """The camera frames the beat's parts (and holds the frame while its action plays)."""
        parts, view = self.state.beat()
        self.driver.set_focus(parts, view)
        if self.driver.stage is not None:
            self.driver.stage.hud_lanes = self.state.current.lanes_named

    def apply_chapter(self) -> None:
        """A chapter sets its parameters (through the controller's update(), as the lab does), finds the seed
        whose real run shows the events its text describes, and frames its first beat."""
        ch = self.state.current
        ctl = self.ctl
        # Every chapter starts from the same tour defaults (so jumping to a chapter shows what reading up to it
        # would), keeps the lab's prompt and seed (the text on the table), then sets its own parameters. The
        # lab's values are restored when the tour is left (Controller.leave_tour) and never saved over.
        values = {k: getattr(DEFAULTS, k) for k in LAB_FIELDS if k not in ("prompt", "seed")}
        # One sequence with a context of one token unless the chapter is about context (2, 9): the mill then
        # reads the same share for the same claim in every chapter (checking γ + 1 tokens: 1.7 %, not 1.6 % in
        # one chapter and 1.7 % in another because a KV cache was read in one of them).
        values["context"] = 1
        values.update(ch.params)
        values["prompt"], values["seed"] = ctl.lab()["prompt"], ctl.lab()["seed"]
        entry = self.state.entry()
        if entry is not None:                 # a prepared lesson's settings for this chapter (app.lesson.prepared)
            values.update(entry.settings)
        self.chapter_values = values
        self.plays = 0
        self.partial = None
        self.apply_page()
        self.frame()
        self.restage()
        ctl.save()

    def prompt_for(self, prompt: str) -> str:
        """The tour keeps the lab's prompt where the page's pair can write after it; a prompt only your checkpoints
        know (their tokenizer's text) gives way to the tour's own."""
        try:
            self.ctl.session.pair().encode(prompt)
            return prompt
        except InputError:
            return DEFAULTS.prompt

    def apply_page(self) -> None:
        """The settings in force on this page: the chapter's, then what its pages up to this one set (a page may
        change who drafts, the prompt, the tube rule...), on the page's pair (the neural passage runs the shipped
        networks), with the seed whose run shows the events it describes. When that replaces the run, the new
        run's passes play from the first."""
        ctl = self.ctl
        params, events = self.state.page_params()
        values = dict(getattr(self, "chapter_values", {}), **params)
        before = ctl.session.version
        # The page's pair: the neural pages keep theirs; the others run the lesson's pair for the chapter, if any.
        page_pair = self.state.page_data().pair
        values["pair"] = page_pair if pairs.is_neural(page_pair) else values.get("pair", pairs.COUNTED)
        ctl.update(pair=values["pair"])                  # first: the prompt and the seed are the pair's
        if pairs.is_neural(page_pair) and not ctl.scripted:
            # the neural pages quote the pair measured on this computer: measured in the background the first
            # time (a few seconds; the page says so and quotes the shipped file meanwhile)
            worker = ctl.bench_worker
            result, error = worker.result()
            if result is None and error is None and not worker.running():
                worker.start()
        values["prompt"] = self.prompt_for(values.get("prompt", ctl.settings.prompt))
        if events:
            values["seed"] = self.demo_seed(events, values)
        ctl.update(**values)
        if ctl.session.ensure() is not None and ctl.session.version != before:
            self.plays = 0
            self.partial = None

    def demo_seed(self, events, values: dict) -> int:
        """The first seed from the lab's whose run, at the settings `values` (the drafter among them), shows the
        events (models.demo); the lab's seed with a message if none within the search does (the narration's
        {story_N} then says what did happen)."""
        ctl = self.ctl
        s = {k: values.get(k, getattr(ctl.settings, k)) for k in FIELDS}     # the drafter's options among them
        try:
            pair = ctl.session.pair()
            return derived.demo_seed(pair, s["prompt"], s["gamma"], s["temperature"], s["top_k"], s["top_p"],
                                     tuple(events), s["seed"], choice(s), ctl.session.heads)
        except InputError as exc:
            ctl.notify(str(exc))
            return s["seed"]

    def on_key(self, action: str) -> None:
        st = self.state
        before = st.chapter
        res = st.next() if action == "next" else st.prev()
        if st.chapter != before:
            self.apply_chapter()
            return
        if res == "page":
            self.apply_page()
        self.frame()
        if res == "act":
            self.act(st.action())
        elif res == "page" and (action == "prev" or (st.action() is not None and st.action().do == "checkpoint")
                                or st.page_data().panel == "residual" or st.page_data().hold is not None):
            self.restage()          # (the residual's page: its pass written, the replacement on the tape; a page
            #                          that says where the table stands: the tubes after every round)

    # ---- actions -------------------------------------------------------------------------------
    def pass_to_play(self, action: Action) -> int:
        tl = self.driver.timeline
        k = self.plays if action.pass_index is None else action.pass_index
        return min(k, len(tl.steps) - 1)

    def play_pass(self, k: int, until: str = "write") -> None:
        """Play pass k to the end of its writing (held there: its result stays on the table), or only to the end
        of its draft or its verify (`until`: a page shows the guesses pencilled, or the lanes lit, before the next
        page goes on). From where the table stands if that is between the previous pass's result and the moment
        it stops at (so the tape scrolls on and what was played is not played twice), else from the pass's start."""
        tl = self.driver.timeline
        lo = tl.step_moment(k - 1, "write") if k > 0 else 0.0
        end = tl.step_moment(k, until)
        start = tl.t if lo <= tl.t <= end - 1e-9 else tl.step_start(k)
        self.plays = k + 1 if until == "write" else k
        self.partial = None if until == "write" else (k, until)
        self.driver.play(start, end, after_flight=True)

    def checkpoint_span(self, action: Action) -> tuple[float, float]:
        """(setup, answer) of a checkpoint on the table: a count checkpoint's pass from its pencilled guesses to
        its written result; a test checkpoint's meter from the start of its test to its verdict."""
        tl = self.driver.timeline
        k = action.pass_index or 0
        if action.kind == "count":
            k = min(k, len(tl.steps) - 1)
            return tl.step_moment(k, "draft"), tl.step_moment(k, "write")
        cp = checkpoint(self.ctl)
        if not cp:
            return tl.step_start(0), tl.step_start(0)
        tr, i = cp
        a, b = tl.steps[tr.step_index].tests[i]
        # to just past the test's end, where its verdict (○ or ✕) is drawn: held on the tick grid short of it,
        # the page said 被拒 over a meter with no mark (the next meter's column has not visibly risen yet)
        return a, b + 2 * TICK

    def act(self, action: Action) -> None:
        """The page's action: play the next pass on the table (the tubes' rounds when the beat frames the tubes alone),
        or reveal a checkpoint by playing the moment that answers it."""
        drv = self.driver
        tl = drv.timeline
        if tl is None or not tl.steps:
            return
        parts, _ = self.state.beat()
        if action.do == "play":
            if set(parts) == {"tubes"}:
                # the tubes fill round after round (a beat of the whole table, tubes and all, plays its pass)
                drv.play(0.0, after_flight=True)
                return
            self.play_pass(self.pass_to_play(action), action.until)
        elif action.kind == "count":
            self.play_pass(min(action.pass_index or 0, len(tl.steps) - 1))     # the reveal is the pass itself
        else:
            a, b = self.checkpoint_span(action)
            if b > a:
                drv.play(a, b, after_flight=True)     # the meter fills and the red line r appears: the reveal

    @property
    def panel_frac(self) -> float:
        return 0.40 if (self.state.page_data().plot or self.state.current.plot) else 0.30

    def draw_controls(self, scr) -> None:
        """Sliders for the quantity the page is about (Page.controls): dragged, they go through the controller as
        the lab's do, and the plot and the numbers above answer. A page turn puts the chapter's values back."""
        t, s = self.ctl.t, self.ctl.settings
        imgui.spacing()
        new = {}
        imgui.push_item_width(imgui.get_content_region_avail().x * 0.6)
        for name in self.state.page_data().controls:
            if name == "c":
                _, v = imgui.slider_float(t("lab.c"), s.c, 0.0, 1.0, "%.2f")
                new["c"] = round(v, 4)
            elif name == "gamma":
                _, new["gamma"] = imgui.slider_int("γ", s.gamma, *FIELDS["gamma"].int_range())
            elif name == "lanes":
                _, new["lanes"] = imgui.slider_int(t("lab.lanes"), s.lanes, 1, 512,
                                                   flags=imgui.SliderFlags_.logarithmic)
            elif name == "context":
                _, new["context"] = imgui.slider_int(t("lab.context"), s.context, 1, 131072,
                                                     flags=imgui.SliderFlags_.logarithmic)
        imgui.pop_item_width()
        changed = {k: v for k, v in new.items() if v != getattr(s, k)}
        if changed:
            self.ctl.adjust(**changed)

    def _fit_key(self, scr) -> tuple:
        st = self.state
        return (st.chapter, st.page, self.ctl.settings.language, scr.w, scr.h, scr.font_size)

    def drafters_met(self) -> set[str]:
        """The drafters this chapter's pages have introduced up to the page shown (the chain is met first)."""
        return {q.params.get("drafter", "chain") for q in self.state.pages()[:self.state.page + 1]} | {"chain"}

    @staticmethod
    def keep_room(coming: str, drawn: str) -> None:
        """Room under a page's words for what its action will add (the answer replacing a question, the action's
        words after the key): the box, and the table above it, keep their size when it comes, so the camera's
        frame holds through the beat and no scrollbar flashes for a frame."""
        if not coming:
            return
        width = max(1.0, imgui.get_content_region_avail().x)

        def tall(text: str) -> float:
            if not text:
                return 0.0
            lines = ui.wrap_lines(text, width, lambda x: imgui.calc_text_size(x).x)
            return imgui.calc_text_size("\n".join(lines)).y + (0.0 if drawn else imgui.get_style().item_spacing.y)

        extra = tall(coming) - tall(drawn)
        if extra > 0:
            imgui.dummy((1.0, extra))

    def _keep_fit(self, key, need: float) -> None:
        """The box's height for this beat: it may grow, never shrink while the beat lasts (a question's answer
        replacing it draws into the room kept for it: a box that shrank and grew back flashed a scrollbar)."""
        self._fit[key] = max(need, self._fit.get(key, 0.0))

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
        n_ch, chapters, n_page, pages = st.position()       # as this lesson counts them
        f = self.with_tube_round(f)
        ui.heading(scr, f"{n_ch}. {data.title[lang]}", 1.35)
        where = "  " + t("tour.where", chapter=n_ch, chapters=chapters, page=n_page, pages=pages)
        if imgui.get_item_rect_size().x + imgui.calc_text_size(where).x < imgui.get_content_region_avail().x:
            imgui.same_line()        # beside the title where it fits, else under it
        imgui.text_colored(imgui.ImVec4(*colors["muted"]), where)
        imgui.separator()
        page = st.page_data()
        ui.push_font(scr, 1.2)
        ui.wrapped(fill(page[lang], f))
        action = page.action
        # A reveal's words wait until the table has finished showing it (the animation is the answer).
        shown = self.revealed()
        self.keep_back_on_table(shown)
        if action is not None and action.do == "checkpoint" and action.kind == "count":
            self.draw_count_checkpoint(f, revealed=shown)
        elif action is not None and action.do == "checkpoint":
            self.draw_checkpoint(f, revealed=shown)
        elif page.ask and not shown:                 # predict first: the question, until the action has shown it
            ask = fill(page.ask[lang], f)
            ui.wrapped(ask, colors["target"])
            self.keep_room(fill(action.text[lang], f) if action.text.get(lang) else "", ask)
        if st.acted and action is not None and action.do == "play" and action.text.get(lang) and \
                (shown or not page.ask):
            ui.wrapped(fill(action.text[lang], f), colors["accent"])
        elif not st.acted and not page.ask and action is not None and action.do == "play" and action.text.get(lang):
            self.keep_room(fill(action.text[lang], f), "")
        ui.pop_font()
        last = st.is_last_beat()
        cue = t("tour.cue_end") if last else t("tour.cue_action") if (action and not st.acted) else t("tour.cue_next")
        # The box grows (the table above it shrinks) until the page's words clear the buttons: nothing is
        # drawn over them or cut off at the bottom.
        buttons = scr.font_size * 2.2
        style = imgui.get_style()
        need = (imgui.get_cursor_pos_y() + buttons + style.item_spacing.y + style.window_padding.y
                + scr.font_size * 0.5) / scr.h       # a half-line spare: a scrollbar would narrow the text
        self._keep_fit(self._fit_key(scr), need)
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
        ui.facts_table(scr, [(t("fact." + k), "?" if k in self.unrevealed(shown) else f[k]) for k in self.panel_facts()])
        if page.controls and "plot" not in self.unrevealed(shown):     # a slider would give the answer away
            self.draw_controls(scr)
        plot = page.plot or ch.plot
        tubes = "tubes" in st.beat()[0]
        # (a network page's own plot, what its timed pass cost, stands in for the measured tables)
        neural = pairs.is_neural(page.pair) and page.plot != "pass_time"
        if page.panel == "residual":
            tour_residual.draw_residual(self.ctl, scr)
        elif neural and page.params.get("drafter", "chain") == "chain":
            # The neural pair's measured costs beside the roofline's, from its measurement file (the plot's
            # formula at the lab's c would not be this pair's); a self-drafter's page shows the chapter's plot.
            # the measured table answers the chapter's question: kept until that page's reveal
            asked_later = any("neural_speedup" in p.keep_back for p in self.state.pages()[self.state.page + 1:])
            kept = "neural_speedup" in self.unrevealed(shown)
            tour_measured.draw_neural_measurement(self.ctl, scr, kept="tour.table_after_play" if kept else
                                                  "tour.table_after_next" if asked_later else None)
        elif neural:
            # A self-drafter on the network pair: every drafter timed side by side on one computer (the file's),
            # not the plot's speed-ups on paper for a GPU beside a CPU's measurement.
            if "plot" in self.unrevealed(shown):        # the page's question: its rows would answer it
                imgui.spacing()
                ui.wrapped(t("tour.table_after_play"), colors["muted"])
            else:
                tour_measured.draw_drafters_measured(self.ctl, scr, self.drafters_met())
        elif plot and "plot" in self.unrevealed(shown):
            imgui.spacing()
            # Kept back for this page's question, or for the next page's (the question is not here yet).
            ui.wrapped(t("tour.plot_after_play" if page.ask else "tour.plot_after_next"), colors["muted"])
        elif plot:
            imgui.spacing()
            overlay = None
            rnd = self.tube_round_shown() if plot == "tubes" else None
            if rnd is not None:                 # the curves up to the round the tubes show, and a line at it
                # lazy: app.modes/__init__ imports this module (a circle at load)
                from app.modes.tubes import TubesPanel
                res, bg = self.ctl.tubes(), self.ctl.colors["mpl_bg"]
                draws = (rnd + 1) * int(res.draws)
                now = t("plot.now_draws", draws=f"{draws:,}")
                overlay = lambda dl, x, y, w, h, info: TubesPanel.mask_future(dl, x, y, info, draws, res, bg, now)  # noqa: E731
            # under the plot: the parts in focus, the tubes' key where they are in the beat, the chapter menu
            below = imgui.get_frame_height_with_spacing() * 2 + \
                imgui.get_text_line_height_with_spacing() * (4 if tubes else 2)
            # the drafters plot draws the drafters the pages have introduced
            self.plots.image(scr, plot, imgui.get_content_region_avail().x, overlay=overlay,
                             only=self.drafters_met() if plot == "drafters" else None, reserve=below)
        imgui.spacing()
        sep = "、" if lang == "zh" else ", "
        ui.wrapped(t("tour.focus") + " " + sep.join(t(self.part_word(p)) for p in st.beat()[0]), colors["muted"])
        if tubes:       # what the racks' rings are, beside the page that says "off the black ring"
            ui.wrapped(t("tour.tube_key"))
        imgui.spacing()
        imgui.set_next_item_width(imgui.get_content_region_avail().x)
        if imgui.begin_combo("##chapter", t("tour.jump")):
            for n, i in enumerate(st.order):        # the lesson's chapters, in its order
                if imgui.selectable(f"{n + 1}. {narration(CHAPTERS[i].slug).title[lang]}", i == st.chapter)[0]:
                    st.goto(i)
                    self.apply_chapter()
            imgui.end_combo()
        imgui.end()

    # ---- the residual of a real rejection (drawn by app.modes.tour_residual) -------------------
    def residual_case(self):
        """(pass, guess index, trace) of the rejection the page talks about; None when the run rejected nothing."""
        return tour_residual.residual_case(self.ctl)

    def residual_rows(self, n: int = 6) -> dict | None:
        """What the residual picture draws (tour_residual.residual_rows)."""
        return tour_residual.residual_rows(self.ctl, n)

    def tube_round_shown(self) -> int | None:
        """The tube round the table shows (0-based) on a beat that frames the tubes; None elsewhere or while the
        experiment is still running on its thread."""
        if "tubes" not in self.state.beat()[0]:
            return None
        res, tl = self.ctl.tubes(), self.driver.timeline
        if res is None or tl is None or not tl.tube_rounds:
            return None
        return int(min(tl.state_at().tube_round, res.rounds - 1))

    def with_tube_round(self, f):
        """The facts, with the tubes' distances to p at the round the table shows (the numbers on the racks' bases
        and in the panel are one round's, never the last round's beside the seventh's) and that round."""
        rnd = self.tube_round_shown()
        if rnd is None:
            return f
        res = self.ctl.tubes()
        tv_l, tv_r = tube_tv_curves(res)
        out = _Over(f)
        out.update(tv_left=f"{tv_l[rnd]:.4f}", tv_right=f"{tv_r[rnd]:.4f}", tube_round=f"{rnd + 1} / {res.rounds}",
                   tube_draws=f"{(rnd + 1) * int(res.draws):,}")
        return out

    def panel_facts(self) -> tuple[str, ...]:
        """The live numbers beside the narration: the chapter's, or the neural pair's on its pages."""
        page = self.state.page_data()
        if page.facts:
            return page.facts
        if pairs.is_neural(page.pair):      # a self-drafter's page: its table has the numbers (the pair's: the chain's)
            return NEURAL_FACTS if page.params.get("drafter", "chain") == "chain" else ()
        return self.state.current.facts

    # ---- what a class sees: spectable run --json `beat` and `facts` ------------------------------
    def beat(self, scr) -> dict:
        """The beat's parts, the share of each part's projected box the class sees (inside the table's frame,
        clear of the HUD and every panel) and the parts the UI covers; from the stage's projected boxes."""
        parts, _ = self.state.beat()
        stage = self.driver.stage
        if stage is None or stage.focus is None:
            return {"parts": list(parts), "in_view": None, "covered": []}
        x, y, w, h = self.stage_rect(scr)
        covers = [(a - x, b - y, c - x, d - y) for a, b, c, d in ui.ui_rects(scr)]
        return stage.beat_report(max(16, int(w)), max(16, int(h)), covers)

    def revealed(self) -> bool:
        """The page's action has run and the table has finished showing it (the animation is the answer)."""
        return self.state.acted and (self.driver.play_until is None or self.driver.stage is None)

    def facts_shown(self) -> dict[str, str]:
        """Every number the beat shows, by fact name, with the string on screen: the fields of the page's text
        (and of its action's words or checkpoint once shown), the panel's live numbers ('?' while a checkpoint
        keeps them back), and the table's own: the HUD's pass and lanes lit, the mill's busy share."""
        ctl, st = self.ctl, self.state
        lang, f = ctl.settings.language, ctl.facts()
        shown = self.revealed()
        names = []

        def fields(text):
            names.extend(n for _, n, _, _ in string.Formatter().parse(text) if n)

        page = st.page_data()
        fields(page[lang])
        action = page.action
        if action is not None and action.do == "checkpoint" and action.kind == "count":
            names += ["count_guesses", "gamma"] + (["count_reveal"] if shown else [])
        elif action is not None and action.do == "checkpoint":
            names += ["check_pass", "check_index", "check_guess", "check_p", "check_q", "check_ratio"]
            names += ["check_r", "check_verdict"] if shown else []
        elif page.ask and not shown:
            fields(page.ask[lang])
        if st.acted and action is not None and action.do == "play" and action.text.get(lang) and \
                (shown or not page.ask):
            fields(action.text[lang])
        hidden = self.unrevealed(shown)
        self.keep_back_on_table(shown)
        names += list(self.panel_facts())
        f = self.with_tube_round(f)
        out = {n: ("?" if n in hidden else f[n]) for n in dict.fromkeys(names)}
        stage = self.driver.stage
        if stage is not None and stage.timeline.steps:
            s = stage.state()
            if s.step >= 0 and stage.show_hud and stage.hud_passes() and stage.hud_lines is None:
                out["hud_pass"] = f"{s.step + 1}/{len(stage.traces)}"
                if s.lanes_true and stage.hud_lanes:
                    out["hud_lanes_lit"] = f"{s.lanes_true}"
            shows = stage.shows()
            if shows is None or "mill" in shows or stage.view == "cutaway":     # (the cutaway's title carries it)
                out["mill_busy"] = busy_words(s)[1].split()[-1]
        return out

    def part_word(self, part: str) -> str:
        """The catalog key naming a part in the panel: EAGLE's small drum is its draft network, not a model."""
        if part == "smalldrum" and self.ctl.settings.drafter == "eagle":
            return "part.smalldrum_eagle"
        return "part." + part

    def keep_back_on_table(self, shown: bool) -> None:
        """The table's own readouts (the mill's busy share, the tubes' TV) wait with the panel's ('?' there too)."""
        if self.driver.stage is not None:
            self.driver.stage.kept_back = frozenset(self.unrevealed(shown))

    def unrevealed(self, shown: bool) -> set[str]:
        """Live numbers that would give a checkpoint's answer away: hidden until its reveal has been shown; and a
        chapter's `after_play` (the tubes' distances, their plot) until its first play has been shown."""
        st = self.state
        page = st.page_data()
        # (a page that keeps numbers back without asking keeps them back throughout: the next page asks)
        if page.keep_back and not (st.acted and shown and page.ask):
            return set(page.keep_back)
        later = st.current.after_play
        if later:
            first = next((k for k, page in enumerate(st.pages()) if page.action is not None
                          and page.action.do == "play"), None)
            if first is not None and (st.page < first or (st.page == first and not shown)):
                return set(later)
        for k, page in enumerate(st.pages()):
            action = page.action
            if action is not None and action.do == "checkpoint" and action.kind == "count":
                if st.page < k or (st.page == k and not shown):
                    return {"step_written", "count_kept", "count_written", "count_reveal"}
        return set()

    def draw_count_checkpoint(self, f, revealed: bool) -> None:
        """How many of the first pass's guesses will the target keep?"""
        t, colors = self.ctl.t, self.ctl.colors
        imgui.spacing()
        ui.wrapped(t("check.count_question", guesses=f["count_guesses"], gamma=f["gamma"]), colors["target"])
        if revealed:
            ui.wrapped(f["count_reveal"], colors["accent"])

    def draw_checkpoint(self, f, revealed: bool) -> None:
        t, colors = self.ctl.t, self.ctl.colors
        imgui.spacing()
        ui.wrapped(t("check.question", pass_no=f["check_pass"], guess_no=f["check_index"], guess=f["check_guess"],
                     p=f["check_p"], q=f["check_q"], ratio=f["check_ratio"]), colors["target"])
        if revealed:
            col = colors["ok"] if f["check_verdict"] == t("verdict.accepted") else colors["reject"]
            ui.wrapped(t("check.reveal", r=f["check_r"], ratio=f["check_ratio"], verdict=f["check_verdict"]), col)
