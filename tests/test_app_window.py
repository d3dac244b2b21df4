"""The real window loop under SDL offscreen: every mode opens, the clicker keys move the tour, classroom keys work."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from app_helpers import run_app

MODES = ("tour", "lab", "step", "tubes", "exploded", "hardware")


@pytest.fixture(autouse=True)
def private_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SDL_VIDEODRIVER", "offscreen")


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_opens_and_draws(capsys, tmp_path, mode):
    shot = tmp_path / f"{mode}.png"
    state = run_app(capsys, tmp_path, "--mode", mode, "--screenshot", str(shot), "--no-save")
    assert state["mode"] == mode
    img = np.asarray(Image.open(shot).convert("RGB"))
    assert img.shape == (270, 480, 3)
    # Panels were drawn: the frame is not one flat colour.
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 20


def test_clicker_keys_walk_the_tour_forward_and_back(capsys, tmp_path):
    from app.lesson.tour import CHAPTERS, narration
    pages = [len(narration(c.slug).pages) for c in CHAPTERS]
    actions = [sum(1 for p in narration(c.slug).pages if p.action) for c in CHAPTERS]
    beats_ch1 = pages[0] + actions[0]            # text pages plus one extra beat per action page
    state = run_app(capsys, tmp_path, "--mode", "tour", "--chapter", "1", "--no-save",
                    script=["page down"] * beats_ch1)
    assert (state["chapter"], state["page"]) == (1, 0)
    state = run_app(capsys, tmp_path, "--mode", "tour", "--chapter", "1", "--no-save",
                    script=["page down"] * beats_ch1 + ["page up"])
    assert (state["chapter"], state["page"]) == (0, pages[0] - 1)
    # Space is 'next' too, and an action page first runs its action, then moves on.
    first_action = next(i for i, p in enumerate(narration(CHAPTERS[0].slug).pages) if p.action)
    state = run_app(capsys, tmp_path, "--mode", "tour", "--chapter", "1", "--no-save",
                    script=["space"] * (first_action + 1))
    assert (state["page"], state["acted"]) == (first_action, True)


def test_checkpoint_predicts_then_reveals(capsys, tmp_path):
    from app.lesson.tour import CHAPTERS, narration
    ch = next(i for i, c in enumerate(CHAPTERS) if any(p.action is not None and p.action.do == "checkpoint"
                                                           for p in narration(c.slug).pages))
    pages = narration(CHAPTERS[ch].slug).pages
    k = next(i for i, p in enumerate(pages) if p.action is not None and p.action.do == "checkpoint")
    beats = k + sum(1 for p in pages[:k] if p.action)
    before = run_app(capsys, tmp_path, "--chapter", str(ch + 1), "--mode", "tour", "--no-save",
                     script=["page down"] * beats)
    assert (before["page"], before["acted"]) == (k, False)
    after = run_app(capsys, tmp_path, "--chapter", str(ch + 1), "--mode", "tour", "--no-save",
                    script=["page down"] * (beats + 1))
    assert (after["page"], after["acted"]) == (k, True)


def test_classroom_keys(capsys, tmp_path):
    state = run_app(capsys, tmp_path, "--no-save", script=["b", "l", "?", "f11", "p", "f9", "+", "m"])
    assert state["blank"] and state["help"] and state["fullscreen"] and state["paused"]
    assert state["language"] == "en" and state["palette"] == "projector" and state["ui_scale"] > 1.0
    assert state["reduced_motion"]
    # '.' also blanks, and a clicker key brings the picture back without moving the lesson.
    state = run_app(capsys, tmp_path, "--no-save", "--mode", "tour", "--chapter", "1", script=[".", "page down"])
    assert not state["blank"] and state["page"] == 0
    state = run_app(capsys, tmp_path, "--no-save", script=["."])
    assert state["blank"]


def test_blank_screen_is_black(capsys, tmp_path):
    shot = tmp_path / "blank.png"
    run_app(capsys, tmp_path, "--no-save", "--screenshot", str(shot), script=["b"])
    img = np.asarray(Image.open(shot).convert("RGB"))
    assert img.max() == 0


def test_language_switch_changes_the_picture(capsys, tmp_path):
    a, b = tmp_path / "zh.png", tmp_path / "en.png"
    run_app(capsys, tmp_path, "--no-save", "--lang", "zh", "--screenshot", str(a))
    run_app(capsys, tmp_path, "--no-save", "--lang", "zh", "--screenshot", str(b), script=["l"])
    assert not np.array_equal(np.asarray(Image.open(a)), np.asarray(Image.open(b)))


def test_mode_keys_switch_modes(capsys, tmp_path):
    state = run_app(capsys, tmp_path, "--no-save", "--mode", "tour", script=["3"])
    assert state["mode"] == "step"
    state = run_app(capsys, tmp_path, "--no-save", "--mode", "tour", script=["6", "4"])
    assert state["mode"] == "tubes"


def test_settings_persist_between_runs(capsys, tmp_path):
    run_app(capsys, tmp_path, "--lang", "zh", script=["l", "f9", "2"])
    state = run_app(capsys, tmp_path)
    assert state["language"] == "en" and state["palette"] == "projector" and state["mode"] == "lab"
    assert (tmp_path / "config" / "spectable" / "settings.json").is_file()


def test_script_waits_count_frames(capsys, tmp_path):
    # frame 0 lays out, frame 1 starts the wait (it counts), frames 2-5 wait, frame 6 delivers 'l'
    state = run_app(capsys, tmp_path, "--no-save", "--lang", "zh", script=["wait 5", "l"], frames=7)
    assert state["frames"] == 7 and state["language"] == "en"
    state = run_app(capsys, tmp_path, "--no-save", "--lang", "zh", script=["wait 5", "l"], frames=6)
    assert state["frames"] == 6 and state["language"] == "zh"       # the run ended before the key came


def test_a_long_wait_never_outlasts_frames(capsys, tmp_path):
    """--frames is the run's length: no wait in a key script keeps the window open longer."""
    state = run_app(capsys, tmp_path, "--no-save", script=["wait 999999999999", "l"], frames=3)
    assert state["frames"] == 3 and state["language"] == "zh"


