"""A short soak (benchmarks/soak.py's schedule, three rounds): the real window, offscreen, through every mode, the
classroom keys and every export (screenshot, plots, run log, GIF replay, the quiz's answers), three times. The
first round fills what is cached (glyphs, plots, tube results, instance buffers, render targets); the second and
third need nothing more: they end holding the same GL objects of every kind and no more file descriptors, make
only the GIF's own framebuffer (released when it is written), upload no glyphs again, and the process's memory
stays within a loose bound. After close nothing is left. Counts only, never time."""
from __future__ import annotations

import re

import pytest

from app.soak import run_soak

ROUNDS = 3
CYCLE = 126          # frames one round of every mode takes here, 18 a mode (the soak's default is 600)
SIZE = (480, 270)
PLOTS = ("speedup",)  # what the E key exports here: one plot (PNG and SVG, screen and print), the same code
RSS_SLACK_MB = 32    # what the last two rounds may add to resident memory, together (measured: under 4 MB)


@pytest.fixture(scope="module")
def soak(tmp_path_factory):
    return run_soak(frames=ROUNDS * CYCLE, cycle=CYCLE, size=SIZE, gif_seconds=0.5, quick=True, plot_names=PLOTS,
                    export_dir=tmp_path_factory.mktemp("soak") / "out")


def _rounds(res):
    """The sample before the first frame, one at the end of each round, and the one after close."""
    start, *rounds, closed = res["samples"]
    assert start["frame"] == 0 and [r["frame"] for r in rounds] == [CYCLE * (i + 1) for i in range(ROUNDS)]
    assert closed["closed"] and not any(r["closed"] for r in rounds)
    return start, rounds, closed


def test_every_mode_and_every_export_ran_in_each_round(soak):
    from app.modes import MODE_PANELS
    assert soak["stage_error"] is None
    kinds = [("screenshot", ".png"), ("plot-speedup", ".png"), ("plot-speedup", ".svg"), ("plot-speedup-print", ".svg"),
             ("runlog", ".csv"), ("replay", ".gif"), ("quiz", ".csv")]
    for kind, ext in kinds:
        made = [f for f in soak["files"] if re.fullmatch(rf"spectable-{kind}-\d[-\d]*\{ext}", f)]
        assert len(made) == ROUNDS, (kind, soak["files"])    # once per round, complete under its final name
    assert not [f for f in soak["files"] if f.startswith(".")]  # no temp file left
    _, rounds, _ = _rounds(soak)
    assert {r["mode"] for r in rounds} <= set(MODE_PANELS)
    assert [r["exports"] for r in rounds] == [rounds[0]["exports"] * (i + 1) for i in range(ROUNDS)]


def test_later_rounds_end_holding_what_the_first_did(soak):
    """A texture, buffer, VAO, framebuffer or program made per frame (or per mode change, per export) and not
    released shows here as a count that grows from one round to the next; so does a file an export left open
    or a matplotlib figure not closed."""
    start, rounds, _ = _rounds(soak)
    first = rounds[0]
    assert start["gl_alive"] > 0 and first["gl_alive"] > start["gl_alive"]      # the census sees the window's
    for later in rounds[1:]:
        assert later["gl"] == first["gl"], (first["gl"], later["gl"])
        assert later["fds"] <= first["fds"], (first["fds"], later["fds"])
        assert later["imgui_textures"] == first["imgui_textures"]
    assert all(r["figures"] == 0 for r in rounds)          # every matplotlib figure closed


def test_memory_stays_within_a_loose_bound(soak):
    """Resident memory (after a collection and malloc_trim) may move a little as the allocator settles, but not
    grow with the rounds: a picture kept per frame or per export (a 480x270 frame is 0.5 MB) would."""
    _, rounds, _ = _rounds(soak)
    growth = rounds[-1]["rss_mb"] - rounds[0]["rss_mb"]
    assert growth < RSS_SLACK_MB, [r["rss_mb"] for r in rounds]


def test_later_rounds_recreate_little_and_rebake_no_glyphs(soak):
    """Churn, counted: after the first round, each round makes only the GIF export's own framebuffer (a
    texture, a depth renderbuffer, the framebuffer: released when the GIF is written), and a cached backdrop
    may be regrown once; the table's target, which only grows, and a panel's plot textures, which only grow,
    are not made again for each size the panels leave them. Textures are written for plots that changed and
    glyphs never drawn before: the ImGui glyph atlas, once filled, is not re-uploaded (it was, for seconds after
    each mode change, while ImGui discarded and re-baked the sizes it had not drawn lately)."""
    from scenes.renderer import BACKDROPS
    _, rounds, _ = _rounds(soak)
    gif = 3
    for before, after in zip(rounds, rounds[1:]):
        made = after["gl_made"] - before["gl_made"]
        assert gif <= made <= gif + BACKDROPS, made      # a texture made per frame would be 126 here
        writes = after["texture_writes"] - before["texture_writes"]
        plots = after["plot_renders"] - before["plot_renders"]
        # Besides the plots' own uploads, a few glyphs drawn for the first time (the digits of an export's time
        # stamp in the status line); a re-baking atlas made hundreds.
        assert 0 < plots and writes <= plots + 8, (writes, plots)
    assert rounds[-1]["gl_made"] - rounds[0]["gl_made"] <= (ROUNDS - 1) * gif + BACKDROPS


def test_nothing_is_left_after_the_window_closed(soak):
    _, _, closed = _rounds(soak)
    assert closed["gl_alive"] == 0, closed["gl"]
