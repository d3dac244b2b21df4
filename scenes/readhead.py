"""The read head: a comb of steel teeth riding the big drum, a push rod per tooth, nine lane shafts across them.

When a pin passes, its tooth pushes the rod and every lit lane records it once: read once, use many times
(SCIENCE.md section 11). Lanes lit = tokens computed at once: γ+1 while verifying, one per sequence when
batching. A collar glows where a moving rod crosses a lit lane. The cut-away view drops the cover.
"""
from __future__ import annotations

import math

import numpy as np

from scenes.bigdrum import CONTACT_ANGLE
from scenes.geometry import box_matrix, boxes, compose, rot_x, rot_z, scale, translate
from scenes.layout import (BIG_DRUM_CENTRE, BIG_DRUM_COLS, BIG_DRUM_LENGTH, BIG_DRUM_RADIUS, N_LANES,
                           READ_HEAD_LANE_DZ, READ_HEAD_LANE_Z0, READ_HEAD_Y, EmitContext)
from scenes.text_atlas import SOLID
from scenes.camera import project

ROD_TRAVEL = 0.22
COUNTER_X = 0.45         # the counters stand this far past the shafts' near ends (x)
COUNTER_R = 0.065
COUNTER_TEETH = 12       # a lane's counter wheel turns one tooth for each pin read while the lane is lit
# The pieces the cut-away names (key, zh, en), nearest the class first.
CUTAWAY_PIECES = (("teeth", "钢齿", "steel teeth"), ("rods", "推杆", "push rods"), ("axles", "路的轴", "lane axles"),
                  ("counters", "计数轮", "counters"))


def lane_z(lane: int) -> float:
    return READ_HEAD_LANE_Z0 + lane * READ_HEAD_LANE_DZ


def tooth_x(col: int) -> float:
    return BIG_DRUM_CENTRE[0] + (col + 0.5) / BIG_DRUM_COLS * BIG_DRUM_LENGTH - BIG_DRUM_LENGTH / 2


def lane_probe(lane: int) -> tuple[float, float, float]:
    """A point on lane shaft `lane` between two push rods (tests look for its glow there)."""
    x = (tooth_x(BIG_DRUM_COLS - 4) + tooth_x(BIG_DRUM_COLS - 3)) / 2
    return (x, READ_HEAD_Y - 0.1, lane_z(lane))


