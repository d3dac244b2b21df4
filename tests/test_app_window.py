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
    from app.tour import CHAPTERS, narration
    pages = [len(narration(c.slug)["pages"]) for c in CHAPTERS]
    actions = [sum(1 for p in narration(c.slug)["pages"] if p.get("action")) for c in CHAPTERS]
    beats_ch1 = pages[0] + actions[0]            # text pages plus one extra beat per action page
    state = run_app(capsys, tmp_path, "--mode", "tour", "--chapter", "1", "--no-save",
                    script=["page down"] * beats_ch1)
    assert (state["chapter"], state["page"]) == (1, 0)
    state = run_app(capsys, tmp_path, "--mode", "tour", "--chapter", "1", "--no-save",
                    script=["page down"] * beats_ch1 + ["page up"])
    assert (state["chapter"], state["page"]) == (0, pages[0] - 1)
    # Space is 'next' too, and an action page first runs its action, then moves on.
    first_action = next(i for i, p in enumerate(narration(CHAPTERS[0].slug)["pages"]) if p.get("action"))
    state = run_app(capsys, tmp_path, "--mode", "tour", "--chapter", "1", "--no-save",
                    script=["space"] * (first_action + 1))
    assert (state["page"], state["acted"]) == (first_action, True)


def test_checkpoint_predicts_then_reveals(capsys, tmp_path):
    from app.tour import CHAPTERS, narration
    ch = next(i for i, c in enumerate(CHAPTERS) if any((p.get("action") or {}).get("do") == "checkpoint"
                                                           for p in narration(c.slug)["pages"]))
    pages = narration(CHAPTERS[ch].slug)["pages"]
    k = next(i for i, p in enumerate(pages) if (p.get("action") or {}).get("do") == "checkpoint")
    beats = k + sum(1 for p in pages[:k] if p.get("action"))
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
    # frame 0 lays out, frame 1 starts the wait (it counts), frames 2-5 wait, then the run ends: 6 frames
    state = run_app(capsys, tmp_path, "--no-save", script=["wait 5"], frames=2)
    assert state["frames"] == 6


def test_lab_runs_the_given_prompt_and_seed(capsys, tmp_path):
    a = run_app(capsys, tmp_path, "--no-save", "--mode", "lab", "--prompt", "孔乙", "--seed", "11")
    b = run_app(capsys, tmp_path, "--no-save", "--mode", "lab", "--prompt", "孔乙", "--seed", "12")
    assert a["text"].startswith("孔乙") and a["tokens_written"] >= 12 and a["error"] is None
    assert a["text"] != b["text"]
