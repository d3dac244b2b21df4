"""The paper tape on its sloped board, and the typing head that inks what the target approves.

Guesses are written in pencil (erasable); the typing head inks accepted guesses (a dot under each) and the
token the target wrote itself, replacement or bonus (a diamond under it); rejected guesses are struck out
and then erased (SCIENCE.md section 4). The tape scrolls so the current step always sits under the bridge.

A lookup pass lights the text it copies (an amber band) and underlines, in green, the earlier occurrence and
the text's last tokens that match it; from the pass's start until the tape scrolls on the span stays marked so (a
little paler outside the look), so the class sees where the pencilled copies came from while the bridge checks
them. A tree pass pencils its candidates over the writing window, one column per position, each node on a branch
from its parent (the first from the last token written): the node the bridge tests glows, a rejected one is struck
with a thick red bar, a kept one inked; then all but the kept branch is erased and the kept branch comes down onto
the line. A tree small enough for the margin right of the pass's cells is pencilled there on a card as deep as the
board (the tape alone is too narrow for four rows of candidates a classroom can read), in a bolder pencil.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.drafters import TREE, kind_of
from scenes.geometry import box_matrix, compose, rot_x, scale, translate
from scenes.layout import (CELL, GLYPH, TAPE_CENTRE, TAPE_DEPTH, TAPE_SLOPE, TAPE_X, EmitContext, tape_normal,
                           rest_x, tape_point, tape_up, tree_margin, window)
from scenes.text_atlas import DISC, RING, SOLID

GLYPH_V = 0.14       # character centre, along the slope from the tape's centre line
MARK_V = -0.53       # marks under the characters
DOT = 0.24           # an accepted guess's dot: its diameter
DIAMOND = 0.25       # the target's own token's diamond: its side (a square turned 45 degrees)
LIFT_DROP = 1.35     # the typing head between strikes: this far down the slope from the line, clear of the marks
TREE_V = (0.66, -0.66)   # a tree's rows span the paper, first child on top
TREE_MIN_GLYPH = 0.16    # below this a tree node is drawn as a knot without its character (too small to read)
CARD_V = 0.92            # a margin tree's card: half its depth along the slope (the board's edge is at 0.95)
CARD_ROWS = 0.76         # ... and its rows span this much each side of the tape's centre line
INK_DROP = 0.05          # a Chinese character's ink sits this many ems below its em box's centre
STRIKE_H = 0.12          # a struck guess's red bar on the line, as a share of its cell
COPY_HELD = 0.7          # the copied-from span's band once the look is over, as a share of the look's
BOLD = 0.035             # a card's candidate is laid twice this many ems apart: a bolder pencil


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
    reads = ('gamma', 'source', 'tape', 'tape_view', 'tree', 'drafter', 'extra')

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
        paper = [compose(translate(xm, c[1], c[2]), rot_x(TAPE_SLOPE), scale(width, 0.02, TAPE_DEPTH))]
        card = self.card(state)
        if card is not None:
            # flush with the tape: the same sheet, deeper where the tree is pencilled
            paper.append(compose(translate(*tape_point((card[0] + card[1]) / 2, 0.0)), rot_x(TAPE_SLOPE),
                                 scale(card[1] - card[0], 0.02, 2 * CARD_V)))
        fb.add("box", np.stack(paper), pal.paper)
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
        held = state.extra.get("copied_from")
        if state.source is not None or held is not None:
            self._emit_source(fb, state.source, held, cells, pal)
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
                w = cv.cell * 0.9 * cv.struck
                fb.shape(SOLID, cv.centre + self.right * (w / 2 - cv.cell * 0.45) + self.normal * 0.004, self.right,
                         self.up, w, STRIKE_H * cv.cell, sc)
            # taken apart, the tape is too far for its verdicts (its characters may be left out as too small, and a
            # mark under an empty cell reads as a verdict on nothing)
            if cv.mark and cv.ink > 0.5 and ec.view != "exploded":
                if cv.mark == "dot":
                    fb.shape(DISC, cv.mark_centre, self.right, self.up, DOT, DOT, pal.ink)
                else:
                    # Diamond: the solid square turned 45 degrees in the tape's plane.
                    d1 = (self.right + self.up) / math.sqrt(2)
                    d2 = (self.up - self.right) / math.sqrt(2)
                    fb.shape(SOLID, cv.mark_centre, d1, d2, DIAMOND, DIAMOND, pal.ink)
        if state.tree is not None:
            self._emit_tree(fb, state, display, pal)

    # ---- lookup: where the guesses are copied from
    def _emit_source(self, fb, src: dict | None, held: dict | None, cells, pal) -> None:
        """The copied span lit (amber band behind each cell), the earlier occurrence and the text's last n tokens
        underlined in green: they are the same tokens, so what followed then is the guess now. `src`: the look's
        light (state.source); `held`: the pass keeping the span marked (Timeline._copied_from), paler."""
        lit = float(src["lit"]) if src is not None else 0.0
        keep = float(held["held"]) if held is not None else 0.0
        span = src if src is not None else held
        amber = pal.lane_on.color[:3]
        band = tuple(amber) + (0.55 * max(lit, COPY_HELD * keep),)
        line = (pal.pass_mark[0], pal.pass_mark[1], pal.pass_mark[2], max(lit, keep))
        (c0, c1), spans = span["copy"], (span["match"], span["tail"])
        for cv in cells:
            if c0 <= cv.position < c1:
                fb.shape(SOLID, tape_point(cv.x, GLYPH_V, 0.0115), self.right, self.up, cv.cell * 0.94,
                         cv.size * 1.12, band)
            if any(a <= cv.position < b for a, b in spans):
                fb.shape(SOLID, tape_point(cv.x, GLYPH_V - 0.5 * cv.size - 0.06, 0.011), self.right, self.up,
                         cv.cell * 0.9, 0.07, line)

    # ---- tree: the card a margin tree is pencilled on
    @staticmethod
    def card(state) -> tuple[float, float] | None:
        """(x from, x to) of the card under a tree in the margin (layout.tree_margin), as deep as the board, for
        as long as the run's passes are trees (it stays between passes); None otherwise."""
        depth = len(state.tree.widths) if state.tree is not None else (
            state.gamma if kind_of(state.drafter).look == TREE else 0)
        margin = tree_margin(depth, depth) if depth > 0 else None
        if margin is None or (state.tree is not None and not state.tree.margin):
            return None
        return margin[0] - 0.2, TAPE_X[1]

    # ---- tree: the candidates and their branches
    def tree_layout(self, state, home: bool = False) -> dict[int, tuple[float, float, float]]:
        """node id -> (x, v, size) of each candidate's character on the tape now (v: its em box's centre): depth d
        in its column (in the margin right of the pass's cells, on the card, when layout.tree_margin finds room,
        else over the writing window's cell d), each leaf a row of its own (first child on top), a parent midway
        between its children, the kept branch sliding onto the line (`home`: where each node was pencilled, before
        it slides). On the card the rows are the characters' ink, centred, each column straight (a staggered one
        read as two columns); over the window a crowded column staggers its nodes left and right."""
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
        top, bottom = (CARD_ROWS, -CARD_ROWS) if margin else TREE_V
        slot = (top - bottom) / max(len(order), 1)
        v = {n: top - (i + 0.5) * slot for i, n in enumerate(order)}
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
        # the card's columns are wide and its rows hold the ink alone: rows may nearly touch, glyphs be full size
        fill, cap, apart = (0.96, full, 0.95) if margin else (0.85, full * 0.8, 0.85)
        # A crowded column staggers its nodes left and right, so each can be drawn larger than its row is tall.
        column: dict[int, list] = {}
        for nd in tree.nodes:
            column.setdefault(nd.depth, []).append(nd.id)
        stagger = {}
        for d, ids in column.items():
            least = min(rows[i] for i in ids)
            # (never on the card: its staggered children read as a third column, a tree of two chains)
            tight = not margin and slot * least * 0.85 < 0.4 * full
            for j, i in enumerate(sorted(ids, key=lambda i: -v[i])):
                stagger[i] = (0.24 * col_w * (1 if j % 2 else -1)) if tight else 0.0
        out = {}
        for nd in tree.nodes:
            # staggered: neighbours on one side are two rows apart, across they are two staggers apart
            room = (min(2 * slot * rows[nd.id] * fill, 2 * abs(stagger[nd.id]) * apart) if stagger[nd.id]
                    else slot * rows[nd.id] * fill)
            size = min(cap, room)
            cx = (margin[0] + (nd.depth - 0.5) * col_w) if margin else (x0 + (nd.depth - 0.5) * cell)
            k = 0.0 if home else _ease(nd.down)
            line_x = x0 + (nd.depth - 0.5) * cell
            hx = cx + stagger[nd.id]
            hv = v[nd.id] + (INK_DROP * size if margin else 0.0)
            out[nd.id] = (hx + (line_x - hx) * k, hv + (GLYPH_V - hv) * k, size + (full - size) * k)
        return out

    @staticmethod
    def _ink_v(v: float, size: float, margin: bool) -> float:
        """Where a tree node's knot and branch meet it: its ink's middle (on the card), else its em box's."""
        return v - INK_DROP * size if margin else v

    def tree_marks(self, state) -> list[tuple[int, np.ndarray]]:
        """(node id, world point) of each node's knot: where its branch ends, left of its character."""
        if state.tree is None:
            return []
        margin = state.tree.margin
        lay = self.tree_layout(state, home=margin)
        return [(nd.id, tape_point(x - 0.5 * size - 0.05, self._ink_v(v, size, margin), 0.016))
                for nd in state.tree.nodes if nd.pencil > 0 and nd.erased < 1 for x, v, size in [lay[nd.id]]]

    def tree_glyphs(self, state) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(node id, bottom, top) world points of each candidate's character drawn now (its em box's height along
        the tape's slope): what a test measures against the legibility minimum."""
        if state.tree is None:
            return []
        lay = self.tree_layout(state, home=state.tree.margin)
        return [(nd.id, tape_point(x, v - size / 2, 0.014), tape_point(x, v + size / 2, 0.014))
                for nd in state.tree.nodes if nd.pencil > 0 and nd.erased < 1
                for x, v, size in [lay[nd.id]] if size >= TREE_MIN_GLYPH]

    def _branch(self, fb, a, b, width: float, color) -> None:
        """A straight pencil line on the tape from (x, v) a to b."""
        d = np.array([b[0] - a[0], b[1] - a[1]])
        n = float(np.linalg.norm(d))
        if n > 1e-6:
            u = d / n
            mid = tape_point((a[0] + b[0]) / 2, (a[1] + b[1]) / 2, 0.012)
            fb.shape(SOLID, mid, self.right * u[0] + self.up * u[1], self.up * u[0] - self.right * u[1], n, width,
                     color)

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
        # On the card every branch runs from its parent to a bend just left of its column, then along its node's row:
        # one to a node staggered right so passes between the rows of those staggered left, never across one.
        left_of = {}
        if margin:
            for nd in state.tree.nodes:
                x, v, size = lay[nd.id]
                left_of.setdefault(nd.depth, []).append(x - 0.5 * size - 0.16)
        for nd in state.tree.nodes:
            alpha = min(nd.pencil, 1.0 - nd.erased)
            if alpha <= 0.01:
                continue
            x, v, size = lay[nd.id]
            iv = self._ink_v(v, size, margin)
            if nd.parent < 0:
                px, pv = root
            else:
                ppx, ppv, psize = lay[nd.parent]
                px, pv = ppx + 0.5 * psize, self._ink_v(ppv, psize, margin)
            knot = (x - 0.5 * size - 0.05, iv)
            col = tuple(float(a + (b - a) * nd.ink) for a, b in zip(pal.pencil, pal.ink))[:3]
            # The branch from the parent: pencil, inked (thicker) when this node was kept.
            bc = col + (alpha * (0.6 + 0.4 * nd.ink),)
            bw = 0.025 + 0.03 * nd.ink
            bend = min(left_of.get(nd.depth, [knot[0]]))
            if margin and px + 0.02 < bend < knot[0] - 0.1:
                self._branch(fb, (px, pv), (bend, iv), bw, bc)
                self._branch(fb, (bend, iv), knot, bw, bc)
            else:
                self._branch(fb, (px, pv), knot, bw, bc)
            if nd.checking > 0:
                fb.shape(DISC, tape_point(x, iv, 0.013), self.right, self.up, size * 1.3, size * 1.3,
                         (glow[0], glow[1], glow[2], 0.5 * alpha))
            if nd.round > 1:
                # Tested after a rejection at its position: it met the residual, not p. A ring says so.
                # (on the card, an oval that keeps off the candidates above and below)
                fb.shape(RING, tape_point(x, iv, 0.015), self.right, self.up, size * (1.4 if margin else 1.45),
                         size * (1.15 if margin else 1.45), (glow[0], glow[1], glow[2], alpha))
            fb.shape(DISC, tape_point(*knot, 0.016), self.right, self.up, 0.09, 0.09, col + (alpha,))
            if size >= TREE_MIN_GLYPH or nd.down > 0:
                self._candidate(fb, display(nd.token), tape_point(x, v, 0.014), size, col + (alpha,), margin)
            if nd.struck > 0:
                # struck: a thick red bar right across the character, over its pencil
                w = size * 1.2 * nd.struck
                fb.shape(SOLID, tape_point(x - 0.6 * size + w / 2, iv, 0.018), self.right, self.up, w,
                         max(0.06, size * 0.18), (pal.fail_mark[0], pal.fail_mark[1], pal.fail_mark[2], alpha))
        if margin:
            # The kept branch stays inked in the margin; a copy of each of its nodes travels down onto its cell on
            # the line, where the typing head inks it.
            moving = self.tree_layout(state)
            for nd in state.tree.nodes:
                if 0.0 < nd.down < 1.0:
                    x, v, size = moving[nd.id]
                    fb.glyph_cell(display(nd.token), tape_point(x, v, 0.02), self.right, self.up, size,
                                  tuple(pal.ink[:3]) + (1.0 - 0.5 * nd.down,))

    def _candidate(self, fb, ch: str, centre, size: float, color, bold: bool) -> None:
        """A tree candidate's character; on the card in a bolder pencil (the glyph laid twice, a little apart, as
        one line of text: the legibility measure leaves both out where it is too small to read)."""
        laid = len(fb.text_items)
        fb.glyph_cell(ch, centre, self.right, self.up, size, color)
        if bold and len(fb.text_items) == laid + 1:
            row = fb.world_text[-1]
            twin = row.copy()
            twin[:, 0:3] += (self.right * BOLD * size).astype(np.float32)
            fb.world_text[-1] = np.concatenate([row, twin])


