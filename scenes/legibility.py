"""How small text may be on a projector, and the two measures a frame is held to: the smallest text drawn and
the text or UI boxes that overlap.

The minimum: 16 px of em height in a 1280x720 picture (1/45 of its height; never below 14 px at any size).
Seen from four picture heights away (the back row of a classroom whose screen is a quarter of the room's
depth tall), a capital letter of that size subtends about 14 arcminutes, nearly three times the 5-arcminute
letter of 20/20 acuity; a Chinese character fills more of its em box and reads larger still. Panels draw
their text at 18 px and up at 720p (height / 40); scene labels at 16 px and up. A scene text that would be
drawn smaller (a readout on a part seen from afar) is left out, not drawn illegibly: the panels or a closer
view carry that number.

Everything here is plain geometry on (name, x, y, w, h) boxes in pixels (y down), shared by the scene
(scenes.stage) and the window (app/window.py), so both report the same way.
"""
from __future__ import annotations

import numpy as np

MIN_TEXT_PX = 16.0        # at the reference height below, with the default UI scale
REFERENCE_HEIGHT = 720
FLOOR_PX = 14.0


def min_text_px(height: float) -> float:
    """The smallest em height (px) allowed in a picture `height` pixels tall: 16 px at 720, in proportion
    elsewhere (24 px at 1080), never below 14 px."""
    return max(FLOOR_PX, MIN_TEXT_PX * float(height) / REFERENCE_HEIGHT)


def _array(boxes) -> np.ndarray:
    return np.array([[b[1], b[2], b[1] + b[3], b[2] + b[4]] for b in boxes], dtype=np.float64).reshape(-1, 4)


