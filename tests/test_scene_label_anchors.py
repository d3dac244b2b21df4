"""Every name on the table points at its part: a leader from the plate to an anchor on the part's body; no plate
over another named part; no leader across another plate (scenes.labels, Stage.label_leaders)."""
from __future__ import annotations

import numpy as np
import pytest

from scene_helpers import Shooter, make_stage
from scenes.labels import leader_foot

W, H = 1280, 720


def _overlap(a, b) -> float:
    """Area shared by a plate (x, y, w, h) and a box (x0, y0, x1, y1)."""
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[2]), min(a[1] + a[3], b[3])
    return max(0.0, x1 - x0) * max(0.0, y1 - y0)


def _check(labels, min_labels: int):
    assert len(labels) >= min_labels, [n for n, *_ in labels]
    boxes = {n: b for n, _, _, b in labels}
    plates = {n: r for n, r, _, _ in labels}
    for name, rect, (ax, ay), box in labels:
        # the anchor lies on its own part (inside the part's screen box) ...
        assert box[0] - 0.5 <= ax <= box[2] + 0.5 and box[1] - 0.5 <= ay <= box[3] + 0.5, (name, (ax, ay), box)
        # ... the plate sits over no other named part ...
        for other, b in boxes.items():
            if other != name:
                assert _overlap(rect, b) <= 1.0, (name, other)
        # ... and its leader crosses no other plate
        fx, fy = leader_foot((ax, ay), rect)
        for t in np.linspace(0.02, 0.98, 40):
            x, y = fx + (ax - fx) * t, fy + (ay - fy) * t
            for other, (rx, ry, rw, rh) in plates.items():
                if other != name:
                    assert not (rx < x < rx + rw and ry < y < ry + rh), (name, other)


@pytest.mark.parametrize("view, language, min_labels", [("table", "zh", 6), ("table", "en", 6),
                                                         ("exploded", "zh", 6), ("exploded", "en", 6)])
def test_every_plate_points_at_its_own_part(view, language, min_labels):
    st = make_stage()
    sh = Shooter(W, H)
    try:
        st.language = language
        st.set_view(view)
        st.timeline.seek(st.timeline.step_moment(1, "write"))
        sh.shoot(st)
        sh.shoot(st)                 # the exploded view's lift has landed in the steady frame
        _check(st.label_leaders, min_labels)
        # the leaders are drawn: a dot of the plates' colour at each anchor
        shot = sh.shoot(st)
        for _, _, (ax, ay), _ in st.label_leaders:
            patch = shot[int(ay) - 1:int(ay) + 2, int(ax) - 1:int(ax) + 2].astype(int)
            assert patch.max() > 150, (ax, ay)
    finally:
        sh.release()
        st.release()


def test_a_framed_beat_names_its_parts_with_leaders():
    st = make_stage()
    sh = Shooter(W, H)
    try:
        st.language = "en"
        st.set_focus(("bridge", "tape"), "table")
        for _ in range(3):
            st.advance(2.0, play=False)
            sh.shoot(st)
        names = {n for n, *_ in st.label_leaders}
        assert names == {"bridge", "tape"}
        _check(st.label_leaders, 2)
    finally:
        sh.release()
        st.release()
