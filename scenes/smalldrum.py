"""The small drum (the draft model) and the pencil cart that writes each guess on the tape.

The small drum carries about a tenth of the big drum's pins and makes one full turn per guess in c x the
big drum's time (c = the draft/target cost ratio); the pencil cart rides the rail behind the tape and
draws the guess into its cell while the drum turns (SCIENCE.md section 3).
"""
from __future__ import annotations

import math

import numpy as np

from models.drafters import COPY, kind_of
from scenes.bigdrum import pin_locals, pin_pattern
from scenes.geometry import box_matrix, compose, rot_x, rot_z, scale, translate
from scenes.layout import (SMALL_DRUM_CENTRE, SMALL_DRUM_LENGTH, SMALL_DRUM_RADIUS, TAPE_X,
                           EmitContext, cell_x, tape_point)


# EAGLE's feed: a cable on the table top from the big drum's right bearing to the small drum's left end (world
# points; it passes right of the read head, in front of the mill and behind the bridge).
FEED_PATH = ((0.68, 2.1, -2.75), (0.68, 0.07, -2.75), (1.05, 0.07, -2.75), (1.05, 0.07, 0.95), (7.3, 0.07, 0.95),
             (7.3, 0.07, 1.6), (7.3, 1.05, 1.6))
FEED_BEADS = 14


def _segment(p0, p1, r: float) -> np.ndarray:
    """A cylinder (the unit cylinder along y) from p0 to p1, which differ along one axis."""
    a, b = np.asarray(p0, dtype=np.float64), np.asarray(p1, dtype=np.float64)
    d = b - a
    length = float(np.abs(d).max())
    axis = int(np.argmax(np.abs(d)))
    turn = {0: rot_z(math.pi / 2), 1: np.eye(4), 2: rot_x(math.pi / 2)}[axis]
    return compose(translate(*((a + b) / 2)), turn, scale(r, length, r))


def feed_points(n: int, phase: float) -> np.ndarray:
    """n points spaced along FEED_PATH, shifted by `phase` (0..1) of one spacing: the features flowing."""
    pts = np.asarray(FEED_PATH, dtype=np.float64)
    seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    out = []
    for s in (np.arange(n) + phase % 1.0) / n * cum[-1]:
        i = min(int(np.searchsorted(cum, s, side="right")) - 1, len(seg) - 1)
        out.append(pts[i] + (pts[i + 1] - pts[i]) * (s - cum[i]) / seg[i])
    return np.array(out)


