"""Every beat of the tour frames what it names: walked through all twelve chapters in both languages with the
real controller and table driver on an offscreen stage (the window shell adds only the drawing), each beat's
parts are on screen, a sensible share of the view, clear of the HUD and every panel, seen from an angle their
writing reads from, and the camera holds still while the beat's action plays. The projected boxes these use
are checked against pixels: hiding a framed part changes the picture inside its box, hardly outside it."""
import math

import numpy as np
import pytest

from tests.scene_helpers import gl_context

W, H = 1280, 720           # the window; the table gets the tour's stage rect of it
# Boxes that are the part a sentence means, not all of it: the tape's writing window (and the text just
# before it), the read head's teeth, rods and lanes (not the base under them), the bridge's meters (not its legs).
PARTIAL = {"tape", "readhead", "bridge"}


def _tour(lang):
    from app.controller import Controller
    from app.settings import AppSettings
    from app.ui import screen_for
    from scenes.stage import Stage
    ctl = Controller(AppSettings(language=lang, mode="tour", chapter=0), persist=False, scripted=True)
    ctl.driver.attach(Stage(gl_context()))
    ctl.start()
    return ctl, screen_for(ctl, W, H)


def _settle(ctl, scr, frames=40):
    """Frames of the one clock with the table's sync, as the window runs them (no drawing needed to fit)."""
    x, y, w, h = ctl.panel.stage_rect(scr)
    for _ in range(frames):
        ctl.driver.sync()
        ctl.driver.stage.frame_for(max(16, int(w)), max(16, int(h)))
        ctl.driver.advance(1 / 30)
    return int(w), int(h)


def _beats(lang):
    """Yield (chapter, page, acted, controller, screen) for every beat of the tour, the camera settled."""
    ctl, scr = _tour(lang)
    try:
        while True:
            _settle(ctl, scr)
            yield ctl.tour.chapter, ctl.tour.page, ctl.tour.acted, ctl, scr
            before = (ctl.tour.chapter, ctl.tour.page, ctl.tour.acted)
            ctl.do("next")
            if (ctl.tour.chapter, ctl.tour.page, ctl.tour.acted) == before:
                break
    finally:
        ctl.driver.stage.release()
        ctl.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_beat_frames_the_parts_it_names(lang):
    from scenes.framing import TEXT_NORMALS
    from scenes.layout import PARTS
    seen = set()
    n = 0
    for ch, page, acted, ctl, scr in _beats(lang):
        where = f"{lang} ch.{ch + 1} page {page + 1}{' (action)' if acted else ''}"
        parts, _ = ctl.tour.beat()
        beat = ctl.state(scr)["beat"]
        stage = ctl.driver.stage
        assert not stage.camera.moving, where
        assert beat["parts"] == list(parts) and parts, where
        assert beat["covered"] == [], (where, beat)
        assert all(beat["in_frame"][p] >= 0.98 for p in parts), (where, beat)
        # ... and not behind another part: at least half of each named part's own pixels are seen (depth)
        assert beat["hidden_behind"] == [] and all(beat["in_view"][p] >= 0.5 for p in parts), (where, beat)
        # The HUD sends the class to no part the beat does not show: the typing head with the tape, the meters'
        # p/q and r with the bridge (a page on the mill said "the typing head inks the target's token")
        hud = " ".join(stage.hud_text)
        shown = set(parts) if stage.view != "exploded" else set(PARTS)
        assert ("打字头" not in hud and "typing head" not in hud) or "tape" in shown, (where, hud)
        assert "p/q" not in hud or "bridge" in shown, (where, hud)
        # A sensible share of the view: each of n parts at least 0.3/n of the table's frame across or up (8% when
        # the whole table is framed), and together they fill most of the frame the HUD leaves free.
        x, y, w, h = ctl.panel.stage_rect(scr)
        rects = stage.part_rects(int(w), int(h))
        least = max(0.08, 0.3 / len(parts))
        for p, r in rects.items():
            assert max((r[2] - r[0]) / w, (r[3] - r[1]) / h) >= least, (where, p, r)
        free = stage.fit["rect"]
        union = [min(r[0] for r in rects.values()), min(r[1] for r in rects.values()),
                 max(r[2] for r in rects.values()), max(r[3] for r in rects.values())]
        assert max((union[2] - union[0]) / (free[2] - free[0]), (union[3] - union[1]) / (free[3] - free[1])) > 0.85
        # Never a grazing angle on writing: the eye within 60° of each named part's text normal.
        eye = np.asarray(stage.camera.pose.eye)
        for p in parts:
            if p in TEXT_NORMALS and stage.view == "table":
                lo, hi = stage.fit["boxes"][p]
                to_eye = eye - (np.asarray(lo) + np.asarray(hi)) / 2
                cos = float(np.dot(to_eye, TEXT_NORMALS[p]) / np.linalg.norm(to_eye))
                assert cos >= math.cos(math.radians(60)), (where, p, math.degrees(math.acos(cos)))
        # The frame holds while the action plays: the pose is the same at the end of the pass as at its start.
        if acted and ctl.driver.play_until is not None:
            pose = stage.camera.pose
            for _ in range(30 * 12):
                ctl.driver.advance(1 / 30)
                assert stage.camera.pose == pose, where
                if ctl.driver.play_until is None:
                    break
            assert ctl.driver.play_until is None, where       # the pass played to its end
        seen.add(ch)
        n += 1
    assert seen == set(range(12)) and n >= 60


