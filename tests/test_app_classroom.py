"""The rough edges a class hits: the tubes' speed and round, the HUD, the window's title, icon and fullscreen,
the last tour page, the CLI's words and help, and the documentation's links."""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from app_helpers import ROOT, run_app


@pytest.fixture(autouse=True)
def private_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SDL_VIDEODRIVER", "offscreen")


# ---- the tubes ---------------------------------------------------------------------------------------
def _tubes_app():
    from app.controller import Controller
    from app.settings import AppSettings
    from app.window import App
    ctl = Controller(AppSettings(language="en", mode="tubes"), persist=False, scripted=True)
    return ctl, App(ctl, size=(960, 540))


def test_tube_speed_keys_and_every_view_of_the_round_agree():
    from app.window import FIXED_DT
    from scenes.tubes import chosen_characters
    ctl, app = _tubes_app()
    try:
        app.draw_frame(FIXED_DT)             # the first frame hands the run (and its timeline) to the table
        panel, tl = ctl.panel, ctl.driver.timeline
        moved = []
        for name in ("x1", "x10", "x100"):
            start = tl.t
            for _ in range(6):
                app.draw_frame(FIXED_DT)
            moved.append(tl.t - start)
            assert panel.speed_name() == name
            ctl.do("tubes_faster")
        assert moved[0] == pytest.approx(0.2, abs=0.02)            # six frames of 1/30 s
        assert moved[1] == pytest.approx(10 * moved[0], rel=0.05) and moved[2] == pytest.approx(100 * moved[0], rel=0.05)
        assert panel.speed_name() == "instant"
        app.draw_frame(FIXED_DT)
        res = ctl.tubes()
        assert tl.state_at().tube_round == res.rounds - 1          # every round at once
        ctl.do("tubes_slower")
        ctl.do("tubes_slower")
        assert panel.speed_name() == "x10"
        # Whatever the round, the rack's readouts and the side table read the same cumulative counts.
        ctl.driver.play(37.3)
        app.draw_frame(FIXED_DT)
        k = panel.round_shown(res)
        assert k == tl.state_at().tube_round
        stage = ctl.driver.stage
        _, _, rack_freq = stage.tubes.counts(1, k)
        cum = np.asarray(res.right_cumulative[k], float)
        ids = chosen_characters(res)
        assert np.allclose(rack_freq[:len(ids)], cum[ids] / cum.sum())
        assert f"round {k + 1} of {res.rounds} · {res.draws} draws a tube  ·  ×10" in stage.hud_text
        # Leaving the mode puts the table's clock back to its own speed.
        ctl.set_mode("lab")
        assert ctl.driver.timeline.speed == 1.0
    finally:
        app.close()


def test_tube_speed_from_the_keyboard(capsys, tmp_path):
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "tubes", script=["]", "]", "]"])
    assert st["tube_speed"] == "instant"
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "tubes", script=["]", "[", "["])
    assert st["tube_speed"] == "x1"


# ---- the window ---------------------------------------------------------------------------------------
def test_window_title_and_icon():
    import pygame

    from app.controller import Controller
    from app.settings import AppSettings
    from app.window import App
    ctl = Controller(AppSettings(), persist=False, scripted=True)
    app = App(ctl, size=(480, 270))
    try:
        assert pygame.display.get_caption()[0] == "铸铁台 · spectable"
    finally:
        app.close()
    icon = pygame.image.load(str(ROOT / "assets" / "icon.png"))
    assert icon.get_size() == (64, 64)


def test_a_late_resize_to_the_fullscreen_size_is_undone_and_never_saved():
    """Back from fullscreen, a window manager reports the fullscreen size once more: the window goes back to its
    size from before fullscreen, and no size larger than the display is saved."""
    import pygame

    from app.controller import Controller
    from app.settings import AppSettings
    from app.window import App
    ctl = Controller(AppSettings(window_w=800, window_h=450), persist=False, scripted=True)
    app = App(ctl, size=(800, 450))
    try:
        desk = (1920, 1080)
        app.display.desktop_size = lambda pg: desk
        app.display.windowed_size, app.display._restoring = (800, 450), 30
        app.handle_event(pygame.event.Event(pygame.VIDEORESIZE, w=1920, h=1080, size=(1920, 1080)))
        assert (app.fb_w, app.fb_h) == (800, 450) and (ctl.settings.window_w, ctl.settings.window_h) == (800, 450)
        # A resize the user makes is kept; one past the display is saved at the display's size.
        app.handle_event(pygame.event.Event(pygame.VIDEORESIZE, w=700, h=400, size=(700, 400)))
        assert (ctl.settings.window_w, ctl.settings.window_h) == (700, 400)
        desk = (640, 360)
        app.handle_event(pygame.event.Event(pygame.VIDEORESIZE, w=1000, h=600, size=(1000, 600)))
        assert (ctl.settings.window_w, ctl.settings.window_h) == (640, 360)
    finally:
        app.close()


