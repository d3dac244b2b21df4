"""The glyph atlas: glyphs built on demand from the shipped font, placed as the layout says."""
import numpy as np

from scenes.fonts import font_path
from scenes.text_atlas import DISC, SOLID, GlyphAtlas


def test_glyphs_on_demand_from_the_shipped_font():
    atlas = GlyphAtlas()
    assert atlas.font == font_path()
    n0 = len(atlas.glyphs)
    atlas.ensure("孔乙己")
    assert len(atlas.glyphs) == n0 + 3
    atlas.ensure("孔乙己")
    assert len(atlas.glyphs) == n0 + 3          # built once
    bmp = atlas.bitmap("己")
    assert bmp.shape[0] > atlas.px * 0.5 and bmp.max() == 255
    assert not atlas.missing


def test_layout_advances_and_shapes():
    atlas = GlyphAtlas()
    assert atlas.advance("孔乙") > atlas.advance("孔") > 0.8
    quads = atlas.layout("a 孔")
    assert len(quads) == 2 and quads[1][1] > quads[0][1]
    assert atlas.glyphs[SOLID].width > 0 and atlas.glyphs[DISC].width > 0
    # Distinct glyphs rasterise differently.
    a, b = atlas.bitmap("孔"), atlas.bitmap("乙")
    assert a.shape != b.shape or np.abs(a.astype(int) - b.astype(int)).mean() > 10


def test_missing_glyph_is_visible_tofu():
    atlas = GlyphAtlas()
    g = atlas.glyph("\U0001F9EA")      # test-tube emoji: not in a CJK text font
    assert g.missing and g.width > 0 and "\U0001F9EA" in atlas.missing
