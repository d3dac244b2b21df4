"""Screen words that stay legible in every view: lane numbers apart, the mill's readout in sight, plates off readouts."""
import numpy as np
import pytest

from scenes.layout import PARTS, TUBES_CENTRE
from scenes.tubes import N_CHARS, TUBE_Y0
from tests.scene_helpers import Shooter, make_stage, patch

W, H = 960, 540
BW, BH = 1280, 720       # the lane numbers: a projector-sized frame


@pytest.fixture(scope="module")
def big_shooter():
    sh = Shooter(BW, BH)
    yield sh
    sh.release()


def _apart(a, b) -> bool:
    return a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0] or a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1]


def _chip(spot):
    _, x, y, size, _, _ = spot
    return (x - 0.45 * size, y - 0.45 * size, 0.9 * size, 0.9 * size)


@pytest.mark.parametrize("view", ["bigdrum", "readhead", "cutaway"])
def test_lane_numbers_are_apart_and_drawn_in_the_close_ups(view, stage, big_shooter):
    stage.set_view(view)
    stage.timeline.seek(stage.timeline.step_moment(1, "verify"))
    img = big_shooter.shoot(stage)
    spots = stage.lane_numbers
    assert [s[0] for s in spots] == list(range(9))
    for a, b in zip(spots, spots[1:]):
        assert _apart(_chip(a), _chip(b)), (view, a, b)
    assert min(s[3] for s in spots) >= BH / 80
    # Read in order: 1 to 9 run one way down (or across) the screen, as the shafts do.
    ys = np.array([s[2] for s in spots])
    assert np.all(np.diff(ys) > 0) or np.all(np.diff(ys) < 0) or np.all(np.diff([s[1] for s in spots]) < 0)
    for lane, x, y, size, ex, ey in spots:
        assert 0 <= x <= BW and 0 <= y <= BH
        # Each number sits by its own shaft's end (or on a leader line to it): nearer to it than to the
        # other shafts' ends is too strict for a fanned column, so: within a few ems.
        assert np.hypot(x - ex, y - ey) < 6 * size, (view, lane)
        # A dark chip with a light digit on it: the number is there, on its own chip.
        px = patch(img, x, y, int(size * 0.35))
        assert px.max() - px.min() > 80, (view, lane)


def test_lane_numbers_hide_where_the_lanes_are_too_close_to_read(stage, shooter):
    stage.set_view("table")
    shooter.shoot(stage)
    spots = stage.lane_numbers
    # The table view shows the read head small: either no numbers or numbers that do not touch.
    for a, b in zip(spots, spots[1:]):
        assert _apart(_chip(a), _chip(b))
    assert not spots or min(s[3] for s in spots) >= H / 80


@pytest.mark.parametrize("view", ["table", "exploded", "bridge", "tape"])
def test_mill_readout_is_in_sight_wherever_the_mill_is_seen(view, stage, shooter):
    stage.set_view(view)
    stage.timeline.seek(stage.timeline.step_moment(1, "write"))
    full = shooter.shoot(stage)
    plates = {name: rect for name, *rect in stage.label_plates}
    assert "mill" in plates, view
    x, y, w, h = plates["mill"]
    # Name plus readout (busy %, device, model, context): many lines tall.
    assert h > 4 * (H / 34), view
    for rect in stage.label_keep_out:
        assert _apart((x, y, w, h), rect), (view, rect)
    try:
        stage.hidden = {"bridge"}
        without = shooter.shoot(stage)
        assert {n: r for n, *r in stage.label_plates}["mill"] == [x, y, w, h]
    finally:
        stage.hidden = set()
    region = (slice(int(y), int(y + h)), slice(int(x), int(x + w)))
    assert np.abs(full[region].astype(int) - without[region].astype(int)).mean() < 0.5, view


def test_mill_close_up_reads_the_readout_off_its_base(stage, shooter):
    stage.set_view("mill")
    shooter.shoot(stage)
    assert stage.label_plates == []


