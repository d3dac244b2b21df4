"""Prepared lessons (app.lesson.prepared): read, checked at the edge, opened as the tour, saved, and the guide's plan."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.lesson import prepared as lessons
from app.lesson import plan as lesson_plan
from app.controller import Controller
from app.settings import AppSettings
from app.lesson.tour import CHAPTERS, TourState
from corpus.errors import InputError
from fuzz_helpers import budget, json_values

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "assets" / "lessons" / "45-minutes.json"

SMALL = {"schema": "spectable-lesson/1", "title": "Rule first",
         "chapters": [{"chapter": "05-acceptance-rule", "settings": {"gamma": 3, "prompt": "我们", "seed": 7},
                       "skip": [1], "notes": {"3": "Hands up first.", "4": {"en": "Residual: {alpha}", "zh": "残差"}}},
                      {"chapter": "03-guess-first", "skip": [4, 5]}],
         "quiz": ["keep_prob", "residual_top"]}


def _parse(raw):
    return lessons.parse_lesson(raw, "lesson file x.json")


def test_the_shipped_lesson_covers_the_tour_and_the_guide_quotes_it():
    """The 45-minute plan is a lesson file; docs/TEACHING.md's table is its plan, numbers filled by the screen's
    code (a change to a model or to the hardware model that moves a number fails here, not in a classroom)."""
    lesson = lessons.load_lesson("45-minutes")
    assert [c.slug for c in lesson.chapters] == [c.slug for c in CHAPTERS]
    assert sum(c.minutes for c in lesson.chapters) <= 45
    plan = lesson_plan.plan_markdown(lesson, "en")
    doc = (ROOT / "docs" / "TEACHING.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- lesson-plan: [^>]*-->\n(.*?)<!-- /lesson-plan -->", doc, re.S)
    assert block is not None and block.group(1) == plan
    assert "{" not in plan and "—" not in plan       # every field filled with a number the screen computes


def test_the_plan_quotes_the_same_numbers_as_the_screen_at_that_page():
    """A note's {fact} is what the tour's panel shows on the page it is written on."""
    lesson = lessons.load_lesson("45-minutes")
    ctl = Controller(AppSettings(language="en"), persist=False, scripted=True, lesson=lesson).start()
    ctl.tour.goto(1)                                  # 02-batching
    ctl.panel.apply_chapter()
    ctl.tour.page = 1
    ctl.panel.apply_page()
    f = ctl.facts()
    note = ctl.teacher_note()
    assert f"{f['tps_weights']} tokens/s for the weights alone" in note
    rows = lesson_plan.plan_rows(lesson, "en")
    assert any(note == r[3] for r in rows)


def test_round_trip(tmp_path):
    lesson = _parse(SMALL)
    path = lessons.save_lesson(lesson, tmp_path / "l.json")
    again = lessons.load_lesson(path)
    assert again.chapters == lesson.chapters and again.quiz == lesson.quiz and again.title == lesson.title
    assert json.loads(path.read_text(encoding="utf-8")) == SMALL


def test_a_lesson_arranges_the_tour():
    """Chapters in the lesson's order, skipped pages never shown, the count as the lesson counts it."""
    lesson = _parse(SMALL)
    st_ = TourState(0, lesson)
    assert CHAPTERS[st_.chapter].slug == "05-acceptance-rule" and st_.page == 1      # page 1 skipped
    seen = []
    while True:
        seen.append((CHAPTERS[st_.chapter].slug, st_.page))
        if st_.next() == "end":
            break
    pages = list(dict.fromkeys(seen))
    assert pages == [("05-acceptance-rule", 1), ("05-acceptance-rule", 2), ("05-acceptance-rule", 3),
                     ("03-guess-first", 0), ("03-guess-first", 1), ("03-guess-first", 2)]
    assert st_.position() == (2, 2, 3, 3)
    while st_.prev() != "start":
        pass
    assert (CHAPTERS[st_.chapter].slug, st_.page) == ("05-acceptance-rule", 1)


