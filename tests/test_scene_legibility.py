"""Readouts legible from the back of a room: big enough at 1080p, never covered by parts, beads or each other."""
import numpy as np
import pytest

from scenes.bridge import R_SIZE, R_V, VALUE_SIZE, VALUE_V, meter_point
from scenes.layout import TUBES_CENTRE
from scenes.tubes import FREQ_SIZE, N_CHARS, READ_UP, TUBE_H, TUBE_Y0
from tests.scene_helpers import make_stage, patch

W, H = 960, 540


def _em_px(stage, base, up, size, w=1920, h=1080) -> float:
    """Projected height in pixels of an em of world text at `base` along `up` (1080p frame)."""
    a = np.array(stage.project(base, w, h))
    b = np.array(stage.project(np.asarray(base) + np.asarray(up) * size, w, h))
    return float(np.linalg.norm(b - a))


def test_readouts_are_projector_sized_in_the_table_view(stage):
    stage.set_view("table")
    x = stage.tubes.tube_x(0, 1)
    assert _em_px(stage, (x, TUBE_Y0 + TUBE_H + 0.2, TUBES_CENTRE[2]), READ_UP, FREQ_SIZE) >= 21      # as big as the English labels (h / 50)
    up = meter_point(0, 1.0) - meter_point(0, 0.0)
    assert _em_px(stage, meter_point(0, VALUE_V), up, VALUE_SIZE) >= 28
    assert _em_px(stage, meter_point(0, R_V), up, R_SIZE) >= 20


def test_mill_readout_is_not_hidden_behind_the_bridge(stage, shooter):
    stage.set_view("table")
    stage.timeline.seek(stage.timeline.step_moment(1, "write"))
    full = shooter.shoot(stage)
    plates = {name: rect for name, *rect in stage.label_plates}
    x, y, w, h = plates["mill"]
    # The plate carries a readout under the part's name: the busy share and the context at least (the device and
    # the model too where the free space off the other parts allows: plates keep off the parts they do not name).
    assert h > 2.0 * plates["cabinet"][3]
    try:
        stage.hidden = {"bridge"}
        without = shooter.shoot(stage)
    finally:
        stage.hidden = set()
    region = (slice(int(y), int(y + h)), slice(int(x), int(x + w)))
    assert np.abs(full[region].astype(int) - without[region].astype(int)).mean() < 0.5
    # ... while hiding the bridge does change the frame where the bridge stands.
    bx, by = stage.project(meter_point(1, 1.0), W, H)
    assert np.abs(patch(full, bx, by, 4) - patch(without, bx, by, 4)).mean() > 10


@pytest.mark.parametrize("view", ["table", "exploded"])
def test_label_plates_never_overlap(view, shooter):
    st = make_stage()
    try:
        st.show_hud = True
        st.set_view(view)
        st.timeline.seek(st.timeline.step_moment(1, "write"))
        shooter.shoot(st)
        plates = st.label_plates
        assert len(plates) >= 7
        for i, (na, xa, ya, wa, ha) in enumerate(plates):
            assert 0 <= xa and xa + wa <= W and 0 <= ya and ya + ha <= H, na
            for nb, xb, yb, wb, hb in plates[i + 1:]:
                apart = xa + wa <= xb or xb + wb <= xa or ya + ha <= yb or yb + hb <= ya
                assert apart, (na, nb)
    finally:
        st.release()


def test_falling_beads_never_cross_the_frequency_numbers(stage, shooter):
    stage.set_view("tubes")
    tl = stage.timeline
    rnd = 3
    stage.timeline.seek((rnd + 0.35) * tl.timing.tube_round)      # this round's beads in the air
    falling = shooter.shoot(stage)
    assert 0 < stage.state().tube_progress < 0.8
    stage.timeline.seek((rnd + 0.9) * tl.timing.tube_round)       # every bead fallen, same counts
    settled = shooter.shoot(stage)
    z = TUBES_CENTRE[2]
    for rack in (0, 1):
        for j in range(N_CHARS + 1):
            x = stage.tubes.tube_x(rack, j)
            px, py = stage.project(np.array([x, TUBE_Y0 + TUBE_H + 0.2, z]) + READ_UP * FREQ_SIZE * 0.35, W, H)
            assert np.abs(patch(falling, px, py, 6) - patch(settled, px, py, 6)).mean() < 1.0, (rack, j)
    # The beads do move between the two moments (inside the tubes).
    assert np.abs(falling.astype(int) - settled.astype(int)).mean() > 0.05


