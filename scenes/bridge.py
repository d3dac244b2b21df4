"""The bridge of meters over the tape: one meter per guess, a copper column of p/q against a red line at r.

acceptance_ratio = p / q; the guess passes iff r <= p/q (SCIENCE.md section 5). Full scale is 1: a column
that overflows (q < p, always accepted) is capped and says "> 1". Pass and fail differ in shape (ring
vs cross) and label, not only colour; meters after the first rejection are marked untested.
The meters lean back a little so their faces turn towards the audience.

A tree pass has one meter per position and tries that position's candidates one round at a time: a row of pips
along the plate's foot counts them (red: rejected, a ring: kept, amber: the round on the meter now, grey: not
yet), and the column shows the round under test, against the running target (the residual after a rejection).
"""
from __future__ import annotations

import math

import numpy as np

from models.drafters import COPY, kind_of
from scenes.geometry import compose, rot_x, scale, translate
from scenes.layout import BRIDGE_Z, CELL, EmitContext, cell_x, window
from scenes.text_atlas import DISC, RING, SOLID

TILT = math.radians(16)
BEAM_Y = 1.95           # centre of the beam the meters stand on
BEAM_H = 0.5
PLATE_V = (0.0, 2.62)    # plate extent along the meter's (tilted) up axis, from the beam's top: room for p/q over r
COLUMN_V0 = 0.22        # column foot
COLUMN_H = 1.55         # full scale (p/q = 1)
PLATE_W = 0.88
UP = np.array([0.0, math.cos(TILT), -math.sin(TILT)])
NORMAL = np.array([0.0, math.sin(TILT), math.cos(TILT)])
RIGHT = np.array([1.0, 0.0, 0.0])
# A meter counts as filled (readouts and cap shown) within two ticks of its end: a held moment snaps to
# the 1/120 s tick grid, which can land just short of the fill's last instant.
FILLED = 0.96
VALUE_SIZE = 0.41       # p/q readout em height (world units): ~30 px on a 1080p projector in the table view
VALUE_V = 2.30          # its baseline up the plate
R_SIZE = 0.41           # as large as the value: r is what the red line marks (0.35 was left out in English)
R_V = 1.86
PIP_V = 0.11            # a tree's round pips, along the plate's foot (under the column)
VERDICT_SIZE = 0.31
VERDICT_W = 0.6         # room for the verdict word beside its mark (x the cell scale)
# The verdict in words, per language (Stage.language); 'both' stacks them, zh over en.
VERDICT_WORDS = {"pass": ("通过", "accepted"), "fail": ("被拒", "rejected"), "untested": ("未检", "untested")}
IDLE_METERS = 4         # meters shown, empty, while the target writes alone (no guesses, no tests)
IDLE_WORDS = ("大模型单独写 · 不核对", "target alone · no tests")
LOOKUP_IDLE_WORDS = ("没有可抄的 · 不核对", "nothing to copy · no tests")   # lookup found no earlier occurrence


def meter_point(i: int, v: float, w: float = 0.0, u: float = 0.0, gamma: int = 4) -> np.ndarray:
    """A point on meter i of γ: v up its face from the beam's top, w out of the face, u across."""
    base = np.array([cell_x(i, gamma), BEAM_Y + BEAM_H / 2, BRIDGE_Z])
    return base + RIGHT * u + UP * v + NORMAL * w


def column_top_v(ratio: float, fill: float = 1.0) -> float:
    return COLUMN_V0 + min(max(ratio, 0.0), 1.0) * COLUMN_H * fill


def fmt(x: float) -> str:
    """Two decimals; a value under 0.01 keeps two significant digits (a copied guess's p/q is p, often 0.004: "0.00"
    beside an r of "0.00" would hide which is larger), 10 and over none."""
    if 0 < x < 0.01:
        return f"{x:.2g}" if x >= 1e-4 else f"{x:.1e}"
    return f"{x:.2f}" if x < 10 else f"{x:.0f}"


def r_text(r: float) -> str:
    """The meter's r: "r .60", no leading zero (r is under 1), so it fits the plate as large as the value above it."""
    s = fmt(r)
    return "r " + (s[1:] if s.startswith("0.") else s)