@pytest.mark.parametrize("size", [(960, 540), (1150, 980)])
def test_exploded_plates_stay_off_readouts_and_near_their_parts(size):
    w, h = size
    st = make_stage()
    sh = Shooter(w, h)
    try:
        st.show_hud = True
        st.language = "zh"
        st.set_view("exploded")
        st.timeline.seek(st.timeline.step_moment(1, "write"))
        with_labels = sh.shoot(st)
        tv_drawn = any(str(b[0]).startswith("TV") for b in st.legibility["boxes"])
        plates, keep_out = list(st.label_plates), list(st.label_keep_out)
        assert len(keep_out) >= 4          # two racks, the bridge, the cabinet
        for name, *rect in plates:
            for k in keep_out:
                assert _apart(rect, k), (name, k)
        offsets = st.offsets()
        vp = st.viewproj(w, h)
        from scenes.camera import project
        for name, px, py, pw, ph in plates:
            info = PARTS[name]
            base = info.exploded_anchor or info.anchor
            ax, ay, _ = project(vp, np.add(base, offsets[name]), w, h)
            cx, cy = px + pw / 2, py + ph / 2
            # Near its part: the plate's centre within a fifth of the frame height (plus its own size) of
            # the anchor (the mill's plate is tall: it carries the readout).
            assert abs(cx - ax) < pw / 2 + 0.2 * h and abs(cy - ay) < ph + 0.2 * h, (name, (cx, cy), (ax, ay))
        # Each rack's TV readout, where it is drawn (large enough to read from here), looks the same with and
        # without the names: no plate covers it and a leader passes under its words.
        st.show_labels = False
        bare = sh.shoot(st)
        off = np.asarray(offsets["tubes"])
        for rack in (0, 1) if tv_drawn else ():     # (left out where too small to read: nothing to cover)
            xs = [st.tubes.tube_x(rack, j) for j in range(N_CHARS + 1)]
            p = np.array([(xs[0] + xs[-1]) / 2, (TUBE_Y0 - 0.07) / 2, TUBES_CENTRE[2] + 0.41]) + off
            tx, ty = st.project(p, w, h)
            assert np.abs(patch(with_labels, tx, ty, 6) - patch(bare, tx, ty, 6)).mean() < 1.0, rack
    finally:
        sh.release()
        st.release()


def test_a_placement_asked_again_is_the_one_computed_and_leader_dots_are_the_rects_they_replace():
    """The plates' placement is kept by its inputs: asked again it is what placing afresh gives, and other inputs
    are placed afresh; a leader's dots laid in one array are the rows one rectangle at a time would write."""
    from scenes import placement
    from scenes.frame import FrameBuilder
    from scenes.text_atlas import GlyphAtlas
    rng = np.random.default_rng(3)
    for _ in range(20):
        wanted = [tuple(rng.uniform(0, 600, 2)) + (rng.uniform(40, 160), rng.uniform(16, 40)) for _ in range(6)]
        keep = [tuple(rng.uniform(0, 600, 2)) + (120.0, 60.0)]
        avoid = [[tuple(rng.uniform(0, 600, 2)) + (80.0, 80.0)] for _ in wanted]
        leaders = [tuple(rng.uniform(0, 640, 2)) for _ in wanted]
        first = placement._place(wanted, 640, 480, keep, avoid=avoid, leaders=leaders)
        again = placement._place(list(wanted), 640, 480, list(keep), avoid=avoid, leaders=leaders)
        fresh = placement._place_now(wanted, 640, 480, keep, 4.0, avoid, leaders)
        assert first == again == (list(fresh[0]), list(fresh[1]))
        moved = placement._place(wanted, 640, 480, keep + [(0.0, 0.0, 640.0, 240.0)], avoid=avoid, leaders=leaders)
        assert moved == tuple(map(list, placement._place_now(wanted, 640, 480, keep + [(0.0, 0.0, 640.0, 240.0)],
                                                          4.0, avoid, leaders)))
    atlas = GlyphAtlas()
    one, many = FrameBuilder(atlas), FrameBuilder(atlas)
    xs, ys = rng.uniform(0, 900, 25), rng.uniform(0, 500, 25)
    for x, y in zip(xs, ys):
        one.rect_screen(float(x), float(y), 3.0, 3.0, (0.9, 0.8, 0.7, 1.0))
    many.rects_screen(xs, ys, 3.0, 3.0, (0.9, 0.8, 0.7, 1.0))
    assert np.allclose(np.concatenate(one.screen_text), np.concatenate(many.screen_text), atol=1e-4)


