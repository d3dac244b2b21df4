"""Bad environments and bad input: one clear line, exit code 2; a corrupt settings file is set aside."""
from __future__ import annotations

import json

import pytest

from app_helpers import SIZE, run_subprocess

RUN = ["run", "--frames", "1", "--size", SIZE, "--no-save"]


def _one_line_exit_2(proc):
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("spectable: error:"), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_no_display_exits_2(tmp_path):
    line = _one_line_exit_2(run_subprocess(RUN, {"SDL_VIDEODRIVER": None, "DISPLAY": None,
                                                 "WAYLAND_DISPLAY": None}, tmp_path))
    assert "display" in line


def test_no_gl_exits_2(tmp_path):
    line = _one_line_exit_2(run_subprocess(RUN, {"SDL_VIDEODRIVER": "dummy"}, tmp_path))
    assert "OpenGL" in line


def test_gl_library_missing_exits_2(tmp_path):
    line = _one_line_exit_2(run_subprocess(RUN, {"SDL_VIDEODRIVER": "offscreen",
                                                 "SDL_VIDEO_EGL_DRIVER": str(tmp_path / "no-libEGL.so")}, tmp_path))
    assert "OpenGL" in line


def test_missing_font_exits_2(tmp_path):
    line = _one_line_exit_2(run_subprocess(RUN, {"SDL_VIDEODRIVER": "offscreen",
                                                 "SPECTABLE_FONT": str(tmp_path / "gone.otf")}, tmp_path))
    assert "font" in line


def test_bad_script_and_bad_arguments_exit_2(tmp_path):
    bad = tmp_path / "keys.txt"
    bad.write_text("page down\nnot-a-key\n")
    _one_line_exit_2(run_subprocess(RUN + ["--script", str(bad)], {"SDL_VIDEODRIVER": "offscreen"}, tmp_path))
    _one_line_exit_2(run_subprocess(RUN + ["--size", "big"], {"SDL_VIDEODRIVER": "offscreen"}, tmp_path))
    _one_line_exit_2(run_subprocess(RUN + ["--chapter", "13"], {"SDL_VIDEODRIVER": "offscreen"}, tmp_path))
    line = _one_line_exit_2(run_subprocess(RUN + ["--prompt", "§§"], {"SDL_VIDEODRIVER": "offscreen"}, tmp_path))
    assert "§" in line


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"gamma": "many"}', '{"gamma": Infinity}',
                                     '{"chapter": 1e400}'])
def test_corrupt_settings_are_set_aside(tmp_path, content):
    folder = tmp_path / "config" / "spectable"
    folder.mkdir(parents=True)
    (folder / "settings.json").write_text(content)
    proc = run_subprocess(["run", "--frames", "1", "--size", SIZE, "--json"], {"SDL_VIDEODRIVER": "offscreen"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "set aside" in proc.stderr
    aside = list(folder.glob("settings.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == content
    # The run then saved good settings in its place.
    assert json.loads((folder / "settings.json").read_text())["language"] in ("zh", "en")
    assert "set aside" in " ".join(json.loads(proc.stdout)["messages"])


def test_a_saved_seed_too_large_for_the_lab_is_clamped_and_the_lab_draws(tmp_path):
    folder = tmp_path / "config" / "spectable"
    folder.mkdir(parents=True)
    (folder / "settings.json").write_text(json.dumps({"mode": "lab", "seed": 2**31, "top_k": 10**12,
                                                      "window_w": 10**9, "window_h": 10**9}))
    proc = run_subprocess(["run", "--frames", "2", "--size", SIZE, "--json"], {"SDL_VIDEODRIVER": "offscreen"},
                          tmp_path)
    assert proc.returncode == 0, proc.stderr
    state = json.loads(proc.stdout)
    assert state["mode"] == "lab" and state["settings"]["seed"] == 2**31 - 1 and state["stage"]
    saved = json.loads((folder / "settings.json").read_text())
    assert saved["seed"] == 2**31 - 1 and saved["window_w"] <= 8192 and saved["window_h"] <= 8192


def test_bare_spectable_without_display_exits_2(tmp_path):
    line = _one_line_exit_2(run_subprocess([], {"SDL_VIDEODRIVER": None, "DISPLAY": None, "WAYLAND_DISPLAY": None},
                                           tmp_path))
    assert "display" in line


@pytest.mark.parametrize("extra, needle", [
    (["--seed", "-1"], "--seed"),
    (["--seed", "2147483648"], "2147483647"),        # more than ImGui's int input holds: refused, never saved
    (["--gamma", "13"], "--gamma"),
    (["--prompt", ""], "--prompt"),
    (["--script", "{tmp}/keys-bad-wait.txt"], "line 2"),
    (["--script", "{tmp}/keys-latin1.txt"], "not UTF-8"),
    (["--screenshot", "{tmp}/plain-file.txt/shot.png"], "is a file, not a folder"),
])
def test_bad_run_options_exit_2(tmp_path, extra, needle):
    (tmp_path / "keys-latin1.txt").write_bytes(b"\xff\xfe\xfa bad \x80\n")
    (tmp_path / "keys-bad-wait.txt").write_text("space\nwait -3\n")
    (tmp_path / "plain-file.txt").write_text("x")
    argv = RUN + [a.replace("{tmp}", str(tmp_path)) for a in extra]
    line = _one_line_exit_2(run_subprocess(argv, {"SDL_VIDEODRIVER": "offscreen"}, tmp_path))
    assert needle in line
