"""The paper tape on its sloped board, and the typing head that inks what the target approves.

Guesses are written in pencil (erasable); the typing head inks accepted guesses (a dot under each) and the
token the target wrote itself, replacement or bonus (a diamond under it); rejected guesses are struck out
and then erased (SCIENCE.md section 4). The tape scrolls so the current step always sits under the bridge.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scenes.geometry import box_matrix, compose, rot_x, scale, translate
from scenes.layout import (CELL, GLYPH, TAPE_CENTRE, TAPE_DEPTH, TAPE_SLOPE, TAPE_X, EmitContext, tape_normal,
                           tape_point, tape_up, window)
from scenes.text_atlas import DISC, SOLID

GLYPH_V = 0.14       # character centre, along the slope from the tape's centre line
MARK_V = -0.5        # marks under the characters


@dataclass
class CellView:
    position: int
    text: str
    x: float                 # world x of the cell centre
    centre: np.ndarray       # world centre of the character
    mark_centre: np.ndarray
    pencil: float
    ink: float
    struck: float
    erased: float
    mark: str
    size: float = GLYPH       # em height of the character (smaller when many guesses narrow the cells)
    cell: float = CELL


class PaperTape:
    name = "tape"

    def __init__(self):
        self.right = np.array([1.0, 0.0, 0.0])
        self.up = tape_up()
        self.normal = tape_normal()

    def cells(self, state, prefix: list[int], display) -> list[CellView]:
        """Every visible cell now: the prefix, earlier steps' tokens and this step's guesses and token."""
        out = []
        view = state.tape_view
        x0, cell = window(state.gamma)
        size = GLYPH * cell / CELL
        items = [(i, tok, 1.0, 1.0, 0.0, 0.0, "") for i, tok in enumerate(prefix)]
        items += [(c.position, c.token, c.pencil, c.ink, c.struck, c.erased, c.mark) for c in state.tape]
        for pos, tok, pencil, ink, struck, erased, mark in items:
            x = x0 + (pos - view + 0.5) * cell
            if x < TAPE_X[0] + cell * 0.45 or x > TAPE_X[1] - cell * 0.45:
                continue
            if pencil <= 0 and ink <= 0:
                continue
            out.append(CellView(pos, display(tok), x, tape_point(x, GLYPH_V, 0.014), tape_point(x, MARK_V, 0.014),
                                pencil, ink, struck, erased, mark, size, cell))
        return out

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        c = np.array(TAPE_CENTRE)
        n = self.normal
        width = TAPE_X[1] - TAPE_X[0]
        xm = (TAPE_X[0] + TAPE_X[1]) / 2
        board = compose(translate(xm, c[1], c[2]) @ translate(*(-n * 0.07)), rot_x(TAPE_SLOPE),
                        scale(width + 0.8, 0.12, TAPE_DEPTH + 0.45))
        fb.add("box", board, pal.iron_light)
        paper = compose(translate(xm, c[1], c[2]), rot_x(TAPE_SLOPE), scale(width, 0.02, TAPE_DEPTH))
        fb.add("box", paper, pal.paper)
        # Spools at both ends, their axes up the slope.
        spools = [compose(translate(*(np.array([x, c[1], c[2]]) + n * 0.12)), rot_x(TAPE_SLOPE - math.pi / 2),
                          scale(0.2, TAPE_DEPTH + 0.2, 0.2)) for x in (TAPE_X[0] - 0.15, TAPE_X[1] + 0.15)]
        fb.add("cyl", np.stack(spools), pal.paper)
        caps = [compose(translate(*(np.array([x, c[1], c[2]]) + n * 0.12 + self.up * s * (TAPE_DEPTH / 2 + 0.14))),
                        rot_x(TAPE_SLOPE - math.pi / 2), scale(0.28, 0.06, 0.28))
                for x in (TAPE_X[0] - 0.15, TAPE_X[1] + 0.15) for s in (-1, 1)]
        fb.add("cyl", np.stack(caps), pal.brass)
        # Back supports of the sloped board.
        fb.add("box", np.stack([box_matrix(x, 0.45, c[2] - 0.55, 0.25, 0.9, 0.2) for x in (TAPE_X[0] + 0.5, TAPE_X[1] - 0.5)]),
               pal.iron)
        fb.shadow(xm, 0.012, c[2] - 0.1, width + 1.5, 1.6, 0.5)

        # The writing window: a faint band under this step's guess cells.
        g = max(state.gamma, 1)
        wx, cell = window(state.gamma)
        wc = tape_point(wx + g * cell / 2, 0.0, 0.008)
        band = (pal.pencil[0], pal.pencil[1], pal.pencil[2], 0.12)
        fb.shape(SOLID, wc, self.right, self.up, g * cell, TAPE_DEPTH * 0.92, band)
        for k in range(g + 1):
            fb.shape(SOLID, tape_point(wx + k * cell, 0.0, 0.01), self.right, self.up, 0.02,
                     TAPE_DEPTH * 0.92, (pal.pencil[0], pal.pencil[1], pal.pencil[2], 0.35))

        display = ec.run.display
        prefix = ec.run.prefix
        for cv in self.cells(state, prefix, display):
            alpha = 1.0 - cv.erased
            if alpha <= 0.01:
                continue
            k = min(cv.ink, 1.0)
            col = tuple(float(a + (b - a) * k) for a, b in zip(pal.pencil, pal.ink))
            col = (col[0], col[1], col[2], alpha)
            size = cv.size if len(cv.text) <= 1 else cv.size * 1.6 / (len(cv.text) + 0.6)
            reveal = 1.0 if k > 0 else cv.pencil
            if len(cv.text) <= 1:
                fb.glyph_cell(cv.text, cv.centre, self.right, self.up, size, col, reveal=reveal)
            else:
                fb.text(cv.text, cv.centre, self.right, self.up, size, col, anchor="center", valign="middle",
                        reveal=reveal)
            if cv.struck > 0:
                sc = (pal.fail_mark[0], pal.fail_mark[1], pal.fail_mark[2], alpha)
                w = cv.cell * 0.86 * cv.struck
                fb.shape(SOLID, cv.centre + self.right * (w / 2 - cv.cell * 0.43) + self.normal * 0.004, self.right,
                         self.up, w, 0.07, sc)
            if cv.mark and cv.ink > 0.5:
                if cv.mark == "dot":
                    fb.shape(DISC, cv.mark_centre, self.right, self.up, 0.17, 0.17, pal.ink)
                else:
                    # Diamond: the solid square turned 45 degrees in the tape's plane.
                    d1 = (self.right + self.up) / math.sqrt(2)
                    d2 = (self.up - self.right) / math.sqrt(2)
                    fb.shape(SOLID, cv.mark_centre, d1, d2, 0.2, 0.2, pal.ink)


class TypingHead:
    """A brass hammer block over the tape; it strikes each cell it inks."""
    name = "typing"

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        # At rest the head waits below the tape's front edge, so it never hides a character or a meter;
        # it rises onto the cell only while striking.
        if state.typing_cell >= 0:
            wx, cell = window(state.gamma)
            x = wx + (state.typing_cell + 0.5) * cell
            down = state.typing_down
        else:
            x, down = TAPE_X[1] - 0.6, 0.0
        n = tape_normal()
        p = tape_point(x, GLYPH_V - (1 - down) * 1.05, 0.0) + n * (0.2 + 0.15 * (1 - down))
        fb.add("box", compose(translate(*p), rot_x(TAPE_SLOPE), scale(0.5, 0.2, 0.5)), pal.brass)
        arm = p + n * 0.45 - tape_up() * 0.2
        fb.add("box", compose(translate(*arm), rot_x(TAPE_SLOPE), scale(0.12, 0.75, 0.12)), pal.iron_light)
        # An ink lamp on the head: lit while it strikes.
        fb.add("cyl_lo", compose(translate(*(p + n * 0.12 + tape_up() * 0.28)), rot_x(TAPE_SLOPE),
                                 scale(0.07, 0.05, 0.07)), pal.lane_on, emissive=0.1 + 1.2 * state.typing_down)