def test_plates_whose_leaders_cross_trade_places():
    """Two plates whose leaders cross read as naming each other's parts: traded, each leader runs to its own part
    without crossing the other, and each plate keeps its own words and size."""
    from scenes.placement import _segments_cross, _uncross_leaders, leader_foot
    # the upper plate names the lower part, the lower plate the upper part: their leaders cross
    drawn = [("tape", 100.0, 100.0, 80.0, 20.0, True, ["paper tape"]),
             ("bridge", 80.0, 130.0, 100.0, 20.0, True, ["bridge of meters"])]
    targets = {"tape": ((300.0, 160.0), (250.0, 150.0, 350.0, 170.0)),
               "bridge": ((300.0, 105.0), (260.0, 95.0, 340.0, 115.0))}

    def crossing(d):
        (_, *ra), (_, *rb) = [(x[0], *x[1:5]) for x in d]
        pa, pb = targets[d[0][0]][0], targets[d[1][0]][0]
        return _segments_cross(leader_foot(pa, ra), pa, leader_foot(pb, rb), pb)
    assert crossing(drawn)
    out = _uncross_leaders(drawn, targets)
    assert not crossing(out)
    assert [(d[0], d[3], d[4], d[6]) for d in out] == [(d[0], d[3], d[4], d[6]) for d in drawn]
    # where trading would put a plate over another labelled part, they stay as they were
    targets["wall"] = ((0.0, 0.0), (60.0, 95.0, 190.0, 125.0))
    assert _uncross_leaders(drawn, targets) == drawn


def _through(a, b, rect, pad=0.0) -> bool:
    """Whether the segment a-b passes through the inside of rect (x, y, w, h) grown by pad (sampled finely)."""
    t = np.linspace(0.0, 1.0, 600)
    xs, ys = a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t
    x, y, w, h = rect
    return bool(np.any((xs > x - pad) & (xs < x + w + pad) & (ys > y - pad) & (ys < y + h + pad)))


def test_no_plate_is_laid_over_a_leader_nor_a_leader_over_a_plate():
    """Plates placed one after another with leaders: a later plate never covers an earlier plate's leader (the
    mill's leader ran under the big drum's plate: the plate seemed to name the mill), no leader runs over a plate
    placed before it or given (`plates`: the parts' plates, for the riders laid after them), no plate covers a
    leader given (`lines`), no two leaders cross, and each plate takes the nearest spot that keeps all that (a
    plain search over every move, nearest first, finds the same)."""
    from scenes import placement
    rng = np.random.default_rng(7)
    for trial in range(5):
        wanted = [tuple(rng.uniform(0, 560, 2)) + (rng.uniform(60, 180), rng.uniform(18, 40)) for _ in range(6)]
        leaders = [(x + w / 2 + rng.uniform(-80, 80), y + h + rng.uniform(20, 160)) for x, y, w, h in wanted]
        keep = [tuple(rng.uniform(0, 600, 2)) + (90.0, 50.0)]
        avoid = [[] for _ in wanted]
        plates = [tuple(rng.uniform(0, 600, 2)) + (100.0, 30.0)]
        lines = [((float(rng.uniform(0, 640)), float(rng.uniform(0, 480))),
                  (float(rng.uniform(0, 640)), float(rng.uniform(0, 480))))]
        out, ok = placement._place_now(wanted, 640, 480, keep, 4.0, avoid, leaders, plates, lines)
        laid = [((x, y, w[2], w[3]), p) for (x, y), w, p, good in zip(out, wanted, leaders, ok) if good]
        for i, (rect, p) in enumerate(laid):
            foot = placement.leader_foot(p, rect)
            for a, b in lines + [(placement.leader_foot(q, r), q) for j, (r, q) in enumerate(laid) if j != i]:
                assert not _through(a, b, rect, 1.0), (trial, i)
            for other in plates + [r for j, (r, _) in enumerate(laid) if j != i]:
                assert not _through(foot, p, other, 1.0), (trial, i, other)
        # the nearest spot that keeps all that: every move tried in turn, one rectangle at a time
        placed, drawn, ls = list(keep), list(plates), list(lines)
        step = 480 / 90.0
        for (x, y, w, h), p, spot, good in zip(wanted, leaders, out, ok):
            found = None
            for dx, dy in placement._MOVES:
                cx = min(max(x + dx * step, 2.0), max(640 - w - 2.0, 2.0))
                cy = min(max(y + dy * step, 2.0), max(480 - h - 2.0, 2.0))
                r = (cx, cy, w, h)
                if any(cx < rx + rw + 4 and rx < cx + w + 4 and cy < ry + rh + 4 and ry < cy + h + 4
                       for rx, ry, rw, rh in placed):
                    continue
                foot = placement.leader_foot(p, r)
                if any(placement.segment_meets_rect(a, b, r, 2.0) for a, b in ls) or \
                        any(placement.segment_meets_rect(foot, p, q, 2.0) for q in drawn) or \
                        any(placement._segments_cross(foot, p, a, b) for a, b in ls):
                    continue
                found = r
                break
            assert good == (found is not None) and (not good or np.allclose(spot, found[:2])), (trial, spot, found)
            if found:
                placed.append(found)
                drawn.append(found)
                ls.append((placement.leader_foot(p, found), p))


