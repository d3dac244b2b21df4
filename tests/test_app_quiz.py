"""The quiz: questions in both languages tied to chapters, numbers computed from the models (never typed in),
answers by key or script, instant feedback, show me and back, class mode, the score and the answers' CSV."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from app.lesson import quiz
from app.controller import Controller
from app.settings import LAB_FIELDS, AppSettings
from app.lesson.tour import CHAPTERS
from app_helpers import run_app


def _ctl(**settings) -> Controller:
    return Controller(AppSettings(language="en", **settings), persist=False, scripted=True).start()


def _snap(**settings):
    ctl = _ctl(**settings)
    return ctl, quiz.snapshot(ctl)


@pytest.fixture(autouse=True)
def private_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_at_least_16_questions_in_both_languages_each_tied_to_a_chapter():
    _, snap = _snap()
    zh, en = quiz.build(snap, "zh"), quiz.build(snap, "en")
    assert len(zh) == len(en) >= 16
    assert sum(q.computed for q in en) >= 8
    for a, b in zip(zh, en):
        # The same question, the answer in the same place, whatever the language.
        assert (a.id, a.chapter, a.right, a.show, a.computed) == (b.id, b.chapter, b.right, b.show, b.computed)
        assert 0 <= a.chapter < len(CHAPTERS)
        for q in (a, b):
            assert len(q.options) == 4 and len(set(q.options)) == 4 and all(o.strip() for o in q.options)
            assert 0 <= q.right < 4 and q.prompt and q.why
        assert any("\u4e00" <= ch <= "\u9fff" for ch in a.prompt + a.why)          # Chinese text in zh
        assert not any("\u4e00" <= ch <= "\u9fff" for ch in b.options[b.right] if b.id != "residual_top")
    # Every idea the lesson names is asked about.
    ids = {q.id for q in en}
    assert {"one_token", "first_reject", "same_dist", "speedup_driver", "idle_spend", "self_draft"} <= ids
    # The right answer is not always in the same slot.
    assert len({q.right for q in en}) == 4


def test_computed_answers_are_the_models_numbers():
    from models import analytics, hardware
    ctl, snap = _snap()
    qs = {q.id: q for q in quiz.build(snap, "en")}
    run, pair, lab = snap.run, snap.pair, snap.lab
    # A real guess of the run with q > p: kept with probability p/q.
    q = qs["keep_prob"]
    k, i, tr = next((k, i, tr) for k, tr in enumerate(run.traces) for i in range(tr.tested) if tr.ratios[i] < 1)
    g = tr.guesses[i]
    assert q.values["p"] == tr.p_rows[i][g] and q.values["q"] == tr.q_rows[i][g]
    assert q.options[q.right] == f"{tr.p_rows[i][g] / tr.q_rows[i][g]:.2f}"
    # Its wrong options are the usual mistakes: p itself and the chance of a rejection.
    assert f"{tr.p_rows[i][g]:.2f}" in q.options and f"{1 - tr.ratios[i]:.2f}" in q.options
    assert q.show == quiz.ShowMe("step", stop=(k, i, "test"))
    # The replacement after a real rejection: the residual's largest entry, the rejected guess a distractor.
    q = qs["residual_top"]
    k, i, tr = next((k, i, tr) for k, tr in enumerate(run.traces) for i in range(tr.tested) if not tr.accepted[i])
    res = np.maximum(0, tr.p_rows[i] - tr.q_rows[i])
    assert q.values["right_id"] == int(np.argmax(res))
    assert q.options[q.right] == f"“{pair.display(int(np.argmax(res)))}”"
    assert f"“{pair.display(int(tr.guesses[i]))}”" in q.options
    # Tokens per pass at the run's α and the lab's γ, and forgetting the bonus as a distractor.
    q = qs["tokens_per_pass"]
    a, gam = snap.facts.alpha, lab["gamma"]          # the pair's long-run α, as the panels show it
    assert q.options[q.right] == f"{analytics.tokens_per_pass_formula(a, gam):.2f}"
    assert f"{analytics.tokens_per_pass_formula(a, gam) - a ** gam:.2f}" in q.options
    q = qs["best_gamma"]
    assert q.options[q.right] == f"γ = {analytics.best_gamma(a, lab['c'])}"
    q = qs["batch_kv"]
    tps = hardware.roofline(lab["device"], lab["model"], 64, 4096).tokens_per_s
    assert q.options[q.right] == f"{tps:,.0f} tokens/s"
    assert f"{hardware.roofline(lab['device'], lab['model'], 64, 0).tokens_per_s:,.0f} tokens/s" in q.options
    q = qs["busy_lanes"]
    assert q.options[q.right] == f"{100 * hardware.roofline(lab['device'], lab['model'], 9, 1).arithmetic_busy:.1f}%"
    q = qs["overlap"]
    p_row, q_row = quiz._row(pair, quiz.PREFIX)
    assert q.options[q.right] == f"{np.minimum(p_row, q_row).sum():.3f}"


def test_numbers_follow_the_run_and_the_hardware_not_a_script():
    _, a = _snap(seed=0)
    _, b = _snap(seed=5, device="h200", prompt="孔乙")
    qa = {q.id: q for q in quiz.build(a, "en")}
    qb = {q.id: q for q in quiz.build(b, "en")}
    assert qa["keep_prob"].prompt != qb["keep_prob"].prompt          # another run, another guess
    assert qa["b1_tokens"].options[qa["b1_tokens"].right] != qb["b1_tokens"].options[qb["b1_tokens"].right]
    assert "H200" in qb["busy_lanes"].prompt


def test_show_me_jumps_to_the_proof_and_back_puts_everything_back():
    ctl = _ctl(mode="lab", tube_rule="exact", gamma=5)
    ctl.set_mode("quiz")
    panel = ctl.panel
    qs = panel.questions()
    k = next(n for n, q in enumerate(qs) if q.id == "keep_prob")
    panel.goto(k)
    ctl.do("show_me")
    assert ctl.mode == "step" and ctl.quiz_return is not None
    ex = ctl.modes["step"].explanation()
    q = qs[k]
    assert (ex["p"], ex["q"]) == (q.values["p"], q.values["q"])     # the very guess the question is about
    ctl.do("quiz_back")
    assert ctl.mode == "quiz" and panel.index == k and ctl.quiz_return is None
    # A tube question shows the tubes under the rule it is about; back, the lab's rule is as it was.
    k = next(n for n, q in enumerate(qs) if q.id == "wrong_rule")
    panel.goto(k)
    ctl.do("show_me")
    assert (ctl.mode, ctl.settings.tube_rule) == ("tubes", "resample_from_p")
    ctl.back_to_quiz()
    assert (ctl.mode, ctl.settings.tube_rule, ctl.settings.gamma) == ("quiz", "exact", 5)
    # A chapter question opens the tour at that chapter; back, the lab's values are the lab's again.
    k = next(n for n, q in enumerate(qs) if q.id == "batching")
    panel.goto(k)
    ctl.do("show_me")
    assert (ctl.mode, ctl.tour.chapter, ctl.settings.lanes) == ("tour", 1, 64)
    ctl.do("quiz_back")
    assert (ctl.mode, ctl.settings.lanes, ctl.settings.gamma) == ("quiz", 1, 5)


def test_student_answers_once_and_is_told_at_once():
    ctl = _ctl(mode="quiz")
    p = ctl.panel
    q = p.current()
    wrong = (q.right + 1) % 4
    ctl.do("answer_" + "abcd"[wrong])
    assert p.json()["choice"] == "ABCD"[wrong] and p.json()["revealed"] and p.json()["correct"] == 0
    ctl.do("answer_" + "abcd"[q.right])                 # a second answer does not count
    assert p.json()["choice"] == "ABCD"[wrong]
    ctl.do("next")
    ctl.do("answer_" + "abcd"[p.current().right])
    assert (p.json()["answered"], p.json()["correct"]) == (2, 1)
    # To revisit: what was answered wrong and what is not answered yet.
    assert q.chapter in p.json()["revisit"] and p.revisit()[0] == (q.chapter, [1] + [
        n for n, x in enumerate(p.questions(), 1) if n > 2 and x.chapter == q.chapter])


def test_class_mode_reveals_on_the_clicker():
    ctl = _ctl(mode="quiz")
    p = ctl.panel
    ctl.do("class_mode")
    q = p.current()
    ctl.do("answer_b")                     # the teacher marks the class's choice; nothing is revealed yet
    ctl.do("answer_c")                     # and may change it before the reveal
    assert p.json()["choice"] == "C" and not p.json()["revealed"]
    ctl.do("next")                         # PageDown reveals first
    assert p.json()["revealed"] and p.json()["question"] == 0 and p.json()["right"] == "ABCD"[q.right]
    ctl.do("next")                         # then moves on
    assert p.json()["question"] == 1 and not p.json()["revealed"]


def test_quiz_keys_do_not_blank_or_export_and_dot_still_blanks(capsys, tmp_path):
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "quiz", script=["b", "c"])
    assert not st["blank"] and st["exports"] == [] and st["quiz"]["choice"] == "B"
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "quiz", script=["."])
    assert st["blank"]
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "quiz", script=["[3]"])
    assert st["quiz"]["choice"] == "C"                 # the number pad answers; the top row still switches mode
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "quiz", script=["3"])
    assert st["mode"] == "step"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_quiz_taken_start_to_finish_by_script(capsys, tmp_path, lang):
    """The whole quiz through the real window: every other answer right, the score and the summary add up, the
    answers are saved as a CSV file (UTF-8 with a BOM) that says the same."""
    ctl = Controller(AppSettings(language=lang), persist=False, scripted=True)
    qs = quiz.build(quiz.snapshot(ctl), lang)
    script, right = ["7"], 0
    for n, q in enumerate(qs):
        k = q.right if n % 2 == 0 else (q.right + 1) % 4
        right += k == q.right
        script += ["abcd"[k], "page down"]
    script += ["w"]
    st = run_app(capsys, tmp_path, "--no-save", "--lang", lang, script=script)
    qz = st["quiz"]
    assert (qz["question"], qz["of"], qz["answered"], qz["correct"]) == (len(qs), len(qs), len(qs), right)
    assert qz["choice"] is None and qz["revisit"] == sorted({q.chapter for n, q in enumerate(qs) if n % 2})
    (path,) = [p for p in st["exports"] if "quiz" in p]
    raw = open(path, "rb").read()
    assert raw.startswith(b"\xef\xbb\xbf")
    rows = list(csv.DictReader(open(path, encoding="utf-8-sig")))
    assert [r["question_id"] for r in rows] == [q.id for q in qs]
    assert sum(r["correct"] == "1" for r in rows) == right
    assert all(r["language"] == lang for r in rows)
    assert rows[0]["right_text"] == qs[0].options[qs[0].right]


def test_run_json_has_the_quiz_keys(capsys, tmp_path):
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "quiz")
    assert {"question", "of", "answered", "correct", "choice", "right", "chapter"} <= set(st["quiz"])
    assert st["quiz"]["question"] == 0 and st["quiz"]["answered"] == 0 and st["quiz"]["choice"] is None


def test_handout_is_one_page_png_and_pdf(tmp_path, capsys):
    from app.cli import main
    out = tmp_path / "h.png"
    assert main(["handout", "--lang", "zh", "--out", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["files"] == [str(out), str(tmp_path / "h.pdf")]
    from PIL import Image
    with Image.open(out) as im:
        assert im.size == (1240, 1754)
        ink = np.asarray(im.convert("L"))
    assert (ink < 128).mean() > 0.01                 # text on the page
    assert (tmp_path / "h.pdf").read_bytes().startswith(b"%PDF")
    assert main(["handout", "--out", str(tmp_path / "h.txt")]) == 2


def test_handout_numbers_are_the_models():
    from app.lesson import handout
    from models import analytics
    ctl, snap = _snap()
    f = handout.facts(snap)
    a = snap.facts.alpha
    assert f["alpha"] == f"{a:.3f}" and f["tpp"] == f"{analytics.tokens_per_pass_formula(a, snap.lab['gamma']):.2f}"
    text = " ".join(t for _, t in handout.blocks(snap, "en"))
    assert f["tps1"] in text and f["overlap"] in text
    assert set(LAB_FIELDS) <= set(snap.lab)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_handout_labels_alpha_as_the_long_runs_and_gives_the_batch_with_its_cache(lang):
    """The printed page must not teach what chapters 4 and 7 correct: its α is the pair's long run (the number of
    tokens counted is beside it), not "the run on the table" (whose count, kept/tested, differs); it carries
    chapter 2's punchline (the batch of 64 with its KV cache, from the roofline at chapter 2's context), and it
    defines the draft without its own name."""
    import re

    from app import derived
    from app.lesson import handout
    from app.lesson.tour import CHAPTERS, chapter_index
    from models import analytics
    ctl, snap = _snap()
    text = " ".join(t for _, t in handout.blocks(snap, lang))
    f = handout.facts(snap)
    assert f["long_tokens"] == f"{snap.facts.tokens:,}" and f["long_tokens"] in text
    # the α sentence names the long run, never the table's text
    alpha_sentence = next(s for s in re.split(r"(?<=。)|(?<=\.)\s+", text) if f"α = {f['alpha']}" in s)
    assert ("long run" if lang == "en" else "长程运行") in alpha_sentence, alpha_sentence
    assert ("table's text" if lang == "en" else "台上这段文字的接受率") not in text
    run = analytics.count_run(snap.run.traces)
    assert f"{run.accepted / run.tested:.3f}" != f["alpha"]       # the two really differ on the default run
    ctx = CHAPTERS[chapter_index("02-batching")].params["context"]
    kv = derived.roofline(snap.lab["device"], snap.lab["model"], 64, ctx)
    assert f"{kv.tokens_per_s:,.0f}" in text and f"{ctx:,}" in text
    assert f["tps64kv"] != f["tps64"]
    words = next(t for k, t in handout.blocks(snap, lang) if t.startswith(("target", "大模型（")))
    draft = words.split("draft (小模型):")[1].split(".")[0] if lang == "en" else words.split("小模型（draft）：")[1].split("。")[0]
    assert "小模型" not in draft and "draft" not in draft, draft          # not circular
    assert "thread(s)" not in text


def test_the_handout_and_the_lesson_plan_quote_the_programs_numbers():
    """docs/HANDOUT.md and docs/TEACHING.md state the default settings' figures: they are what the program
    computes (a change to the models or the hardware model that moves them fails here, not in a classroom)."""
    from pathlib import Path

    from app.lesson import handout
    root = Path(__file__).resolve().parent.parent
    md = (root / "docs" / "HANDOUT.md").read_text(encoding="utf-8")
    plan = (root / "docs" / "TEACHING.md").read_text(encoding="utf-8")
    ctl = Controller(AppSettings(language="en", mode="lab"), persist=False, scripted=True).start()
    snap = quiz.snapshot(ctl)
    f = handout.facts(snap)
    for key in ("alpha", "tpp", "best_speedup", "gb", "ms", "tps1", "tps64", "overlap"):
        assert f[key] in md, key
    assert f"the best γ is {f['best']}" in md
    qs = {q.id: q for q in quiz.build(snap, "en")}
    for qid in handout.QUESTIONS:
        q = qs[qid]
        assert "   ".join(f"{quiz.LETTERS[k]} {o}" for k, o in enumerate(q.options)) in " ".join(md.split("\n"))
    # The plan's table is the shipped lesson's notes, filled by the screen's code (tests/test_app_lesson.py);
    # here: the handout's figures and the plan's are the same numbers.
    for text in (f["gb"] + " GB", f["ms"] + " ms", f"at most {f['tps1']} tokens/s", f"{f['tps64']} tokens/s",
                 f"best γ = {f['best']} at c = 0.1: {f['best_speedup']}"):
        assert text in plan, text


def test_a_chapter_inserted_mid_tour_moves_no_question(monkeypatch):
    """Questions name their chapter by slug (the recipe "add a chapter" in docs/ARCHITECTURE.md): with a chapter
    inserted before the third, every question still points at the chapter it pointed at, one place further on."""
    from dataclasses import replace

    from app.lesson import tour
    _, snap = _snap()
    before = {q.id: (q.chapter, CHAPTERS[q.chapter].slug, q.show) for q in quiz.build(snap, "en")}
    extra = replace(CHAPTERS[2], slug="03-an-inserted-chapter")
    monkeypatch.setattr(tour, "CHAPTERS", CHAPTERS[:2] + (extra,) + CHAPTERS[2:])
    after = {q.id: q for q in quiz.build(snap, "en")}
    assert set(after) == set(before)
    for qid, (index, slug, show) in before.items():
        q = after[qid]
        assert tour.CHAPTERS[q.chapter].slug == slug
        assert q.chapter == index + (index >= 2)
        if show.mode == "tour":
            assert tour.CHAPTERS[q.show.chapter].slug == CHAPTERS[show.chapter].slug
