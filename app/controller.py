"""The lesson controller: what the program is doing, with no window, no pygame and no GL.

It holds the mode, the tour's place, the lab's values, the step-through's position, blank/help/paused and
the status-line messages, and it is the one place a setting changes: update(**fields) checks each value
against its declaration (app.settings.FIELDS), applies it, bumps `revision` and tells the listeners (the
table driver, the window) which fields changed. Keys and buttons arrive as actions through do(action).
Tests drive it directly; the window (app/window.py) only feeds it events and draws what it says.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from app import exports
from app.lesson import prepared as lessons
from app.driver import TableDriver
from app.i18n import Strings
from app.palette import colors
from app.session import BenchWorker, DrafterWorker, LongRunWorker, Session, TubeWorker
from app.settings import FIELDS, LAB_FIELDS, AppSettings, check_type, check_value, clamp_value, save_settings
from app.lesson.tour import CHAPTERS, TourState
from corpus import jsonio
from corpus.atomic import remove_stale_temps
from corpus.errors import InputError
from app.exports import stamp
from app.lesson.facts import facts, fill
from app.modes import MODE_PANELS
from app.paths import default_export_dir, resolve_font
from app.settings import settings_path
from app.ui import screen_for

# Actions only the window can carry out (they need the display or its framebuffer): queued in .requests.
WINDOW_ACTIONS = ("fullscreen", "screenshot")


class Controller:
    def __init__(self, settings: AppSettings, *, settings_file: Path | None = None, persist: bool = True,
                 scripted: bool = False, export_dir: Path | None = None, gif_options: dict | None = None,
                 notice: str | None = None, modes: dict | None = None, lesson=None):
        """scripted: frames must not depend on thread timing (spectable run --frames): the tube experiment
        is computed when first asked for instead of on a worker thread, and messages never fade."""
        self.settings = settings.clamp()
        self.t = Strings(settings.language)
        self.settings_file = settings_file
        self.persist = persist
        self.scripted = scripted
        self.export_dir = Path(export_dir) if export_dir else None
        self.gif_options = gif_options or {}
        self.session = Session(self.settings)
        self.tube_worker = TubeWorker(self.session)
        self.drafter_worker = DrafterWorker(self.session)
        self.long_worker = LongRunWorker(self.session)
        self.bench_worker = BenchWorker(self.session)     # the neural pair measured live (hardware panel)
        self.lesson = lesson
        self.tour = TourState(self.settings.chapter if lesson is None else lesson.order[0], lesson)
        self.mode: str | None = None
        self.lab_values: dict | None = None  # the lab's own values, kept aside while the tour sets its own
        self.step_pos = 0                    # index into the step-through's stops
        self.blank = self.help = self.paused = self.cutaway = False
        self.quit = False
        self.messages: list[tuple[float, str]] = []
        self.exports_done: list[str] = []
        self.requests: list[str] = []        # WINDOW_ACTIONS waiting for the window
        self.gif_job: exports.GifJob | None = None
        # Set while the quiz's "show me" has jumped elsewhere: where to come back to (back_to_quiz).
        self.quiz_return: dict | None = None
        self.revision = 0                    # bumps on every change of a setting
        self.listeners: list[Callable[[frozenset], None]] = [self.session.changed]   # the run first
        self._font_file = None
        self._facts_key = self._facts = None
        self._facts_said: set[str] = set()
        if notice:
            self.notify(notice)
        self.driver = TableDriver(self)
        self.modes = {name: cls(self, self.driver) for name, cls in (modes or MODE_PANELS).items()}
        self._clean_exports()

    def start(self) -> "Controller":
        """Enter the saved mode (after the window has attached the table, so the mode can set its view)."""
        self.set_mode(self.settings.mode if self.settings.mode in self.modes else "tour", initial=True)
        return self

    # ---- the one path for every change -----------------------------------------------------------
    def update(self, **values) -> frozenset:
        """Check, apply and announce setting changes; returns the names that changed. A value of the wrong
        type or out of range is an InputError (nothing is applied)."""
        checked = {k: check_value(k, v) for k, v in values.items()}
        changed = frozenset(k for k, v in checked.items() if getattr(self.settings, k) != v)
        if not changed:
            return changed
        for k in changed:
            setattr(self.settings, k, checked[k])
        self.revision += 1
        if "language" in changed:
            self.t = Strings(self.settings.language)
        for listener in self.listeners:
            listener(changed)
        if any(FIELDS[k].save_now for k in changed):
            self.save()
        return changed

    def adjust(self, **values) -> frozenset:
        """update() for values from a widget that may overshoot (a typed number): brought into range first."""
        return self.update(**{k: clamp_value(k, check_type(k, v)) for k, v in values.items()})

    # ---- modes and the tour ------------------------------------------------------------------------
    @property
    def panel(self):
        return self.modes[self.mode]

    def set_mode(self, mode: str, initial: bool = False) -> None:
        # The tour sets γ, lanes, context... per chapter through update(); the lab's own values are put aside
        # on the way in and back on the way out, and only they are ever saved.
        if mode not in self.modes:
            raise InputError(f"unknown mode {mode!r} (choose from {', '.join(self.modes)})")
        if mode == "tour" and self.mode != "tour":
            self.lab_values = {k: getattr(self.settings, k) for k in LAB_FIELDS}
        elif mode != "tour" and self.mode == "tour":
            self.leave_tour()
        self.update(mode=mode)
        self.mode = mode
        self.panel.enter()
        if not initial:
            self.save()

    def leave_tour(self) -> None:
        """Put the lab's values back: the tour's γ, lanes, context, decoder... never outlive it."""
        if self.driver.stage is not None:
            self.driver.stage.hud_lanes = True
            self.driver.stage.kept_back = frozenset()
        if self.lab_values is not None:
            values, self.lab_values = self.lab_values, None
            self.update(**values)

    def lab(self) -> dict:
        """The lab's own values (what is saved), whichever mode is showing."""
        return dict(self.lab_values) if self.lab_values is not None else {k: getattr(self.settings, k)
                                                                          for k in LAB_FIELDS}

    def saved_settings(self) -> AppSettings:
        """What goes into the settings file: the live settings with the lab's own values (not the tour's)."""
        return replace(self.settings, chapter=self.tour.chapter, **self.lab())

    def save(self) -> None:
        if not self.persist:
            return
        try:
            self.settings.chapter = self.tour.chapter
            save_settings(self.saved_settings(), self.settings_file)
        except (OSError, InputError) as exc:
            where = (self.settings_file or settings_path()).parent
            self.notify(self.t("msg.settings_not_saved", error=exports.describe_failure(exc, where)))

    def set_view(self, name: str) -> None:
        self.driver.set_view(name)

    # ---- actions -----------------------------------------------------------------------------------
    def do(self, action: str) -> None:
        """One key or button: next/prev go to the mode; the rest are the classroom's keys (keys.ACTIONS)."""
        s = self.settings
        if action == "blank":
            self.blank = not self.blank
            return
        if self.blank and action in ("next", "prev", "close"):
            self.blank = False      # any clicker key brings the picture back
            return
        if action in WINDOW_ACTIONS:
            self.requests.append(action)
        elif action == "close":
            self.help = False
        elif action == "help":
            self.help = not self.help
        elif action == "language":
            self.update(language="en" if s.language == "zh" else "zh")
        elif action == "pause":
            self.paused = not self.paused
        elif action == "palette":
            self.update(palette="projector" if s.palette == "default" else "default")
        elif action in ("scale_up", "scale_down"):
            # Steps of a quarter of the default size: what a projector across a room needs.
            step = 0.25 if action == "scale_up" else -0.25
            self.update(ui_scale=clamp_value("ui_scale", round((round(s.ui_scale / 0.25) * 0.25) + step, 2)))
        elif action == "reduced_motion":
            self.update(reduced_motion=not s.reduced_motion)
        elif action == "export_plots":
            self.export(lambda: exports.export_plots(self))
        elif action == "export_log":
            self.export(lambda: [exports.export_run_log(self)])
        elif action == "export_gif":
            self.export(self._start_gif)
        elif action == "save_lesson":
            self.export(lambda: [self.save_lesson()])
        elif action == "cutaway":
            self.cutaway = not self.cutaway
            self.set_view("cutaway" if self.cutaway else "readhead")
        elif action.startswith("mode_") and action[5:] in self.modes:
            self.quiz_return = None if action == "mode_quiz" else self.quiz_return
            self.set_mode(action[5:])
        elif action == "quiz_back":
            self.back_to_quiz()
        elif action in ("next", "prev"):
            self.panel.on_key(action)
        elif action in getattr(self.panel, "actions", ()):
            self.panel.act(action)          # a mode's own keys (keys.MODE_KEYS): the quiz's answers, tube speed

    # ---- the quiz's "show me" and back -------------------------------------------------------------
    def show_me(self, show, lab_values: dict) -> None:
        """Jump to what proves a quiz answer (a tour chapter, a step-through stop, the tubes under a rule, a
        mode), with the lab's values the question was computed from; back_to_quiz() returns to the question
        with everything the jump changed put back."""
        back = {"lab": self.lab(), "step_pos": self.step_pos,
                "tour": (self.tour.chapter, self.tour.page, self.tour.acted)}
        if self.mode == "tour":
            self.set_mode("quiz")
        self.update(**lab_values)            # the run the question is about (the lab may have moved on)
        if show.mode == "tour" and show.chapter is not None:
            self.tour.goto(show.chapter)
            self.set_mode("tour")
        elif show.mode == "step" and show.stop is not None:
            stops = self.modes["step"].stops()
            self.step_pos = next((k for k, s in enumerate(stops) if (s.step, s.test, s.kind) == tuple(show.stop)), 0)
            self.set_mode("step")
        elif show.mode == "tubes":
            self.update(tube_rule=show.rule or "exact", skip_bonus=False)
            self.set_mode("tubes")
        else:
            self.set_mode(show.mode)
        self.quiz_return = back

    def back_to_quiz(self) -> None:
        back, self.quiz_return = self.quiz_return, None
        if back is None:
            return
        self.set_mode("quiz")                # leaving the tour puts the lab's values back first
        self.update(**back["lab"])
        self.step_pos = back["step_pos"]
        self.tour.chapter, self.tour.page, self.tour.acted = back["tour"]

    # ---- exports -----------------------------------------------------------------------------------
    def out_dir(self) -> Path:
        return self.export_dir or default_export_dir()

    def _clean_exports(self) -> None:
        """Temp files of exports a kill interrupted (the finished files are complete: atomic writes)."""
        remove_stale_temps(self.out_dir(), pattern="spectable-*")

    def export(self, make: Callable[[], list]) -> None:
        """Run an export; a failure (a full disk, a folder we may not write) is a status-line message that names
        the export folder and the reason, never the hidden temp file, and the lesson goes on."""
        try:
            self.record_exports(make() or [])
        except (OSError, InputError) as exc:
            self.notify(self.t("msg.export_failed", error=exports.describe_failure(exc, self.out_dir())))

    def teacher_note(self) -> str | None:
        """The prepared lesson's note on the tour page showing now, its {fact} fields filled as the screen's."""
        note = self.tour.note(self.settings.language) if self.mode == "tour" else None
        if not note:
            return None
        return fill(note, self.facts())

    def save_lesson(self, path: Path | None = None) -> Path:
        """Write the lesson in force (the whole tour when none was opened) as a lesson file: its chapters, pages
        and notes, and for every chapter the prompt and seed the class saw, so opening it shows the same runs."""
        current = self.lesson or lessons.full_tour()
        lab = self.lab()
        chapters = []
        for c in current.chapters:
            fixed = {"prompt": lab["prompt"], "seed": lab["seed"]}
            if c.index == self.tour.chapter and self.mode == "tour":
                fixed = {"prompt": self.settings.prompt, "seed": self.settings.seed}
            chapters.append(replace(c, settings={**fixed, **c.settings}))
        return lessons.save_lesson(replace(current, chapters=tuple(chapters)),
                                   path or self.out_dir() / stamp("lesson", "json"))

    def _start_gif(self) -> list:
        self.gif_job = exports.GifJob(self.driver, self.out_dir(), **self.gif_options)
        return []

    def pump_exports(self, finish: bool = False, progress=None) -> None:
        """Advance a running GIF replay a few frames (all of them when `finish`; progress() after each batch)."""
        job = self.gif_job
        if job is None:
            return
        try:
            while True:
                job.advance()
                if progress is not None:
                    progress()
                if job.done or not finish:
                    break
        except (OSError, InputError) as exc:
            job.abandon()
            self.gif_job = None
            self.notify(self.t("msg.export_failed", error=exports.describe_failure(exc, self.out_dir())))
            return
        if job.done:
            self.gif_job = None
            self.record_exports([job.path])

    def record_exports(self, paths) -> None:
        for p in paths:
            self.exports_done.append(str(p))
            self.notify(self.t("msg.exported", path=str(p)))

    # ---- what panels and narration read -----------------------------------------------------------
    def notify(self, msg: str) -> None:
        # A path whose name is not UTF-8 (an export folder, a screenshot) is shown with escapes: ImGui takes text.
        self.messages.append((time.monotonic(), jsonio.as_text(msg)))
        self.messages = self.messages[-4:]

    def recent_messages(self, now: float | None = None) -> list[str]:
        """Messages of the last 12 s (every one in a scripted run, where frames must not depend on time)."""
        now = time.monotonic() if now is None else now
        return [m for ts, m in self.messages if self.scripted or now - ts < 12.0]

    @property
    def colors(self) -> dict:
        return colors(self.settings.palette)

    @property
    def font_file(self) -> Path:
        if self._font_file is None:
            self._font_file = resolve_font()
        return self._font_file

    def tubes(self):
        """The test tubes for the current rule: waited for in a scripted run, else None until the worker is done."""
        return self.tube_worker.get() if self.scripted else self.tube_worker.ready()

    def drafter_figures(self, wait: bool = False):
        """Tokens and lanes per pass of every drafter (app.session.DrafterWorker): at once in a scripted run or when
        `wait` (exports), else None until the worker has them."""
        return self.drafter_worker.get() if (self.scripted or wait) else self.drafter_worker.ready()
    def long_run(self, wait: bool = False):
        """The pair's long-run facts (models.analytics.PairFacts) for the settings now: computed at once in a
        scripted run or when `wait` (exports), else None until the worker thread has them."""
        return self.long_worker.get() if (self.scripted or wait) else self.long_worker.ready()

    def facts(self):
        """facts.facts(), recomputed only when the run, a setting or the tubes' readiness changed."""
        self.session.ensure()
        bench = self.bench_worker
        key = (self.session.version, self.revision, self.tube_worker.ready() is not None if not self.scripted
               else True, bench.running(), bench.step, len(bench.results))   # a live measurement landing or moving
        if key != self._facts_key:
            self._facts_key, self._facts = key, facts(self)
        # A number shown as '—' says why, once, when something showed it (read since the last call): a number
        # no page or panel shows (a network pair's α over the counted stories in the tour) says nothing.
        for name in sorted(self._facts.asked):
            cause = self._facts.errors[name]
            if cause not in self._facts_said:
                self._facts_said.add(cause)
                self.notify(cause)
        return self._facts

    def state(self, scr=None) -> dict:
        """What the program is doing, as plain data (spectable run --json; tests read it). `scr`: the window's
        Screen, for where the panels cover the table (the tour's `beat`); without one, the saved window size."""
        run = self.session.run
        s = self.settings
        if scr is None:
            scr = screen_for(self, s.window_w, s.window_h)
        return {
            "mode": self.mode, "language": s.language, "palette": s.palette, "ui_scale": s.ui_scale,
            "fullscreen": s.fullscreen, "blank": self.blank, "help": self.help, "paused": self.paused,
            "reduced_motion": s.reduced_motion,
            "chapter": self.tour.chapter, "chapter_slug": CHAPTERS[self.tour.chapter].slug,
            "page": self.tour.page, "acted": self.tour.acted,
            "lesson": None if self.lesson is None else {"title": self.lesson.title_in(s.language),
                                                        "chapters": [c.slug for c in self.lesson.chapters],
                                                        "position": list(self.tour.position()),
                                                        "note": self.teacher_note()},
            "step_position": self.step_pos, "step": self.modes["step"].explanation() if "step" in self.modes else None,
            "tokens_written": run.written if run else 0,
            "text": self.session.pair().decode(run.tokens) if run else "",
            "exports": list(self.exports_done),
            "stage": self.driver.stage is not None, "stage_error": self.driver.stage_error,
            "messages": [m for _, m in self.messages], "error": self.session.error,
            "decoder": s.decoder, "tube_rule": s.tube_rule, "skip_bonus": s.skip_bonus,
            "drafter": self.session.drafter_key()[0] if s.decoder == "speculative" else None,
            "drafter_settings": self.drafter_settings(),
            "settings": {k: getattr(s, k) for k in LAB_FIELDS}, "lab": self.lab(),
            "lanes_lit": self.driver.lanes_lit(),
            "labels": self.driver.stage.labels_json() if self.driver.stage is not None else [],
            "quiz": self.modes["quiz"].json() if "quiz" in self.modes else None,
            "quiz_return": self.quiz_return is not None,
            "tube_speed": self.modes["tubes"].speed_name() if "tubes" in self.modes else None,
            "beat": self.panel.beat(scr) if self.mode == "tour" else None,
            "facts": self.panel.facts_shown(),
        }

    def drafter_settings(self) -> dict | None:
        """Who proposes in the run on the table and how (the drafter's own JSON keys); None for the target alone."""
        if self.settings.decoder != "speculative":
            return None
        try:
            return self.session.drafter().describe()
        except InputError as exc:            # a heads table missing beside a user's pair
            return {"drafter": self.settings.drafter, "error": str(exc)}

    def close(self) -> None:
        self.save()
        self.tube_worker.close()
        self.drafter_worker.close()
        self.long_worker.close()
        self.bench_worker.close()