class ReadHead:
    name = "readhead"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('big_drum_angle', 'lanes_lit')

    def __init__(self, drum):
        self.drum = drum
        self.tx = np.array([tooth_x(i) for i in range(BIG_DRUM_COLS)])
        self.x0 = BIG_DRUM_CENTRE[0] - BIG_DRUM_LENGTH / 2 - 0.15
        self.x1 = BIG_DRUM_CENTRE[0] + BIG_DRUM_LENGTH / 2 + 0.15
        self.tip_z = BIG_DRUM_CENTRE[2] + BIG_DRUM_RADIUS + 0.19

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        y = READ_HEAD_Y
        lift = self.drum.tooth_lift(state.big_drum_angle)
        n = len(self.tx)
        push = lift * ROD_TRAVEL
        # Teeth: steel fingers pressing on the drum, pivot-free: they slide with their rod.
        tz = self.tip_z + 0.25 + push
        fb.add("box", boxes(np.stack([self.tx, np.full(n, y), tz], 1), (0.1, 0.1, 0.5)), pal.steel)
        # Push rods run forward over the nine lane shafts.
        z_end = lane_z(N_LANES - 1) + 0.35
        rz0 = self.tip_z + 0.5
        rods = [compose(translate(x, y, (rz0 + z_end) / 2 + p), rot_x(math.pi / 2), scale(0.035, z_end - rz0, 0.035))
                for x, p in zip(self.tx, push)]
        fb.add("cyl_lo", np.stack(rods), pal.steel)
        # Lane shafts under the rods; lit ones glow.
        lit = state.lanes_lit
        shafts_on, shafts_off = [], []
        L = self.x1 - self.x0
        for lane in range(N_LANES):
            m = compose(translate((self.x0 + self.x1) / 2, y - 0.1, lane_z(lane)), rot_z(math.pi / 2),
                        scale(0.045, L, 0.045))
            (shafts_on if lane < lit else shafts_off).append(m)
        if shafts_on:
            fb.add("cyl_lo", np.stack(shafts_on), pal.lane_on)
        if shafts_off:
            fb.add("cyl_lo", np.stack(shafts_off), pal.lane_off)
        # Collars where each rod crosses each lit lane: they flash as the rod moves (the lane records the pin).
        if lit:
            xs, zs = np.meshgrid(self.tx, [lane_z(k) for k in range(lit)], indexing="ij")
            glow = np.repeat(lift, lit)
            c = np.stack([xs.ravel(), np.full(xs.size, y - 0.03), zs.ravel() + np.repeat(push, lit)], 1)
            fb.add("box", boxes(c, (0.07, 0.07, 0.07)), pal.lane_on, emissive=0.15 + 1.6 * glow)
        # Counters on the shafts' near ends: a lit lane's wheel turns a tooth for every pin read (read once,
        # counted by every lit lane); a dark lane's wheel stands still. The marker on the rim shows the turn.
        cut = ec.view == "cutaway"
        if cut:
            turn = self.counter_angle(state)
            wheels_on, wheels_off, marks = [], [], []
            for lane in range(N_LANES):
                a = turn if lane < lit else 0.0
                centre = np.array([COUNTER_X + self.x1, y - 0.1, lane_z(lane)])
                m = compose(translate(*centre), rot_z(math.pi / 2), scale(COUNTER_R, 0.05, COUNTER_R))
                (wheels_on if lane < lit else wheels_off).append(m)
                marks.append(box_matrix(COUNTER_X + self.x1 + 0.03, y - 0.1 + 0.7 * COUNTER_R * math.cos(a),
                                        lane_z(lane) + 0.7 * COUNTER_R * math.sin(a), 0.03, 0.045, 0.045))
            if wheels_on:       # lit as the lanes are: one brass wheel among the brass pins was hard to find
                fb.add("cyl_lo", np.stack(wheels_on), pal.lane_on, emissive=0.9)
            if wheels_off:
                fb.add("cyl_lo", np.stack(wheels_off), pal.iron_light)
            fb.add("box", np.stack(marks), pal.iron)
        # Frame: end plates carrying the shafts, a base rail, lane number plates.
        zc = (lane_z(0) + lane_z(N_LANES - 1)) / 2
        zl = lane_z(N_LANES - 1) - lane_z(0) + 0.5
        frame = [box_matrix(self.x0 - 0.08, y / 2 + 0.05, zc, 0.12, y + 0.25, zl)]
        if not cut:      # the cut-away removes the near end plate and the front of the base
            frame.append(box_matrix(self.x1 + 0.08, y / 2 + 0.05, zc, 0.12, y + 0.25, zl))
        fb.add("box", np.stack(frame), pal.brass)
        if cut:
            fb.add("box", box_matrix((self.x0 + self.x1) / 2, 0.5, zc - zl / 4, L, 0.7, zl / 2), pal.iron)
        else:
            fb.add("box", box_matrix((self.x0 + self.x1) / 2, 0.9, zc, L, 1.5, zl - 0.1), pal.iron)
        # The comb's guide (where the teeth slide) and, unless cut away, the cover over the rods.
        fb.add("box", box_matrix((self.x0 + self.x1) / 2, y - 0.12, self.tip_z + 0.3, L, 0.1, 0.2), pal.iron_light)
        if ec.view != "cutaway":
            # The comb's housing over the teeth; the lanes stay in sight so the class sees them light.
            fb.add("box", box_matrix((self.x0 + self.x1) / 2, y + 0.2, self.tip_z + 0.45, L + 0.3, 0.08, 0.5),
                   pal.iron_light)
        fb.shadow((self.x0 + self.x1) / 2, 0.012, zc, L + 0.8, zl + 0.5, 0.5)

    def pins_read(self, state) -> int:
        """Pins that have passed the teeth since the run's first turn began: each one read once, as it crosses
        the contact angle (where BigDrum.tooth_lift peaks)."""
        base = (self.drum.angle - CONTACT_ANGLE) / (2 * math.pi)
        return int(np.sum(np.floor(base + state.big_drum_angle / (2 * math.pi)) - np.floor(base)))

    def counter_angle(self, state) -> float:
        """How far a lit lane's counter wheel has turned: one tooth (2π/COUNTER_TEETH) per pin read."""
        return (self.pins_read(state) % COUNTER_TEETH) * 2 * math.pi / COUNTER_TEETH

    def pieces(self, state) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The cut-away's named pieces: key -> (world anchor on it, box lo, box hi). The anchors sit on pieces
        near the class: a tooth, a push rod, a lane axle at the near end and a counter in the middle of the row
        (at the near end too, the counters' and the axles' plates stood side by side and read as one)."""
        y = READ_HEAD_Y
        push = self.drum.tooth_lift(state.big_drum_angle) * ROD_TRAVEL
        z_end = lane_z(N_LANES - 1) + 0.35
        rz0 = self.tip_z + 0.5
        tz = self.tip_z + 0.25 + push
        k = len(self.tx) - 2
        out = {
            "teeth": (np.array([self.tx[k], y, tz[k]]), np.array([self.tx[0] - 0.05, y - 0.05, self.tip_z]),
                      np.array([self.tx[-1] + 0.05, y + 0.05, self.tip_z + 0.5 + ROD_TRAVEL])),
            "rods": (np.array([self.tx[-3], y, rz0 + 0.6 * (z_end - rz0) + push[-3]]),
                     np.array([self.tx[0] - 0.035, y - 0.035, rz0]),
                     np.array([self.tx[-1] + 0.035, y + 0.035, z_end + ROD_TRAVEL])),
            "axles": (np.array([self.x1 + 0.2, y - 0.1, lane_z(N_LANES - 1)]),
                      np.array([self.x0, y - 0.145, lane_z(0) - 0.045]),
                      np.array([self.x1 + COUNTER_X, y - 0.055, lane_z(N_LANES - 1) + 0.045])),
            "counters": (np.array([self.x1 + COUNTER_X + 0.03, y - 0.1 - 0.5 * COUNTER_R, lane_z(N_LANES // 2)]),
                         np.array([self.x1 + COUNTER_X - 0.025, y - 0.1 - COUNTER_R, lane_z(0) - COUNTER_R]),
                         np.array([self.x1 + COUNTER_X + 0.025, y - 0.1 + COUNTER_R,
                                   lane_z(N_LANES - 1) + COUNTER_R])),
        }
        return out

    def lane_number_spots(self, viewproj, width, height, offset=(0.0, 0.0, 0.0), cut=False, text_ref=None,
                          min_px: float = 11.0, keep_out=None, named: bool = False, below=()) -> list[tuple]:
        """Where the lane numbers 1-9 go on screen: [(lane, x, y, size_px, end_x, end_y)], each just past its
        shaft's right end (end_x, end_y), sized by the projected lane spacing so neighbours never run
        together (oblique views squeeze the lanes). Where that spacing is tight the numbers fan out into a
        column beside the plate, each on a leader line to its shaft; [] where the read head is too small on
        screen to tell its lanes apart (the wide views). `named`: a beat whose words name the read head's lanes
        ("亮 5 条路") fans them out down to lanes 2.5 px apart (at 720p a frame of the read head beside the drum and
        the mill had them 5-8 px apart and no numbers: the lit lanes could not be counted). `below`: screen
        rectangles (x, y, w, h) a fanned column must stay above (the tape's writing, the meters): it rises, and
        where the HUD leaves no room its chips shrink, down to min_px."""
        y = READ_HEAD_Y - (0.3 if cut else 0.1)
        off = np.asarray(offset, dtype=np.float64)
        ends, outs = [], []
        for lane in range(N_LANES):
            a = project(viewproj, np.array([self.x1 + 0.2, y, lane_z(lane)]) + off, width, height)
            b = project(viewproj, np.array([self.x1 + 0.6, y, lane_z(lane)]) + off, width, height)
            if not (-1 < a[2] < 1):
                return []
            ends.append(np.array(a[:2]))
            outs.append(np.array(b[:2]) - np.array(a[:2]))
        # Neighbouring chips (squares 0.9 em wide; a digit is about 0.55 x 0.73 em) stay apart when the
        # larger of their centres' x and y distances exceeds 0.9 em.
        spacing = min(float(np.abs(ends[k + 1] - ends[k]).max()) for k in range(N_LANES - 1))
        ref = text_ref or height
        comfortable = max(ref / 34.0, 1.3 * min_px)   # the size of the part names: read from the back of the room
        natural = min(spacing / 0.95, comfortable)
        # (9 px apart: a chip column on leaders still tells them apart; closer, the leaders run together)
        if natural < (2.5 if named else max(height / 80.0, 9.0)):
            return []                    # lanes too close together on screen to tell apart: a wide view
        if natural >= comfortable:
            spots = []
            for lane, (e, o) in enumerate(zip(ends, outs)):
                n = float(np.linalg.norm(o))
                d = o / n if n > 1e-6 else np.array([1.0, 0.0])
                c = e + d * natural * 0.6
                spots.append((lane, float(c[0]), float(c[1]), natural, float(e[0]), float(e[1])))
            if keep_out is None or not any(_covers(keep_out, x, y, sz) for _, x, y, sz, _, _ in spots):
                return spots
        # Fan out: a column of chips one em apart beside the plate, in the lanes' order down the screen.
        size = comfortable
        pts = np.array(ends)
        side = 1.0 if float(np.mean([o[0] for o in outs])) >= 0 else -1.0
        cx = (pts[:, 0].max() + 1.6 * size) if side > 0 else (pts[:, 0].min() - 1.6 * size)
        order = 1.0 if pts[-1, 1] >= pts[0, 1] else -1.0
        span = (N_LANES - 1) * size
        cy0 = float(pts[:, 1].mean()) - order * span / 2
        top = min(cy0, cy0 + order * span)
        cy0 += min(max(top, size), height - size - span) - top      # keep the column on screen
        cx = min(max(cx, size), width - size)
        if keep_out is not None:
            # The column keeps clear of the HUD: below it where it fits, else beside it.
            kx, ky, kw, kh = keep_out
            lo = min(cy0, cy0 + order * span) - 0.5 * size
            if cx + 0.5 * size > kx and cx - 0.5 * size < kx + kw and lo < ky + kh:
                shift = ky + kh + 0.6 * size - lo
                if lo + shift + span + size <= height:
                    cy0 += shift
                else:
                    cx = kx + kw + 0.7 * size
        cy0, size = _above(below, cx, cy0, order, size, keep_out, min_px)
        if size <= 0:
            return []
        return [(lane, float(cx), float(cy0 + order * lane * size), size, float(e[0]), float(e[1]))
                for lane, e in enumerate(ends)]

    def emit_lane_numbers(self, fb, state, spots, ec: EmitContext) -> None:
        """The lane numbers as screen text facing the audience (lit lanes in the lane colour), each on a
        dark chip; a fanned-out number has a thin leader line to its shaft's end."""
        pal = ec.palette
        for lane, x, y, size, ex, ey in spots:
            lit = lane < state.lanes_lit
            col = pal.lane_on.color if lit else pal.label
            d = np.array([x - ex, y - ey])
            n = float(np.linalg.norm(d))
            if n > 0.9 * size:
                u = d / n
                fb.shape(SOLID, ((x + ex) / 2, (y + ey) / 2, 0.0), (u[0], u[1], 0.0), (-u[1], u[0], 0.0), n,
                         max(1.0, size / 14.0), tuple(col[:3]) + (0.8,), screen=True)
            # A dark chip behind each digit: legible over brass, iron or the floor alike.
            fb.rect_screen(x - 0.45 * size, y - 0.45 * size, 0.9 * size, 0.9 * size, pal.plate, frame=f"lane {lane + 1}")
            fb.text(str(lane + 1), (x, y, 0.0), (1, 0, 0), (0, -1, 0), size, col, anchor="center",
                    valign="middle", screen=True)


def _above(below, cx: float, cy0: float, order: float, size: float, keep_out, min_px: float):
    """(first chip's y, chip size) of a fanned column kept above the rectangles `below` that its x-range meets:
    raised by its overlap, and where that would take it into the HUD (keep_out) or off the top, its chips shrunk
    to fit between the two; size 0 where they would be smaller than min_px."""
    span = (N_LANES - 1) * size
    top, bottom = min(cy0, cy0 + order * span) - 0.5 * size, max(cy0, cy0 + order * span) + 0.5 * size
    limits = [ry for rx, ry, rw, rh in below if cx + 0.5 * size > rx and cx - 0.5 * size < rx + rw
              and ry + rh > top and ry < bottom]
    if not limits:
        return cy0, size
    limit = min(limits)
    ceiling = 0.0
    if keep_out is not None:
        kx, ky, kw, kh = keep_out
        if cx + 0.5 * size > kx and cx - 0.5 * size < kx + kw:
            ceiling = ky + kh + 0.2 * size
    if limit - ceiling < N_LANES * min_px:
        return cy0, 0.0
    size = min(size, (limit - ceiling) / N_LANES)
    span = (N_LANES - 1) * size
    new_top = min(max(ceiling, top), limit - N_LANES * size)
    first = new_top + 0.5 * size
    return (first if order > 0 else first + span), size


def _covers(rect, x: float, y: float, size: float) -> bool:
    """The screen rectangle (x, y, w, h) overlaps the chip of a lane number centred at (x, y)."""
    rx, ry, rw, rh = rect
    h = 0.45 * size
    return x + h > rx and x - h < rx + rw and y + h > ry and y - h < ry + rh
