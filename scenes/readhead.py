"""The read head: a comb of steel teeth riding the big drum, a push rod per tooth, nine lane shafts across them.

When a pin passes, its tooth pushes the rod and every lit lane records it once: read once, use many times
(SCIENCE.md section 11). Lanes lit = tokens computed at once: γ+1 while verifying, one per sequence when
batching. A collar glows where a moving rod crosses a lit lane. The cut-away view drops the cover.
"""
from __future__ import annotations

import math

import numpy as np

from scenes.geometry import box_matrix, boxes, compose, rot_x, rot_z, scale, translate
from scenes.layout import (BIG_DRUM_CENTRE, BIG_DRUM_COLS, BIG_DRUM_LENGTH, BIG_DRUM_RADIUS, N_LANES,
                           READ_HEAD_LANE_DZ, READ_HEAD_LANE_Z0, READ_HEAD_Y, EmitContext)

ROD_TRAVEL = 0.22


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
        # Frame: end plates carrying the shafts, a base rail, lane number plates.
        zc = (lane_z(0) + lane_z(N_LANES - 1)) / 2
        zl = lane_z(N_LANES - 1) - lane_z(0) + 0.5
        cut = ec.view == "cutaway"
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
        # Lane numbers at the right end, on the end plate's face.
        right, up = ec.cam_right, ec.cam_up
        for lane in range(N_LANES):
            col = pal.lane_on.color if lane < lit else pal.label_sub
            fb.text(str(lane + 1), (self.x1 + 0.3, y - (0.3 if cut else 0.1), lane_z(lane)), right, up, 0.15, col,
                    anchor="left", valign="middle")
        fb.shadow((self.x0 + self.x1) / 2, 0.012, zc, L + 0.8, zl + 0.5, 0.5)
