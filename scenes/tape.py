"""The paper tape on its sloped board, and the typing head that inks what the target approves.

Guesses are written in pencil (erasable); the typing head inks accepted guesses (a dot under each) and the
token the target wrote itself, replacement or bonus (a diamond under it); rejected guesses are struck out
and then erased (SCIENCE.md section 4). The tape scrolls so the current step always sits under the bridge.

A lookup pass lights the text it copies (an amber band) and underlines, in green, the earlier occurrence and
the text's last tokens that match it. A tree pass pencils its candidates over the writing window, one column per
position, each node on a branch from its parent (the first from the last token written): the node the bridge
tests glows, a rejected one is struck red, a kept one inked; then all but the kept branch is erased and the kept
branch comes down onto the line.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scenes.geometry import box_matrix, compose, rot_x, scale, translate
from scenes.layout import (CELL, GLYPH, TAPE_CENTRE, TAPE_DEPTH, TAPE_SLOPE, TAPE_X, EmitContext, tape_normal,
                           tape_point, tape_up, tree_margin, window)
from scenes.text_atlas import DISC, RING, SOLID

GLYPH_V = 0.14       # character centre, along the slope from the tape's centre line
MARK_V = -0.5        # marks under the characters
TREE_V = (0.66, -0.66)   # a tree's rows span the paper, first child on top
TREE_MIN_GLYPH = 0.16    # below this a tree node is drawn as a knot without its character (too small to read)


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
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('gamma', 'source', 'tape', 'tape_view', 'tree')

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
        # (faded out while a lookup pass has glided the tape back: the cells under it are older text then)
        shown = 1.0 - (state.source["back"] if state.source is not None else 0.0)
        band = (pal.pencil[0], pal.pencil[1], pal.pencil[2], 0.12 * shown)
        fb.shape(SOLID, wc, self.right, self.up, g * cell, TAPE_DEPTH * 0.92, band)
        for k in range(g + 1 if shown > 0.01 else 0):
            fb.shape(SOLID, tape_point(wx + k * cell, 0.0, 0.01), self.right, self.up, 0.02,
                     TAPE_DEPTH * 0.92, (pal.pencil[0], pal.pencil[1], pal.pencil[2], 0.35 * shown))

        display = ec.run.display
        prefix = ec.run.prefix
        cells = self.cells(state, prefix, display)
        if state.source is not None:
            self._emit_source(fb, state.source, cells, pal)
        for cv in cells:
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
        if state.tree is not None:
            self._emit_tree(fb, state, display, pal)

    # ---- lookup: where the guesses are copied from
    def _emit_source(self, fb, src: dict, cells, pal) -> None:
        """The copied span lit (amber band behind each cell), the earlier occurrence and the text's last n tokens
        underlined in green: they are the same tokens, so what followed then is the guess now."""
        lit = float(src["lit"])
        band = (pal.lane_on.color[0], pal.lane_on.color[1], pal.lane_on.color[2], 0.55 * lit)
        line = (pal.pass_mark[0], pal.pass_mark[1], pal.pass_mark[2], lit)
        (c0, c1), spans = src["copy"], (src["match"], src["tail"])
        for cv in cells:
            if c0 <= cv.position < c1:
                fb.shape(SOLID, tape_point(cv.x, GLYPH_V, 0.0115), self.right, self.up, cv.cell * 0.94,
                         cv.size * 1.12, band)
            if any(a <= cv.position < b for a, b in spans):
                fb.shape(SOLID, tape_point(cv.x, GLYPH_V - 0.5 * cv.size - 0.06, 0.011), self.right, self.up,
                         cv.cell * 0.9, 0.07, line)

    # ---- tree: the candidates and their branches
    def tree_layout(self, state, home: bool = False) -> dict[int, tuple[float, float, float]]:
        """node id -> (x, v, size) on the tape now: depth d in its column (in the margin right of the pass's cells
        when layout.tree_margin finds room, else over the writing window's cell d), each leaf a row of its own
        (first child on top), a parent midway between its children, the kept branch sliding onto the line
        (`home`: where each node was pencilled, before it slides)."""
        tree = state.tree
        x0, cell = window(state.gamma)
        depth = len(tree.widths)
        margin = tree_margin(state.gamma, depth) if tree.margin else None
        kids: dict[int, list] = {}
        for nd in tree.nodes:
            kids.setdefault(nd.parent, []).append(nd.id)
        order: list[int] = []

        def walk(n):
            ch = kids.get(n, [])
            if not ch and n >= 0:
                order.append(n)
            for c in ch:
                walk(c)
        walk(-1)
        slot = (TREE_V[0] - TREE_V[1]) / max(len(order), 1)
        v = {n: TREE_V[0] - (i + 0.5) * slot for i, n in enumerate(order)}
        for nd in sorted(tree.nodes, key=lambda nd: -nd.depth):
            if nd.id not in v:
                ch = kids.get(nd.id, [])
                v[nd.id] = float(np.mean([v[c] for c in ch])) if ch else GLYPH_V
        # A node has the rows of its leaves: the nearer the root, the larger it may be drawn.
        rows: dict[int, int] = {n: 1 for n in order}
        for nd in sorted(tree.nodes, key=lambda nd: -nd.depth):
            rows.setdefault(nd.id, max(1, sum(rows.get(c, 1) for c in kids.get(nd.id, []))))
        full = GLYPH * cell / CELL
        col_w = margin[1] if margin else cell
        # A crowded column staggers its nodes left and right, so each can be drawn larger than its row is tall.
        column: dict[int, list] = {}
        for nd in tree.nodes:
            column.setdefault(nd.depth, []).append(nd.id)
        stagger = {}
        for d, ids in column.items():
            tight = slot * min(rows[i] for i in ids) * 0.85 < 0.4 * full
            for j, i in enumerate(sorted(ids, key=lambda i: -v[i])):
                stagger[i] = ((0.3 if margin else 0.24) * col_w * (1 if j % 2 else -1)) if tight else 0.0
        out = {}
        for nd in tree.nodes:
            # staggered: neighbours on one side are two rows apart, across they are two staggers apart
            fill = 0.95 if margin else 0.85    # the margin's columns are wide: rows may nearly touch
            room = (min(2 * slot * rows[nd.id] * fill, 2 * abs(stagger[nd.id]) * 0.85) if stagger[nd.id]
                    else slot * rows[nd.id] * fill)
            size = min(full * 0.8, room)
            cx = (margin[0] + (nd.depth - 0.5) * col_w) if margin else (x0 + (nd.depth - 0.5) * cell)
            k = 0.0 if home else _ease(nd.down)
            line_x = x0 + (nd.depth - 0.5) * cell
            hx = cx + stagger[nd.id]
            out[nd.id] = (hx + (line_x - hx) * k, v[nd.id] + (GLYPH_V - v[nd.id]) * k, size + (full - size) * k)
        return out

    def tree_marks(self, state) -> list[tuple[int, np.ndarray]]:
        """(node id, world point) of each node's knot: where its branch ends, left of its character."""
        if state.tree is None:
            return []
        lay = self.tree_layout(state, home=state.tree.margin)
        return [(nd.id, tape_point(lay[nd.id][0] - 0.5 * lay[nd.id][2] - 0.05, lay[nd.id][1], 0.016))
                for nd in state.tree.nodes if nd.pencil > 0 and nd.erased < 1]

    def tree_glyphs(self, state) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(node id, bottom, top) world points of each candidate's character drawn now (its em box's height along
        the tape's slope): what a test measures against the legibility minimum."""
        if state.tree is None:
            return []
        lay = self.tree_layout(state, home=state.tree.margin)
        return [(nd.id, tape_point(x, v - size / 2, 0.014), tape_point(x, v + size / 2, 0.014))
                for nd in state.tree.nodes if nd.pencil > 0 and nd.erased < 1
                for x, v, size in [lay[nd.id]] if size >= TREE_MIN_GLYPH]

    def _emit_tree(self, fb, state, display, pal) -> None:
        margin = state.tree.margin
        lay = self.tree_layout(state, home=margin)
        x0, cell = window(state.gamma)
        start = tree_margin(state.gamma, len(state.tree.widths))[0] if margin else x0
        root = (start - 0.08, GLYPH_V)
        glow = pal.lane_on.color
        if margin:      # the tree's stem: the text written so far, which every branch continues
            fb.shape(DISC, tape_point(*root, 0.016), self.right, self.up, 0.12, 0.12,
                     tuple(pal.ink[:3]) + (min(1.0, max(nd.pencil for nd in state.tree.nodes)),))
        for nd in state.tree.nodes:
            alpha = min(nd.pencil, 1.0 - nd.erased)
            if alpha <= 0.01:
                continue
            x, v, size = lay[nd.id]
            px, pv = (root if nd.parent < 0 else (lay[nd.parent][0] + 0.5 * lay[nd.parent][2], lay[nd.parent][1]))
            knot = (x - 0.5 * size - 0.05, v)
            col = tuple(float(a + (b - a) * nd.ink) for a, b in zip(pal.pencil, pal.ink))[:3]
            # The branch from the parent: pencil, inked (thicker) when this node was kept.
            d = np.array([knot[0] - px, knot[1] - pv])
            n = float(np.linalg.norm(d))
            if n > 1e-6:
                u = d / n
                axis = self.right * u[0] + self.up * u[1]
                perp = self.up * u[0] - self.right * u[1]
                mid = tape_point((px + knot[0]) / 2, (pv + knot[1]) / 2, 0.012)
                fb.shape(SOLID, mid, axis, perp, n, 0.025 + 0.03 * nd.ink, col + (alpha * (0.6 + 0.4 * nd.ink),))
            if nd.checking > 0:
                fb.shape(DISC, tape_point(x, v, 0.013), self.right, self.up, size * 1.3, size * 1.3,
                         (glow[0], glow[1], glow[2], 0.5 * alpha))
            if nd.round > 1:
                # Tested after a rejection at its position: it met the residual, not p. A ring says so.
                fb.shape(RING, tape_point(x, v, 0.015), self.right, self.up, size * 1.45, size * 1.45,
                         (glow[0], glow[1], glow[2], alpha))
            fb.shape(DISC, tape_point(*knot, 0.016), self.right, self.up, 0.09, 0.09, col + (alpha,))
            if size >= TREE_MIN_GLYPH or nd.down > 0:
                fb.glyph_cell(display(nd.token), tape_point(x, v, 0.014), self.right, self.up, size, col + (alpha,))
            if nd.struck > 0:
                w = size * 1.05 * nd.struck
                fb.shape(SOLID, tape_point(x - 0.525 * size + w / 2, v, 0.018), self.right, self.up, w,
                         max(0.035, size * 0.1), (pal.fail_mark[0], pal.fail_mark[1], pal.fail_mark[2], alpha))
        if margin:
            # The kept branch stays inked in the margin; a copy of each of its nodes travels down onto its cell on
            # the line, where the typing head inks it.
            moving = self.tree_layout(state)
            for nd in state.tree.nodes:
                if 0.0 < nd.down < 1.0:
                    x, v, size = moving[nd.id]
                    fb.glyph_cell(display(nd.token), tape_point(x, v, 0.02), self.right, self.up, size,
                                  tuple(pal.ink[:3]) + (1.0 - 0.5 * nd.down,))


def _ease(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3 - 2 * x)


class TypingHead:
    """A brass hammer block over the tape; it strikes each cell it inks."""
    name = "typing"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('gamma', 'typing_cell', 'typing_down')

    @staticmethod
    def anchor(state) -> np.ndarray:
        """The hammer block's centre: where a name plate's leader points."""
        # At rest the head waits below the tape's front edge, so it never hides a character or a meter;
        # it rises onto the cell only while striking.
        if state.typing_cell >= 0:
            wx, cell = window(state.gamma)
            x = wx + (state.typing_cell + 0.5) * cell
            down = state.typing_down
        else:
            x, down = TAPE_X[1] - 0.6, 0.0
        return tape_point(x, GLYPH_V - (1 - down) * 1.05, 0.0) + tape_normal() * (0.2 + 0.15 * (1 - down))

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        n = tape_normal()
        p = self.anchor(state)
        fb.add("box", compose(translate(*p), rot_x(TAPE_SLOPE), scale(0.5, 0.2, 0.5)), pal.brass)
        arm = p + n * 0.45 - tape_up() * 0.2
        fb.add("box", compose(translate(*arm), rot_x(TAPE_SLOPE), scale(0.12, 0.75, 0.12)), pal.iron_light)
        # An ink lamp on the head: lit while it strikes.
        fb.add("cyl_lo", compose(translate(*(p + n * 0.12 + tape_up() * 0.28)), rot_x(TAPE_SLOPE),
                                 scale(0.07, 0.05, 0.07)), pal.lane_on, emissive=0.1 + 1.2 * state.typing_down)
