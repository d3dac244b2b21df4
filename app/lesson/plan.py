"""The lesson's plan on paper: every teacher's note of a lesson with its {fact} fields filled at that page's settings
by the same code as the screen (a Controller walked to the page, no window). docs/TEACHING.md carries the shipped
lesson's (tools/teaching_plan.py writes it; `spectable lesson --plan` prints any lesson's).

It walks a Controller (which reads prepared lessons), so nothing else in app.lesson imports it: no circle.
"""
from __future__ import annotations

from app.controller import Controller
from app.lesson.prepared import Lesson
from app.settings import AppSettings
from app.lesson.tour import narration


def plan_rows(lesson: Lesson, lang: str) -> list[tuple[str, str, int, str]]:
    """(minutes, chapter title, page number, note) for every note of the lesson, its {fact} fields filled at that
    page's settings by the same code as the screen (a Controller walked to the page, no window)."""
    ctl = Controller(AppSettings(language=lang, mode="tour"), persist=False, scripted=True, lesson=lesson).start()
    rows, t0 = [], 0.0
    try:
        for c in lesson.chapters:
            t1 = t0 + (c.minutes or 0)
            span = f"{t0:g}–{t1:g}" if c.minutes else ""
            ctl.tour.goto(c.index)
            ctl.panel.apply_chapter()
            title = f"{ctl.tour.position()[0]}. {narration(c.slug).title[lang]}"
            if not c.notes:
                rows.append((span, title, 0, ""))
            for i in sorted(c.notes):
                ctl.tour.page, ctl.tour.acted = i, False
                ctl.panel.apply_page()
                rows.append((span, title, ctl.tour.position()[2], ctl.teacher_note() or ""))
                span = title = ""
            t0 = t1
    finally:
        ctl.close()
    return rows


def plan_markdown(lesson: Lesson, lang: str = "en") -> str:
    """The lesson's plan as a Markdown table (docs/TEACHING.md carries the shipped lesson's)."""
    head = ("| Minutes | Chapter | Page | Teacher's note |" if lang == "en" else "| 分钟 | 章 | 页 | 教师备注 |")
    out = [head, "|---|---|---|---|"]
    for span, title, page, note in plan_rows(lesson, lang):
        out.append(f"| {span} | {title} | {page or ''} | {note.replace('|', '∣')} |")
    return "\n".join(out) + "\n"
