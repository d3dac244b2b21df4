"""The timeline: fixed-step clock, state as a pure function of t, and events that follow the traces."""
import math

import numpy as np
import pytest

from scenes.timeline import TICK, Timeline, Timing
from tests.scene_helpers import traces


def _tl(**kw):
    return Timeline(list(traces()), **kw)


def test_frame_rate_does_not_change_time():
    a, b = _tl(), _tl()
    for _ in range(600):            # 10 s at 60 fps
        a.advance(1 / 60)
    for _ in range(250):            # 10 s at 25 fps
        b.advance(1 / 25)
    assert a.t == pytest.approx(b.t, abs=TICK)
    sa, sb = a.state_at(), b.state_at()
    assert sa.big_drum_angle == pytest.approx(sb.big_drum_angle, abs=0.05)
    assert [c.position for c in sa.tape] == [c.position for c in sb.tape]


def test_state_is_pure_function_of_t_and_seek_back_and_forth():
    tl = _tl()
    tl.seek(tl.step_moment(2, "mid-verify"))
    t = tl.t
    s1 = tl.state_at(t)
    tl.seek(tl.duration)
    tl.seek(0.5)
    tl.seek(t)
    s2 = tl.state_at()
    assert s1.big_drum_angle == pytest.approx(s2.big_drum_angle, abs=1e-9)
    assert s1.lanes_lit == s2.lanes_lit
    assert [(c.position, c.token, c.ink) for c in s1.tape] == [(c.position, c.token, c.ink) for c in s2.tape]


def test_pause_speed_and_rewind():
    tl = _tl()
    tl.advance(1.0)
    t1 = tl.t
    tl.paused = True
    tl.advance(5.0)
    assert tl.t == t1
    tl.paused = False
    tl.speed = 2.0
    tl.advance(1.0)
    assert tl.t == pytest.approx(t1 + 2.0, abs=TICK)
    tl.speed = -1.0
    tl.advance(1.5)
    assert tl.t == pytest.approx(t1 + 0.5, abs=TICK)
    tl.advance(100.0)
    assert tl.t == 0.0


def test_one_full_big_turn_per_step_and_gamma_small_turns():
    trs = traces()
    tl = Timeline(list(trs))
    for k in range(len(trs)):
        s = tl.state_at(tl.steps[k].verify[1] + TICK)
        assert s.big_drum_angle == pytest.approx(2 * math.pi * (k + 1), abs=1e-6)
        s = tl.state_at(tl.steps[k].draft[1])
        assert s.small_drum_angle == pytest.approx(2 * math.pi * sum(len(t.guesses) for t in trs[:k + 1]), abs=1e-6)


def test_small_drum_turns_in_c_times_big_drum_time():
    tl = Timeline(list(traces()), timing=Timing(big_turn=2.0, cost_ratio=0.25))
    st = tl.steps[0]
    a, b = st.strokes[0]
    assert b - a == pytest.approx(0.25 * (st.verify[1] - st.verify[0]))


def test_lanes_light_for_the_tokens_in_the_pass():
    trs = traces()
    tl = Timeline(list(trs), batch_lanes=1)
    for k, tr in enumerate(trs):
        s = tl.state_at(tl.step_moment(k, "mid-verify"))
        assert s.lanes_lit == tr.lanes_lit == len(tr.guesses) + 1
        assert tl.state_at(tl.step_moment(k, "mid-draft")).lanes_lit == 0
    tl2 = Timeline(list(trs), batch_lanes=3)
    s = tl2.state_at(tl2.step_moment(0, "mid-verify"))
    assert s.lanes_true == 3 * trs[0].lanes_lit and s.lanes_lit == 9


def test_tape_marks_follow_verdicts_and_rejections_are_erased():
    trs = traces()
    tl = Timeline(list(trs))
    k = next(i for i, tr in enumerate(trs) if tr.n_accepted < len(tr.guesses))
    tr = trs[k]
    s = tl.state_at(tl.step_end(k) - TICK)
    mine = {c.position: c for c in s.tape if c.step == k}
    for i in range(tr.n_accepted):
        assert mine[len(tr.context) + i].mark == "dot" and mine[len(tr.context) + i].ink == 1.0
    final = [c for c in s.tape if c.step == k and c.mark == "diamond"]
    assert len(final) == 1 and final[0].token == tr.final_token
    rejected = [c for c in s.tape if c.step == k and c.erased > 0]
    assert len(rejected) == len(tr.guesses) - tr.n_accepted
    # Written text on the tape equals the run's tokens.
    s_end = tl.state_at(tl.duration)
    written = [c.token for c in sorted(s_end.tape, key=lambda c: c.position) if c.ink >= 1 and c.erased == 0]
    everything = [t for tr in trs for t in tr.tokens_written]
    assert len(written) >= min(len(everything), 30) and written == everything[-len(written):]


