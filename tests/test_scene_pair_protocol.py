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


def test_a_network_pair_s_run_names_its_pair_on_the_hud():
    """Over a framed beat of several parts, a network pair's run says whose it is ("台上：神经网络那对"): beside a
    table measured elsewhere, or the counted pair's figures, the tape's text belongs to the network; the counted
    pair's run keeps the HUD's title for the part in view."""
    from types import SimpleNamespace

    from scenes.stage import Stage
    from tests.scene_helpers import gl_context, pair, traces
    stage = Stage(gl_context())
    counted = pair()
    stage.set_run(counted, list(traces(0, 4, 3)))
    stage.set_focus(("bigdrum", "tape"))
    assert stage._title() is None
    # the same traces, written by a pair that says it is a network (its kind is a label, read only for words)
    network = SimpleNamespace(kind="neural", display=counted.display)
    stage.set_run(network, list(traces(0, 4, 3)))
    stage.set_focus(("bigdrum", "tape"))
    assert stage._title() == ("台上：神经网络那对", "on the table: the neural pair")
    stage.set_focus(("bigdrum",))
    assert stage._title()[0].startswith("大滚筒")
