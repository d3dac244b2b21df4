"""The read head cut away names its pieces and shows each read counted: plates with leaders to the teeth, the push
rods, the lane axles and the counters (each anchor on its own piece, no plate over another piece, the HUD or a
lane number); a lit lane's counter wheel turns one tooth for every pin read and a dark lane's stands still, so
nine lit lanes and one look different."""
from __future__ import annotations

import math

import numpy as np
import pytest

from scenes.readhead import COUNTER_R, COUNTER_TEETH, COUNTER_X, CUTAWAY_PIECES, lane_z
from tests.scene_helpers import Shooter, make_stage, patch, warm

W, H = 1280, 720


def _overlap(a, b) -> float:
    """Area shared by two (x, y, w, h) rectangles."""
    return max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])) * max(0.0, min(a[1] + a[3], b[1] + b[3])
                                                                            - max(a[1], b[1]))


@pytest.fixture(scope="module")
def shooter():
    sh = Shooter(W, H)
    yield sh
    sh.release()


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_cutaway_names_its_pieces_on_them(language, shooter):
    st = make_stage()
    try:
        st.language = language
        st.show_hud = True
        st.set_view("cutaway")
        st.timeline.seek(st.timeline.step_moment(0, "mid-verify"))
        shot = shooter.shoot(st)
        assert [c[0] for c in st.callouts] == [k for k, _, _ in CUTAWAY_PIECES]
        plates = {k: r for k, r, _, _ in st.callouts}
        chips = [(x - 0.5 * s, y - 0.5 * s, s, s) for _, x, y, s, _, _ in st.lane_numbers]
        hud = st.hud_rect(W, H)
        for key, rect, (ax, ay), box in st.callouts:
            assert box[0] - 0.5 <= ax <= box[2] + 0.5 and box[1] - 0.5 <= ay <= box[3] + 0.5, (key, (ax, ay), box)
            assert rect[3] >= 16.0                                   # a name read from the back of the room
            for other, r in plates.items():
                if other != key:
                    assert _overlap(rect, r) == 0.0, (key, other)
            for c in chips:
                assert _overlap(rect, c) == 0.0, (key, c)
            assert _overlap(rect, (hud[0], hud[1], hud[2] - hud[0], hud[3] - hud[1])) == 0.0, key
            # the leader ends in a light dot on the piece
            assert shot[int(ay) - 1:int(ay) + 2, int(ax) - 1:int(ax) + 2].max() > 150, key
        # out of the cut-away, the pieces are not named (the read head's own plate does)
        st.set_view("readhead")
        shooter.shoot(st)
        assert st.callouts == []
    finally:
        st.release()


def test_a_lit_lanes_counter_turns_one_tooth_per_pin_read():
    st = make_stage()
    try:
        head, tl = st.readhead, st.timeline
        a, b = tl.steps[0].verify
        seen = []
        for t in np.linspace(a, b, 400):
            tl.seek(float(t))
            state = st.state()
            seen.append((head.pins_read(state), head.counter_angle(state)))
        reads = [r for r, _ in seen]
        assert reads == sorted(reads) and reads[-1] - reads[0] > 50          # a turn reads many pins, in order
        for (r0, a0), (r1, a1) in zip(seen, seen[1:]):
            turned = (a1 - a0) % (2 * math.pi)
            assert turned == pytest.approx(((r1 - r0) % COUNTER_TEETH) * 2 * math.pi / COUNTER_TEETH, abs=1e-9)
        # a full turn of the big drum reads every pin on it exactly once
        from types import SimpleNamespace
        for start in (0.0, 1.234, a):
            turn = [head.pins_read(SimpleNamespace(big_drum_angle=start + k * 2 * math.pi)) for k in (0, 1, 2)]
            assert turn[1] - turn[0] == turn[2] - turn[1] == len(head.drum.angle)
        # a pin is counted the moment it passes its tooth (where it pushes the tooth up), not half a turn later
        from scenes.bigdrum import CONTACT_ANGLE
        for i in range(0, len(head.drum.angle), 97):
            at = (CONTACT_ANGLE - head.drum.angle[i]) % (2 * math.pi) + 2 * math.pi
            before, after = (head.pins_read(SimpleNamespace(big_drum_angle=at + e)) for e in (-1e-7, 1e-7))
            assert after > before
            assert head.drum.tooth_lift(at)[head.drum.col[i]] >= head.drum.height[i] - 1e-9
    finally:
        st.release()


@pytest.mark.parametrize("batch", [1, 9])
def test_lit_counters_glow_and_dark_ones_do_not(batch, shooter):
    """γ = 4 lights five lanes; nine sequences batched light all nine: the counters' colours say which."""
    st = make_stage(batch_lanes=batch)
    try:
        st.show_labels = False
        st.set_view("cutaway")
        st.timeline.seek(st.timeline.step_moment(0, "mid-verify"))
        shot = shooter.shoot(st)
        lit = st.state().lanes_lit
        assert lit == (9 if batch == 9 else 5)
        head = st.readhead
        from scenes.layout import N_LANES, READ_HEAD_Y
        warm_wheels = []
        for lane in range(N_LANES):
            centre = (head.x1 + COUNTER_X + 0.03, READ_HEAD_Y - 0.1 - 0.35 * COUNTER_R, lane_z(lane))
            x, y = st.project(centre, W, H)
            warm_wheels.append(warm(patch(shot, x, y, 1).reshape(-1, 3).mean(0)))
        assert warm_wheels == [lane < lit for lane in range(N_LANES)], warm_wheels
    finally:
        st.release()


def test_render_json_reports_the_cutaways_pieces(tmp_path, capsys):
    """`render --json` lists each piece plate of the cut-away beside the part plates: the read head's, which piece,
    its plate, its anchor on the piece and the piece's screen box."""
    import json

    from app.cli import main
    assert main(["render", "--view", "cutaway", "--size", "1280x720", "--msaa", "0", "--out", str(tmp_path / "c.png"),
                 "--json", "--lang", "en"]) == 0
    labels = json.loads(capsys.readouterr().out)["labels"]
    pieces = [lab for lab in labels if "piece" in lab]
    assert [lab["piece"] for lab in pieces] == [k for k, _, _ in CUTAWAY_PIECES]
    for lab in pieces:
        (ax, ay), (x0, y0, x1, y1) = lab["anchor"], lab["part_box"]
        assert lab["part"] == "readhead" and x0 - 0.5 <= ax <= x1 + 0.5 and y0 - 0.5 <= ay <= y1 + 0.5