def test_framed_parts_are_where_their_boxes_say():
    """Hiding a framed part changes pixels inside its projected box (a real share of it) and hardly any outside:
    the boxes the beat report and the camera use are the parts as drawn."""
    from scenes.offscreen import Offscreen
    from scenes.stage import Stage
    from tests.scene_helpers import pair, traces, tubes
    w, h = 896, 437
    st = Stage(gl_context())
    st.set_run(pair(), list(traces(0, 4, 6)), tubes=tubes(), batch_lanes=1)
    st.show_labels = st.show_hud = False
    st.camera_transition_s = 0.0
    off = Offscreen(st.ctx, w, h)
    try:
        st.timeline.seek(st.timeline.step_moment(0, "write"))
        for parts in (["bigdrum"], ["readhead"], ["smalldrum"], ["tape"], ["bridge"], ["mill"], ["cabinet"],
                      ["tubes"], ["smalldrum", "tape", "bigdrum"]):
            st.set_focus(parts)
            st.render(off.fbo, w, h)
            full = off.read().astype(int)
            rects = st.part_rects(w, h)
            for p in parts:
                st.hidden = {p}
                st.render(off.fbo, w, h)
                diff = np.abs(off.read().astype(int) - full).sum(axis=2) > 24
                st.hidden = set()
                x0, y0, x1, y1 = (int(round(v)) for v in rects[p])
                inside = np.zeros_like(diff)
                inside[max(y0 - 3, 0):y1 + 3, max(x0 - 3, 0):x1 + 3] = True
                changed = diff.sum()
                assert changed > 0, (parts, p)
                if p in PARTIAL:       # the box is the part a sentence means: it lies on the part
                    assert diff[inside].mean() > 0.4, (parts, p, diff[inside].mean())
                    continue
                assert diff[inside].sum() / changed > 0.97, (parts, p, diff[inside].sum() / changed)
                assert diff[inside].mean() > 0.12, (parts, p, diff[inside].mean())
    finally:
        off.release()
        st.release()


def _tree_page(ctl):
    """Go to chapter 10's tree page (the page that sets the tree drafter), its text showing."""
    from app.lesson import tour
    ctl.tour.goto([c.slug for c in tour.CHAPTERS].index("10-no-second-model"))
    ctl.panel.apply_chapter()
    page = [k for k, p in enumerate(ctl.tour.pages()) if p.params.get("drafter") == "tree"][0]
    while ctl.tour.page < page:
        ctl.do("next")
        if ctl.tour.acted and ctl.tour.page < page:
            ctl.do("next")
    assert ctl.tour.page == page and not ctl.tour.acted


