"""Where the words laid over the picture go: plates placed one by one, each at the nearest free spot to where it
is wanted (no plate over another, a keep-out, another labelled part, nor over a leader; no leader over a plate or
across another leader), the leaders' geometry, and the trade of two plates whose leaders cross. Pure geometry in
pixels, read by scenes.labels."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np


# Every move within 60 steps (two thirds of the picture's height), nearest first (ties: up before down, then
# sideways): a plate stays as close to its part as the free space allows.
_REACH = 60
_MOVES = sorted(((dx, dy) for dx in range(-_REACH, _REACH + 1) for dy in range(-_REACH, _REACH + 1)),
                key=lambda m: (m[0] * m[0] + m[1] * m[1], m[1] > 0, abs(m[0])))


_MOVES_ARRAY = np.asarray(_MOVES, dtype=np.float64)      # (made once: converting the list costs ~5 ms a call)
# Each move's place in the grid of moves (-_REACH.._REACH steps each way), nearest first as _MOVES.
_MOVE_IX = _MOVES_ARRAY[:, 0].astype(np.intp) + _REACH
_MOVE_IY = _MOVES_ARRAY[:, 1].astype(np.intp) + _REACH
_MOVE_FLAT = _MOVE_IY * (2 * _REACH + 1) + _MOVE_IX
# The free spots tried against the leaders a block at a time, nearest first: (start, end) into them.
_CHUNKS = ((0, 24), (24, 256), (256, 2048), (2048, len(_MOVES)))


def place_plates(wanted, width, height, keep_out=(), pad: float = 4.0) -> list[tuple[float, float]]:
    """Top-left corners for plates wanted at [(x, y, w, h)] (in priority order) so that no two overlap and
    none covers a keep-out rectangle (the HUD): each plate takes the nearest free spot, trying small moves
    up, down and sideways before larger ones, and stays on screen."""
    return _place(wanted, width, height, keep_out, pad)[0]


_PLACED: OrderedDict = OrderedDict()     # recent placements by their inputs: a still camera asks the same again


def _place(wanted, width, height, keep_out=(), pad: float = 4.0, avoid=None, leaders=None, plates=(), lines=(),
           gap: float = 0.0):
    """place_plates, and for each plate whether it found a free spot (else it sits where it was wanted).
    avoid[i]: rectangles (x, y, w, h) plate i must not cover besides the shared ones (the other labelled parts);
    leaders[i]: the point its leader runs to, which must cross no plate placed before it nor any of `plates`
    (plates laid earlier in the frame), and no plate covers a leader placed before it nor any of `lines` (those
    earlier plates' leaders, ((x0, y0), (x1, y1))): a leader over another part's plate reads as naming it; nor
    does a leader cross one laid before it. `gap`: room kept between the plates placed here, besides `pad` (two plates a few pixels apart read as one).
    A pure function of its inputs, so the answer for the same inputs is kept (a still frame is placed once)."""
    rects = lambda rs: tuple(tuple(float(v) for v in r[:4]) for r in rs)  # noqa: E731
    key = (rects(wanted), float(width), float(height), rects(keep_out), float(pad),
           None if avoid is None else tuple(rects(a) for a in avoid),
           None if leaders is None else rects(leaders), rects(plates),
           tuple((tuple(map(float, a)), tuple(map(float, b))) for a, b in lines), float(gap))
    hit = _PLACED.get(key)
    if hit is not None:
        _PLACED.move_to_end(key)
        return list(hit[0]), list(hit[1])
    out, ok = _place_now(wanted, width, height, keep_out, pad, avoid, leaders, plates, lines, gap)
    _PLACED[key] = (tuple(out), tuple(ok))
    if len(_PLACED) > 32:
        _PLACED.popitem(last=False)
    return out, ok


def _place_now(wanted, width, height, keep_out, pad, avoid, leaders, plates=(), lines=(), gap=0.0):
    ok = []
    placed = [tuple(map(float, r[:4])) for r in keep_out]
    # the plates a leader may not cross (a leader may cross a keep-out, not a plate), and the leaders no plate
    # may cover: those laid before this call's, then this call's as they are placed
    plates = [tuple(map(float, r[:4])) for r in plates]
    lines = [(tuple(map(float, a)), tuple(map(float, b))) for a, b in lines]
    out = []
    step = height / 90.0
    span = np.arange(-_REACH, _REACH + 1, dtype=np.float64) * step
    for i, (x, y, w, h) in enumerate(wanted):
        # The spots are a grid of moves (clipped to the frame, so each axis stays in order): a rectangle rules out
        # the moves whose plate would meet it, a block of the grid found by bisecting each axis.
        xs = np.clip(x + span, 2.0, max(width - w - 2.0, 2.0))
        ys = np.clip(y + span, 2.0, max(height - h - 2.0, 2.0))
        blocked = np.zeros((len(span), len(span)), dtype=bool)
        r = np.asarray(placed + list(avoid[i] if avoid else ()), dtype=np.float64).reshape(-1, 4)
        if len(r):
            x0 = np.searchsorted(xs, r[:, 0] - w - pad, side="right")
            x1 = np.searchsorted(xs, r[:, 0] + r[:, 2] + pad, side="left")
            y0 = np.searchsorted(ys, r[:, 1] - h - pad, side="right")
            y1 = np.searchsorted(ys, r[:, 1] + r[:, 3] + pad, side="left")
            for a, b, c, d in zip(y0.tolist(), y1.tolist(), x0.tolist(), x1.tolist()):
                blocked[a:b, c:d] = True
        spots = np.flatnonzero(~blocked.ravel()[_MOVE_FLAT])        # the free moves, nearest first
        point = leaders[i] if leaders else None
        k = int(spots[0]) if len(spots) else None
        if point is not None:
            # the first free spot whose plate covers no leader laid so far and whose leader crosses no plate (a
            # leader over another part's plate reads as naming that part), tried a block at a time (the nearest
            # few usually do)
            k = None
            near_plates = np.asarray(plates, dtype=np.float64).reshape(-1, 4)
            near_lines = np.asarray(lines, dtype=np.float64).reshape(-1, 4)
            for c0, c1 in _CHUNKS:
                chunk = spots[c0:c1]
                if not len(chunk):
                    break
                cx, cy = xs[_MOVE_IX[chunk]], ys[_MOVE_IY[chunk]]
                good = chunk[~_spots_meet_leaders(cx, cy, w, h, point, near_plates, near_lines, pad)]
                if len(good):
                    k = int(good[0])
                    break
        best = (float(xs[_MOVE_IX[k]]), float(ys[_MOVE_IY[k]])) if k is not None else \
            (min(max(x, 2.0), width - w), min(max(y, 2.0), height - h))
        if k is not None or leaders is None:    # a plate left out takes no room
            placed.append((best[0] - gap, best[1] - gap, w + 2 * gap, h + 2 * gap))
            plates.append((best[0], best[1], w, h))
            if point is not None:
                lines.append((leader_foot(point, (best[0], best[1], w, h)), (float(point[0]), float(point[1]))))
        out.append(best)
        ok.append(k is not None)
    return out, ok


def _spots_meet_leaders(x, y, w, h, point, plates, lines, pad):
    """For plates of size w x h at the corners (x[k], y[k]) with a leader to `point`: whether each covers one of
    `lines` (leaders, an array of rows x0, y0, x1, y1), its leader runs over one of `plates` (rows x, y, w, h),
    each grown by half of `pad`, or its leader crosses one of `lines` (every spot against every leader and plate
    near them in one array pass)."""
    bad = np.zeros(np.shape(x), dtype=bool)
    g = pad / 2
    px, py = float(point[0]), float(point[1])
    # only what comes near the spots and their leaders can meet them
    x0, x1 = min(float(x.min()), px) - g, max(float(x.max()) + w, px) + g
    y0, y1 = min(float(y.min()), py) - g, max(float(y.max()) + h, py) + g
    if len(lines):
        near = (np.minimum(lines[:, 0], lines[:, 2]) < x1) & (np.maximum(lines[:, 0], lines[:, 2]) > x0) & \
            (np.minimum(lines[:, 1], lines[:, 3]) < y1) & (np.maximum(lines[:, 1], lines[:, 3]) > y0)
        lines = lines[near]
    if len(plates):
        plates = plates[(plates[:, 0] < x1) & (plates[:, 0] + plates[:, 2] > x0) &
                        (plates[:, 1] < y1) & (plates[:, 1] + plates[:, 3] > y0)]
    fx, fy = np.clip(px, x, x + w), np.clip(py, y, y + h)     # leader_foot, for every spot
    if len(lines):
        ax, ay, bx, by = (lines[:, m:m + 1] for m in range(4))
        bad |= np.any(_segment_in_rect(ax, ay, bx, by, x - g, y - g, x + w + g, y + h + g), axis=0)
        # nor crosses a leader laid so far (two crossing leaders read as naming each other's parts)
        t1 = (bx - ax) * (fy - ay) - (by - ay) * (fx - ax)
        t2 = (bx - ax) * (py - ay) - (by - ay) * (px - ax)
        t3 = (px - fx) * (ay - fy) - (py - fy) * (ax - fx)
        t4 = (px - fx) * (by - fy) - (py - fy) * (bx - fx)
        bad |= np.any((t1 * t2 < 0) & (t3 * t4 < 0), axis=0)
    if len(plates):
        r = plates[:, :, None]
        bad |= np.any(_segment_in_rect(fx, fy, px, py, r[:, 0] - g, r[:, 1] - g,
                                       r[:, 0] + r[:, 2] + g, r[:, 1] + r[:, 3] + g), axis=0)
    return bad


def _segment_in_rect(ax, ay, bx, by, x0, y0, x1, y1):
    """Whether the segment (ax, ay)-(bx, by) runs through the inside of the rectangle [x0, x1] x [y0, y1] (the slab
    test: the part of the segment inside both slabs is not empty); any argument may be an array."""
    lo, hi = 0.0, 1.0
    for p, d, s0, s1 in ((ax, np.subtract(bx, ax), x0, x1), (ay, np.subtract(by, ay), y0, y1)):
        d = np.asarray(d, dtype=np.float64)
        flat = np.abs(d) < 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            t0, t1 = (np.subtract(s0, p)) / d, (np.subtract(s1, p)) / d
        inside = (np.less(s0, p) & np.less(p, s1))
        enter = np.where(flat, np.where(inside, 0.0, 1.0), np.minimum(t0, t1))
        leave = np.where(flat, np.where(inside, 1.0, 0.0), np.maximum(t0, t1))
        lo, hi = np.maximum(lo, enter), np.minimum(hi, leave)
    return lo < hi


def segment_meets_rect(a, b, rect, pad: float = 0.0) -> bool:
    """Whether the segment a-b runs over the rectangle (x, y, w, h) grown by `pad`."""
    x, y, w, h = (float(v) for v in rect[:4])
    return bool(_segment_in_rect(float(a[0]), float(a[1]), float(b[0]), float(b[1]), x - pad, y - pad,
                                 x + w + pad, y + h + pad))


def leader_foot(point, rect) -> tuple[float, float]:
    """Where a plate's leader leaves it: the point of the plate (x, y, w, h) nearest the anchor."""
    x, y, w, h = rect
    return min(max(point[0], x), x + w), min(max(point[1], y), y + h)


def _segments_cross(a, b, c, d) -> bool:
    """Whether the segments a-b and c-d cross (touching ends do not count)."""
    def turn(p, q, r):
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])
    return turn(a, b, c) * turn(a, b, d) < 0 and turn(c, d, a) * turn(c, d, b) < 0


