"""What did not change is not drawn again, and the picture is the same.

A part's emission is replayed while what it reads is unchanged (Stage._emit: the SceneState fields it declares in
`reads`), and the parts unchanged for two frames under a still camera are drawn once into the still layer each
frame then starts from (Renderer.begin_still). Both are only worth having if they are invisible: each part reads
only what it declares (recorded over every drafter's run, batched and not, in every standing of the table), and
frames drawn with them are pixel for pixel the frames drawn without them."""
from __future__ import annotations

import numpy as np
import pytest

from tests.scene_helpers import Shooter, gl_context, make_stage, pair, tubes

W, H = 480, 270
# The emit context's fields a part may read: all but the camera's axes (no part faces the camera; the replay
# key leaves them out).
EC_FIELDS = {"palette", "language", "view", "run", "labelled", "mill_sign", "text_ref", "min_px", "say"}


class _Recorder:
    """Stands for an object and records the attributes read through it."""

    def __init__(self, obj, into: set, prefix: str = ""):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_into", into)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name):
        self._into.add(self._prefix + name)
        return getattr(self._obj, name)


def _runs():
    from models.drafters import make_drafter
    from models.sampler import SamplerSettings, SpeculativeSampler
    p = pair()
    for name, opts in (("chain", {}), ("lookup", {}), ("heads", {}), ("tree", {"width": 2, "depth": 2})):
        s = SpeculativeSampler(p, SamplerSettings(gamma=4, seed=0), drafter=make_drafter(name, p, **opts))
        s.reset(p.encode("我们一同走出去，我们"))
        yield name, [s.step() for _ in range(2)]


def test_each_part_reads_only_the_state_it_declares():
    from scenes.layout import EmitContext
    from scenes.frame import FrameBuilder
    from scenes.stage import Stage
    reads: dict[str, set] = {}
    for _, traces in _runs():
        for batch in (1, 12):
            st = Stage(gl_context())
            try:
                st.set_run(pair(), traces, tubes=tubes(), batch_lanes=batch)
                for view in ("table", "exploded", "cutaway", "tubes"):
                    st.set_view(view)
                    for t in np.linspace(0.0, st.timeline.duration, 40):
                        st.timeline.seek(float(t))
                        state = st.timeline.state_at()
                        # labelled (the wide views: readouts on plates) and not (a close-up: on the parts; the
                        # mill framed alone: on its sign)
                        for labelled, sign in ((True, False), (False, False), (False, True)):
                            ec = EmitContext(st.palette, np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), "both", view,
                                             st.run, labelled=labelled, text_ref=720.0, min_px=16.0, mill_sign=sign)
                            for part in st.parts:
                                seen = reads.setdefault(part.name, set())
                                part.emit(FrameBuilder(st.atlas), _Recorder(state, seen), _Recorder(ec, seen, "ec."))
            finally:
                st.release()
    for part in Stage(gl_context()).parts:
        state_reads = {r for r in reads[part.name] if not r.startswith("ec.")}
        ec_reads = {r[3:] for r in reads[part.name] if r.startswith("ec.")}
        assert state_reads <= set(part.reads), (part.name, state_reads - set(part.reads))
        assert ec_reads <= EC_FIELDS, (part.name, ec_reads - EC_FIELDS)
    # the declarations are not padded either: every declared field was read somewhere
    assert all(set(p.reads) <= reads[p.name] for p in Stage(gl_context()).parts)


@pytest.fixture(scope="module")
def shooter():
    sh = Shooter(W, H)
    yield sh
    sh.release()


@pytest.mark.parametrize("view", ["table", "exploded", "tape", "cutaway", "tubes"])
def test_replayed_parts_and_the_still_layer_draw_the_same_picture(view, shooter):
    """Frames of a playing run under a still camera, drawn as the app draws them (replay, still layer) and with
    everything drawn anew, are identical; and the comparison is not empty: the still layer was used, and drew
    fewer triangles a frame."""
    fast, full = make_stage(batch_lanes=3), make_stage(batch_lanes=3)
    full.still_layer = False
    try:
        used = 0
        for st in (fast, full):
            st.show_hud = True
            st.set_view(view)
        for phase in ("mid-draft", "mid-verify", "mid-check", "mid-write"):
            for st in (fast, full):
                st.timeline.seek(st.timeline.step_moment(1, phase))
            for _ in range(6):
                for st in (fast, full):
                    st.timeline.advance(1 / 30)
                a = shooter.shoot(fast)
                sa = shooter.last_stats
                b = shooter.shoot(full)
                sb = shooter.last_stats
                assert np.array_equal(a, b), (phase, int(np.abs(a.astype(int) - b).max()))
                assert not sb.still
                if sa.still and not sa.still_drawn:
                    used += 1
                    assert sa.triangles < sb.triangles
        assert used >= 4, used
    finally:
        fast.release()
        full.release()


def test_the_still_layer_follows_what_changes(shooter):
    """A still frame starts from the layer; a part of the layer that starts to move leaves it (the layer is
    drawn again without it, once the new set has held for two frames); a moving camera draws everything; a
    palette change draws the layer anew."""
    st = make_stage()
    try:
        st.set_view("table")
        st.timeline.seek(st.timeline.step_moment(1, "mid-verify"))
        stats = []
        for _ in range(4):
            shooter.shoot(st)
            stats.append(shooter.last_stats)
        # frame 1 lays every part, frame 2 replays them all, frame 3 finds that set again: the layer is drawn
        assert [(s.still, s.still_drawn) for s in stats] == [(False, False), (False, False), (True, True),
                                                             (True, False)]
        # the clock moves on: the drums turn, the layer holds only what is still
        st.timeline.advance(1 / 30)
        shooter.shoot(st)
        st.timeline.advance(1 / 30)
        shooter.shoot(st)
        st.timeline.advance(1 / 30)
        shooter.shoot(st)
        s = shooter.last_stats
        assert s.still and not s.still_drawn
        # a new palette: the layer is drawn anew in it
        st.set_palette("projector")
        stats = []
        for _ in range(3):
            shooter.shoot(st)
            stats.append(shooter.last_stats)
        assert [(s.still, s.still_drawn) for s in stats] == [(False, False), (False, False), (True, True)]
        # the camera flies to another view: nothing is still while it moves
        st.camera_transition_s = 0.5
        st.set_view("exploded")
        for _ in range(4):
            st.advance(1 / 30)
            shooter.shoot(st)
            assert st.animating and not shooter.last_stats.still
    finally:
        st.release()
