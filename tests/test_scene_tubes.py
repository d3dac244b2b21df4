"""The test tubes as drawn: each tube holds as many beads as the experiment drew, copper below red."""
import numpy as np
import pytest

from scenes.tubes import LAYER, N_CHARS, SPACING, TUBE_H, TUBE_Y0, bead_slot, count_height
from scenes.layout import TUBES_CENTRE
from tests.scene_helpers import Shooter, copper, make_stage, patch, red, tubes

W, H = 960, 540


@pytest.fixture(scope="module")
def setup():
    st = make_stage(steps=2)
    st.set_view("tubes")
    sh = Shooter(W, H)
    yield st, sh
    sh.release()
    st.release()


def _round_images(stage, shooter, rnd):
    R = stage.timeline.timing.tube_round
    stage.timeline.seek(rnd * R)                 # the round begins: no bead has fallen yet
    empty = shooter.shoot(stage)
    stage.timeline.seek((rnd + 0.9) * R)         # every bead of the round is in
    full = shooter.shoot(stage)
    return empty, full


def _share(result, row, chars, j) -> float:
    return float(row[chars[j]]) if j < N_CHARS else float(1 - row[chars].sum())


def _near_marker(stage, rack, j, rnd, b) -> bool:
    """True where the brass ring (cumulative), the black p line or (right rack) the green q ring crosses bead b
    and may hide it."""
    result = tubes()
    _, _, freq = stage.tubes.counts(rack, rnd)
    chars = stage.tubes.chars
    marks = [freq[j], _share(result, result.target_p, chars, j)]
    if rack == 1:
        marks.append(_share(result, result.draft_q, chars, j))
    y = bead_slot(b)[1]
    return any(abs(y - count_height(f * result.draws)) < LAYER for f in marks)


def _slot(stage, rack, j, b):
    dx, y = bead_slot(b)
    return stage.project((stage.tubes.tube_x(rack, j) + dx, y, TUBES_CENTRE[2] + 0.05), W, H)


@pytest.mark.parametrize("rnd", [4, 17])
def test_bead_counts_follow_the_experiment(setup, rnd):
    stage, shooter = setup
    result = tubes()
    empty, full = _round_images(stage, shooter, rnd)
    assert stage.state().tube_round == rnd
    chars = stage.tubes.chars
    for rack in (0, 1):
        per = (result.left_round if rack == 0 else result.right_round)[rnd]
        counts = [int(per[c]) for c in chars] + [int(per.sum() - per[chars].sum())]
        assert sum(counts) == result.draws
        for j, n in enumerate(counts):
            if n > 30:          # taller than the tube shows (never for these counts)
                continue
            if n and not _near_marker(stage, rack, j, rnd, n - 1):
                top = _slot(stage, rack, j, n - 1)
                assert np.abs(patch(full, *top, 1) - patch(empty, *top, 1)).mean() > 25, (rack, j, n)
            if _near_marker(stage, rack, j, rnd, n + 1):
                continue
            above = _slot(stage, rack, j, n + 1)
            assert np.abs(patch(full, *above, 1) - patch(empty, *above, 1)).mean() < 12, (rack, j, n)


def test_right_tube_beads_are_copper_then_red(setup):
    stage, shooter = setup
    result = tubes()
    rnd = 9
    _, full = _round_images(stage, shooter, rnd)
    chars = stage.tubes.chars
    seen_red = seen_copper = 0
    for j, c in enumerate(chars[:N_CHARS]):
        n = int(result.right_round[rnd][c])
        acc = int(result.right_accepted_round[rnd][c])
        for b in range(n):
            if _near_marker(stage, 1, j, rnd, b):
                continue
            x, y = _slot(stage, 1, j, b)
            px = patch(full, x, y, 0).reshape(3)
            if b < acc:
                assert copper(px), (j, b, px)
                seen_copper += 1
            else:
                assert red(px), (j, b, px)
                seen_red += 1
    assert seen_copper and seen_red