def test_leaders_trade_places_only_where_no_leader_then_runs_over_a_plate():
    """Two plates whose leaders cross trade places, unless traded one leader would run over a third plate (it
    would then seem to name that plate's part)."""
    from scenes.placement import _segments_cross, _uncross_leaders, leader_foot
    drawn = [("tape", 100.0, 100.0, 80.0, 20.0, True, ["paper tape"]),
             ("bridge", 80.0, 130.0, 100.0, 20.0, True, ["bridge of meters"])]
    targets = {"tape": ((300.0, 160.0), (250.0, 150.0, 350.0, 170.0)),
               "bridge": ((300.0, 105.0), (260.0, 95.0, 340.0, 115.0))}
    traded = _uncross_leaders(drawn, targets)
    assert traded != drawn
    # the bridge's leader, traded, would leave the upper slot for its anchor: a plate on that way stops the trade
    (_, *rb), pb = traded[1][:5], targets["bridge"][0]
    foot = leader_foot(pb, rb)
    mid = ((foot[0] + pb[0]) / 2, (foot[1] + pb[1]) / 2)
    wall = ("mill", mid[0] - 6.0, mid[1] - 4.0, 12.0, 8.0, True, ["mill"])
    assert _uncross_leaders(drawn + [wall], targets) == drawn + [wall]
    assert _segments_cross(leader_foot(targets["tape"][0], drawn[0][1:5]), targets["tape"][0],
                           leader_foot(pb, drawn[1][1:5]), pb)


def test_the_tapes_paper_keeps_plates_off_in_pieces():
    """A plate keeps off the tape's paper, not off the whole box around a strip seen slanting: the strip's keep-out
    is a row of pieces along it, each smaller than the box around all of it."""
    from scenes.stage_labels import TAPE_PIECES
    st = make_stage()
    try:
        # chapter 12's whole table taken apart, in the frame the tour gives it: the strip runs down across it
        st._size = (896, 429)
        st.set_focus(["bigdrum", "readhead", "smalldrum", "tape", "bridge", "mill", "cabinet", "tubes"], "exploded")
        st.frame_for(896, 429)
        st.shows = lambda: {"table", "tape"}        # the tape's readout alone
        rects = st.readout_rects(896, 429)
        assert len(rects) == TAPE_PIECES > 1
        x0, y0 = min(r[0] for r in rects), min(r[1] for r in rects)
        x1, y1 = max(r[0] + r[2] for r in rects), max(r[1] + r[3] for r in rects)
        assert sum(r[2] * r[3] for r in rects) < 0.7 * (x1 - x0) * (y1 - y0)
    finally:
        st.release()
