"""The paper tape as drawn: the trace's characters (compared with the atlas glyphs), marks and strike-outs."""
import math

import numpy as np
import pytest
from PIL import Image

from scenes.tape import DIAMOND, DOT
from scenes.timeline import TICK
from tests.scene_helpers import make_stage, traces

W, H = 960, 540


@pytest.fixture(scope="module")
def stage():
    st = make_stage()
    st.set_view("tape")
    yield st
    st.release()


def _bbox(stage, pts):
    xy = np.array([stage.project(p, W, H) for p in pts])
    x0, y0 = np.floor(xy.min(0)).astype(int)
    x1, y1 = np.ceil(xy.max(0)).astype(int)
    return max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)


def _visible(stage, cells):
    """Cells whose character lies wholly inside the frame (the tape runs past the view's edges), clear of its
    outer 6 % where perspective shears a glyph away from the flat reference it is compared with."""
    out = []
    for c in cells:
        ends = [stage.project(c.centre + stage.tape.right * s * c.cell / 2, W, H) for s in (-1, 1)]
        if all(0.06 * W < x < 0.94 * W and 60 < y < H - 60 for x, y in ends):
            out.append(c)
    return out


def _norm(a):
    a = a - a.mean()
    return a / (np.linalg.norm(a) + 1e-9)


def _reference(atlas, ch, n=24):
    """The glyph placed in its em box exactly as the tape centres it, as darkness (0..1)."""
    g = atlas.glyph(ch)
    asc, desc = atlas.ascender, atlas.descender
    canvas = np.zeros((int(round(asc - desc)), int(round(g.advance))), np.float64)
    bmp = atlas.bitmap(ch).astype(np.float64) / 255
    top = int(round(asc - g.top))
    h, w = bmp.shape
    ys, xs = slice(max(top, 0), min(top + h, canvas.shape[0])), slice(max(g.left, 0), min(g.left + w, canvas.shape[1]))
    canvas[ys, xs] = bmp[:ys.stop - ys.start, :xs.stop - xs.start]
    return _norm(np.asarray(Image.fromarray((canvas * 255).astype(np.uint8)).resize((n, n), Image.BILINEAR),
                            np.float64))


def _crop(stage, img, cell, n=24):
    atlas = stage.atlas
    g = atlas.glyph(cell.text)
    adv = g.advance / atlas.px * cell.size / 2
    half_h = (atlas.ascender - atlas.descender) / atlas.px * cell.size / 2
    r, u = stage.tape.right, stage.tape.up
    x0, y0, x1, y1 = _bbox(stage, [cell.centre + r * sx * adv + u * sy * half_h for sx in (-1, 1) for sy in (-1, 1)])
    dark = 255 - img[y0:y1, x0:x1].mean(axis=2)
    return _norm(np.asarray(Image.fromarray(dark.astype(np.uint8)).resize((n, n), Image.BILINEAR), np.float64))


def test_tape_shows_the_runs_characters(stage, shooter):
    k = 3
    stage.timeline.seek(stage.timeline.step_end(k) - TICK)
    img = shooter.shoot(stage)
    cells = _visible(stage, [c for c in stage.tape_cells() if c.ink >= 1 and c.erased == 0 and len(c.text) == 1])
    assert len(cells) >= 5
    # The cells read, in order, as the end of the text the run has written so far.
    pair = stage.run.pair
    trs = traces()
    text = pair.decode(list(trs[0].context) + [t for tr in trs[:k + 1] for t in tr.tokens_written])
    assert "".join(c.text for c in sorted(cells, key=lambda c: c.position)) == text[-len(cells):]
    candidates = sorted({c.text for c in cells})
    assert len(candidates) >= 4
    refs = {ch: _reference(stage.atlas, ch) for ch in candidates}
    for cell in cells:
        crop = _crop(stage, img, cell)
        scores = {ch: float((crop * ref).sum()) for ch, ref in refs.items()}
        best = max(scores, key=scores.get)
        assert best == cell.text, (cell.text, scores)
        assert scores[cell.text] > 0.6, (cell.text, cell.x, scores)