@pytest.mark.parametrize("size", [(1280, 720), (768, 430)])        # the CLI's frame, the tubes mode's beside its panel
def test_the_tubes_view_shows_both_racks_whole_with_a_wrong_rules_warning(size):
    """Both racks are in the frame, edge to edge (the right rack's last tube and its 'other' were cut off), and a
    wrong rule's warning is drawn over them, clear of the HUD, in both languages."""
    from models.tubes import run_tubes
    from scenes.tubes import wrong_rule_words
    from tests.scene_helpers import pair
    w, h = size
    st = make_stage(steps=2, with_tubes=False)
    sh = Shooter(w, h)
    try:
        st.show_hud = True
        st.set_run(pair(), st.traces, tubes=run_tubes(pair(), rounds=5, seed=1, rule="typical"))
        st.set_view("tubes")
        st.timeline.seek(3 * st.timeline.timing.tube_round)
        for lang in ("zh", "en"):
            st.language = lang
            sh.shoot(st)
            # each rack's outer edges, at the height of the characters' row over it (where 'other' is written)
            for rack, j, side in ((0, 0, -1), (1, N_CHARS, 1)):
                edge = st.tubes.tube_x(rack, j) + side * SPACING
                x, y = st.project((edge, TUBE_Y0 + TUBE_H + 0.66, TUBES_CENTRE[2]), w, h)
                assert 0 < x < w and 0 < y < h, (lang, rack, x, y)
            laid = {t for t, screen in st.frame_text if not screen} - set(st.legibility["hidden"])
            warning = wrong_rule_words("typical")[0 if lang == "zh" else 1]
            head, _, tail = warning.partition(": ")
            assert warning in laid or {head + ":", tail} <= laid, (lang, laid, st.legibility["hidden"])
    finally:
        sh.release()
        st.release()


def test_a_lesson_asking_first_keeps_the_racks_empty(setup):
    """A page that asks where the beads will settle ('tube_counts' kept back) shows the racks before any bead has
    fallen: p's black lines, a '?' over each tube and no ring; the counts come back with the answer."""
    from scenes.tubes import freq_text
    stage, shooter = setup
    rnd = 17
    stage.timeline.seek((rnd + 0.9) * stage.timeline.timing.tube_round)
    full = shooter.shoot(stage)
    readouts = {freq_text(f) for rack in (0, 1) for f in stage.tubes.counts(rack, rnd)[2]}
    laid = {t for t, screen in stage.frame_text if not screen}
    assert readouts & laid
    stage.kept_back = frozenset({"tube_counts"})
    try:
        empty = shooter.shoot(stage)
        laid = {t for t, screen in stage.frame_text if not screen}
        assert not readouts & laid and "?" in laid
        # no copper or red bead and no brass ring in the racks: far fewer warm pixels (the bases stay brass)
        def warm_pixels(img):
            px = img[..., :3].astype(np.float64)
            return int(((px[..., 0] > 110) & (px[..., 0] - px[..., 2] > 60)).sum())
        assert warm_pixels(empty) < 0.7 * warm_pixels(full), (warm_pixels(empty), warm_pixels(full))
    finally:
        stage.kept_back = frozenset()
    shooter.shoot(stage)
    assert readouts & {t for t, screen in stage.frame_text if not screen}


def test_the_speculative_rack_rings_q_in_green(setup):
    """The right rack marks the draft's q with a green ring on each tube (the class is asked whether the beads
    settle there or on p's black ring); the left rack, the target alone, has none."""
    from scenes.tubes import TUBE_R
    stage, shooter = setup
    result = tubes()
    stage.timeline.seek(0.0)
    img = shooter.shoot(stage).astype(int)
    chars = stage.tubes.chars

    def green_at(rack, j, share):
        x, y = stage.project((stage.tubes.tube_x(rack, j), count_height(share * result.draws),
                              TUBES_CENTRE[2] + TUBE_R + 0.07), W, H)
        px = patch(img, x, y, 1).reshape(-1, 3)
        return int(((px[:, 1] > px[:, 0] + 30) & (px[:, 1] > px[:, 2] + 30)).sum())

    for j in range(N_CHARS + 1):
        q = _share(result, result.draft_q, chars, j)
        p = _share(result, result.target_p, chars, j)
        if abs(q - p) * result.draws / 2 * LAYER < 0.15:        # rings too close to tell apart
            continue
        assert green_at(1, j, q) > 0, (j, q)
        assert green_at(0, j, q) == 0, (j, q)
