"""The glyph atlas: characters of the shipped CJK font rasterised on demand into one texture, laid out as quads.

Only the glyphs a frame needs are built (the vocabulary of a run is a few hundred characters); they are
rasterised large (80 px em) so a character stays crisp when it fills a tenth of a 1080p projector image.
The atlas also holds a solid block and a disc, so marks, plates and strike-outs share the text draw call.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

SOLID = "\x00solid"
DISC = "\x00disc"
RING = "\x00ring"


def default_font() -> tuple[Path, int]:
    """The shipped font (scenes.fonts.font_path); a system Noto CJK only while the subset is not built yet."""
    try:
        from scenes.fonts import font_path  # lazy: a missing scenes.fonts is handled below
        return Path(font_path()), 0
    except ImportError:
        for cand in ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",):
            if Path(cand).exists():
                return Path(cand), 2      # face 2 of the Noto CJK TTC is Simplified Chinese
        raise


@dataclass(frozen=True)
class Glyph:
    uv: tuple            # (u0, v_bottom, u1, v_top) in the atlas texture
    width: int           # bitmap size in pixels
    height: int
    left: int            # bearing from the pen position to the bitmap's left edge (px)
    top: int             # bearing from the baseline to the bitmap's top edge (px)
    advance: float       # pen advance (px)
    missing: bool = False


class GlyphAtlas:
    """A single-channel texture atlas filled shelf by shelf; `layout` returns positioned glyphs in em units."""

    def __init__(self, ctx=None, font: Path | str | None = None, face_index: int | None = None,
                 px: int = 80, size: tuple[int, int] = (2048, 2048)):
        import freetype  # lazy: freetype only when a font atlas is built

        if font is None:
            font, idx = default_font()
            face_index = idx if face_index is None else face_index
        self.font = Path(font)
        self.face = freetype.Face(str(self.font), int(face_index or 0))
        self.face.set_pixel_sizes(0, px)
        self.px = px
        self.ascender = self.face.size.ascender / 64.0
        self.descender = self.face.size.descender / 64.0
        self.W, self.H = size
        self.pixels = np.zeros((self.H, self.W), dtype=np.uint8)
        self.glyphs: dict[str, Glyph] = {}
        self._x = self._y = self._row_h = 0
        self._pad = 4
        self.ctx = ctx
        self.texture = None
        self.dirty = True
        self.missing: set[str] = set()
        self._generation = 0
        self._add_shapes()

    @property
    def generation(self) -> int:
        """Counts the times the atlas was cleared: text laid before a change points at the old places."""
        return self._generation

    # ------------------------------------------------------------ packing
    def _alloc(self, w: int, h: int) -> tuple[int, int]:
        p = self._pad
        if self._x + w + 2 * p > self.W:
            self._x, self._y, self._row_h = 0, self._y + self._row_h, 0
        if self._y + h + 2 * p > self.H:
            # Full: start over with only what the next frames ask for (rare: thousands of distinct glyphs).
            self.pixels[:] = 0
            self.glyphs.clear()
            self._generation += 1            # cached layouts point at the old places
            self._x = self._y = self._row_h = 0
            self._add_shapes()
        x, y = self._x + p, self._y + p
        self._x += w + 2 * p
        self._row_h = max(self._row_h, h + 2 * p)
        return x, y

    def _store(self, key: str, bmp: np.ndarray, left: int, top: int, advance: float, missing=False) -> Glyph:
        h, w = bmp.shape
        x, y = self._alloc(max(w, 1), max(h, 1))
        if w and h:
            self.pixels[y:y + h, x:x + w] = bmp
        g = Glyph(uv=(x / self.W, (y + h) / self.H, (x + w) / self.W, y / self.H),
                  width=w, height=h, left=left, top=top, advance=advance, missing=missing)
        self.glyphs[key] = g
        self.dirty = True
        return g

    def _add_shapes(self) -> None:
        n = 64
        yy, xx = np.mgrid[0:n, 0:n] + 0.5
        r = np.hypot(xx - n / 2, yy - n / 2)
        # Inset the solid block so bilinear and mipmap filtering never reach its transparent border.
        solid = np.zeros((n, n), np.uint8)
        solid[4:-4, 4:-4] = 255
        g = self._store(SOLID, solid, 0, n, n)
        u0, vb, u1, vt = g.uv
        du, dv = 12 / self.W, 12 / self.H
        self.glyphs[SOLID] = Glyph(uv=(u0 + du, vb - dv, u1 - du, vt + dv), width=n, height=n, left=0, top=n, advance=n)
        self._store(DISC, (np.clip(n / 2 - 1 - r, 0, 1) * 255).astype(np.uint8), 0, n, n)
        ring = np.clip(n / 2 - 1 - r, 0, 1) * np.clip(r - (n / 2 - 9), 0, 1)
        self._store(RING, (ring * 255).astype(np.uint8), 0, n, n)

    # ------------------------------------------------------------ glyphs
    def glyph(self, ch: str) -> Glyph:
        g = self.glyphs.get(ch)
        if g is not None:
            return g
        import freetype  # lazy: freetype only when a font atlas is built

        if self.face.get_char_index(ord(ch)) == 0 and not ch.isspace():
            self.missing.add(ch)
            # Tofu: an outlined box, so a missing glyph is visible rather than silently blank.
            s = int(self.px * 0.7)
            bmp = np.zeros((s, int(s * 0.7)), np.uint8)
            bmp[:4, :] = bmp[-4:, :] = 255
            bmp[:, :4] = bmp[:, -4:] = 255
            return self._store(ch, bmp, int(self.px * 0.1), s, self.px * 0.9, missing=True)
        self.face.load_char(ch, freetype.FT_LOAD_RENDER | freetype.FT_LOAD_TARGET_NORMAL)
        slot = self.face.glyph
        bm = slot.bitmap
        if bm.width and bm.rows:
            buf = np.array(bm.buffer, dtype=np.uint8).reshape(bm.rows, bm.pitch)[:, :bm.width]
        else:
            buf = np.zeros((0, 0), np.uint8)
        return self._store(ch, buf, slot.bitmap_left, slot.bitmap_top, slot.advance.x / 64.0)

    def ensure(self, text: str) -> None:
        for ch in text:
            self.glyph(ch)

    def advance(self, text: str) -> float:
        """Width of a line in em (cached per string: plates measure the same lines every frame)."""
        cache = self.__dict__.setdefault("_advance_cache", {})
        hit = cache.get(text)
        if hit is None:
            if len(cache) > 4000:
                cache.clear()
            hit = cache[text] = sum(self.glyph(ch).advance for ch in text) / self.px
        return hit

    def layout(self, text: str) -> list[tuple[Glyph, float, float, float, float]]:
        """Glyphs of one line with their quads in em units relative to the pen origin on the baseline:
        (glyph, x, y, w, h) with (x, y) the quad's lower-left corner."""
        out = []
        pen = 0.0
        for ch in text:
            g = self.glyph(ch)
            if g.width and g.height:
                out.append((g, (pen + g.left) / self.px, (g.top - g.height) / self.px,
                            g.width / self.px, g.height / self.px))
            pen += g.advance
        return out

    def layout_arrays(self, text: str) -> tuple[np.ndarray, np.ndarray, float]:
        """Vectorised layout, cached per string: uv (n, 4), quads x, y, w, h in em (n, 4), and the width in em."""
        cache = self.__dict__.setdefault("_layout_cache", {})
        hit = cache.get(text)
        if hit is not None and hit[3] == self._generation:
            return hit[0], hit[1], hit[2]
        quads = self.layout(text)
        uv = np.array([g.uv for g, *_ in quads], dtype=np.float64).reshape(-1, 4)
        xywh = np.array([q[1:] for q in quads], dtype=np.float64).reshape(-1, 4)
        width = self.advance(text)
        if len(cache) > 4000:
            cache.clear()
        cache[text] = (uv, xywh, width, self._generation)
        return uv, xywh, width

    def bitmap(self, ch: str) -> np.ndarray:
        """The rasterised coverage of one glyph (rows top to bottom), e.g. to compare with a rendered frame."""
        g = self.glyph(ch)
        x0 = int(round(g.uv[0] * self.W))
        y0 = int(round(g.uv[3] * self.H))
        return self.pixels[y0:y0 + g.height, x0:x0 + g.width].copy()

    # ------------------------------------------------------------ GPU
    def texture_for(self, ctx):
        """The atlas as a moderngl texture, re-uploaded (with mipmaps) only after new glyphs were added."""
        if self.texture is None:
            self.texture = ctx.texture((self.W, self.H), 1, dtype="f1")
            self.texture.filter = (ctx.LINEAR_MIPMAP_LINEAR, ctx.LINEAR)
            self.dirty = True
        if self.dirty:
            self.texture.write(self.pixels.tobytes())
            self.texture.build_mipmaps()
            self.dirty = False
        return self.texture

    def release(self) -> None:
        if self.texture is not None:
            self.texture.release()
            self.texture = None
