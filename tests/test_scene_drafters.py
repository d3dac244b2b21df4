"""Each drafter at work on the table, rendered offscreen and read back: lookup lights the text it copies (and the
small drum stays still), the heads sit on the big drum only in a heads run and light as they propose, a tree's
every node is pencilled on the tape with the read head lighting nodes + 1 lanes, the bridge tests it one round
at a time and the kept branch is inked; draw calls and triangles stay bounded for every drafter."""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from scenes.bigdrum import HEAD_R, BigDrum
from scenes.bridge import COLUMN_H, COLUMN_V0, MeterBridge, meter_point
from scenes.readhead import lane_probe
from scenes.tape import GLYPH_V, tape_point
from scenes.timeline import TICK
from tests.scene_helpers import copper, gl_context, pair, patch, red, warm

W, H = 960, 540
# The prefix says 我们 twice: lookup's first pass copies what followed the first one.
REPEAT = "我们一同走出去，我们"      # our own words, not the book's


@functools.lru_cache(maxsize=8)
def run(name: str, prefix: str = REPEAT, steps: int = 3, seed: int = 0, **opts):
    from models.drafters import make_drafter
    from models.sampler import SamplerSettings, SpeculativeSampler
    p = pair()
    s = SpeculativeSampler(p, SamplerSettings(gamma=4, seed=seed), drafter=make_drafter(name, p, **opts))
    s.reset(p.encode(prefix))
    return tuple(s.step() for _ in range(steps))


def stage_for(traces, view="table"):
    from scenes.stage import Stage
    st = Stage(gl_context())
    st.set_run(pair(), list(traces))
    st.show_hud = False
    st.show_labels = False
    st.camera_transition_s = 0.0
    st.set_view(view)
    return st


@pytest.fixture(scope="module")
def shooter():
    from tests.scene_helpers import Shooter
    sh = Shooter(W, H)
    yield sh
    sh.release()


def _small_drum_region(st, img):
    from scenes.layout import SMALL_DRUM_CENTRE
    x, y = st.project(SMALL_DRUM_CENTRE, W, H)
    return patch(img, x, y, 14)


# ------------------------------------------------------------------ lookup
def test_lookup_lights_the_copied_span_and_underlines_the_match(shooter):
    trs = run("lookup")
    span = trs[0].source_span
    assert span is not None and span["match"] == [0, 2] and span["copy"] == [2, 6]
    st = stage_for(trs, "tape")
    try:
        tl = st.timeline
        a, b = tl.steps[0].look
        tl.seek(a + 0.6 * (b - a))                        # the tape has glided back, the span is lit
        state = st.state()
        assert state.source["lit"] == 1.0 and state.tape_view < tl.steps[0].position
        img = shooter.shoot(st)
        cells = {c.position: c for c in st.tape_cells()}
        assert set(range(0, 8)) <= set(cells)             # the copied text and its occurrence are on the tape

        def tint(c, dv):
            # beside the glyph, inside the cell: the band (or bare paper), never the character's ink
            x, y = st.project(tape_point(c.x - 0.4 * c.cell, GLYPH_V + dv * c.size, 0.02), W, H)
            px = patch(img, x, y, 1).reshape(-1, 3).mean(0)
            return px[0] - px[2], px
        for pos, c in cells.items():
            rb, px = tint(c, 0.45)
            if 2 <= pos < 6:
                assert rb > 85, (pos, px)                 # amber band over the copied tokens
            elif pos < 12:
                assert rb < 60, (pos, px)                 # plain paper elsewhere
        # the earlier occurrence 我们 underlined in green; the copied tokens not
        for pos in range(0, 8):
            c = cells[pos]
            x, y = st.project(tape_point(c.x, GLYPH_V - 0.5 * c.size - 0.06, 0.02), W, H)
            px = patch(img, x, y, 1).reshape(-1, 3).mean(0)
            green = px[1] > px[0] + 15 and px[1] > px[2]
            assert green == (pos < 2), (pos, px)
        # once the big drum has turned, nothing is lit and the tape is back at the window
        tl.seek(tl.steps[0].check[0])
        assert st.state().source is None and st.state().tape_view == tl.steps[0].position
    finally:
        st.release()