def test_opening_a_lesson_sets_its_settings_notes_and_quiz(capsys, tmp_path):
    from app_helpers import run_app
    path = tmp_path / "l.json"
    path.write_text(json.dumps(SMALL, ensure_ascii=False), encoding="utf-8")
    from app.cli import main
    capsys.readouterr()
    out_dir = tmp_path / "out"
    rc = main(["open", str(path), "--frames", "6", "--size", "480x270", "--json", "--export-dir", str(out_dir),
               "--lang", "en", "--no-save", "--script", str(_script(tmp_path, ["page down", "page down", "s"]))])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    state = json.loads(cap.out.strip().splitlines()[-1])
    assert state["mode"] == "tour" and state["chapter_slug"] == "05-acceptance-rule"
    assert state["page"] == 2 and state["settings"]["gamma"] == 3 and state["settings"]["prompt"] == "我们"
    assert state["lesson"]["note"] == "Hands up first." and state["lesson"]["position"] == [1, 2, 2, 3]
    saved = [p for p in state["exports"] if p.endswith(".json")]
    assert len(saved) == 1
    again = lessons.load_lesson(saved[0])
    assert [c.slug for c in again.chapters] == ["05-acceptance-rule", "03-guess-first"]
    assert again.chapters[0].settings["prompt"] == "我们" and again.quiz == ("keep_prob", "residual_top")
    assert again.chapters[1].settings["seed"] == state["lab"]["seed"]
    # The quiz asks the lesson's questions only.
    ctl = Controller(AppSettings(language="en", mode="quiz"), persist=False, scripted=True, lesson=again).start()
    assert [q.id for q in ctl.modes["quiz"].questions()] == ["keep_prob", "residual_top"]
    del run_app


def _script(tmp_path, keys):
    p = tmp_path / "keys.txt"
    p.write_text("\n".join(keys) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(schema="other/1"), "schema"),
    (lambda d: d.update(extra=1), "unknown key 'extra'"),
    (lambda d: d["chapters"][0].update(chapter="99-nope"), "unknown chapter '99-nope'"),
    (lambda d: d["chapters"][0].update(skip=[9]), "page 9 does not exist"),
    (lambda d: d["chapters"][0].update(skip=[1, 2, 3, 4]), "every page is skipped"),
    (lambda d: d["chapters"][0]["notes"].update({"1": "x"}), "page 1 is skipped and has a note"),
    (lambda d: d["chapters"][0]["settings"].update(gamma=99), "gamma must be between"),
    (lambda d: d["chapters"][0]["settings"].update(pair="custom"), "pair must be one of"),
    (lambda d: d["chapters"][0]["settings"].update(lanes=4), "unknown key 'lanes'"),
    (lambda d: d["chapters"].append({"chapter": "03-guess-first"}), "listed twice"),
    (lambda d: d.update(quiz=["nope"]), "unknown quiz question 'nope'"),
    (lambda d: d.update(quiz=[]), "non-empty list"),
    (lambda d: d["chapters"][0].update(minutes=float("nan")), "'minutes'"),
    (lambda d: d["chapters"][0]["notes"].update({"2": ""}), "non-empty text"),
])
def test_a_bad_lesson_is_refused_naming_the_place(change, words):
    raw = copy.deepcopy(SMALL)
    change(raw)
    with pytest.raises(InputError, match=re.escape(words)):
        _parse(raw)


@pytest.mark.parametrize("content, words", [
    (b"", "not valid JSON"), (b"\xff\xfe{}", "not UTF-8"), (b"[" * 100000, "nested more than"),
])
def test_a_lesson_file_that_is_not_one_is_one_line_and_exit_2(tmp_path, capsys, content, words):
    from app.cli import main
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    capsys.readouterr()
    assert main(["open", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_a_prompt_the_models_cannot_write_is_refused_at_load(tmp_path, capsys):
    from app.cli import main
    raw = copy.deepcopy(SMALL)
    raw["chapters"][0]["settings"]["prompt"] = "我们☃"
    path = tmp_path / "l.json"
    path.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    capsys.readouterr()
    assert main(["open", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "05-acceptance-rule" in err and "prompt" in err
    assert main(["open", "no-such-lesson"]) == 2
    assert "45-minutes" in capsys.readouterr().err


@budget(150)
@given(json_values(("schema", "chapters", "title", "quiz", "chapter", "skip", "notes", "settings", "minutes")))
def test_any_json_is_a_lesson_or_one_input_error(raw):
    try:
        lessons.parse_lesson(raw, "fuzz")
    except InputError as exc:
        assert "\n" not in str(exc)


@budget(100)
@given(st.fixed_dictionaries({"skip": st.lists(st.one_of(st.integers(-2, 6), st.text(max_size=2)), max_size=5),
                              "notes": st.dictionaries(st.text(max_size=3), json_values(), max_size=3),
                              "settings": st.dictionaries(st.sampled_from(lessons.CHAPTER_SETTINGS), json_values(),
                                                          max_size=3)}))
def test_any_chapter_entry_is_checked(entry):
    raw = {"schema": lessons.SCHEMA, "chapters": [{"chapter": "05-acceptance-rule", **entry}]}
    try:
        lesson = _parse(raw)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    c = lesson.chapters[0]
    assert all(0 <= i < 4 for i in c.skip) and len(c.skip) < 4 and not (set(c.notes) & c.skip)