def test_meters_fill_up_to_first_rejection_then_untested():
    trs = traces()
    tl = Timeline(list(trs))
    for k, tr in enumerate(trs):
        s = tl.state_at(tl.step_moment(k, "check"))
        verdicts = [m.verdict for m in s.meters]
        expect = ["pass" if a else "fail" for a in tr.accepted[:tr.tested]]
        expect += ["untested"] * (len(tr.guesses) - tr.tested)
        assert verdicts == expect
        for m, ratio in zip(s.meters, tr.ratios):
            assert m.ratio == pytest.approx(ratio)


def test_kv_entries_roll_back_to_the_written_text():
    trs = traces()
    tl = Timeline(list(trs))
    for k, tr in enumerate(trs):
        s = tl.state_at(tl.step_moment(k, "verify"))
        assert s.kv_tokens + s.kv_tentative == pytest.approx(len(tr.context) + len(tr.guesses))
        s = tl.state_at(tl.step_end(k) + TICK) if k + 1 < len(trs) else tl.state_at(tl.duration)
        assert s.kv_tokens + s.kv_tentative == pytest.approx(len(tr.context) + len(tr.tokens_written))


def test_drawers_are_pulled_to_read_and_again_to_roll_back():
    trs = traces()
    tl = Timeline(list(trs))
    for k, tr in enumerate(trs):
        st = tl.steps[k]
        assert tl.state_at((st.verify[0] + st.verify[1]) / 2).drawer_pull == pytest.approx(1.0)
        assert tl.state_at(st.draft[0] + 1e-3).drawer_pull == 0.0
        mid_erase = tl.state_at((st.erase[0] + st.erase[1]) / 2)
        if tr.n_accepted < len(tr.guesses):
            assert mid_erase.drawer_pull > 0.9
            # Halfway through the rollback, half the rejected entries are gone.
            expect = len(tr.guesses) - 0.5 * (len(tr.guesses) - tr.n_accepted)
            assert mid_erase.kv_tentative == pytest.approx(expect)


def test_mill_turns_with_busy_fraction():
    trs = traces()
    slow = Timeline(list(trs), busy_at=lambda sequences, positions, context: sequences * positions / 295.0)
    fast = Timeline(list(trs), busy_at=lambda sequences, positions, context: sequences * positions / 10.0)
    t = slow.step_moment(0, "verify")
    assert fast.mill_angle(t) > 20 * slow.mill_angle(t) > 0
    # Idle while drafting: the gears do not move.
    st = slow.steps[1]
    assert slow.mill_angle(st.draft[0]) == slow.mill_angle(st.draft[1])


def test_spans_are_ordered_within_a_step():
    tl = _tl()
    for st in tl.steps:
        spans = [*st.strokes, st.verify, *st.tests, st.strike, st.erase, *st.inks, st.scroll]
        assert all(a <= b for a, b in spans)
        assert all(b1 <= a2 + 1e-12 for (_, b1), (a2, _) in zip(spans, spans[1:]))     # one after another
        assert st.draft == (st.start, st.verify[0]) and st.check[0] == st.verify[1] and st.end == st.scroll[1]
    st = tl.steps[0]
    assert st.strokes[-1][1] <= st.verify[0] < st.tests[0][0] < st.inks[0][0]
    starts = [tl.step_start(k) for k in range(len(tl.steps))]
    assert starts == sorted(starts) and np.all(np.diff(starts) > 0)
    assert tl.current_step == 0


def test_reduced_motion_freezes_drums_but_keeps_meaning():
    tl = _tl()
    tl.reduced_motion = True
    s = tl.state_at(tl.step_moment(1, "mid-verify"))
    assert s.big_drum_angle == 0.0 and s.small_drum_angle == 0.0
    assert s.lanes_lit == traces()[1].lanes_lit