def test_lookup_and_heads_leave_the_small_drum_still_the_chain_turns_it(shooter):
    for name, still in (("lookup", True), ("heads", True), ("chain", False)):
        st = stage_for(run(name), "smalldrum")
        try:
            d = st.timeline.steps[0].draft
            frames = []
            for f in (0.55, 0.95):
                st.timeline.seek(d[0] + f * (d[1] - d[0]))
                frames.append(_small_drum_region(st, shooter.shoot(st)))
            moved = np.abs(frames[0] - frames[1]).mean()
            assert (moved < 0.5) == still, (name, moved)
        finally:
            st.release()


def test_a_framed_lookup_pass_shows_the_occurrence_it_copies_from():
    """A beat about the tape in a lookup pass frames the text back to the earlier occurrence (three cells before
    the writing window otherwise), so the class sees where the text's end occurred before and what followed."""
    from scenes.framing import tape_box
    from scenes.layout import TAPE_X, tape_point, window
    for prefix, within in (("我们一同走出去，一同", True), (REPEAT, False)):
        trs = run("lookup", prefix)
        span = trs[0].source_span
        back = len(trs[0].context) - span["match"][0]
        assert back > 3
        st = stage_for(trs)
        try:
            st.timeline.seek(0.0)
            lo, hi = st.part_boxes(["tape"])["tape"]
            x0, cell = window(len(trs[0].guesses))
            if within:      # the occurrence is on the tape's visible stretch: the frame reaches back to it
                assert lo[0] <= tape_point(x0 - back * cell, 0.0)[0] + 1e-6, (prefix, lo)
            # never past the paper's visible stretch (farther back, the tape glides back during the pass)
            assert tape_point(TAPE_X[0] - 0.5 * cell, 0.0)[0] <= lo[0] < tape_box(4)[0][0] - 1.0, (prefix, lo)
        finally:
            st.release()
    st = stage_for(run("chain"))
    try:
        st.timeline.seek(0.0)
        assert np.allclose(st.part_boxes(["tape"])["tape"][0], tape_box(4)[0])
    finally:
        st.release()


def test_a_lookup_pass_with_nothing_to_copy_is_the_target_alone():
    trs = run("lookup", prefix="慢慢", steps=4)
    none = [k for k, t in enumerate(trs) if t.source_span is None]
    assert none, "some pass of 慢慢 finds no earlier occurrence"
    st = stage_for(trs)
    try:
        k = none[0]
        st.timeline.seek(st.timeline.step_moment(k, "mid-verify"))
        state = st.state()
        assert state.lanes_true == 1 and state.extra["target_only"] and state.meters == []
        assert state.extra["copied"] == 0
    finally:
        st.release()


def _source_marks(st, img, cells, pos):
    """(red less blue beside the glyph, green less red under it) of the cell at `pos`: the copied span's amber band
    and the matching tokens' green underline (as in the test above)."""
    c = cells[pos]
    x, y = st.project(tape_point(c.x - 0.4 * c.cell, GLYPH_V + 0.45 * c.size, 0.02), W, H)
    band = patch(img, x, y, 1).reshape(-1, 3).mean(0)
    x, y = st.project(tape_point(c.x, GLYPH_V - 0.5 * c.size - 0.06, 0.02), W, H)
    line = patch(img, x, y, 1).reshape(-1, 3).mean(0)
    return band[0] - band[2], line[1] - line[0]