def _ease(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3 - 2 * x)


class TypingHead:
    """A brass hammer block over the tape; it strikes each cell it inks."""
    name = "typing"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('gamma', 'tree', 'typing_cell', 'typing_down', 'typing_rest')

    @staticmethod
    def anchor(state, view: str = "table") -> np.ndarray:
        """The hammer block's centre in `view`: where a name plate's leader points."""
        wx, cell = window(state.gamma)
        # At rest the head waits on the marks' row just right of the writing window, in the picture wherever the
        # window is, and clear of every character and mark (a tree pencilled in that margin, or the table taken
        # apart, where the tape is small and its plate needs room, sends it below the tape's far end). It strikes
        # each cell from below the tape's front edge, clear of the line's marks.
        if state.tree is not None or view == "exploded":
            rest = tape_point(TAPE_X[1] - 0.25, GLYPH_V - LIFT_DROP, 0.2)
        else:
            rest = tape_point(rest_x(state.gamma), MARK_V, 0.2)
        down = state.typing_down
        x = wx + (state.typing_cell + 0.5) * cell
        strike = tape_point(x, GLYPH_V - (1 - down) * LIFT_DROP, 0.2 + 0.15 * (1 - down))
        return strike + (rest - strike) * _ease(state.typing_rest)

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        n = tape_normal()
        p = self.anchor(state, ec.view)
        fb.add("box", compose(translate(*p), rot_x(TAPE_SLOPE), scale(0.5, 0.2, 0.5)), pal.brass)
        arm = p + n * 0.45 - tape_up() * 0.2
        fb.add("box", compose(translate(*arm), rot_x(TAPE_SLOPE), scale(0.12, 0.75, 0.12)), pal.iron_light)
        # An ink lamp on the head: lit while it strikes.
        fb.add("cyl_lo", compose(translate(*(p + n * 0.12 + tape_up() * 0.28)), rot_x(TAPE_SLOPE),
                                 scale(0.07, 0.05, 0.07)), pal.lane_on, emissive=0.1 + 1.2 * state.typing_down)