def test_lab_runs_the_given_prompt_and_seed(capsys, tmp_path):
    a = run_app(capsys, tmp_path, "--no-save", "--mode", "lab", "--prompt", "孔乙", "--seed", "11")
    b = run_app(capsys, tmp_path, "--no-save", "--mode", "lab", "--prompt", "孔乙", "--seed", "12")
    assert a["text"].startswith("孔乙") and a["tokens_written"] >= 12 and a["error"] is None
    assert a["text"] != b["text"]


def test_tour_lights_the_lanes_each_chapter_talks_about(capsys, tmp_path):
    """Chapters 1-2 (and 11's sequences: one lane first, then nine) run the target alone: lanes lit = the batch.
    Chapter 3 opens on that one lane (the idle arithmetic it asks about), then the target checks γ guesses: lanes
    lit = batch × (γ + 1)."""
    for chapter, decoder, lanes in ((1, "target", 1), (2, "target", 64), (3, "target", 1), (11, "target", 1)):
        st = run_app(capsys, tmp_path, "--no-save", "--mode", "tour", "--chapter", str(chapter))
        assert (st["decoder"], st["lanes_lit"]) == (decoder, lanes), chapter
    # chapter 3's second page (after the first page's text and its action): the draft joins, five lanes
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "tour", "--chapter", "3", script=["page down"] * 2)
    assert (st["decoder"], st["lanes_lit"]) == ("speculative", 5)
    # Chapter 2 walked into from chapter 1 with the clicker, too.
    from app.lesson.tour import narration
    pages = narration("01-one-token").pages
    beats = len(pages) + sum(1 for p in pages if p.action)
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "tour", "--chapter", "1", script=["page down"] * beats)
    assert (st["chapter"], st["decoder"], st["lanes_lit"], st["settings"]["lanes"]) == (1, "target", 64, 64)


