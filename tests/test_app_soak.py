"""A short soak (benchmarks/soak.py's schedule, two rounds): the real window through every mode, the classroom keys
and every export, twice. What the first round built (GL objects, file descriptors, ImGui textures) is all the
second one needs: it ends holding the same, makes few new GL objects and uploads glyphs no more; after close
nothing is left. Counts only, never time."""
from __future__ import annotations

import re

import pytest

from benchmarks.soak import run_soak

CYCLE = 126          # frames one round of every mode takes here, 18 a mode (the soak's default is 600)
SIZE = (480, 270)


@pytest.fixture(scope="module")
def soak(tmp_path_factory):
    return run_soak(frames=2 * CYCLE, cycle=CYCLE, size=SIZE, gif_seconds=0.5, quick=True,
                    export_dir=tmp_path_factory.mktemp("soak") / "out")


def _rounds(res):
    first, second, closed = res["samples"]
    assert (first["frame"], second["frame"], closed["closed"]) == (CYCLE, 2 * CYCLE, True)
    return first, second, closed


def test_every_mode_and_every_export_ran_in_each_round(soak):
    from app.modes import MODE_PANELS
    assert soak["stage_error"] is None
    kinds = {"screenshot": ".png", "plot-speedup": ".svg", "plot-tubes": ".png", "runlog": ".csv", "replay": ".gif",
             "quiz": ".csv"}
    for kind, ext in kinds.items():
        made = [f for f in soak["files"] if re.fullmatch(rf"spectable-{kind}-\d[-\d]*\{ext}", f)]
        assert len(made) == 2, (kind, soak["files"])          # once per round, complete under its final name
    assert not [f for f in soak["files"] if f.startswith(".")]  # no temp file left
    assert {s["mode"] for s in soak["samples"][:2]} <= set(MODE_PANELS)


def test_the_second_round_ends_holding_what_the_first_did(soak):
    """A texture, buffer or framebuffer made per frame (or per mode change) and not released shows here as a
    count that grows from one round to the next; so does a file left open by an export."""
    first, second, _ = _rounds(soak)
    assert second["gl"] == first["gl"], (first["gl"], second["gl"])
    assert second["fds"] <= first["fds"]
    assert second["imgui_textures"] == first["imgui_textures"]
    assert first["figures"] == second["figures"] == 0          # every matplotlib figure closed


def test_the_second_round_recreates_little_and_rebakes_no_glyphs(soak):
    """Churn, counted: the second round makes only the GIF export's own framebuffer, and at most regrows each
    cached backdrop once; the table's target, which only grows, is not made again for each size the panels
    leave it. Textures are written for plots that changed and glyphs never drawn before: the ImGui glyph atlas,
    once filled, is not re-uploaded (it was, for seconds after each mode change, while ImGui discarded and
    re-baked the sizes it had not drawn lately)."""
    from scenes.renderer import BACKDROPS
    first, second, _ = _rounds(soak)
    made = second["gl_made"] - first["gl_made"]
    assert made <= 3 + 2 * BACKDROPS, made       # a texture made per frame would be 126 here, per mode change 6+
    writes = second["texture_writes"] - first["texture_writes"]
    plots = second["plot_renders"] - first["plot_renders"]
    # Besides the plots' own uploads, a few glyphs drawn for the first time (the digits of an export's time
    # stamp in the status line); a re-baking atlas made hundreds.
    assert 0 < plots and writes <= plots + 8, (writes, plots)


def test_nothing_is_left_after_the_window_closed(soak):
    _, _, closed = _rounds(soak)
    assert closed["gl_alive"] == 0, closed["gl"]