class SmallDrum:
    name = "smalldrum"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('small_drum_angle', 'drafter')

    def __init__(self, big_pins: int, seed: int = 5):
        self.centre = np.array(SMALL_DRUM_CENTRE)
        cols, rows = 8, 24
        # Aim for a tenth of the big drum's pins.
        density = min(1.0, big_pins / 10 / (cols * rows))
        _, xs, ang, h, sign = pin_pattern(cols, rows, SMALL_DRUM_RADIUS, SMALL_DRUM_LENGTH, density, seed)
        self.pins = pin_locals(xs, ang, h, SMALL_DRUM_RADIUS, 0.03, 0.14)
        self.sign = sign
        self.n_pins = len(xs)

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        cx, cy, cz = self.centre
        R, L = SMALL_DRUM_RADIUS, SMALL_DRUM_LENGTH
        f = compose(translate(cx, cy, cz), rot_x(state.small_drum_angle))
        fb.add("cyl", compose(f, rot_z(math.pi / 2), scale(R, L, R)), pal.copper)
        fl = [compose(f, translate(s * (L / 2 + 0.04), 0, 0), rot_z(math.pi / 2), scale(R + 0.08, 0.08, R + 0.08))
              for s in (-1, 1)]
        fb.add("cyl", np.stack(fl), pal.brass)
        spokes = [compose(f, translate(s * (L / 2 + 0.1), 0, 0), rot_x(k * math.pi / 3), scale(0.05, 2 * R, 0.1))
                  for s in (-1, 1) for k in range(3)]
        fb.add("box", np.stack(spokes), pal.iron)
        colors = np.where(self.sign[:, None], np.array(pal.brass.color), np.array(pal.steel.color))
        fb.add("pin", f @ self.pins, pal.brass, colors=colors)
        stands = []
        for s in (-1, 1):
            x = cx + s * (L / 2 + 0.3)
            stands.append(box_matrix(x, cy / 2, cz, 0.18, cy, 0.4))
            stands.append(box_matrix(x, 0.08, cz, 0.45, 0.16, 0.9))
        fb.add("box", np.stack(stands), pal.iron)
        fb.add("cyl", compose(translate(cx, cy, cz), rot_z(math.pi / 2), scale(0.09, L + 0.75, 0.09)), pal.steel)
        fb.shadow(cx, 0.012, cz, L + 1.2, 2 * R + 0.6, 0.55)
        if kind_of(state.drafter).fed_by_target:
            self._emit_feed(fb, state, ec)

    def _emit_feed(self, fb, state, ec: EmitContext) -> None:
        """EAGLE: the small drum is no second model reading the text but a layer fed the target's features, so a
        cable runs to it from the big drum; beads of light flow along it while the small drum turns."""
        pal = ec.palette
        fb.add("cyl_lo", np.stack([_segment(a, b, 0.06) for a, b in zip(FEED_PATH, FEED_PATH[1:])]), pal.brass)
        turning = (state.small_drum_angle / (2 * math.pi)) % 1.0
        beads = [compose(translate(*p), scale(0.13, 0.13, 0.13)) for p in feed_points(FEED_BEADS, turning)]
        fb.add("bead", np.stack(beads), pal.lane_on, emissive=np.full(len(beads), 2.0 if turning else 0.6))


class PencilCart:
    """Rides a rail along the back edge of the tape; its pencil dips into the cell being written."""
    name = "pencil"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('drafter', 'gamma', 'pencil_cell', 'pencil_down')

    @staticmethod
    def anchor(state, view: str = "table") -> np.ndarray:
        """Where a name plate's leader points: the cart itself (its rail runs on to the small drum), in any view."""
        x = cell_x(state.pencil_cell, state.gamma)
        top = tape_point(x, 0.85, 0.0)
        return np.array([x, top[1] + 0.14 + 0.11, top[2] - 0.05])

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        x = cell_x(state.pencil_cell, state.gamma)
        top = tape_point(x, 0.85, 0.0)
        # Rail (fixed) from the window to the small drum.
        rail_y, rail_z = top[1] + 0.14, top[2] - 0.05
        x0, x1 = cell_x(-0.6, state.gamma), SMALL_DRUM_CENTRE[0] - 0.2
        if kind_of(state.drafter).look == COPY:
            x0 = TAPE_X[0] + 0.2           # the cart rides back over the earlier text it copies from
        fb.add("cyl_lo", compose(translate((x0 + x1) / 2, rail_y, rail_z), rot_z(math.pi / 2),
                                 scale(0.04, x1 - x0, 0.04)), pal.steel)
        fb.add("box", np.stack([box_matrix(x1, rail_y / 2, rail_z, 0.1, rail_y, 0.1)]), pal.iron)
        # The cart: a brass block with the pencil slanting down onto the tape.
        fb.add("box", box_matrix(x, rail_y, rail_z, 0.34, 0.22, 0.26), pal.brass)
        dip = 0.12 * state.pencil_down
        tip = tape_point(x, 0.0, 0.02 + 0.12 - dip)
        base = np.array([x, rail_y - 0.05, rail_z])
        d = tip - base
        ln = float(np.linalg.norm(d))
        ang = math.atan2(d[2], d[1])            # the cylinder axis (y) turned onto d in the yz plane
        mid = (tip + base) / 2
        body = compose(translate(*mid), rot_x(ang), scale(0.045, ln, 0.045))
        fb.add("cyl_lo", body, pal.wood)
        lead = compose(translate(*(tip + (base - tip) * 0.08 / ln)), rot_x(ang), scale(0.02, 0.16, 0.02))
        fb.add("cyl_lo", lead, pal.iron)