def _glyph_px(stage, w, h):
    """Em height on screen (px) of each tree candidate's character drawn now."""
    state = stage.state()
    return {i: float(np.linalg.norm(np.subtract(stage.project(top, w, h), stage.project(bottom, w, h))))
            for i, bottom, top in stage.tape.tree_glyphs(state)}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_tree_page_shows_a_tree_a_class_can_read_and_keeps_its_record(lang):
    """Ch. 10's tree page says the tree is pencilled on the tape: it is, before the pass plays, every candidate's
    character at least the legibility minimum in the beat's frame; while the bridge tests it, too; and when the
    pass is decided the rejected candidates stay struck, the ones that met the residual ringed, the kept branch
    inked, the untested faded, the written tokens on the line."""
    from scenes.legibility import min_text_px
    ctl, scr = _tour(lang)
    try:
        _tree_page(ctl)
        w, h = _settle(ctl, scr)
        stage = ctl.driver.stage
        tr = ctl.session.ensure().traces[0]
        state = stage.state()
        assert state.tree is not None and state.tree.margin
        assert all(nd.pencil > 0.95 and nd.erased == 0.0 for nd in state.tree.nodes), state.tree.nodes
        least = min_text_px(H)
        sizes = _glyph_px(stage, w, h)
        assert set(sizes) == {nd.id for nd in tr.tree.nodes}
        assert min(sizes.values()) >= least, (sizes, least)
        # the candidates are inside the frame the beat fits (the tape's box runs out to the tree's margin)
        rects = stage.part_rects(w, h)
        for _, bottom, top in stage.tape.tree_glyphs(state):
            for p in (bottom, top):
                x, y = stage.project(p, w, h)
                assert rects["tape"][0] - 2 <= x <= rects["tape"][2] + 2 and 0 <= y <= h, (x, y, rects["tape"])
        ctl.do("next")                                  # the action: the bridge tests the tree
        assert ctl.tour.acted
        w, h = _settle(ctl, scr, frames=2)              # its text is longer: the table's frame is smaller
        tl = ctl.driver.timeline
        st = tl.steps[0]
        tests = tr.tree.checks
        assert any(c.round > 1 for c in tests)          # the page's event: a later round kept
        tl.seek((st.tests[-1][0] + st.tests[-1][1]) / 2)
        assert min(_glyph_px(stage, w, h).values()) >= least
        tl.seek(tl.step_moment(0, "write"))             # decided and written, before the tape scrolls on
        state = stage.state()
        nodes = {nd.id: nd for nd in state.tree.nodes}
        tested = {c.node: c for c in tests}
        for i, nd in nodes.items():
            if i in tr.tree.accepted_path:
                assert nd.ink == 1.0 and nd.erased == 0.0
            elif i in tested:                          # rejected: struck, and still there to be read
                assert not tested[i].accepted and nd.struck == 1.0 and nd.erased == 0.0
            else:                                      # never tested: a faded ghost
                assert 0.5 < nd.erased < 1.0
            assert nd.round == (tested[i].round if i in tested else 0)
        assert any(nd.round > 1 and nd.erased == 0.0 for nd in nodes.values())
        assert [c.token for c in state.tape if c.step == 0] == tr.tokens_written
    finally:
        ctl.driver.stage.release()
        ctl.close()