def _rects_meet(a, b) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _slot_for(rect, slot, anchor):
    """`rect`'s size put in another plate's `slot`: the edge its leader leaves by kept where the slot had it."""
    x, y, w, h = slot
    if anchor[0] >= x + w:
        nx = x + w - rect[2]               # the leader leaves by the right edge: keep it
    elif anchor[0] <= x:
        nx = x                             # ... by the left edge
    else:
        nx = x + (w - rect[2]) / 2
    return (nx, y + (h - rect[3]) / 2, rect[2], rect[3])


def _uncross_leaders(drawn, targets):
    """Two plates whose leaders cross read as naming each other's parts: they trade places where, traded, the
    leaders no longer cross, neither plate meets another plate or another labelled part, and no leader runs
    over another plate."""
    drawn = list(drawn)
    parts = {name: (x0, y0, x1 - x0, y1 - y0) for name, (_, (x0, y0, x1, y1)) in targets.items()}
    for i in range(len(drawn)):
        for j in range(i + 1, len(drawn)):
            a, b = drawn[i], drawn[j]
            if not (a[5] and b[5]) or a[0] not in targets or b[0] not in targets:
                continue
            pa, pb = targets[a[0]][0], targets[b[0]][0]
            ra, rb = a[1:5], b[1:5]
            if not _segments_cross(leader_foot(pa, ra), pa, leader_foot(pb, rb), pb):
                continue
            na, nb = _slot_for(ra, rb, pa), _slot_for(rb, ra, pb)
            if _rects_meet(na, nb) or _segments_cross(leader_foot(pa, na), pa, leader_foot(pb, nb), pb):
                continue
            others = [d[1:5] for k, d in enumerate(drawn) if k not in (i, j) and d[5]]
            if any(_rects_meet(rect, o) for rect in (na, nb) for o in others) or \
                    any(_rects_meet(rect, box) for own, rect in ((a[0], na), (b[0], nb))
                        for name, box in parts.items() if name != own):
                continue
            # nor a leader over another plate: theirs, traded, over the others', or the others' over theirs
            lines = [(leader_foot(targets[d[0]][0], d[1:5]), targets[d[0]][0]) for k, d in enumerate(drawn)
                     if k not in (i, j) and d[5] and d[0] in targets]
            if any(segment_meets_rect(leader_foot(p, r), p, o) for p, r in ((pa, na), (pb, nb)) for o in others) or \
                    any(segment_meets_rect(f, p, r) for f, p in lines for r in (na, nb)):
                continue
            drawn[i] = (a[0], *na, *a[5:])
            drawn[j] = (b[0], *nb, *b[5:])
    return drawn