def _mark_area(stage, img, cell):
    r, u = stage.tape.right, stage.tape.up
    s = 0.2
    x0, y0, x1, y1 = _bbox(stage, [cell.mark_centre + r * a * s + u * b * s for a in (-1, 1) for b in (-1, 1)])
    dark = (img[y0:y1, x0:x1].mean(axis=2) < 110).sum()
    return dark * (2 * s) ** 2 / max((x1 - x0) * (y1 - y0), 1)      # in world units²


def test_marks_dot_under_accepted_diamond_under_target_written(stage, shooter):
    k = 3
    stage.timeline.seek(stage.timeline.step_end(k) - TICK)
    img = shooter.shoot(stage)
    prefix_len = len(traces()[0].context)
    seen = {"dot": 0, "diamond": 0, "": 0}
    # Drawn areas (world units²) and the cut between them: anti-aliasing counts about 0.8 of each as dark.
    dot, diamond = math.pi * (DOT / 2) ** 2, DIAMOND ** 2
    cut = 0.8 * (dot + diamond) / 2
    for cell in _visible(stage, stage.tape_cells()):
        if cell.ink < 1 or cell.erased > 0:
            continue
        area = _mark_area(stage, img, cell)
        if cell.position < prefix_len:
            assert cell.mark == "" and area < 0.006, area
        elif cell.mark == "dot":
            assert 0.4 * dot < area < cut, area
        else:
            assert cell.mark == "diamond" and area > cut, area
        seen[cell.mark] += 1
    assert seen["dot"] >= 1 and seen["diamond"] >= 2


def test_rejected_guesses_are_struck_out(stage, shooter):
    trs = traces()
    k = next(i for i, tr in enumerate(trs) if len(tr.guesses) - tr.n_accepted >= 2)
    st = stage.timeline.steps[k]
    stage.timeline.seek(st.strike[1] + TICK)
    img = shooter.shoot(stage)
    struck = [c for c in stage.tape_cells() if c.struck >= 0.999]
    assert len(struck) == len(trs[k].guesses) - trs[k].n_accepted
    r = stage.tape.right
    for cell in struck:
        red = 0
        for dx in (-0.33, -0.2, 0.2, 0.33):
            x, y = stage.project(cell.centre + r * dx, W, H)
            px = img[int(round(y)), int(round(x))].astype(int)
            red += px[0] > 140 and px[1] < 100
        assert red >= 3, cell.text
    # Accepted guesses of the same step are not struck.
    assert all(c.struck == 0 for c in stage.tape_cells() if c.mark == "dot")


def test_taken_apart_the_tape_draws_no_verdict_marks(stage):
    """In the exploded view the tape is too far for its verdicts: its characters may be left out as too small, and
    a dot or diamond under an empty cell reads as a verdict on nothing; on the table the same moment has them."""
    import dataclasses

    from scenes.layout import EmitContext
    from scenes.text_atlas import DISC

    class Recorder:
        """Stands in for the frame builder: keeps every call, draws nothing."""
        def __init__(self):
            self.calls = []
            self.offset = np.zeros(3)

        def __getattr__(self, name):
            return lambda *a, **k: self.calls.append((name, a))

    stage.timeline.seek(stage.timeline.step_end(3) - TICK)
    state = stage.state()
    ec = EmitContext(stage.palette, np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), "zh", "table", stage.run)
    counts = {}
    for view in ("table", "exploded"):
        fb = Recorder()
        stage.tape.emit(fb, state, dataclasses.replace(ec, view=view))
        counts[view] = sum(1 for name, a in fb.calls if name == "shape" and a and a[0] == DISC)
    assert counts["table"] >= 1 and counts["exploded"] == 0, counts
