"""What one frame lays, before any GL: a FrameBuilder collects the parts' instances by shape, their shadow
blobs and text quads (numpy rows, no GL calls), records each part's emission (mark/since) and replays it into
a later frame; the TextItems it keeps are what the legibility measures read (scenes.legibility)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scenes.palette import Material
from scenes.text_atlas import SOLID, GlyphAtlas

INST_FLOATS = 24      # mat4 + rgba + material
TEXT_FLOATS = 19      # origin, axis u, axis v, uv rect, rgba, (reveal, shape)


@dataclass
class TextItem:
    """One line of text as laid: baseline origin, the vector along its whole width and the vector of one em
    up (world units, or pixels with y down for screen text), and where its glyph rows are."""
    text: str
    screen: bool
    origin: np.ndarray
    along: np.ndarray
    em: np.ndarray
    rows: list
    index: int

    def hide(self) -> None:
        """Leave this line out of the frame (its rows become empty)."""
        self.rows[self.index] = self.rows[self.index][:0]


@dataclass(eq=False)        # compared by identity: the still layer's key holds the emissions it drew
class Emission:
    """What one part added to a frame (FrameBuilder.since): instance rows by group, shadow blobs, text rows and
    the lines they lay (text, screen, origin, along, em, in world text?, index within this emission's list),
    the boxes that frame text."""
    groups: dict
    shadows: list
    world_text: list
    screen_text: list
    items: list
    frames: list


class FrameBuilder:
    """Everything one frame draws, grouped for instancing. Cheap to fill: numpy arrays, no GL calls."""

    def __init__(self, atlas: GlyphAtlas):
        self.atlas = atlas
        # (mesh, transparent, late) -> instance rows. Late groups draw after the others: big surfaces behind
        # everything (the table top) then lose most of their pixels to the depth test instead of being
        # shaded and painted over.
        self.groups: dict[tuple[str, bool, bool], list[np.ndarray]] = {}
        self.shadows: list[np.ndarray] = []
        self.world_text: list[np.ndarray] = []
        self.screen_text: list[np.ndarray] = []
        # Every line of text laid this frame, for the legibility measures (scenes.legibility): a TextItem
        # each, pointing at its rows so a line too small to read can be left out (Stage.render).
        self.text_items: list[TextItem] = []
        # Screen boxes that frame text (name plates, lane-number chips, the HUD): (name, x, y, w, h) in pixels.
        self.frames: list[tuple] = []
        # Exploded view: every instance and world text of the part being emitted moves by this offset.
        self.offset = np.zeros(3)

    # ---------------------------------------------------------------- recording
    def mark(self) -> tuple:
        """Where each of the frame's lists ends now: since(mark) is what was added after it."""
        return ({k: len(v) for k, v in self.groups.items()}, len(self.shadows), len(self.world_text),
                len(self.screen_text), len(self.text_items), len(self.frames))

    def since(self, mark: tuple) -> "Emission":
        """What was added after `mark` (a part's emission), to add again to a later frame with replay()."""
        groups, n_shadows, n_world, n_screen, n_items, n_frames = mark
        items = []
        for it in self.text_items[n_items:]:
            world = it.rows is self.world_text
            items.append((it.text, it.screen, it.origin, it.along, it.em, world,
                          it.index - (n_world if world else n_screen)))
        return Emission({k: v[groups.get(k, 0):] for k, v in self.groups.items() if len(v) > groups.get(k, 0)},
                        self.shadows[n_shadows:], self.world_text[n_world:], self.screen_text[n_screen:],
                        items, self.frames[n_frames:])

    def replay(self, e: "Emission", still: "FrameBuilder | None" = None) -> None:
        """Add an earlier frame's emission as it was (its arrays are shared, never written after they are laid:
        a line left out of a frame empties that frame's list entry, not the array). With `still`, its opaque
        instances go there instead (the still layer: Renderer.begin_still); shadows, glass and text stay."""
        for k, rows in e.groups.items():
            opaque = still is not None and not k[1]
            (still if opaque else self).groups.setdefault(k, []).extend(rows)
        self.shadows.extend(e.shadows)          # over everything opaque, what moves too (a shadow may fall on it)
        n_world, n_screen = len(self.world_text), len(self.screen_text)
        self.world_text.extend(e.world_text)
        self.screen_text.extend(e.screen_text)
        for text, screen, origin, along, em, world, index in e.items:
            self.text_items.append(TextItem(text, screen, origin, along, em,
                                            self.world_text if world else self.screen_text,
                                            index + (n_world if world else n_screen)))
        self.frames.extend(e.frames)

    # ---------------------------------------------------------------- geometry
    def add(self, mesh: str, matrices: np.ndarray, material: Material, colors: np.ndarray | None = None,
            emissive: np.ndarray | float | None = None, alpha: float | None = None, late: bool = False) -> None:
        m = np.asarray(matrices, dtype=np.float64)
        if m.ndim == 2:
            m = m[None]
        n = len(m)
        if n == 0:
            return
        rows = np.empty((n, INST_FLOATS), dtype=np.float32)
        if self.offset.any():
            m = m.copy()
            m[:, :3, 3] += self.offset * m[:, 3:4, 3]
        rows[:, :16] = m.transpose(0, 2, 1).reshape(n, 16)      # column-major for GLSL
        if colors is None:
            rows[:, 16:20] = material.color
        else:
            rows[:, 16:20] = np.broadcast_to(np.asarray(colors, dtype=np.float32), (n, 4))
        if alpha is not None:
            rows[:, 19] = alpha
        rows[:, 20:24] = material.material_vec()
        if emissive is not None:
            rows[:, 22] = emissive
        transparent = bool(rows[0, 19] < 0.999)
        self.groups.setdefault((mesh, transparent, bool(late) and not transparent), []).append(rows)

    def shadow(self, cx: float, y: float, cz: float, sx: float, sz: float, strength: float = 0.55) -> None:
        # A lifted part (exploded view) leaves a fainter, wider shadow where it stands.
        lift = max(float(self.offset[1]), 0.0)
        strength /= 1.0 + 0.6 * lift
        sx, sz = sx * (1 + 0.08 * lift), sz * (1 + 0.08 * lift)
        m = np.diag([sx, 1.0, sz, 1.0])
        m[:3, 3] = (cx + self.offset[0], y, cz + self.offset[2])
        row = np.zeros(INST_FLOATS, dtype=np.float32)
        row[:16] = m.T.reshape(16)
        row[19] = strength
        self.shadows.append(row[None])

    # ---------------------------------------------------------------- text
    @staticmethod
    def _text_row(origin, au, av, uv, color, reveal=1.0, shape=0.0) -> np.ndarray:
        r = np.empty(TEXT_FLOATS, dtype=np.float32)
        r[0:3], r[3:6], r[6:9] = origin, au, av
        r[9:13], r[13:17] = uv, color
        r[13:16] **= 1 / 2.2         # palette colours are linear; text is blended straight into the sRGB frame
        r[17], r[18] = reveal, shape
        return r

    def text(self, text: str, origin, right, up, size: float, color, anchor: str = "left",
             reveal: float = 1.0, screen: bool = False, valign: str = "baseline") -> float:
        """Lay a line of text from `origin` along unit vectors right/up with em height `size`.
        anchor left|center|right; valign baseline|middle|top. Returns the line width (world or px)."""
        if not text:
            return 0.0
        right = np.asarray(right, dtype=np.float64)
        up = np.asarray(up, dtype=np.float64)
        o = np.asarray(origin, dtype=np.float64).copy()
        if not screen:
            o += self.offset
        uv, xywh, width = self.atlas.layout_arrays(text)
        width *= size
        if anchor == "center":
            o -= right * width / 2
        elif anchor == "right":
            o -= right * width
        if valign == "middle":
            o -= up * size * 0.36
        elif valign == "top":
            o -= up * size * 0.88
        n = len(uv)
        if n:
            rows = np.empty((n, TEXT_FLOATS), dtype=np.float32)
            q = xywh * size
            rows[:, 0:3] = o + q[:, 0:1] * right + q[:, 1:2] * up
            rows[:, 3:6] = q[:, 2:3] * right
            rows[:, 6:9] = q[:, 3:4] * up
            rows[:, 9:13] = uv
            rows[:, 13:16] = np.asarray(color[:3], dtype=np.float64) ** (1 / 2.2)
            rows[:, 16] = color[3]
            rows[:, 17] = reveal
            rows[:, 18] = 0.0
            target = self.screen_text if screen else self.world_text
            target.append(rows)
            self.text_items.append(TextItem(text, screen, o, right * width, up * size, target, len(target) - 1))
        return width

    def glyph_cell(self, ch: str, centre, right, up, size: float, color, reveal: float = 1.0) -> None:
        """One character centred in a square cell (the tape's cells): the em box is centred, not the ink."""
        right = np.asarray(right, dtype=np.float64)
        up = np.asarray(up, dtype=np.float64)
        g = self.atlas.glyph(ch)
        adv = g.advance / self.atlas.px
        asc, desc = self.atlas.ascender / self.atlas.px, self.atlas.descender / self.atlas.px
        base = np.asarray(centre, dtype=np.float64) + self.offset - right * adv * size / 2 - up * (asc + desc) / 2 * size
        if g.width and g.height:
            x, y = g.left / self.atlas.px, (g.top - g.height) / self.atlas.px
            w, h = g.width / self.atlas.px, g.height / self.atlas.px
            self.world_text.append(self._text_row(base + right * x * size + up * y * size, right * w * size,
                                                  up * h * size, g.uv, color, reveal)[None])
            self.text_items.append(TextItem(ch, False, base, right * adv * size, up * size, self.world_text,
                                            len(self.world_text) - 1))

    def shape(self, key: str, centre, right, up, w: float, h: float, color, screen: bool = False) -> None:
        """A solid quad (SOLID), disc (DISC) or ring (RING) centred at `centre`, w along right, h along up."""
        right = np.asarray(right, dtype=np.float64)
        up = np.asarray(up, dtype=np.float64)
        g = self.atlas.glyphs[key] if key in self.atlas.glyphs else self.atlas.glyph(key)
        o = np.asarray(centre, dtype=np.float64) - right * w / 2 - up * h / 2
        if not screen:
            o = o + self.offset
        row = self._text_row(o, right * w, up * h, g.uv, color, 1.0, 2.0 if key == SOLID else 1.0)
        (self.screen_text if screen else self.world_text).append(row[None])

    def rects_screen(self, xs, ys, w: float, h: float, color) -> None:
        """Many solid screen rectangles of one size and colour at once (a leader's dots): (xs[i], ys[i]) each one's
        top-left corner in pixels (y down); the rows rect_screen would write, laid in one array."""
        xs, ys = np.asarray(xs, dtype=np.float32).ravel(), np.asarray(ys, dtype=np.float32).ravel()
        if not len(xs):
            return
        rows = np.zeros((len(xs), TEXT_FLOATS), dtype=np.float32)
        rows[:] = self._text_row((0.0, 0.0, 0.0), (w, 0.0, 0.0), (0.0, -h, 0.0), self.atlas.glyphs[SOLID].uv,
                                 color, 1.0, 2.0)
        rows[:, 0], rows[:, 1] = xs, ys + h
        self.screen_text.append(rows)

    def rect_screen(self, x: float, y: float, w: float, h: float, color, frame: str | None = None) -> None:
        """A solid screen rectangle, (x, y) its top-left corner in pixels (y down). `frame` names it as a box
        that frames text (a plate, a chip): the overlap measure treats it and its text as one."""
        self.shape(SOLID, (x + w / 2, y + h / 2, 0), (1, 0, 0), (0, -1, 0), w, h, color, screen=True)
        if frame is not None:
            self.frames.append((frame, float(x), float(y), float(w), float(h)))


def same_key(a, b) -> bool:
    """Two replay keys are equal (a value that cannot say, an array inside a dict, counts as changed)."""
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False
