"""Quiz mode (测验): questions on each chapter, answered with A-D (1-4 on the number pad) or the mouse.

Student mode: the table on the left shows the question's chapter view, the question on the right; an answer
is told right or wrong at once, with why; the score adds up, and after the last question a summary names
the chapters to revisit and the answers can be saved as a CSV file. Class mode: the question fills the
screen, the class votes, the teacher may mark the class's choice with A-D, and R (or the clicker's
PageDown) reveals the answer and why. "Show me" (S) jumps to the chapter, step-through stop or tube view
that proves the answer; Backspace (or the button on the status line) comes back to the same question.

The questions (app/lesson/quiz.py) are built once from the run and the lab's values when the quiz starts, so
their numbers do not move under a student; restart builds them again from the table as it is then.
"""
from __future__ import annotations

from imgui_bundle import imgui

from app import ui
from app.lesson import quiz
from app.modes.base import Panel
from app.palette import u32
from app.lesson.tour import CHAPTERS, narration
from corpus.errors import InputError

ANSWER_KEYS = {"answer_a": 0, "answer_b": 1, "answer_c": 2, "answer_d": 3}


class QuizPanel(Panel):
    view = "table"
    actions = (*ANSWER_KEYS, "reveal", "show_me", "class_mode", "export_answers")

    def __init__(self, ctl, driver):
        super().__init__(ctl, driver)
        self.snap: quiz.Snapshot | None = None
        self.error: str | None = None         # why the pair on the table gives no quiz (questions() says)
        self._built: dict = {}            # language -> questions (the same numbers, the same option order)
        self.index = 0                    # == len(questions): the summary page
        self.choices: dict[str, int] = {}     # question id -> option chosen
        self.revealed: set[str] = set()       # answers shown (at once in student mode; on R in class mode)
        self.class_mode = False
        self.last_export: str | None = None

    # ---- the quiz's state -------------------------------------------------------------------------
    def restart(self) -> None:
        """A new quiz from the table as it is now (the run and the lab's values), from question 1."""
        self.snap = quiz.snapshot(self.ctl)
        self._built = {}
        self.index = 0
        self.choices, self.revealed = {}, set()
        self._follow()

    def questions(self) -> list[quiz.Question]:
        """The questions, or none (and `error` says why) when the pair on the table cannot answer them: a
        checkpoint without a draft model has no q to ask about."""
        lang = self.ctl.settings.language
        try:
            if self.snap is None:
                self.snap = quiz.snapshot(self.ctl)
            if lang not in self._built:
                qs = quiz.build(self.snap, lang)
                chosen = self.ctl.lesson.quiz if getattr(self.ctl, "lesson", None) is not None else None
                # A prepared lesson's questions, in the quiz's (chapter) order.
                self._built[lang] = qs if chosen is None else [q for q in qs if q.id in chosen]
        except InputError as exc:
            self.error = str(exc)
            return []
        self.error = None
        return self._built[lang]

    def current(self) -> quiz.Question | None:
        qs = self.questions()
        return qs[self.index] if self.index < len(qs) else None

    @property
    def finished(self) -> bool:
        return self.index >= len(self.questions())

    def answer(self, k: int) -> None:
        """Option k (0-3) for the question shown. A student's first answer counts and is told at once; in class
        mode the teacher may change the class's choice until the answer is revealed."""
        q = self.current()
        if q is None or not 0 <= k < len(q.options) or q.id in self.revealed:
            return
        if q.id in self.choices and not self.class_mode:
            return
        self.choices[q.id] = k
        if not self.class_mode:
            self.revealed.add(q.id)

    def reveal(self) -> None:
        q = self.current()
        if q is not None:
            self.revealed.add(q.id)

    def goto(self, i: int) -> None:
        self.index = max(0, min(len(self.questions()), i))
        self._follow()

    def set_class_mode(self, on: bool) -> None:
        self.class_mode = bool(on)

    def score(self) -> tuple[int, int]:
        """(right, answered) over the questions answered so far."""
        qs = {q.id: q for q in self.questions()}
        right = sum(1 for qid, k in self.choices.items() if qid in qs and qs[qid].right == k)
        return right, len(self.choices)

    def revisit(self) -> list[tuple[int, list[int]]]:
        """Chapters worth another look: [(chapter, [question numbers, 1-based])] of the questions answered
        wrong or not at all, in chapter order."""
        out: dict[int, list[int]] = {}
        for n, q in enumerate(self.questions(), 1):
            if self.choices.get(q.id) != q.right:
                out.setdefault(q.chapter, []).append(n)
        return sorted(out.items())

    # ---- keys and the table -----------------------------------------------------------------------
    def act(self, action: str) -> None:
        if action in ANSWER_KEYS:
            self.answer(ANSWER_KEYS[action])
        elif action == "reveal":
            self.reveal()
        elif action == "show_me":
            self.show_me()
        elif action == "class_mode":
            self.set_class_mode(not self.class_mode)
        elif action == "export_answers":
            self.ctl.export(lambda: [self.export()])

    def on_key(self, action: str) -> None:
        """Next: in class mode the first press reveals, the second moves on; a student moves on (a question
        left unanswered counts as one to revisit). Previous goes back a question."""
        q = self.current()
        if action == "next":
            if self.class_mode and q is not None and q.id not in self.revealed:
                self.reveal()
                return
            self.goto(self.index + 1)
        else:
            self.goto(self.index - 1)

    def enter(self) -> None:
        # A quiz not yet begun follows the lab as it is now; one under way keeps the numbers it was asked with.
        if self.snap is not None and not self.choices and self.snap.lab != self.ctl.lab():
            self.restart()
        self.questions()
        super().enter()
        self._follow()

    def _follow(self) -> None:
        """The table frames what the question's chapter first shows (student mode): its first beat's parts."""
        q = self.current()
        if q is not None and self.ctl.mode == "quiz":
            page = narration(CHAPTERS[q.chapter].slug).pages[0]
            self.driver.set_focus(page.parts, page.view)

    def show_me(self) -> None:
        q = self.current()
        if q is not None and self.snap is not None:
            self.ctl.show_me(q.show, self.snap.lab)

    def export(self):
        from app import exports  # lazy: pulls in PIL
        path = exports.export_quiz(self)
        self.last_export = str(path)
        return path

    @property
    def panel_frac(self) -> float:
        return 1.0 if self.class_mode else 0.55

    def stage_rect(self, scr):
        if self.class_mode:
            return 0.0, ui.bar_h(scr), 0.0, 0.0           # the question fills the screen
        return super().stage_rect(scr)

    def json(self) -> dict:
        """The quiz's state for `spectable run --json`: question (0-based; == of on the summary page), of,
        answered, correct, choice and right (letters; choice null before an answer), chapter (0-based),
        id, computed, class_mode, revealed, revisit (chapters, 0-based)."""
        qs = self.questions()
        q = self.current()
        right, answered = self.score()
        k = self.choices.get(q.id) if q else None
        return {"question": self.index, "of": len(qs), "answered": answered, "correct": right,
                "choice": quiz.LETTERS[k] if k is not None else None,
                "right": quiz.LETTERS[q.right] if q else None, "chapter": q.chapter if q else None,
                "id": q.id if q else None, "computed": q.computed if q else None, "class_mode": self.class_mode,
                "revealed": bool(q and q.id in self.revealed), "revisit": [ch for ch, _ in self.revisit()]}

    # ---- drawing ------------------------------------------------------------------------------
    def draw(self, scr) -> None:
        ui.begin_panel("##quiz", ui.panel_rect(scr))
        self.questions()
        if self.error is not None:
            ui.wrapped(self.ctl.t("quiz.cannot", error=self.error), self.ctl.colors["reject"])
        elif self.finished:
            self.draw_summary(scr)
        else:
            self.draw_question(scr, self.current())
        imgui.end()

    def draw_question(self, scr, q) -> None:
        ctl, t = self.ctl, self.ctl.t
        c = ctl.colors
        lang = ctl.settings.language
        big = self.class_mode
        qs = self.questions()
        title = narration(CHAPTERS[q.chapter].slug).title[lang]
        right_n, answered = self.score()
        head = t("quiz.header", n=self.index + 1, of=len(qs), ch=q.chapter + 1, title=title)
        ui.wrapped(head + "   ·   " + t("quiz.score", correct=right_n, answered=answered), c["muted"])
        if q.computed:
            ui.wrapped(t("quiz.computed"), c["target"])
        imgui.separator()
        imgui.spacing()
        ui.push_font(scr, 2.0 if big else 1.4)
        ui.wrapped(q.prompt)
        ui.pop_font()
        imgui.spacing()
        imgui.spacing()
        shown = q.id in self.revealed
        chosen = self.choices.get(q.id)
        ui.push_font(scr, 1.6 if big else 1.25)
        for k, text in enumerate(q.options):
            col = c["text"]
            if shown and k == q.right:
                col = c["ok"]
            elif shown and k == chosen:
                col = c["reject"]
            if self.option(scr, k, text, col, selected=k == chosen):
                self.answer(k)
        ui.pop_font()
        imgui.spacing()
        if shown:
            ui.push_font(scr, 1.35 if big else 1.1)
            letter = quiz.LETTERS[q.right]
            if chosen is None:
                verdict, col = t("quiz.answer_is", letter=letter), c["accent"]
            elif self.class_mode:
                verdict = t("quiz.class_choice", letter=quiz.LETTERS[chosen]) + " " + t("quiz.answer_is", letter=letter)
                col = c["ok"] if chosen == q.right else c["reject"]
            elif chosen == q.right:
                verdict, col = t("quiz.right"), c["ok"]
            else:
                verdict, col = t("quiz.wrong", letter=letter), c["reject"]
            ui.wrapped(verdict, col)
            ui.wrapped(q.why)
            ui.pop_font()
        elif self.class_mode and chosen is not None:
            ui.wrapped(t("quiz.class_choice", letter=quiz.LETTERS[chosen]), c["accent"])
        imgui.spacing()
        if self.class_mode and not shown:
            if imgui.button(t("quiz.reveal")):
                self.reveal()
            imgui.same_line()
        if imgui.button(t("quiz.show_me")):
            self.show_me()
        imgui.same_line()
        if imgui.button(t("quiz.next")):
            self.on_key("next")
        imgui.same_line()
        if imgui.button(t("quiz.to_student" if self.class_mode else "quiz.to_class")):
            self.set_class_mode(not self.class_mode)
        ui.wrapped(t("quiz.keys_class" if self.class_mode else "quiz.keys_student"), c["muted"])

    def option(self, scr, k: int, text: str, color, selected: bool) -> bool:
        """One answer as a wide clickable row: its letter, then the text wrapped to the panel's width."""
        letter = f"{quiz.LETTERS[k]}"
        width = imgui.get_content_region_avail().x
        indent = imgui.calc_text_size("M  ").x
        lines = ui.wrap_lines(text, max(10.0, width - indent), lambda s: imgui.calc_text_size(s).x)
        line_h = imgui.get_text_line_height_with_spacing()
        h = line_h * len(lines) + imgui.get_style().frame_padding.y * 2
        x0, y0 = imgui.get_cursor_screen_pos()
        clicked = imgui.selectable(f"##option{k}", selected, 0, (width, h))[0]
        dl = imgui.get_window_draw_list()
        pad = imgui.get_style().frame_padding.y
        dl.add_text((x0, y0 + pad), u32(self.ctl.colors["accent"]), letter)
        for n, line in enumerate(lines):
            dl.add_text((x0 + indent, y0 + pad + n * line_h), u32(color), line)
        return clicked

    def draw_summary(self, scr) -> None:
        ctl, t = self.ctl, self.ctl.t
        c = ctl.colors
        lang = ctl.settings.language
        qs = self.questions()
        right_n, _ = self.score()
        ui.heading(scr, t("quiz.summary_title"), 1.4)
        ui.push_font(scr, 1.3)
        pct = f"{100 * right_n / max(len(qs), 1):.0f}%"
        ui.wrapped(t("quiz.summary_score", correct=right_n, of=len(qs), pct=pct), c["accent"])
        ui.pop_font()
        imgui.spacing()
        todo = self.revisit()
        if not todo:
            ui.wrapped(t("quiz.all_right"), c["ok"])
        else:
            ui.wrapped(t("quiz.revisit"))
            sep = "、" if lang == "zh" else ", "
            for ch, nums in todo:
                ui.wrapped(t("quiz.revisit_line", ch=ch + 1, title=narration(CHAPTERS[ch].slug).title[lang],
                             nums=sep.join(str(n) for n in nums)), c["muted"])
        imgui.spacing()
        if imgui.button(t("quiz.export")):
            self.act("export_answers")
        imgui.same_line()
        if imgui.button(t("quiz.handout")):
            from app import exports  # lazy: pulls in PIL
            ctl.export(lambda: exports.export_handout(ctl))
        imgui.same_line()
        if imgui.button(t("quiz.restart")):
            self.restart()
        if self.last_export:
            ui.wrapped(self.last_export, c["muted"])