def test_lookup_keeps_the_copied_from_span_marked_while_the_bridge_checks_the_copies(shooter):
    """The look's light is brief; the class must still see where the guesses came from while the bridge checks them
    and the typing head writes: from the pass's start until the tape scrolls on, the copied span keeps its amber
    band and the earlier occurrence and the text's end their green underline; the copies themselves are pencil."""
    trs = run("lookup", "我们一同走出去，一同")
    span = trs[0].source_span
    assert span["match"] == [2, 4] and span["copy"] == [4, 8]
    st = stage_for(trs, "tape")
    try:
        tl = st.timeline
        s0 = tl.steps[0]
        for t in (0.0, tl.step_moment(0, "mid-check"), tl.step_moment(0, "write")):
            tl.seek(t)
            state = st.state()
            assert state.source is None                   # the look's light is off
            img = shooter.shoot(st)
            cells = {c.position: c for c in st.tape_cells()}
            for pos in range(3, 10):              # 同 走出去， 一同 (the first 一 is at the frame's edge)
                band, green = _source_marks(st, img, cells, pos)
                assert (band > 50) == (4 <= pos < 8), (t, pos, band)
                assert (green > 40) == (pos in (3, 8, 9)), (t, pos, green)
            # the copies in the writing window: pencil on bare paper
            for c in cells.values():
                if c.position >= s0.position and c.pencil >= 1 and c.ink == 0 and c.erased == 0:
                    band, green = _source_marks(st, img, cells, c.position)
                    assert band < 30 and green < 20, (t, c.position, band, green)
        tl.seek(sum(s0.scroll) / 2)                       # the tape scrolls on: the marks are gone
        assert "copied_from" not in st.state().extra
        img = shooter.shoot(st)
        cells = {c.position: c for c in st.tape_cells()}
        for pos in range(4, 10):
            band, green = _source_marks(st, img, cells, pos)
            assert band < 30 and green < 20, (pos, band, green)
    finally:
        st.release()


# ------------------------------------------------------------------ heads
def test_heads_are_drawn_on_the_big_drum_only_in_a_heads_run_and_light_in_turn(shooter):
    shots = {}
    for name in ("heads", "chain"):
        st = stage_for(run(name), "bigdrum")
        try:
            strokes = st.timeline.steps[0].strokes
            imgs = []
            for i, (a, b) in enumerate(strokes):
                st.timeline.seek((a + b) / 2)
                imgs.append(shooter.shoot(st))
                if name == "heads":
                    assert st.state().heads == [1, 2, 3, 4]          # as the exhibit numbers them
                    assert st.state().head_lit[i] == 1.0 and sum(st.state().head_lit) < 2.5
            centres = BigDrum().head_centres(4)
            pts = [st.project(c + np.array([0.2, 0.05, HEAD_R]), W, H) for c in centres]     # beside the number
            lamps = [st.project(c + np.array([0.0, HEAD_R + 0.08, 0.05]), W, H) for c in centres]
            shots[name] = (imgs, pts, lamps)
            if name == "chain":
                assert st.state().heads is None
        finally:
            st.release()
    heads_imgs, pts, lamps = shots["heads"]
    chain_imgs = shots["chain"][0]
    for x, y in pts:
        # a brass head where the chain run shows the dark room behind the drum
        h = patch(heads_imgs[0], x, y, 2).reshape(-1, 3).mean(0)
        c = patch(chain_imgs[0], x, y, 2).reshape(-1, 3).mean(0)
        assert h[0] > h[2] + 30 and h[1] > h[2], h       # brass, shaded
        assert np.abs(h - c).mean() > 30, (h, c)
    # the lamp of the head whose guess is pencilled now is the brightest of the four
    for i, img in enumerate(heads_imgs):
        bright = [patch(img, x, y, 1).mean() for x, y in lamps]
        assert int(np.argmax(bright)) == i, bright


def test_the_big_drums_plate_names_the_heads_in_a_heads_run(shooter):
    """The heads' numbers on the rail are too small to read from across a room in a frame of the whole drum: its
    name plate gets a line naming them (a heads run only), so the plate is taller by that line."""
    from scenes.offscreen import Offscreen
    heights = {}
    for name in ("heads", "chain"):
        st = stage_for(run(name))
        off = Offscreen(st.ctx, W, H)
        try:
            st.show_labels = True
            st.set_focus(["bigdrum", "smalldrum"])
            st.timeline.seek(sum(st.timeline.steps[0].strokes[0]) / 2)
            st.render(off.fbo, W, H)
            heights[name] = {p: h for p, _, _, _, h in st.label_plates}
        finally:
            off.release()
            st.release()
    assert set(heights["heads"]) == set(heights["chain"]) == {"bigdrum", "smalldrum"}
    assert heights["heads"]["smalldrum"] == pytest.approx(heights["chain"]["smalldrum"])
    assert heights["heads"]["bigdrum"] > 1.25 * heights["chain"]["bigdrum"]