def overlapping_pairs(boxes, tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of boxes [(name, x, y, w, h)] whose interiors overlap by more than `tolerance` px each way
    (touching edges and anti-aliasing slivers are not an overlap). Names are reported in box order."""
    boxes = list(boxes)
    if len(boxes) < 2:
        return []
    a = _array(boxes)
    ix = np.minimum(a[:, None, 2], a[None, :, 2]) - np.maximum(a[:, None, 0], a[None, :, 0])
    iy = np.minimum(a[:, None, 3], a[None, :, 3]) - np.maximum(a[:, None, 1], a[None, :, 1])
    hit = (ix > tolerance) & (iy > tolerance)
    i, j = np.nonzero(np.triu(hit, 1))
    return [(boxes[p][0], boxes[q][0]) for p, q in zip(i.tolist(), j.tolist())]


def contains(outer, inner, slack: float = 1.5) -> bool:
    """Box `inner` lies within box `outer` (both (name, x, y, w, h)), give or take `slack` px."""
    return (inner[1] >= outer[1] - slack and inner[2] >= outer[2] - slack
            and inner[1] + inner[3] <= outer[1] + outer[3] + slack
            and inner[2] + inner[4] <= outer[2] + outer[4] + slack)


def group_boxes(frames, texts) -> list[tuple]:
    """The boxes to test for overlap: each frame (a plate, a chip, the HUD) as one box, and every text that
    lies in no frame as a box of its own (a plate's lines belong to it and never overlap each other)."""
    free = [t for t in texts if not any(contains(f, t) for f in frames)]
    return list(frames) + free


def measure_text(items, viewproj, width: int, height: int, min_px: float, which: str = "all"):
    """Project every line of text a frame laid (scenes.frame.TextItem) and leave out the world-space ones
    drawn smaller than `min_px` of em height (seen from afar, or nearly edge-on). Returns
    (smallest em height drawn in px or None, [texts left out], [(text, x, y, w, h) screen lines],
    [(text, x, y, w, h) world lines], [(item, em px, depth) of those world lines]); lines wholly off screen are neither
    drawn nor counted. which: 'world' or 'screen' to measure only those (the stage measures the world's lines
    before it places the plates, which keep off them, and the plates' own lines after)."""
    smallest = None
    hidden, screen_boxes, world_boxes, world_items = [], [], [], []
    # The ink of a line: its advance less the side bearings, from just below the baseline to the cap height
    # (a Chinese character's ink spans about -0.1 to 0.8 em).
    corners = np.array([[0.04, -0.12], [0.96, -0.12], [0.04, 0.8], [0.96, 0.8]])
    todo = [it for it in items if it.rows[it.index].size and not (which == "world" and it.screen)
            and not (which == "screen" and not it.screen)]
    if not todo:
        return smallest, hidden, screen_boxes, world_boxes, world_items
    # Every line's four ink corners, its origin and one em up, projected at once (the loop below only sorts).
    origin = np.array([it.origin for it in todo], dtype=np.float64)[:, :3]
    along = np.array([it.along for it in todo], dtype=np.float64)[:, :3]
    up = np.array([it.em for it in todo], dtype=np.float64)[:, :3]
    pts = origin[:, None, :] + corners[None, :, :1] * along[:, None, :] + corners[None, :, 1:] * up[:, None, :]
    pts = np.concatenate([pts, origin[:, None, :], (origin + up)[:, None, :]], axis=1)        # (n, 6, 3)
    screen = np.array([it.screen for it in todo])
    h = np.concatenate([pts, np.ones(pts.shape[:2] + (1,))], axis=2) @ np.asarray(viewproj, dtype=np.float64).T
    w = h[..., 3:4]
    safe = np.where(np.abs(w) > 1e-12, w, 1.0)
    ndc = h[..., :3] / safe
    behind = np.any(w[..., 0] <= 1e-9, axis=1) | np.any(np.abs(ndc[..., 2]) >= 1.0, axis=1)
    px = np.stack([(ndc[..., 0] * 0.5 + 0.5) * width, (0.5 - ndc[..., 1] * 0.5) * height], axis=2)
    xy = np.where(screen[:, None, None], pts[:, :4, :2], px[:, :4])
    ems = np.where(screen, np.linalg.norm(up[:, :2], axis=1), np.linalg.norm(px[:, 5] - px[:, 4], axis=1))
    lo, hi = xy.min(axis=1), xy.max(axis=1)
    for i, it in enumerate(todo):
        if not it.screen and behind[i]:
            continue
        (x0, y0), (x1, y1), em = lo[i], hi[i], float(ems[i])
        if x1 < 0 or y1 < 0 or x0 > width or y0 > height:
            continue
        if not it.screen and em < min_px:
            it.hide()
            hidden.append(it.text)
            continue
        smallest = em if smallest is None else min(smallest, em)
        (screen_boxes if it.screen else world_boxes).append((it.text, float(x0), float(y0), float(x1 - x0),
                                                             float(y1 - y0)))
        if not it.screen:
            world_items.append((it, em, float(ndc[i, 4, 2])))
    return smallest, hidden, screen_boxes, world_boxes, world_items


def clear_of(rect, boxes, entries, hidden: list):
    """Leave out the world lines whose boxes the screen rectangle (x, y, w, h) would cover (a part's readout
    under the HUD is no readout); returns the boxes and entries kept and their smallest em height."""
    keep_boxes, keep_entries = [], []
    for box, (item, em, depth) in zip(boxes, entries):
        b = box[1:]
        if rect is not None and b[0] < rect[0] + rect[2] and rect[0] < b[0] + b[2] \
                and b[1] < rect[1] + rect[3] and rect[1] < b[1] + b[3]:
            item.hide()
            hidden.append(item.text)
            continue
        keep_boxes.append(box)
        keep_entries.append((item, em, depth))
    smallest = min((e[1] for e in keep_entries), default=None)
    return keep_boxes, keep_entries, smallest


def _hit(a, b, tolerance: float = 1.0) -> bool:
    ix = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    iy = min(a[2] + a[4], b[2] + b[4]) - max(a[2], b[2])
    return ix > tolerance and iy > tolerance


def nearest_wins(boxes, entries, hidden: list):
    """Where two of the parts' lines fall on one another on screen, the nearer one is what the class sees (the
    farther stands on a part behind, mostly hidden by the nearer part itself): leave the farther out."""
    kept: list[int] = []
    for k in sorted(range(len(boxes)), key=lambda k: entries[k][2]):
        if any(_hit(boxes[k], boxes[j]) for j in kept):
            entries[k][0].hide()
            hidden.append(entries[k][0].text)
        else:
            kept.append(k)
    kept.sort()
    return [boxes[k] for k in kept], [entries[k] for k in kept]


def frame_legibility(fb, viewproj, width: int, height: int, min_px: float, k: float, world) -> dict:
    """A frame's legibility (Stage.legibility), in the target's pixels (k: target pixels per pixel drawn):
    `world` is what measuring the parts' own text found, (smallest em px, [texts left out], [world lines]);
    here the plates, the HUD and the chips (fb: the frame's scenes.frame.FrameBuilder), and every box for the
    overlap measure. {'min_text_px', 'hidden', 'overlaps', 'boxes'}."""
    world_min, hidden, world_boxes = world
    screen_min, _, screen_boxes, _, _ = measure_text(fb.text_items, viewproj, width, height, min_px, "screen")
    sizes = [v for v in (world_min, screen_min) if v is not None]
    scale = lambda b: (b[0], *(v * k for v in b[1:]))  # noqa: E731
    frames = [scale(b) for b in fb.frames]
    boxes = group_boxes(frames, [scale(b) for b in screen_boxes]) + [scale(b) for b in world_boxes]
    return {"min_text_px": round(min(sizes) * k, 2) if sizes else None,
            "hidden": hidden, "overlaps": overlapping_pairs(boxes), "boxes": boxes}
