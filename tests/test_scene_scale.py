"""Cheaper frames: the internal render scale (Stage.render_scale) and the cached backdrop look like the full path."""
import numpy as np

from tests.scene_helpers import Shooter, make_stage

W, H = 640, 360


def test_render_scale_fills_the_frame_and_matches_full_size():
    st = make_stage()
    sh = Shooter(W, H)
    try:
        st.set_view("table")
        st.timeline.seek(st.timeline.step_moment(1, "write"))
        full = sh.shoot(st).astype(int)
        st.render_scale = 0.5
        half = sh.shoot(st).astype(int)
        assert sh.last_stats.draw_calls >= 10
        # Stretched over the whole target (a 0.5 frame copied unscaled would leave three quarters black).
        for y, x in ((H - 5, W - 5), (5, W - 5), (H - 5, 5)):
            assert abs(half[y, x] - full[y, x]).max() < 12, (y, x)
        # Half the pixels soften the text (the labels are sized for a legible 16 px em, so there is more of it).
        assert np.abs(half - full).mean() < 14
        assert st.label_plates and max(x + w for _, x, _, w, _ in st.label_plates) > W * 0.6
    finally:
        st.render_scale = 1.0
        sh.release()
        st.release()


def test_cached_backdrop_equals_the_drawn_backdrop():
    st = make_stage()
    sh = Shooter(W, H)
    try:
        st.set_view("table")
        st.show_labels = False
        copied = sh.shoot(st).astype(int)            # single-sampled: backdrop copied from its cache
        st.samples = 2
        drawn = sh.shoot(st).astype(int)             # multisampled: backdrop drawn by its shader
        for y, x in ((4, W // 2), (4, W - 4), (H // 3, W - 4)):
            assert abs(copied[y, x] - drawn[y, x]).max() <= 2, (y, x)
        st.set_palette("projector")                  # a new palette rebuilds the cache
        st.samples = 0
        bright = sh.shoot(st).astype(int)
        assert bright[4, W // 2].sum() > copied[4, W // 2].sum() + 30
    finally:
        sh.release()
        st.release()