def _box(p, su, sv, sw) -> np.ndarray:
    return compose(translate(*p), rot_x(-TILT), scale(su, sv, sw))


class MeterBridge:
    name = "bridge"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('drafter', 'extra', 'gamma', 'meters')

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        # The target alone (γ = 0) tests nothing: the bridge stands idle, its meters empty.
        idle = bool(state.extra.get("target_only"))
        gamma = IDLE_METERS if idle else state.gamma
        g = max(gamma, 1)
        wx, cell = window(gamma)
        k = cell / CELL             # meters narrow with the cells when γ is large
        x0, x1 = wx - 0.25, wx + g * cell + 0.25
        mp = lambda i, v, w=0.0, u=0.0: meter_point(i, v, w, u, gamma)  # noqa: E731
        xm = (x0 + x1) / 2
        beam = [compose(translate(xm, BEAM_Y, BRIDGE_Z), scale(x1 - x0, BEAM_H, 0.4)),
                compose(translate(x0 - 0.1, BEAM_Y / 2, BRIDGE_Z), scale(0.2, BEAM_Y, 0.34)),
                compose(translate(x1 + 0.1, BEAM_Y / 2, BRIDGE_Z), scale(0.2, BEAM_Y, 0.34))]
        fb.add("box", np.stack(beam), pal.iron)
        fb.add("box", compose(translate(xm, BEAM_Y + BEAM_H / 2, BRIDGE_Z), scale(x1 - x0 + 0.1, 0.05, 0.44)),
               pal.brass)
        fb.shadow(xm, 0.012, BRIDGE_Z, x1 - x0 + 0.6, 0.9, 0.45)
        plates, frames, columns, caps, lines = [], [], [], [], []
        for i in range(gamma):
            m = None if idle else (state.meters[i] if i < len(state.meters) else None)
            pv = (PLATE_V[0] + PLATE_V[1]) / 2
            plates.append(_box(mp(i, pv, -0.05), PLATE_W * k, PLATE_V[1] - PLATE_V[0], 0.1))
            frames.append(_box(mp(i, PLATE_V[1], -0.05), PLATE_W * k + 0.06, 0.06, 0.14))
            for f, w in ((0.0, 0.5), (0.5, 0.22), (1.0, 0.5)):
                fb.shape(SOLID, mp(i, COLUMN_V0 + f * COLUMN_H, 0.005, -0.14 * k), RIGHT, UP, w * 0.6 * k, 0.025,
                         pal.label_sub)
            if m is None:
                continue
            top = column_top_v(m.ratio, m.fill)
            if m.fill > 0:
                h = top - COLUMN_V0
                columns.append(_box(mp(i, COLUMN_V0 + h / 2, 0.03), 0.36 * k, max(h, 0.01), 0.06))
                if m.ratio > 1 and m.fill >= FILLED:
                    caps.append(_box(mp(i, top + 0.05, 0.04), 0.5 * k, 0.1, 0.09))
            if m.fill > 0 and m.verdict != "untested":
                lines.append(_box(mp(i, COLUMN_V0 + min(m.r, 1.0) * COLUMN_H, 0.07), 0.66 * k, 0.05, 0.03))
            self._labels(fb, i, m, pal, gamma, k, ec.language)
            if m.rounds > 1:
                self._pips(fb, i, m, pal, gamma, k)
        if plates:
            fb.add("box", np.stack(plates), pal.meter_face)
            fb.add("box", np.stack(frames), pal.brass)
        if columns:
            fb.add("box", np.stack(columns), pal.copper)
        if caps:
            fb.add("box", np.stack(caps), pal.brass)
        if lines:
            fb.add("box", np.stack(lines), pal.red_line)
        if idle:
            fit = (x1 - x0) * 0.9
            txt = ec.say(*(LOOKUP_IDLE_WORDS if kind_of(state.drafter).look == COPY else IDLE_WORDS))
            fb.text(txt, (xm, BEAM_Y, BRIDGE_Z + 0.21), RIGHT, np.array([0.0, 1.0, 0.0]),
                    min(VERDICT_SIZE, fit / max(fb.atlas.advance(txt), 1e-6)), pal.label_sub, anchor="center",
                    valign="middle")

    @staticmethod
    def pip_points(i: int, rounds: int, gamma: int, k: float = 1.0) -> list[np.ndarray]:
        """World centres of meter i's round pips (left to right: round 1, 2, ...)."""
        step = min(0.2, 0.8 / max(rounds, 1)) * k
        return [meter_point(i, PIP_V, 0.02, (j - (rounds - 1) / 2) * step, gamma) for j in range(rounds)]

    def _pips(self, fb, i, m, pal, gamma, k) -> None:
        """One pip per candidate tried at this position: red rejected, ring kept, amber now, grey not yet."""
        pts = self.pip_points(i, m.rounds, gamma, k)
        d = min(0.13, 0.6 / max(m.rounds, 1)) * k
        now = len(m.results) if m.fill > 0 and m.verdict == "" else None
        for j, c in enumerate(pts):
            res = m.results[j] if j < len(m.results) else ""
            if res == "fail":
                fb.shape(DISC, c, RIGHT, UP, d, d, pal.fail_mark)
            elif res == "pass":
                fb.shape(RING, c, RIGHT, UP, d * 1.2, d * 1.2, pal.label)
            elif j == now:
                fb.shape(DISC, c, RIGHT, UP, d, d, pal.lane_on.color)
            else:
                fb.shape(RING, c, RIGHT, UP, d, d, pal.label_sub)

    def _labels(self, fb, i, m, pal, gamma, k, language: str = "both") -> None:
        # The ratio and r above the column, as large as the plate's width allows (read from the back of a
        # room). Above 1 the number alone (the full column shows the cap): "1.98>1" had to shrink below the size a
        # class can read and was left out, so the first meter of a pass often showed r and no p/q.
        if m.fill >= FILLED:
            txt = fmt(m.ratio)
            fit = PLATE_W * k * 0.94
            size = min(VALUE_SIZE * k, fit / max(fb.atlas.advance(txt), 1e-6))
            fb.text(txt, meter_point(i, VALUE_V, 0.01, 0, gamma), RIGHT, UP, size, pal.label, anchor="center")
            rt = r_text(m.r)
            fb.text(rt, meter_point(i, R_V, 0.01, 0, gamma), RIGHT, UP,
                    min(R_SIZE * k, fit / max(fb.atlas.advance(rt), 1e-6)), pal.label, anchor="center")
        # The verdict on the beam's face: ring = pass, cross = fail, dash = untested, and a word beside it.
        c = np.array([cell_x(i, gamma) - 0.3 * k, BEAM_Y, BRIDGE_Z + 0.21])
        cw = c + RIGHT * 0.48 * k
        up = np.array([0.0, 1.0, 0.0])
        if m.verdict == "pass":
            fb.shape(RING, c, RIGHT, up, 0.28 * k, 0.28 * k, pal.label)
        elif m.verdict == "fail":
            d1 = (RIGHT + up) / math.sqrt(2)
            d2 = (up - RIGHT) / math.sqrt(2)
            fb.shape(SOLID, c, d1, d2, 0.34 * k, 0.07 * k, pal.label)
            fb.shape(SOLID, c, d1, d2, 0.07 * k, 0.34 * k, pal.label)
        elif m.verdict == "untested":
            fb.shape(SOLID, c, RIGHT, up, 0.26 * k, 0.06 * k, pal.label_sub)
        words = VERDICT_WORDS.get(m.verdict)
        if words:
            col = pal.label_sub if m.verdict == "untested" else pal.label
            zh, en = words
            fit = VERDICT_W * k
            if language == "both":
                # Compact: the two words stacked on the beam's face, zh over en, each fitted to the room.
                zs = min(VERDICT_SIZE * 0.72 * k, fit / max(fb.atlas.advance(zh), 1e-6))
                es = min(VERDICT_SIZE * 0.62 * k, fit / max(fb.atlas.advance(en), 1e-6))
                fb.text(zh, cw + up * 0.45 * zs, RIGHT, up, zs, col, anchor="center", valign="middle")
                fb.text(en, cw - up * 0.62 * es, RIGHT, up, es, col, anchor="center", valign="middle")
            else:
                word = en if language == "en" else zh
                size = min(VERDICT_SIZE * k, fit / max(fb.atlas.advance(word), 1e-6))
                fb.text(word, cw, RIGHT, up, size, col, anchor="center", valign="middle")