def _table_share(stage, w, h) -> float:
    """The share of the 3D view's width the table's drawn box covers (clipped to the view)."""
    x0, _, x1, _ = stage.whole_part_rects(w, h, ("table",))["table"]
    return (min(x1, w) - max(x0, 0.0)) / w


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_overviews_frame_the_table_across_most_of_the_view(lang):
    """Ch. 12's overview (every part named) and the lab's table fill at least 60 % of the 3D view's width with
    the table, in the frame each really gets beside its panels."""
    from app.lesson import tour
    ctl, scr = _tour(lang)
    try:
        ctl.tour.goto([c.slug for c in tour.CHAPTERS].index("12-taken-apart"))
        ctl.panel.apply_chapter()
        w, h = _settle(ctl, scr)
        assert len(ctl.tour.beat()[0]) == 8
        assert _table_share(ctl.driver.stage, w, h) >= 0.6, _table_share(ctl.driver.stage, w, h)
        ctl.set_mode("lab")
        w, h = _settle(ctl, scr)
        assert ctl.driver.stage.view == "table" and ctl.driver.stage.focus is None
        assert _table_share(ctl.driver.stage, w, h) >= 0.6, _table_share(ctl.driver.stage, w, h)
    finally:
        ctl.driver.stage.release()
        ctl.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_cutaway_page_shows_every_piece_its_sentence_names(lang):
    """Ch. 11's first page names teeth, push rods, lane axles and counters and counts nine lit lanes: in the frame
    the tour really gives the table, each piece carries its named plate, the nine lanes' numbers are drawn at
    least the legibility minimum (a class counts them) and every lane's counter is inside the frame."""
    from app.lesson import tour
    from scenes.legibility import min_text_px
    from scenes.readhead import CUTAWAY_PIECES
    from tests.scene_helpers import Shooter
    ctl, scr = _tour(lang)
    try:
        ctl.tour.goto([c.slug for c in tour.CHAPTERS].index("11-inside-read-head"))
        ctl.panel.apply_chapter()
        w, h = _settle(ctl, scr)
        stage = ctl.driver.stage
        assert stage.view == "cutaway"
        sh = Shooter(w, h)
        try:
            sh.shoot(stage)
        finally:
            sh.release()
        assert [c[0] for c in stage.callouts] == [k for k, _, _ in CUTAWAY_PIECES]
        least = min_text_px(H)
        assert len({n for n, *_ in stage.lane_numbers}) == 9, stage.lane_numbers
        for _, x, y, size, _, _ in stage.lane_numbers:
            assert size >= least, (size, least)
            assert 0 <= x <= w and 0 <= y <= h
    finally:
        ctl.driver.stage.release()
        ctl.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_typical_acceptance_page_names_both_racks_and_the_wrong_rule(lang):
    """Ch. 10's typical-acceptance page asks about the right rack under a rule that is not exact: in the tour's own
    frame the two racks' names, every readout and the wrong rule's warning (on the HUD, under the round: over the
    racks it made the frame too tall for the readouts) are drawn, none left out as too small to read."""
    from app.lesson import tour
    from scenes.tubes import wrong_rule_words
    from tests.scene_helpers import Shooter
    ctl, scr = _tour(lang)
    try:
        ctl.tour.goto([c.slug for c in tour.CHAPTERS].index("10-no-second-model"))
        ctl.panel.apply_chapter()
        while ctl.tour.page_data().params.get("tube_rule") != "typical":
            ctl.do("next")
        ctl.do("next")                                  # its action: the tubes fill
        w, h = _settle(ctl, scr)
        stage = ctl.driver.stage
        stage.text_height = H
        assert stage.tubes.result.rule == "typical"
        sh = Shooter(w, h)
        try:
            sh.shoot(stage)
        finally:
            sh.release()
        laid = [t for t, screen in stage.frame_text if not screen]
        names = ("大模型单独写", "推测解码") if lang == "zh" else ("target alone", "speculative")
        warning = wrong_rule_words("typical")[0 if lang == "zh" else 1]
        for word in names:
            assert word in laid and word not in stage.legibility["hidden"], (word, stage.legibility["hidden"])
        assert warning in [t for t, screen in stage.frame_text if screen]         # on the HUD
        readouts = [t for t in laid if t.startswith(("TV ", "."))]
        assert len(readouts) == 12 and not set(readouts) & set(stage.legibility["hidden"]), stage.legibility["hidden"]
    finally:
        ctl.driver.stage.release()
        ctl.close()


