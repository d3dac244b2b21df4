"""The camera and the exploded lift move only on the clock Stage.advance drives (no wall clock)."""
import pytest


def test_the_stage_moves_only_when_advanced():
    from tests.scene_helpers import make_stage
    st = make_stage()
    try:
        st.camera_transition_s = 0.7
        st._rendered = True                    # as after a first frame: views fly rather than jump
        st.set_view("bridge")
        start = st.camera.pose
        assert st.animating and st.camera.pose == start     # time passing elsewhere moves nothing
        poses = []
        for _ in range(30):
            st.advance(1 / 30, play=False)
            poses.append(st.camera.pose)
        assert poses[0] != start and len(set(poses[:20])) == 20       # a smooth flight, one pose per frame
        assert poses[-1] == poses[21] and not st.animating             # landed after 0.7 s
        st.set_view("exploded")
        lifts = []
        for _ in range(30):
            st.advance(1 / 30, play=True)
            lifts.append(st._explode)
        assert lifts[0] < lifts[10] < lifts[-1] == 1.0 and st.timeline.t == pytest.approx(1.0, abs=1e-9)
    finally:
        st.release()