# ------------------------------------------------------------------ tree
TREE = dict(tree_width=2, tree_depth=2)


def test_tree_pass_lights_nodes_plus_one_lanes(shooter):
    trs = run("tree", **TREE)
    st = stage_for(trs, "readhead")
    try:
        for k, tr in enumerate(trs):
            assert tr.lanes_lit == len(tr.tree.nodes) + 1 == 7
            st.timeline.seek(st.timeline.step_moment(k, "mid-verify"))
            assert st.state().lanes_true == 7
            img = shooter.shoot(st)
            lit = [warm(patch(img, *st.project(lane_probe(i), W, H), 1).reshape(-1, 3).mean(0)) for i in range(9)]
            assert lit == [i < 7 for i in range(9)], (k, lit)
    finally:
        st.release()


def test_every_tree_node_is_a_mark_on_the_tape(shooter):
    trs = run("tree", **TREE)
    st = stage_for(trs, "tape")
    try:
        tl = st.timeline
        tl.seek(tl.steps[0].verify[0] + 0.1)             # drafted, not yet tested
        marks = st.tape.tree_marks(st.state())
        assert [m[0] for m in marks] == [nd.id for nd in trs[0].tree.nodes]
        img = shooter.shoot(st)
        tl.seek(tl.steps[0].start)                       # the same stretch of tape before the draft: no tree
        assert st.tape.tree_marks(st.state()) == []
        bare = shooter.shoot(st)
        screen = [st.project(p, W, H) for _, p in marks]
        # each knot is its own dark spot, where the paper was bare before the draft
        assert len({(round(x / 4), round(y / 4)) for x, y in screen}) == len(marks)
        for x, y in screen:
            px = patch(img, x, y, 1).reshape(-1, 3).mean(0)
            assert px.mean() < 150 and patch(bare, x, y, 1).mean() > 190, px
    finally:
        st.release()
    chain = stage_for(run("chain"), "tape")
    try:
        chain.timeline.seek(chain.timeline.step_moment(0, "mid-check"))
        assert chain.state().tree is None and chain.tape.tree_marks(chain.state()) == []
    finally:
        chain.release()


def _column(st, img, i, gamma):
    foot = np.array(st.project(meter_point(i, COLUMN_V0, 0.06, 0.0, gamma), W, H))
    top = np.array(st.project(meter_point(i, COLUMN_V0 + COLUMN_H, 0.06, 0.0, gamma), W, H))
    n = int(np.linalg.norm(top - foot))
    last = -1
    for s in range(int(n * 1.15)):
        x, y = foot + (top - foot) * s / n
        if copper(img[int(round(y)), int(round(x))]):
            last = s
    return (last + 1) / n


