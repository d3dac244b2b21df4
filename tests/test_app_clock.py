"""One clock: everything that moves (timeline, camera flights, the exploded lift) advances from the frames' fixed dt,
so a scripted run gives the same pixels every time, on any machine and under load, mid camera move included.
(The stage-level test is tests/test_scene_camera.py: scene tests share one headless GL context.)"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from app_helpers import run_app

# Chapter 3's first page frames the big drum and the mill; its action frames the small drum and the tape: the camera
# flies there (and the pass plays on the same clock).
SCRIPT = ["page down"]
MID_FLIGHT = 1 + len(SCRIPT) + 4          # four frames into a 0.7 s (21-frame) flight


@pytest.fixture(autouse=True)
def private_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SDL_VIDEODRIVER", "offscreen")


def _shot(capsys, tmp_path, name, frames, busy=False) -> np.ndarray:
    path = tmp_path / f"{name}.png"
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)] if busy else []
    try:
        state = run_app(capsys, tmp_path, "--no-save", "--mode", "tour", "--chapter", "3", "--screenshot", str(path),
                        script=SCRIPT, frames=frames)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert (state["page"], state["acted"]) == (0, True)
    return np.asarray(Image.open(path).convert("RGB"))


def test_scripted_frames_are_the_same_bit_for_bit_mid_camera_move(capsys, tmp_path):
    quiet = _shot(capsys, tmp_path, "quiet", MID_FLIGHT)
    loaded = _shot(capsys, tmp_path, "loaded", MID_FLIGHT, busy=True)     # the CPU busy with two other loops
    assert np.array_equal(quiet, loaded)
    # It is mid-flight: neither where the camera left nor where it lands.
    before = _shot(capsys, tmp_path, "before", 1 + len(SCRIPT))
    landed = _shot(capsys, tmp_path, "landed", MID_FLIGHT + 30)
    moved = lambda a, b: int((np.abs(a.astype(int) - b.astype(int)).max(axis=2) > 0).sum())  # noqa: E731
    assert moved(quiet, before) > 2000 and moved(quiet, landed) > 2000
