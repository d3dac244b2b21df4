"""The table draws a pair written in a test (models.pair.Pair: tests/test_core_pair_protocol.LetterPair): its
letters on the tape, its passes on the drums and the bridge, within the usual draw-call budget."""
from __future__ import annotations

from tests.test_core_pair_protocol import LetterPair


def test_the_table_draws_a_new_pair():
    from models.sampler import SamplerSettings, make_sampler
    from scenes.stage import Stage
    from tests.scene_helpers import Shooter, gl_context
    pair = LetterPair()
    s = make_sampler(pair, SamplerSettings(gamma=3, seed=1))
    s.reset(pair.encode("abca"))
    traces = [s.step() for _ in range(2)]
    st = Stage(gl_context())
    sh = Shooter(480, 270)
    try:
        st.set_run(pair, traces)
        st.timeline.seek(st.timeline.step_moment(0, "mid-check"))
        img = sh.shoot(st)
        assert img.std() > 10 and 5 <= sh.last_stats.draw_calls < 60
        assert "".join(c.text for c in st.tape_cells()).startswith("abca")     # its letters on the tape
    finally:
        sh.release()
        st.release()
