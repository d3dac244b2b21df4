"""The table rendered offscreen: parts where the camera expects them, lit lanes, bounded cost, determinism."""
import numpy as np
import pytest

from corpus.errors import InputError
from scenes.layout import PARTS
from scenes.readhead import lane_probe
from tests.scene_helpers import make_stage, patch, traces, warm

W, H = 640, 360


def test_each_part_appears_where_the_camera_expects_it(stage, shooter):
    stage.set_view("table")
    stage.show_labels = False
    stage.timeline.seek(stage.timeline.step_moment(1, "check"))
    full = shooter.shoot(stage)
    try:
        for name, info in PARTS.items():
            x, y = stage.project(info.probe, W, H)
            assert 0 <= x < W and 0 <= y < H, name
            stage.hidden = {name}
            without = shooter.shoot(stage)
            here = np.abs(patch(full, x, y, 4) - patch(without, x, y, 4)).mean()
            assert here > 10, f"{name}: nothing drawn at its probe ({here:.1f})"
            # Hiding one part leaves far-away pixels alone (the table's front-left corner).
            corner = np.abs(patch(full, W * 0.05, H * 0.95, 4) - patch(without, W * 0.05, H * 0.95, 4)).mean()
            assert corner < 2, name
    finally:
        stage.hidden = set()
        stage.show_labels = True


def _lit_lanes(stage, shooter):
    img = shooter.shoot(stage)
    return [warm(patch(img, *stage.project(lane_probe(k), W, H), 1).reshape(-1, 3).mean(0)) for k in range(9)]


def test_lit_lanes_equal_tokens_in_the_pass(stage, shooter):
    stage.set_view("readhead")
    trs = traces()
    for k in (0, 2):
        stage.timeline.seek(stage.timeline.step_moment(k, "mid-verify"))
        lit = _lit_lanes(stage, shooter)
        assert lit == [i < trs[k].lanes_lit for i in range(9)], lit
    stage.timeline.seek(stage.timeline.step_moment(1, "mid-draft"))
    assert _lit_lanes(stage, shooter) == [False] * 9


def test_batching_lights_one_lane_per_sequence(shooter):
    st = make_stage(gamma=1, steps=2, with_tubes=False, batch_lanes=3)
    try:
        st.set_view("readhead")
        st.timeline.seek(st.timeline.step_moment(0, "mid-verify"))
        lit = _lit_lanes(st, shooter)
        assert lit == [i < 6 for i in range(9)]    # 3 sequences x (γ + 1) tokens
    finally:
        st.release()


@pytest.mark.parametrize("view", ["table", "exploded"])
def test_draw_calls_and_triangles_stay_bounded(view, shooter):
    st = make_stage(gamma=8, steps=3, batch_lanes=9)
    try:
        st.show_hud = True
        st.set_view(view)
        st.timeline.seek(st.timeline.step_moment(1, "mid-verify"))
        shooter.shoot(st)
        s = shooter.last_stats
        assert 5 <= s.draw_calls < 60
        assert 10_000 < s.triangles < 300_000
        assert s.frame_ms > 0
    finally:
        st.release()


def test_exploded_view_lifts_every_part(stage, shooter):
    stage.set_view("exploded")
    try:
        off = stage.offsets()
        assert all(np.linalg.norm(off[name]) > 1.0 for name in PARTS)
        stage.show_labels = False
        full = shooter.shoot(stage)
        probe = np.add(PARTS["bigdrum"].probe, off["bigdrum"])
        stage.hidden = {"bigdrum"}
        without = shooter.shoot(stage)
        x, y = stage.project(probe, W, H)
        assert np.abs(patch(full, x, y, 4) - patch(without, x, y, 4)).mean() > 10
    finally:
        stage.hidden = set()
        stage.show_labels = True
        stage.set_view("table")


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080), (1024, 768)])
def test_exploded_view_separates_every_part_on_screen(stage, size):
    """Taken apart, no two parts' whole screen boxes overlap (each with what rides with it: the typing head and
    the pencil cart's rail on the tape), and every part is inside the frame."""
    import itertools
    w, h = size
    stage.set_view("exploded")
    try:
        stage.frame_for(w, h)
        rects = stage.whole_part_rects(w, h)
        assert set(rects) == set(PARTS) and all(r is not None for r in rects.values())
        for a, b in itertools.combinations(rects, 2):
            ra, rb = rects[a], rects[b]
            shared = min(ra[2], rb[2]) - max(ra[0], rb[0]), min(ra[3], rb[3]) - max(ra[1], rb[1])
            assert min(shared) <= 1.0, (a, ra, b, rb)
        for name, r in rects.items():
            assert r[0] >= 0 and r[1] >= 0 and r[2] <= w and r[3] <= h, (name, r)
        # standing on the table, the same boxes do overlap: the separation is the exploded view's doing
        stage.set_view("table")
        stage.frame_for(w, h)
        on_table = stage.whole_part_rects(w, h)
        assert any(min(min(ra[2], rb[2]) - max(ra[0], rb[0]), min(ra[3], rb[3]) - max(ra[1], rb[1])) > 1.0
                   for ra, rb in itertools.combinations(on_table.values(), 2))
    finally:
        stage.set_view("table")