@pytest.mark.skipif(not (shutil.which("xvfb-run") and shutil.which("openbox")),
                    reason="needs Xvfb and a window manager (apt-get install xvfb xauth openbox)")
def test_f11_twice_under_a_window_manager_restores_size_and_position(tmp_path):
    script = tmp_path / "keys.txt"
    script.write_text("f11\nwait 15\nf11\nwait 15\n", encoding="utf-8")
    still = tmp_path / "still.txt"
    still.write_text("wait 30\n", encoding="utf-8")
    sh = tmp_path / "run.sh"
    sh.write_text("openbox >/dev/null 2>&1 & sleep 1.5\n"
                  f"for s in {still} {script}; do {sys.executable} -m app run --no-save --frames 40 --size 1000x600 "
                  "--mode exploded --json --script $s | tail -1; done\nkill %1\n", encoding="utf-8")
    env = {k: v for k, v in __import__("os").environ.items() if k != "SDL_VIDEODRIVER"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    out = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24", "bash", str(sh)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=180)
    before, after = (json.loads(line) for line in out.stdout.strip().splitlines()[-2:])
    assert after["fullscreen"] is False and after["framebuffer"] == before["framebuffer"] == [1000, 600]
    assert after["window_position"] == before["window_position"]


def test_the_last_tour_page_says_the_tour_has_ended(capsys, tmp_path):
    from app.lesson.tour import CHAPTERS, narration
    pages = narration(CHAPTERS[-1].slug).pages
    beats = len(pages) + sum(1 for p in pages if p.action) - 1
    st = run_app(capsys, tmp_path, "--no-save", "--lang", "en", "--mode", "tour", "--chapter", str(len(CHAPTERS)),
                 script=["page down"] * beats)
    assert (st["chapter"], st["page"]) == (len(CHAPTERS) - 1, len(pages) - 1)
    from app.i18n import Strings
    assert "end of the tour" in Strings("en")("tour.cue_end") and "PageDown" not in Strings("en")("tour.cue_end")


def test_gif_default_length_is_what_help_and_readme_say(capsys, tmp_path):
    """No --gif-seconds: the replay is the run's first two target passes (the README and run --help say so)."""
    from app.cli import build_parser
    run = next(a for a in build_parser()._subparsers._group_actions[0].choices["run"]._actions
               if "--gif-seconds" in a.option_strings)
    assert "first two target passes" in run.help and "30 s" in run.help
    assert "first two target passes, at most 30 s" in (ROOT / "README.md").read_text(encoding="utf-8")
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "lab", "--gif-fps", "4", script=["g"])
    gif = next(p for p in st["exports"] if p.endswith(".gif"))
    from PIL import Image

    from app.controller import Controller
    from app.settings import AppSettings
    from scenes.timeline import Timeline, Timing
    ctl = Controller(AppSettings(mode="lab"), persist=False, scripted=True).start()
    tl = Timeline(list(ctl.session.ensure().traces), timing=Timing(cost_ratio=0.1))
    with Image.open(gif) as im:
        total = 0
        for i in range(im.n_frames):
            im.seek(i)
            total += im.info["duration"]
    assert abs(total / 1000 - min(30.0, tl.step_end(1))) <= 0.26      # one frame at 4 frames/s


# ---- the command line ---------------------------------------------------------------------------------
def test_every_option_has_help():
    from app.cli import build_parser
    missing = []

    def walk(parser, path):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, path + [name])
            elif a.help is None and not isinstance(a, argparse._HelpAction):
                missing.append(" ".join(path + [a.option_strings[0] if a.option_strings else a.dest]))
    walk(build_parser(), [])
    assert missing == []


def test_tokens_means_a_count_and_the_old_tokenizer_spelling_still_works(capsys, tmp_path):
    from app.cli import main
    assert main(["render", "--view", "tape", "--tokens-kind", "word", "--msaa", "0", "--size", "320x180",
                 "--out", str(tmp_path / "a.png")]) == 0
    assert main(["render", "--view", "tape", "--tokens", "word", "--msaa", "0", "--size", "320x180",
                 "--out", str(tmp_path / "b.png")]) == 0
    err = capsys.readouterr().err
    assert "--tokens-kind" in err and err.count("note") == 1
    assert np.array_equal(*(np.asarray(__import__("PIL.Image").Image.open(tmp_path / f)) for f in ("a.png", "b.png")))