def _readout_spot(wanted, width, height, keep_out, avoid, leaders):
    """Where the first plate (the one carrying a readout, placed first) goes: its nearest free spot, unless a plate
    after it then lands far from its part (a leader longer than a quarter of the frame, or no spot at all) where it
    wanted to go the readout's plate or leader stands; then the spot beside it, to either side, after which they
    land nearest (fewest left out, the shortest leaders in all). Returns (the plate's rectangle at that spot, and
    the placement of them all with it there). The plates of parts the user hid count too (`wanted` has them all):
    the readout stays put when a part is hidden."""
    x, y, w, h = wanted[0]

    def laid(first):
        out, ok = _place([first] + list(wanted[1:]), width, height, keep_out, avoid=avoid, leaders=leaders)
        lengths = [float(np.hypot(*np.subtract(leader_foot(p, (o[0], o[1], r[2], r[3])), p))) if good else np.inf
                   for p, o, r, good in zip(leaders, out, wanted, ok)]
        cost = (sum(not good for good in ok), sum(v for v in lengths if v < np.inf))
        return cost, lengths, out, ok

    cost, lengths, out, ok = laid(wanted[0])
    spot = (out[0][0], out[0][1], w, h)
    foot = leader_foot(leaders[0], spot)
    # the plates that landed far, and whether the readout's plate or leader stands where they wanted to go
    blocked = any(_rects_meet(spot, wanted[j]) or segment_meets_rect(foot, leaders[0], wanted[j])
                  for j in range(1, len(wanted)) if lengths[j] > 0.25 * height)
    best = (cost, spot, out, ok)
    if blocked:
        for side in (0.75, -0.75):
            c, _, o, k = laid((x + side * w, y, w, h))
            if c < best[0]:
                best = (c, (o[0][0], o[0][1], w, h), o, k)
    return best[1:]