def test_tour_parameters_never_overwrite_the_lab(capsys, tmp_path):
    import json
    cfg = tmp_path / "config" / "spectable"
    cfg.mkdir(parents=True)
    path = cfg / "settings.json"
    path.write_text(json.dumps({"mode": "lab", "gamma": 7, "lanes": 3, "context": 100, "tube_rule": "no_bonus"}))
    # Into the tour at chapter 2 (64 lanes, context 4,096, γ 4); the program ends there and saves.
    st = run_app(capsys, tmp_path, "--chapter", "2", script=["1"])
    assert st["mode"] == "tour" and st["settings"]["lanes"] == 64 and st["lab"]["lanes"] == 3
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert (saved["mode"], saved["gamma"], saved["lanes"], saved["context"]) == ("tour", 7, 3, 100)
    assert saved["tube_rule"] == "draft_only"
    # Next start: in the tour again; leaving it for the lab brings the lab's own values back.
    st = run_app(capsys, tmp_path, script=["2"])
    assert st["mode"] == "lab" and st["decoder"] == "speculative"
    assert (st["settings"]["gamma"], st["settings"]["lanes"], st["settings"]["context"]) == (7, 3, 100)
    assert st["lanes_lit"] == 3 * (7 + 1)


def test_tube_switches_step_through_exact_skip_bonus_and_wrong_rules(capsys, tmp_path):
    seen = []
    for n in range(7):
        st = run_app(capsys, tmp_path, "--no-save", "--mode", "tubes", script=["page down"] * n if n else None)
        seen.append((st["tube_rule"], st["skip_bonus"]))
    # The wrong rules first (the demonstration), the exact rule without its bonus token last.
    assert seen == [("exact", False), ("resample_from_p", False), ("exact_match_only", False),
                    ("draft_only", False), ("typical", False), ("exact", True), ("exact", False)]


def test_json_reports_the_beat_and_the_facts_on_screen(capsys, tmp_path):
    """spectable run --json: `beat` (the framed parts, the share of each in the frame and in view: not behind another
    part, the parts the UI covers) and
    `facts` (every number the beat shows, as shown) from the real window, here ch. 5's checkpoint revealed."""
    from app.lesson.tour import narration
    pages = narration("05-acceptance-rule").pages
    k = next(i for i, p in enumerate(pages) if p.action is not None and p.action.do == "checkpoint")
    beats = k + sum(1 for p in pages[:k] if p.action) + 1
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "tour", "--chapter", "5", "--lang", "en",
                 script=["page down"] * beats + ["wait 45"])
    assert (st["page"], st["acted"]) == (k, True)
    beat = st["beat"]
    assert beat["parts"] == list(pages[k].action.parts or pages[k].parts) and beat["covered"] == []
    assert all(beat["in_frame"][p] >= 0.98 for p in beat["parts"]) and beat["hidden_behind"] == []
    assert all(0.5 <= beat["in_view"][p] <= beat["in_frame"][p] for p in beat["parts"])     # depth counted too
    f = st["facts"]
    assert f["check_pass"] == "2" and float(f["check_ratio"]) < 1 and f["check_verdict"] in ("accepted", "rejected")
    assert 0 <= float(f["check_r"]) < 1 and f["hud_pass"] == "2/12" and f["check_p"] != "?"
    lab = run_app(capsys, tmp_path, "--no-save", "--mode", "lab")
    assert lab["beat"] is None and {"alpha", "tpp_counted", "busy_spec"} <= set(lab["facts"])


def test_the_hud_counts_lanes_only_once_the_lesson_has_named_them(capsys, tmp_path):
    """Ch. 1 plays a pass of the target alone with no lane count in the HUD (lanes come in ch. 2); ch. 2 counts
    them; leaving the tour gives the HUD its count back."""
    one = run_app(capsys, tmp_path, "--no-save", "--mode", "tour", "--chapter", "1", "--lang", "en",
                  script=["page down", "page down", "wait 60"])
    assert one["facts"].get("hud_pass") and "hud_lanes_lit" not in one["facts"]
    two = run_app(capsys, tmp_path, "--no-save", "--mode", "tour", "--chapter", "2", "--lang", "en",
                  script=["page down", "wait 60"])
    assert two["facts"].get("hud_lanes_lit") == "64"


def test_run_json_reports_each_label(capsys, tmp_path):
    """`run --json` reports every name drawn on the table: its plate, the anchor its leader ends at on the part,
    and the part's screen box (the scene tests check the same rules offscreen: tests/test_scene_label_anchors.py).
    (Here, not beside those: a window opened in that file would take the shared offscreen context with it.)"""
    from test_scene_label_anchors import _check
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "lab", "--lang", "en", "--pair", "ngram", "--size", "1280x720")
    labels = st["labels"]
    assert {"part", "box", "anchor", "part_box"} <= set(labels[0])
    _check([(d["part"], d["box"], d["anchor"], d["part_box"]) for d in labels], 6)