def test_one_token_is_not_one_tokens(capsys):
    from app.cli import main
    assert main(["step", "--prefix", "孔乙", "--steps", "3", "--lang", "en", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "(1 tokens)" not in out and re.search(r"\(1 token\)|\([2-9] tokens\)", out)


# ---- the documentation --------------------------------------------------------------------------------
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_relative_link_resolves_and_none_leaves_the_repository():
    bad = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://|mailto:", target):
                continue
            path = target.split("#", 1)[0]
            if not path:
                continue
            resolved = (doc.parent / path).resolve()
            if not resolved.exists() or ROOT.resolve() not in resolved.parents:
                bad.append(f"{doc.name}: {target}")
    assert bad == []
    assert len(DOCS) >= 3


def test_the_docs_stand_alone():
    """Users have the repository, not the project's notes: no link or path outside it, no talk of issues."""
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        assert "../shared" not in text and "/work/" not in text, doc.name
        assert not re.search(r"\bissues?\b", text, re.IGNORECASE), doc.name


def test_readme_has_the_new_json_keys_and_the_quiz():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for key in ("`quiz`", "`min_text_px`", "`overlaps`", "`scrollbars`", "`clipped`", "`hidden_labels`",
                "`tube_speed`", "`window_position`", "`quiz_return`"):
        assert key in text, key
    assert "docs/TEACHING.md" in text


# ---- the teacher's notes on a screen of their own --------------------------------------------------------
def _notes_app(notes_window):
    from app.lesson import prepared as lessons
    from app.controller import Controller
    from app.settings import AppSettings
    from app.window import App
    ctl = Controller(AppSettings(language="en", mode="tour"), persist=False, scripted=True,
                     lesson=lessons.load_lesson("45-minutes"))
    return ctl, App(ctl, size=(960, 540), notes_window=notes_window)


def _ink(app) -> int:
    """Pixels of the notes window drawn in the note's own colour (its text, not the title or the page line)."""
    import pygame

    from app.notes_window import INK
    arr = pygame.surfarray.pixels3d(app.notes.window.get_surface())
    return int((np.abs(arr.astype(int) - np.array(INK)).sum(-1) < 60).sum())


def test_the_notes_window_shows_each_pages_note_and_the_help_overlay_then_leaves_it_out(monkeypatch):
    """With a notes window (a second display opens it by itself; --notes-window here, where there is one), the
    teacher's note of the page the class sees is drawn there and follows the pages; the help overlay, which the
    class sees, leaves it out; closing the notes window closes only it, and the overlay has the note again."""
    import pygame

    from app import ui
    from app.window import FIXED_DT
    shown = []
    monkeypatch.setattr(ui, "help_overlay", lambda scr, note=None: shown.append(note))
    ctl, app = _notes_app(True)
    try:
        seen = []
        for _ in range(6):
            app.draw_frame(FIXED_DT)
            seen.append((app.notes.shown[1], _ink(app)))
            ctl.do("next")
        notes = [(n, ink) for n, ink in seen if n]
        blank = [(n, ink) for n, ink in seen if not n]
        assert notes and blank
        assert all(ink > 2000 for _, ink in notes) and all(ink < 200 for _, ink in blank)   # the note is drawn
        while ctl.teacher_note() is None:
            ctl.do("next")
        app.draw_frame(FIXED_DT)
        assert app.notes.shown[1] == ctl.teacher_note() and app.state()["notes_window"]["note"] == ctl.teacher_note()
        ctl.help = True
        app.draw_frame(FIXED_DT)
        assert shown[-1] is None                     # the class's overlay does not show the teacher's note
        app.handle_event(pygame.event.Event(pygame.WINDOWCLOSE, window=app.notes.window))
        assert app.notes.closed and not ctl.quit
        app.draw_frame(FIXED_DT)
        assert shown[-1] == ctl.teacher_note()       # no notes window: the note is in the overlay (H) again
        assert app.state()["notes_window"] is None
    finally:
        app.close()


def test_without_a_second_display_the_notes_stay_in_the_help_overlay(capsys, tmp_path):
    ctl, app = _notes_app(None)                      # the offscreen driver has one display
    try:
        assert app.notes is None
    finally:
        app.close()
    st = run_app(capsys, tmp_path, "--no-save")     # `run` has no lesson: no notes window either
    assert st["notes_window"] is None


def test_open_with_the_notes_window_reports_what_it_shows(capsys, tmp_path):
    from app.cli import main
    capsys.readouterr()
    rc = main(["open", "45-minutes", "--notes-window", "--frames", "3", "--json", "--no-save", "--size", "480x270",
               "--export-dir", str(tmp_path), "--lang", "en"])
    st = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and st["notes_window"]["title"] == "chapter 1 of 12 · page 1 of 4"