def test_the_bridge_checks_a_tree_one_round_at_a_time_and_inks_the_kept_branch(shooter):
    trs = run("tree", steps=4, **TREE)
    st = stage_for(trs, "bridge")
    rounds_seen = 0
    try:
        tl = st.timeline
        for k, tr in enumerate(trs):
            tree = tr.tree
            depth = {nd.id: nd.depth for nd in tree.nodes}
            for j, c in enumerate(tree.checks):
                a, b = tl.steps[k].tests[j]
                tl.seek(b - 2 * TICK)                     # the column full, the verdict not yet shown
                state = st.state()
                i = depth[c.node] - 1
                m = state.meters[i]
                assert (m.ratio, m.r) == (c.ratio, c.r) and m.fill > 0.95
                img = shooter.shoot(st)
                # the column is this round's p/q (the running target: the residual after a rejection)
                assert _column(st, img, i, state.gamma) == pytest.approx(min(c.ratio, 1.0), abs=0.08), (k, j)
                # one pip per candidate here; those decided before this round are red (rejected)
                pts = MeterBridge.pip_points(i, m.rounds, state.gamma)
                assert m.rounds == len(tree.children(tree.nodes[c.node].parent))
                for r_ in range(c.round - 1):
                    x, y = st.project(pts[r_], W, H)
                    assert red(patch(img, x, y, 1).reshape(-1, 3).mean(0)), (k, j, r_)
                rounds_seen += c.round > 1
                # the node under test glows on the tape; a kept one is inked right after its test
                node = [n for n in state.tree.nodes if n.id == c.node][0]
                assert node.checking == 1.0
            tl.seek(tl.steps[k].erase[0] - 1e-3)
            state = st.state()
            inked = {n.id for n in state.tree.nodes if n.ink == 1.0}
            struck = {n.id for n in state.tree.nodes if n.struck == 1.0}
            assert inked == set(tree.accepted_path)
            assert struck == {c.node for c in tree.checks if not c.accepted}
            # after the erase only the kept branch and the final token are on the line, inked
            tl.seek(sum(tl.steps[k].scroll) / 2)
            state = st.state()
            assert state.tree is None and state.step == k
            mine = [c for c in state.tape if c.step == k]
            assert [c.token for c in mine] == tr.tokens_written and all(c.ink > 0.99 for c in mine)
        assert rounds_seen >= 1
    finally:
        st.release()


def _red_run(img, x, y, reach=30) -> int:
    """Red pixels in the column through (x, y), within `reach` of it: how thick a strike-through is drawn."""
    col = img[:, int(round(x))]
    return sum(1 for yy in range(int(y) - reach, int(y) + reach) if 0 <= yy < len(col) and red(col[yy]))


def test_a_margin_tree_is_pencilled_on_a_card_nearly_as_large_as_the_line_and_struck_thick(shooter):
    """A 2 x 2 tree in the margin is drawn on a card as deep as the board (the tape alone is too narrow for four
    rows of candidates a classroom can read): the first position's candidates at least 0.88 of the line's
    characters, the second's four at least 0.4 of them, each position one straight column (children staggered left
    and right read as a third column: a tree of two chains), the card is there (paper above the tape's edge, where
    a chain run shows the board) and a rejected candidate is struck with a thick red bar, as a rejected guess on
    the line is."""
    from scenes.layout import TAPE_DEPTH, tree_margin
    margin = tree_margin(2, 2)
    above = (margin[0] + 1.0, TAPE_DEPTH / 2 + 0.12)

    def em(st, lo, hi):
        return float(np.linalg.norm(np.subtract(st.project(hi, W, H), st.project(lo, W, H))))
    trs = run("tree", **TREE)
    st = stage_for(trs, "tape")
    try:
        tl = st.timeline
        tl.seek(tl.step_moment(0, "write"))               # decided: struck, ringed, inked, not yet scrolled on
        state = st.state()
        img = shooter.shoot(st)
        line = [c for c in st.tape_cells() if c.ink >= 1][-1]
        line_em = em(st, line.centre - st.tape.up * line.size / 2, line.centre + st.tape.up * line.size / 2)
        sizes = [em(st, lo, hi) for _, lo, hi in st.tape.tree_glyphs(state)]
        assert len(sizes) == len(trs[0].tree.nodes), sizes
        depth = {nd.id: nd.depth for nd in state.tree.nodes}
        by_depth = {}
        for nd, size in zip(state.tree.nodes, sizes):
            by_depth.setdefault(nd.depth, []).append(size)
        assert min(by_depth[1]) >= 0.88 * line_em and min(by_depth[2]) >= 0.4 * line_em, (by_depth, line_em)
        home = st.tape.tree_layout(state, home=True)
        for d in set(depth.values()):
            xs = [home[n][0] for n in depth if depth[n] == d]
            assert max(xs) - min(xs) < 1e-6, (d, xs)                # one straight column a position
        assert patch(img, *st.project(tape_point(*above, 0.02), W, H), 1).mean() > 200     # the card
        lay = st.tape.tree_layout(state, home=True)
        struck = [nd for nd in state.tree.nodes if nd.struck >= 1]
        assert struck
        for nd in struck:
            x, v, size = lay[nd.id]
            assert _red_run(img, *st.project(tape_point(x, v, 0.02), W, H)) >= 8, nd
        # the card is the tree's: a chain run shows the board there
        chain = stage_for(run("chain"), "tape")
        try:
            chain.timeline.seek(chain.timeline.step_moment(0, "write"))
            assert patch(shooter.shoot(chain), *chain.project(tape_point(*above, 0.02), W, H), 1).mean() < 150
        finally:
            chain.release()
    finally:
        st.release()
    # a guess struck on the line: as thick
    look = stage_for(run("lookup", "我们一同走出去，一同"), "tape")
    try:
        look.timeline.seek(look.timeline.steps[0].strike[1])
        img = shooter.shoot(look)
        struck = [c for c in look.tape_cells() if c.struck >= 1 and c.erased == 0]
        assert struck
        for c in struck:
            assert _red_run(img, *look.project(c.centre, W, H)) >= 7, c
    finally:
        look.release()


