"""The big drum (the target model): its pins are the weights, and one token is one full turn.

Every pass of the target streams all weights once, so the drum turns exactly once per verification,
however many lanes the read head has lit (SCIENCE.md sections 1 and 3). Pins are instanced prisms
(24 triangles each) in a seeded pattern: brass for positive weights, steel for negative ones.

With the heads drafter (Medusa's idea) the big drum carries its own small heads on a rail above it, head k
proposing the guess k − 1 tokens on; each one's lamp lights while its guess is pencilled. There is no second
model: the heads ride on the target (SCIENCE.md chapter 10).
"""
from __future__ import annotations

import math

import numpy as np

from scenes.geometry import compose, rot_x, rot_z, scale, translate
from scenes.layout import (BIG_DRUM_CENTRE, BIG_DRUM_COLS, BIG_DRUM_LENGTH, BIG_DRUM_RADIUS, BIG_DRUM_ROWS,
                           EmitContext)

CONTACT_ANGLE = math.pi / 2       # the pin angle (after turning) at which it passes the read head's teeth
HEAD_Y = BIG_DRUM_CENTRE[1] + BIG_DRUM_RADIUS + 0.62   # the heads' centres, above the pins
HEAD_DZ = 0.45                    # ... a little in front of the drum's top, towards the audience
HEAD_R = 0.27


def pin_pattern(cols: int, rows: int, radius: float, length: float, density: float, seed: int):
    """Seeded pins on a drum: column index, angle, height and sign of each (the 'weights')."""
    rng = np.random.default_rng(seed)
    col, row = np.meshgrid(np.arange(cols), np.arange(rows), indexing="ij")
    keep = rng.random(col.shape) < density
    col, row = col[keep], row[keep]
    jitter = rng.uniform(-0.25, 0.25, len(col))
    angle = 2 * math.pi * (row + jitter + 0.5 * (col % 2)) / rows
    height = rng.uniform(0.35, 1.0, len(col)) ** 1.5
    sign = rng.random(len(col)) < 0.5
    xs = (col + 0.5) / cols * length - length / 2
    return col, xs, angle, height, sign


def pin_locals(xs, angle, height, radius, pin_r, pin_h) -> np.ndarray:
    """(N, 4, 4) pin matrices in drum coordinates (axis = x): each pin stands radially on the surface."""
    n = len(xs)
    h = pin_h * height
    c, s = np.cos(angle), np.sin(angle)
    m = np.zeros((n, 4, 4))
    # Rx(angle) @ T(0, radius + h/2, 0) @ S(pin_r, h, pin_r)
    m[:, 0, 0] = pin_r
    m[:, 1, 1] = c * h
    m[:, 2, 1] = s * h
    m[:, 1, 2] = -s * pin_r
    m[:, 2, 2] = c * pin_r
    m[:, 0, 3] = xs
    m[:, 1, 3] = c * (radius + h / 2)
    m[:, 2, 3] = s * (radius + h / 2)
    m[:, 3, 3] = 1.0
    return m