def test_the_beat_report_counts_parts_hidden_behind_other_parts():
    """'in view' is what a class sees: a part behind another counts as hidden (by depth, not by boxes). Straight
    from the front, the bridge's meters hid half of the small drum on chapter 12's whole table (the report said
    1.0); hidden from the table, the bridge hides nothing, and the report says so."""
    from app.lesson import tour
    import scenes.framing as framing
    ctl, scr = _tour("zh")
    try:
        ctl.tour.goto([c.slug for c in tour.CHAPTERS].index("12-taken-apart"))
        ctl.panel.apply_chapter()
        w, h = _settle(ctl, scr)
        stage = ctl.driver.stage
        report = stage.beat_report(w, h)
        assert set(report["parts"]) == set(tour.narration("12-taken-apart").pages[0].parts)
        # every part the sentence names is at least half in view, the small drum among them
        assert min(report["in_view"].values()) >= 0.5, report
        assert report["occluded"]["smalldrum"] < 0.35
        # the same table from straight in front: the bridge hides the small drum, and the report sees it
        saved = framing.WIDE_AZIMUTH
        try:
            framing.WIDE_AZIMUTH = 0.0
            stage._fit_key = None
            stage.camera_transition_s = 0.0
            w, h = _settle(ctl, scr)
            front = stage.beat_report(w, h)
            assert front["occluded"]["smalldrum"] > 0.4 and front["in_view"]["smalldrum"] < 0.6, front
            stage.hidden = {"bridge"}
            assert stage.beat_report(w, h)["occluded"]["smalldrum"] < front["occluded"]["smalldrum"] - 0.3
            stage.hidden = set()
            assert stage.beat_report(w, h, occlusion=False)["in_view"]["smalldrum"] > 0.9     # boxes alone miss it
        finally:
            framing.WIDE_AZIMUTH = saved
    finally:
        ctl.driver.stage.release()
        ctl.close()


def _shoot_beat(ctl, scr) -> tuple[int, int]:
    """Draw the beat's frame as the window would (the stage's rect of it, text sized for the window): (w, h)."""
    from tests.scene_helpers import Shooter
    x, y, w, h = ctl.panel.stage_rect(scr)
    stage = ctl.driver.stage
    stage.text_height = H
    sh = Shooter(int(w), int(h))
    try:
        sh.shoot(stage)
    finally:
        sh.release()
    return int(w), int(h)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_frame_of_the_tape_names_the_typing_head(lang):
    """The look line names "纸带与打字头" wherever a beat frames the tape: the typing head is in that picture
    (it waits just right of the writing window) on a plate of its own with a leader to it, its plate clear of the
    tape's writing (the paper the class reads); a frame of the small drum over the tape names the pencil cart."""
    framed = 0
    for ch, page, acted, ctl, scr in _beats(lang):
        parts, _ = ctl.tour.beat()
        stage = ctl.driver.stage
        if "tape" not in parts or stage.view == "exploded" or len(parts) >= 5:
            continue
        where = f"{lang} ch.{ch + 1} page {page + 1}{' (action)' if acted else ''}"
        w, h = _shoot_beat(ctl, scr)
        plates = {c[0]: c[1] for c in stage.callouts}
        assert "typing" in plates, (where, stage.callouts)
        if "smalldrum" in parts:
            assert "pencil" in plates, (where, stage.callouts)
        for px, py, pw, ph in stage.readout_rects(w, h):
            tx, ty, tw, th = plates["typing"]
            assert tx + tw <= px or tx >= px + pw or ty + th <= py or ty >= py + ph, (where, plates["typing"])
        framed += 1
    assert framed >= 10