# ------------------------------------------------------------------ cost
@pytest.mark.parametrize("view", ["table", "exploded", "tape"])
@pytest.mark.parametrize("name,opts", [("lookup", {}), ("heads", {}), ("tree", {"tree_width": 4, "tree_depth": 4}),
                                       ("tree", {"tree_width": 2, "tree_depth": 2, "tree_from": "heads"})])
def test_draw_calls_and_triangles_stay_bounded_for_every_drafter(view, name, opts, shooter):
    trs = run(name, steps=2, **opts)
    st = stage_for(trs, view)
    try:
        st.show_hud = True
        st.show_labels = True
        worst = (0, 0)
        for phase in ("mid-draft", "mid-verify", "mid-check", "mid-write"):
            st.timeline.seek(st.timeline.step_moment(0, phase))
            shooter.shoot(st)
            s = shooter.last_stats
            worst = (max(worst[0], s.draw_calls), max(worst[1], s.triangles))
        assert 5 <= worst[0] < 60 and 10_000 < worst[1] < 300_000, worst
    finally:
        st.release()


# ------------------------------------------------------------------ the CLI
def test_render_takes_the_drafter_tree_shape_and_tube_rule(tmp_path, capsys):
    from app.cli import main
    base = ["render", "--size", "320x180", "--msaa", "0", "--json", "--prefix", REPEAT, "--step", "1"]
    for extra, lanes in ((["--drafter", "tree", "--tree-depth", "2"], 7), (["--drafter", "heads"], 5),
                         (["--drafter", "lookup", "--phase", "look"], 0), (["--drafter", "tree", "--tree-width", "3",
                                                                             "--tree-depth", "2", "--phase", "mid-verify"], 13)):
        out = tmp_path / "x.png"
        assert main([*base, *extra, "--out", str(out)]) == 0
        obj = json.loads(capsys.readouterr().out)
        assert obj["drafter"] == extra[1] and obj["lanes_lit"] == lanes and out.stat().st_size > 1000, extra
    assert main([*base, "--view", "tubes", "--rule", "typical", "--out", str(tmp_path / "t.png")]) == 0
    capsys.readouterr()
    for bad in (["--drafter", "tree", "--tree-width", "99"], ["--drafter", "medusa"], ["--tree-depth", "2"],
                ["--rule", "nope"], ["--drafter", "heads", "--gamma", "13"]):
        try:
            rc = main([*base, *bad, "--out", str(tmp_path / "y.png")])
        except SystemExit as exc:        # argparse's own usage errors exit 2 with one line
            rc = exc.code
        assert rc == 2, bad
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("spectable: error:"), (bad, err)