class BigDrum:
    name = "bigdrum"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('big_drum_angle', 'heads', 'head_lit')

    def __init__(self, seed: int = 11, density: float = 0.8):
        self.centre = np.array(BIG_DRUM_CENTRE)
        self.radius = BIG_DRUM_RADIUS
        self.length = BIG_DRUM_LENGTH
        self.col, xs, self.angle, self.height, sign = pin_pattern(BIG_DRUM_COLS, BIG_DRUM_ROWS, self.radius,
                                                                  self.length, density, seed)
        self.pins = pin_locals(xs, self.angle, self.height, self.radius, 0.034, 0.2)
        self.pin_sign = sign
        self.n_pins = len(xs)

    def tooth_lift(self, drum_angle: float) -> np.ndarray:
        """How far each read-head tooth is pushed now: the tallest pin passing under it (0..1)."""
        d = (self.angle + drum_angle - CONTACT_ANGLE + math.pi) % (2 * math.pi) - math.pi
        bump = np.clip(1 - np.abs(d) / 0.05, 0, 1) * self.height
        lift = np.zeros(BIG_DRUM_COLS)
        np.maximum.at(lift, self.col, bump)
        return lift

    def _frame(self, angle: float) -> np.ndarray:
        return compose(translate(*self.centre), rot_x(angle))

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        a = state.big_drum_angle
        f = self._frame(a)
        L, R = self.length, self.radius
        body = compose(f, rot_z(math.pi / 2), scale(R, L, R))
        fb.add("cyl", body, pal.iron_light)
        # Flanges and spokes: the spokes make the turning visible even where no pin catches the light.
        # The cut-away drops the near (right) flange, spokes and standard so the drum shows its profile.
        sides = (-1,) if ec.view == "cutaway" else (-1, 1)
        fl = [compose(f, translate(s * (L / 2 + 0.05), 0, 0), rot_z(math.pi / 2), scale(R + 0.12, 0.1, R + 0.12))
              for s in sides]
        fb.add("cyl", np.stack(fl), pal.brass)
        spokes = []
        for s in sides:
            for k in range(4):
                spokes.append(compose(f, translate(s * (L / 2 + 0.12), 0, 0), rot_x(k * math.pi / 4),
                                      scale(0.06, 2 * R, 0.14)))
        fb.add("box", np.stack(spokes), pal.iron)
        pins = f @ self.pins
        colors = np.where(self.pin_sign[:, None], np.array(pal.brass.color), np.array(pal.steel.color))
        fb.add("pin", pins, pal.brass, colors=colors)
        # Axle and the two standards that hold it.
        cx, cy, cz = self.centre
        fb.add("cyl", compose(translate(cx, cy, cz), rot_z(math.pi / 2), scale(0.16, L + 1.0, 0.16)), pal.steel)
        stands = []
        for s in sides:
            x = cx + s * (L / 2 + 0.38)
            stands.append(compose(translate(x, cy / 2, cz), scale(0.22, cy, 0.5)))
            stands.append(compose(translate(x, 0.12, cz), scale(0.6, 0.24, 1.3)))
        fb.add("box", np.stack(stands), pal.iron)
        bearings = [compose(translate(cx + s * (L / 2 + 0.38), cy, cz), rot_z(math.pi / 2), scale(0.3, 0.3, 0.3))
                    for s in sides]
        fb.add("cyl", np.stack(bearings), pal.brass)
        fb.shadow(cx, 0.012, cz, L + 1.8, 2 * R + 0.8, 0.6)
        if state.heads:
            self._emit_heads(fb, state, ec)

    def head_centres(self, n: int) -> list[np.ndarray]:
        """World centres of n heads spread along the drum, on the rail above it."""
        cx, cy, cz = self.centre
        return [np.array([cx - self.length / 2 + (j + 0.5) * self.length / n, HEAD_Y, cz + HEAD_DZ])
                for j in range(n)]

    def _emit_heads(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        cx, cy, cz = self.centre
        L = self.length
        n = len(state.heads)
        rail_y = HEAD_Y + HEAD_R + 0.12
        fb.add("cyl_lo", compose(translate(cx, rail_y, cz + HEAD_DZ), rot_z(math.pi / 2), scale(0.05, L + 0.9, 0.05)),
               pal.steel)
        fb.add("box", np.stack([compose(translate(cx + s * (L / 2 + 0.38), (cy + rail_y) / 2, cz + HEAD_DZ),
                                        scale(0.08, rail_y - cy, 0.08)) for s in (-1, 1)]), pal.iron)
        w = min(0.62, 0.7 * L / n)
        bodies, feelers, lamps, glow, dark = [], [], [], [], []
        up, right = np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0])
        for j, (c, head) in enumerate(zip(self.head_centres(n), state.heads)):
            bodies.append(compose(translate(*c), rot_z(math.pi / 2), scale(HEAD_R, w, HEAD_R)))
            feelers.append(compose(translate(c[0], (c[1] - HEAD_R + cy + self.radius + 0.12) / 2, c[2] - 0.05),
                                   scale(0.03, c[1] - HEAD_R - cy - self.radius, 0.03)))
            lit = float(state.head_lit[j]) if state.head_lit else 0.0
            # A lamp on top of each head, lit while its guess is pencilled.
            lamp = compose(translate(c[0], c[1] + HEAD_R + 0.08, c[2] + 0.05), scale(0.14, 0.14, 0.14))
            if lit > 0:
                lamps.append(lamp)
                glow.append(2.0 if lit >= 1.0 else 0.0)   # glowing while proposing; amber, unlit, once it has
            else:
                dark.append(lamp)
            # The head's number on its face: head k guesses the k-th token after the target's own next one.
            fb.text(str(head), c + np.array([0.0, 0.0, HEAD_R + 0.03]), right, up, 0.3, pal.readout,
                    anchor="center", valign="middle")
        fb.add("cyl", np.stack(bodies), pal.brass)
        fb.add("box", np.stack(feelers), pal.steel)
        if lamps:
            fb.add("bead", np.stack(lamps), pal.lane_on, emissive=np.array(glow))
        if dark:
            fb.add("bead", np.stack(dark), pal.lane_off)
        # The next token is no head's: the target's own output layer guesses it (the big drum's turn writes it).
        first, last = state.heads[0], state.heads[-1]
        fb.text(ec.say(f"预测头 {first}–{last}（Medusa）", f"heads {first}–{last} (Medusa)"),
                np.array([cx, rail_y + 0.3, cz + HEAD_DZ]), right, up, 0.32, pal.label, anchor="center",
                valign="middle")
