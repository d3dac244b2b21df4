"""The bridge of meters as drawn: copper columns of height p/q (capped at 1), red line at r, verdict shapes."""
import numpy as np
import pytest

from scenes.bridge import COLUMN_H, COLUMN_V0, column_top_v, meter_point
from tests.scene_helpers import Shooter, copper, make_stage, red, traces

W, H = 960, 540


@pytest.fixture(scope="module")
def setup():
    st = make_stage(seed=3, gamma=4, steps=8)
    st.set_view("bridge")
    sh = Shooter(W, H)
    yield st, sh
    sh.release()
    st.release()


def _column_extent(stage, img, i):
    """Measured column top as a fraction of full scale: scan up the column's centre line for copper."""
    foot = np.array(stage.project(meter_point(i, COLUMN_V0, 0.06), W, H))
    top = np.array(stage.project(meter_point(i, COLUMN_V0 + COLUMN_H, 0.06), W, H))
    n = int(np.linalg.norm(top - foot))
    last = -1
    for s in range(int(n * 1.15)):
        x, y = foot + (top - foot) * s / n
        xi, yi = int(round(x)), int(round(y))
        if 0 <= yi < H and copper(img[yi, xi]):
            last = s
    return (last + 1) / n


def test_meter_heights_follow_p_over_q(setup):
    stage, shooter = setup
    trs = traces(3, 4, 8)
    checked, capped = 0, 0
    for k, tr in enumerate(trs):
        stage.timeline.seek(stage.timeline.step_moment(k, "check"))
        img = shooter.shoot(stage)
        for i in range(tr.tested):
            want = min(tr.ratios[i], 1.0)
            got = _column_extent(stage, img, i)
            # The cap of an overflowing column sits just above full scale.
            assert got == pytest.approx(want, abs=0.06 if want < 1 else 0.1), (k, i, tr.ratios[i])
            checked += 1
            capped += tr.ratios[i] > 1
        for i in range(tr.tested, len(tr.guesses)):
            assert _column_extent(stage, img, i) < 0.03      # untested meters stay empty
        # The red line sits at r on every tested meter (drawn across the column, beside it too).
        for i in range(tr.tested):
            x, y = stage.project(meter_point(i, COLUMN_V0 + min(tr.r[i], 1.0) * COLUMN_H, 0.07, 0.26), W, H)
            assert red(img[int(round(y)), int(round(x))]), (k, i)
    assert checked >= 8 and capped >= 1


def test_column_top_geometry_is_clamped_to_full_scale():
    assert column_top_v(0.5) == pytest.approx(COLUMN_V0 + 0.5 * COLUMN_H)
    assert column_top_v(7.0) == column_top_v(1.0)
    assert column_top_v(0.5, fill=0.0) == COLUMN_V0


def test_a_meter_held_at_the_end_of_its_fill_counts_as_filled():
    """The step-through holds the table at the end of test i; seek() snaps to the tick grid, which may land
    just short of it. The meter must still count as filled (so its p/q and r readouts are drawn)."""
    from scenes.bridge import FILLED
    st = make_stage()
    try:
        tl = st.timeline
        for k, timing in enumerate(tl.steps):
            for i, (a, b) in enumerate(timing.tests):
                tl.seek(b)
                m = tl.state_at().meters[i]
                assert m.fill >= FILLED, (k, i, m.fill)
    finally:
        st.release()


def test_every_tested_meter_shows_its_p_over_q_and_its_r(setup):
    """A capped column (p/q above 1) still carries its number, at a size a class can read (it used to say
    "1.98>1" and be left out as too small, so the pass's first meter showed r alone)."""
    from scenes.bridge import fmt, r_text
    stage, shooter = setup
    trs = traces(3, 4, 8)
    capped = 0
    for k, tr in enumerate(trs):
        stage.timeline.seek(stage.timeline.step_moment(k, "check"))
        shooter.shoot(stage)
        drawn = [str(b[0]) for b in stage.legibility["boxes"]]
        for i in range(tr.tested):
            assert fmt(tr.ratios[i]) in drawn and r_text(tr.r[i]) in drawn, (k, i)
            capped += tr.ratios[i] > 1
    assert capped > 0