def test_every_frame_about_the_read_head_numbers_its_lanes():
    """A beat framing the read head among a few parts ("亮 5 条路") numbers all nine lanes at 720p, however close
    they stand (chapter 9's frame of the drum, the read head and the mill had none: the lit lanes could not be
    counted; chapter 10's tree, lit over 7 lanes, had none: the column met the tape), each number clear of the HUD
    and of the parts' readouts."""
    framed = 0
    for ch, page, acted, ctl, scr in _beats("zh"):
        parts, _ = ctl.tour.beat()
        stage = ctl.driver.stage
        if "readhead" not in parts or len(parts) > 3 or stage.view != "table":
            continue
        w, h = _shoot_beat(ctl, scr)
        where = f"ch.{ch + 1} page {page + 1}{' (action)' if acted else ''}"
        assert sorted(n for n, *_ in stage.lane_numbers) == list(range(9)), (where, stage.lane_numbers)
        hud = stage.hud_rect(w, h)
        for _, cx, cy, size, _, _ in stage.lane_numbers:
            assert hud is None or not (hud[0] <= cx <= hud[2] and hud[1] <= cy <= hud[3]), (where, cx, cy)
            # ... and clear of the tape's writing and the meters (a column fanned down onto them rises above them)
            for rx, ry, rw, rh in stage.readout_rects(w, h):
                assert not (cx + size / 2 > rx and cx - size / 2 < rx + rw and cy + size / 2 > ry
                            and cy - size / 2 < ry + rh), (where, cx, cy, (rx, ry, rw, rh))
        framed += 1
    assert framed >= 8


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_chapter_12_names_the_pencil_cart_and_the_typing_head_on_plates(lang):
    """The whole table's page says "the small drum and the pencil cart ... the typing head": each has a plate of
    its own with a leader, drawn above the legibility floor, as the parts have."""
    from app.lesson import tour
    from tests.scene_helpers import Shooter
    ctl, scr = _tour(lang)
    try:
        ctl.tour.goto([c.slug for c in tour.CHAPTERS].index("12-taken-apart"))
        ctl.panel.apply_chapter()
        w, h = _settle(ctl, scr)
        stage = ctl.driver.stage
        stage.text_height = H
        sh = Shooter(w, h)
        try:
            sh.shoot(stage)
        finally:
            sh.release()
        assert {c[0] for c in stage.callouts} >= {"pencil", "typing"}, stage.callouts
        words = ("铅笔小车", "打字头") if lang == "zh" else ("pencil cart", "typing head")
        shown = [t for t, screen in stage.frame_text if screen]
        assert all(wd in shown for wd in words), shown
        named = {p[0] for p in stage.label_plates}
        assert named == set(tour.narration("12-taken-apart").pages[0].parts), named      # every part named too
        # the riders' plates cover neither the bridge's meters nor the mill they ride in front of
        for part in ("bridge", "mill"):
            lo, hi = stage.fit["boxes"][part]
            pts = np.array([stage.project(np.array((x, y, z)), w, h) for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                            for z in (lo[2], hi[2])])
            (x0, y0), (x1, y1) = pts.min(0), pts.max(0)
            for key, (px, py, pw, ph), *_ in stage.callouts:
                if key in ("pencil", "typing"):
                    assert px + pw <= x0 or px >= x1 or py + ph <= y0 or py >= y1, (lang, key, part)
    finally:
        ctl.driver.stage.release()
        ctl.close()