# ---- the legibility minimum (scenes.legibility): measured as drawn, small text left out --------------------
def test_small_world_text_is_left_out_not_drawn_small():
    """In the wide table view at 640x360 the tube numbers would be a few pixels tall: they are left out, while
    the tube view draws them; whatever is drawn meets the minimum."""
    from scenes.legibility import min_text_px
    from tests.scene_helpers import Shooter, make_stage
    st = make_stage()
    sh = Shooter(640, 360)
    try:
        st.set_view("table")
        st.timeline.seek(st.timeline.step_moment(1, "write"))
        sh.shoot(st)
        leg = st.legibility
        assert leg["min_text_px"] >= min_text_px(360) - 1e-6
        assert any(h.startswith(".") for h in leg["hidden"])            # the tubes' ".28" readouts
        st.set_view("tubes")
        sh.shoot(st)
        shown = [b[0] for b in st.legibility["boxes"]]
        assert any(s.startswith(".") for s in shown)                    # close up they are drawn
        assert st.legibility["min_text_px"] >= min_text_px(360) - 1e-6
    finally:
        sh.release()
        st.release()


def test_render_tubes_step_is_the_round():
    """spectable render --view tubes --step K shows round K of the experiment, and its HUD says so."""
    import argparse
    from app.cli.scene import build_stage
    from scenes.offscreen import Offscreen
    from tests.scene_helpers import gl_context
    args = argparse.Namespace(tokens_kind="char", seed=0, gamma=4, prefix="孔乙己", palette="default", lang="en",
                              msaa=0, view="tubes", step=200, phase="write", device="h100-sxm", batch=1)
    st = build_stage(gl_context(), args, 1, 200)
    from app.cli.scene import _moment
    st.timeline.seek(_moment(st, args))
    off = Offscreen(gl_context(), 960, 540)
    try:
        st.render(off.fbo, 960, 540)
        texts = st.hud_text
        assert "round 200 of 200 · 50 draws a tube" in texts and not any(t.startswith("pass ") for t in texts)
    finally:
        off.release()
        st.release()


def test_the_hud_names_the_pass_not_a_bare_fraction():
    from tests.scene_helpers import Shooter, make_stage
    st = make_stage()
    st.show_hud = True
    st.language = "zh"
    sh = Shooter(960, 540)
    try:
        st.set_view("table")
        st.timeline.seek(st.timeline.step_moment(1, "write"))
        sh.shoot(st)
        assert any(t.startswith("第 2 步（共 6 步）") for t in st.hud_text)
    finally:
        sh.release()
        st.release()


def test_a_held_table_says_what_it_holds_not_a_motion():
    """A text page holds the table still: the HUD said '小滚筒转：小模型在猜' over guesses already pencilled and a
    drum that did not move. Held, it says what the table holds (the pass's start, the guesses made, the drum's
    turn done); playing through the same moment, it says what moves."""
    from scenes.labels import HELD, HELD_START, PHASES
    from tests.scene_helpers import Shooter, make_stage
    st = make_stage()
    st.show_hud = True
    st.language = "zh"
    sh = Shooter(960, 540)
    tl = st.timeline
    try:
        st.set_view("table")
        for t, held, moving in ((tl.step_start(1), HELD_START, PHASES["draft"]),
                                (tl.step_moment(1, "draft"), HELD["draft"], PHASES["draft"]),
                                (tl.step_moment(1, "verify"), HELD["verify"], PHASES["verify"])):
            tl.seek(t)
            tl.paused = True
            sh.shoot(st)
            assert held[0] in st.hud_text and moving[0] not in st.hud_text, (t, st.hud_text)
            tl.paused = False
            sh.shoot(st)
            assert moving[0] in st.hud_text and held[0] not in st.hud_text, (t, st.hud_text)
        # Mid-phase a still table shows the motion frozen: its words stay the phase's own.
        tl.seek(tl.step_moment(1, "mid-draft"))
        tl.paused = True
        sh.shoot(st)
        assert PHASES["draft"][0] in st.hud_text
    finally:
        sh.release()
        st.release()


def test_the_mill_framed_alone_reads_its_busy_share_and_device_at_720p(stage):
    """Framed alone beside the tour's page at 720p (a 768x366 stage under the HUD, text sized for 720), the mill
    shows how busy its arithmetic is and on which device, each at least the smallest size allowed: a sign beside
    it carries them (its base's words were too small there: the device's line was left out, at 720p under the
    tour's taller HUD the busy share too)."""
    from scenes.legibility import min_text_px
    from tests.scene_helpers import Shooter
    sh = Shooter(768, 366)
    saved = stage.show_hud, stage.text_height, stage.language
    try:
        stage.show_hud, stage.text_height, stage.language = True, 720, "zh"
        stage.set_focus(("mill",))
        stage.timeline.seek(stage.timeline.step_moment(1, "write"))
        sh.shoot(stage)
        shown = [b[0] for b in stage.legibility["boxes"]]
        assert any(s.startswith("算术忙 ") for s in shown), shown
        assert any(s.startswith(stage.run.hardware_label.split(" · ")[0]) for s in shown), shown
        assert stage.legibility["min_text_px"] >= min_text_px(720) - 1e-6
    finally:
        stage.show_hud, stage.text_height, stage.language = saved
        stage.set_view("table")
        sh.release()
