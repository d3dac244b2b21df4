"""The table draws the drafter registered in tests/test_app_drafter_plugin.py (greedy drafting) as it draws any
drafter that runs a draft model: its small drum turns while it drafts; the draw calls stay within budget."""
from __future__ import annotations

import numpy as np
import pytest

from models.drafters import registered
from tests.test_app_drafter_plugin import GREEDY, REPEAT


@pytest.fixture
def greedy():
    with registered(GREEDY) as k:
        yield k


def test_the_table_draws_it_with_the_small_drum_turning(greedy):
    from models.drafters import make_drafter
    from models.sampler import SamplerSettings, SpeculativeSampler
    from scenes.stage import Stage
    from tests.scene_helpers import Shooter, gl_context, pair
    p = pair()
    s = SpeculativeSampler(p, SamplerSettings(gamma=4), drafter=make_drafter("greedy", p))
    s.reset(p.encode(REPEAT))
    traces = [s.step() for _ in range(2)]
    st = Stage(gl_context())
    sh = Shooter(480, 270)
    try:
        st.set_run(p, traces)
        st.camera_transition_s = 0.0
        st.set_view("smalldrum")
        d = st.timeline.steps[0].draft
        frames = []
        for f in (0.55, 0.95):
            st.timeline.seek(d[0] + f * (d[1] - d[0]))
            frames.append(sh.shoot(st))
        from scenes.layout import SMALL_DRUM_CENTRE
        from tests.scene_helpers import patch
        x, y = st.project(SMALL_DRUM_CENTRE, 480, 270)
        moved = np.abs(patch(frames[0], x, y, 10) - patch(frames[1], x, y, 10)).mean()
        assert moved > 0.5                          # a draft model runs: the small drum turns
        assert 5 <= sh.last_stats.draw_calls < 60
    finally:
        sh.release()
        st.release()