def _chapter_12(lang, size=(W, H), palette="default"):
    """Yield (acted, stage) for each beat of chapter 12 (the whole table, page 2, page 2 taken apart), drawn in
    the frame the tour gives the table of a size[0] x size[1] window, text sized for the window."""
    from app.controller import Controller
    from app.lesson import tour
    from app.settings import AppSettings
    from app.ui import screen_for
    from scenes.stage import Stage
    from tests.scene_helpers import Shooter
    ctl = Controller(AppSettings(language=lang, mode="tour", chapter=0, palette=palette), persist=False,
                     scripted=True)
    ctl.driver.attach(Stage(gl_context()))
    ctl.start()
    scr = screen_for(ctl, *size)
    try:
        ctl.tour.goto([c.slug for c in tour.CHAPTERS].index("12-taken-apart"))
        ctl.panel.apply_chapter()
        for beat in range(3):
            w, h = _settle(ctl, scr, 60)
            stage = ctl.driver.stage
            stage.text_height = size[1]
            sh = Shooter(w, h)
            try:
                sh.shoot(stage)
            finally:
                sh.release()
            yield ctl.tour.acted, stage, ctl
            if beat < 2:
                ctl.do("next")
    finally:
        ctl.driver.stage.release()
        ctl.close()


def _runs_over(a, b, rect) -> bool:
    """Whether the segment a-b passes through the inside of the rectangle (x, y, w, h) (sampled finely)."""
    t = np.linspace(0.0, 1.0, 400)
    xs, ys = a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t
    x, y, w, h = rect
    return bool(np.any((xs > x) & (xs < x + w) & (ys > y) & (ys < y + h)))


def _named(stage):
    """Every plate the frame draws with its leader: (name, plate (x, y, w, h), anchor (x, y)), the parts' and the
    riders'."""
    return [(n, tuple(r), tuple(a)) for n, r, a, _ in stage.label_leaders] + \
        [(n, tuple(r), tuple(a)) for n, r, a, _ in stage.callouts]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_chapter_12_plates_read_clearly_in_every_beat(lang):
    """Chapter 12 names every part and the two riders in all three beats, and each plate reads as its own:
    no leader runs over another plate (the mill's leader crossed the big drum's plate, the bridge's the mill's),
    the pencil cart's and the typing head's plates keep a clear gap (half a name's height) from each other and
    from every other plate (stacked a few pixels apart they read as one plate of two lines), and a part is called
    the same in every beat (the read head was '读头 · 九条路' in one beat and '读头' in the next); the beat taken
    apart plays the pass the table held, so the tape reads as before (it played the run's first pass over again)."""
    from scenes.labels import leader_foot
    from scenes.layout import PARTS
    beats, steps = 0, []
    for acted, stage, _ in _chapter_12(lang):
        beats += 1
        where = (lang, beats, acted)
        named = _named(stage)
        assert {n for n, *_ in named} == {"bigdrum", "readhead", "smalldrum", "tape", "bridge", "mill", "cabinet",
                                          "tubes", "pencil", "typing"}, (where, named)
        for name, rect, anchor in named:
            foot = leader_foot(anchor, rect)
            for other, orect, _ in named:
                if other != name:
                    assert not _runs_over(foot, anchor, orect), (where, name, "leader over", other)
        gap = 0.45 * H / 34
        for name, rect, _ in named:
            if name in ("pencil", "typing"):
                for other, orect, _ in named:
                    if other != name:
                        apart = max(orect[0] - rect[0] - rect[2], rect[0] - orect[0] - orect[2],
                                    orect[1] - rect[1] - rect[3], rect[1] - orect[1] - orect[3])
                        assert apart >= gap, (where, name, other, apart)
        shown = [t for t, screen in stage.frame_text if screen]
        full = [PARTS[p].zh if lang == "zh" else PARTS[p].en for p in ("bigdrum", "readhead", "smalldrum")]
        assert all(name in shown for name in full), (where, full, shown)
        # the drums' and the riders' plates sit beside them (taken apart, the small drum's plate found no spot
        # near it and named it from 0.4 of the frame's height away, past the pencil cart)
        h = stage.fit["size"][1]
        for name, rect, anchor in named:
            if name in ("bigdrum", "smalldrum", "pencil", "typing"):
                foot = leader_foot(anchor, rect)
                assert np.hypot(foot[0] - anchor[0], foot[1] - anchor[1]) < h / 3, (where, name, rect, anchor)
        steps.append(stage.state().step)
    assert beats == 3
    assert len(set(steps)) == 1, steps      # the pass taken apart is the one the table held: the same tape