def test_the_exploded_flight_is_eased_and_cut_in_reduced_motion():
    from tests.scene_helpers import make_stage
    st = make_stage()
    try:
        st.camera_transition_s = 0.9
        st._rendered = True                    # as after a first frame: the parts fly rather than jump
        st.set_view("exploded")
        lifts = [st._explode]
        for _ in range(27):
            st.advance(1 / 30, play=False)
            lifts.append(st._explode)
        steps = np.diff(lifts)
        assert lifts[0] == 0.0 and lifts[-1] == 1.0 and (steps >= 0).all()
        # eased: slow out of the table, fastest mid-flight, slow into place
        assert steps[0] < steps[13] / 3 and steps[-1] < steps[13] / 3
        st.set_view("table")
        st.reduced_motion = True
        st.advance(1 / 30, play=False)          # flying back; with reduced motion the next move is a cut
        st.set_view("exploded")
        assert st._explode == 1.0 and not st.animating
    finally:
        st.release()


def test_same_time_same_frame_and_projector_palette_is_brighter(stage, shooter):
    stage.set_view("table")
    stage.timeline.seek(0)
    for _ in range(150):                 # 2.5 s at 60 fps
        stage.timeline.advance(1 / 60)
    a = shooter.shoot(stage)
    stage.timeline.seek(0)
    for _ in range(60):                  # 2.5 s at 24 fps
        stage.timeline.advance(1 / 24)
    b = shooter.shoot(stage)
    assert np.abs(a.astype(int) - b.astype(int)).max() <= 2
    stage.set_palette("projector")
    try:
        c = shooter.shoot(stage)
    finally:
        stage.set_palette("default")
    assert c.mean() > a.mean() + 5


def test_unknown_view_and_palette_are_input_errors(stage):
    with pytest.raises(InputError):
        stage.set_view("ceiling")
    with pytest.raises(InputError):
        stage.set_palette("neon")


def test_empty_stage_and_target_only_run_render(shooter):
    from models.sampler import SamplerSettings, TargetSampler
    from scenes.stage import Stage
    from tests.scene_helpers import gl_context, pair

    st = Stage(gl_context())
    try:
        st.camera_transition_s = 0.0
        img = shooter.shoot(st)                    # nothing set: the bare table
        assert img.std() > 10 and st.state().phase == "idle"
        p = pair()
        s = TargetSampler(p, SamplerSettings(seed=2))
        s.reset(p.encode("孔乙己"))
        trs = [s.step() for _ in range(3)]
        st.set_run(p, trs)
        st.timeline.seek(st.timeline.step_moment(1, "mid-verify"))
        shooter.shoot(st)
        assert st.state().lanes_lit == 1           # the target alone computes one token per pass
        st.timeline.seek(st.timeline.duration)
        shooter.shoot(st)
        marks = [c.mark for c in st.tape_cells() if c.position >= 3]
        assert marks and set(marks) == {"diamond"}
    finally:
        st.release()


def test_stage_api_contract_every_view_renders(stage):
    """The API the app codes against (TEAM.md): names, types, and every view drawing something."""
    from scenes.camera import VIEWS
    from scenes.offscreen import Offscreen
    from tests.scene_helpers import gl_context

    tl = stage.timeline
    for name in ("t", "duration", "seek", "advance", "paused", "speed", "step_start", "current_step"):
        assert hasattr(tl, name), name
    assert tl.duration > 0 and tl.step_start(1) > tl.step_start(0) == 0.0
    off = Offscreen(gl_context(), 160, 90)
    try:
        assert set(VIEWS) == {"table", "bigdrum", "readhead", "cutaway", "smalldrum", "tape", "bridge", "mill",
                              "cabinet", "tubes", "exploded"}
        for view in VIEWS:
            stage.set_view(view)
            stats = stage.render(off.fbo, 160, 90)
            assert stats.draw_calls > 3 and stats.triangles > 100 and stats.frame_ms > 0, view
            assert off.read().std() > 5, view
        stage.reduced_motion = True
        assert stage.timeline.reduced_motion
        stage.reduced_motion = False
    finally:
        off.release()
        stage.set_view("table")


def test_parts_are_told_apart_by_their_materials(stage, shooter):
    """The KV cabinet is an oak card-index cabinet (its drawer fronts warm wood, not iron), and the parts' iron
    frames stand darker than the table's own top, so a frame's edge shows against the table."""
    stage.show_labels = stage.show_hud = False
    try:
        stage.set_view("cabinet")
        stage.timeline.seek(stage.timeline.step_moment(1, "write"))
        img = shooter.shoot(stage).astype(int)
        cab = stage.cabinet
        fw = cab.x1 - cab.x0 - 0.3
        for i in (1, 4, 7):                     # between the gauge and the handle of a lower drawer
            cx, cy, cz = cab.drawer_front(i, 0.0)
            r, g, b = patch(img, *stage.project((cx + 0.12 * fw, cy - 0.3 * cab.slot_h, cz + 0.051), W, H),
                            1).reshape(-1, 3).mean(0)
            assert r > g > b and r - b > 25, (i, (r, g, b))
        stage.set_view("table")
        img = shooter.shoot(stage).astype(int)
        for name in ("readhead", "tubes"):
            lo, hi = stage.part_boxes((name,), whole=True)[name]
            mid = (lo + hi) / 2
            face = patch(img, *stage.project((mid[0], lo[1] + 0.25, hi[2] - 0.005), W, H), 2).mean()
            top = patch(img, *stage.project((mid[0], 0.0, hi[2] + 0.35), W, H), 2).mean()
            assert top - face > 8, (name, face, top)
    finally:
        stage.show_labels = stage.show_hud = True
        stage.set_view("table")