def test_chapter_12_names_the_read_head_alike_on_a_projector():
    """On a 1080p projector the whole table's beats shortened the read head's plate to '读头' (its full name found
    no spot) while the taken-apart beat said '读头 · 九条路': every beat says the same."""
    from scenes.layout import PARTS
    for acted, stage, _ in _chapter_12("zh", (1920, 1080), "projector"):
        shown = [t for t, screen in stage.frame_text if screen]
        assert PARTS["readhead"].zh in shown and "读头" not in shown, (acted, shown)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_taken_apart_beat_says_what_it_shows(lang):
    """Chapter 12's last beat lifts every part apart while a pass plays: the HUD says the table is taken apart,
    each part lifted out, not the pass and its phase ('大滚筒转一圈，一起核对所有猜测' over a tape whose characters
    were too small to draw); the beats before it still count the run's passes, and the page's facts report no pass
    the HUD does not show."""
    from scenes.labels import PHASES
    words = ("拆开来看 · 每一件单独托出", "taken apart · each part lifted out")
    for acted, stage, ctl in _chapter_12(lang):
        hud = list(stage.hud_text)
        if not acted:
            assert any(t.startswith("第 " if lang == "zh" else "pass ") for t in hud), hud
            continue
        assert stage.view == "exploded"
        assert hud == [words[0 if lang == "zh" else 1]], hud
        phases = {w for pair in PHASES.values() for w in pair}
        assert not any(w in t for t in hud for w in phases) and not any(t.startswith(("第 ", "pass ")) for t in hud)
        assert "hud_pass" not in ctl.panel.facts_shown()
    # The lines are the framed exploded beat's own: the lab's table, or a mode's own lines, are left as they were.
    from scenes.views import EXPLODED_HUD
    from tests.scene_helpers import make_stage
    assert EXPLODED_HUD == (words,)
    st = make_stage()
    try:
        assert st.hud_lines is None
        st.set_focus(["bigdrum", "tape"], "exploded")
        assert st.hud_lines == list(EXPLODED_HUD)
        st.hud_lines = [("第 3 轮", "round 3")]
        assert st.hud_lines == [("第 3 轮", "round 3")]
        st.hud_lines = None
        st.set_view("table")
        assert st.hud_lines is None
    finally:
        st.release()


def test_chapter_2_holds_the_cabinet_with_its_drawers_out():
    """'每一步，每个抽屉都要拉开读一遍': the cache page's pass stops halfway through the big drum's turn, the
    drawers pulled out and the lanes lit, and the page after holds it so (a still of the pass's end showed every
    drawer shut); its HUD says the turn is under way."""
    from app.lesson import tour
    from scenes.labels import TARGET_PHASES, phase_words
    ctl, scr = _tour("zh")
    try:
        ctl.tour.goto([c.slug for c in tour.CHAPTERS].index("02-batching"))
        ctl.panel.apply_chapter()
        page = next(k for k, p in enumerate(ctl.tour.pages()) if p.action and p.action.until == "mid-verify")
        while ctl.tour.page < page or not ctl.tour.acted:
            _settle(ctl, scr, frames=2)
            ctl.do("next")
        for _ in range(2):                              # the action played, then the next page's still
            _settle(ctl, scr)
            for _ in range(30 * 12):
                if ctl.driver.play_until is None:
                    break
                _settle(ctl, scr, frames=1)
            state = ctl.driver.stage.state()
            assert state.drawer_pull > 0.9 and state.lanes_lit > 0, (ctl.tour.page, state.drawer_pull)
            assert phase_words(state, held=ctl.driver.stage.timeline.paused) == TARGET_PHASES["verify"]
            ctl.do("next")
    finally:
        ctl.driver.stage.release()
        ctl.close()
