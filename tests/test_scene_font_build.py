"""tools/build_font.py pins the font's timestamps, so a rebuild with nothing changed gives the same bytes."""
import hashlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _build_font_module():
    spec = importlib.util.spec_from_file_location("build_font", ROOT / "tools" / "build_font.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tiny_font():
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen
    fb = FontBuilder(1000, isTTF=True)
    fb.setupGlyphOrder([".notdef", "A"])
    fb.setupCharacterMap({65: "A"})
    pen = TTGlyphPen(None)
    pen.moveTo((0, 0)); pen.lineTo((500, 700)); pen.lineTo((1000, 0)); pen.closePath()  # noqa: E702
    fb.setupGlyf({".notdef": pen.glyph(), "A": pen.glyph()})
    fb.setupHorizontalMetrics({".notdef": (1000, 0), "A": (1000, 0)})
    fb.setupHorizontalHeader(ascent=800, descent=-200)
    fb.setupNameTable({"familyName": "T", "styleName": "Regular"})
    fb.setupOS2(); fb.setupPost()  # noqa: E702
    fb.font["head"].created = fb.font["head"].modified = 3_000_000_000
    fb.font.recalcTimestamp = True      # as TTFont(path) loads a source font (FontBuilder turns it off)
    return fb.font


def _saved_sha(font, path: Path) -> str:
    font.save(str(path))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_saves_at_different_times_are_byte_identical(tmp_path, monkeypatch):
    from fontTools.ttLib.tables import _h_e_a_d
    bf = _build_font_module()
    clock = iter(range(3_500_000_000, 3_600_000_000, 1000))
    monkeypatch.setattr(_h_e_a_d, "timestampNow", lambda: next(clock))    # every save "later"
    plain = _tiny_font()
    assert _saved_sha(plain, tmp_path / "a.ttf") != _saved_sha(plain, tmp_path / "b.ttf")   # the problem
    font = _tiny_font()
    created, modified = bf.fixed_timestamps(font, environ={})
    assert (created, modified) == (3_000_000_000, 3_000_000_000)          # the source's own
    assert _saved_sha(font, tmp_path / "c.ttf") == _saved_sha(font, tmp_path / "d.ttf")


def test_source_date_epoch_sets_modified(tmp_path):
    from fontTools.misc.timeTools import timestampToString
    from fontTools.ttLib import TTFont
    bf = _build_font_module()
    font = _tiny_font()
    created, modified = bf.fixed_timestamps(font, environ={"SOURCE_DATE_EPOCH": "1700000000"})
    assert created == 3_000_000_000
    assert timestampToString(modified) == "Tue Nov 14 22:13:20 2023"
    font.save(str(tmp_path / "e.ttf"))
    assert TTFont(str(tmp_path / "e.ttf"))["head"].modified == modified
    with pytest.raises(SystemExit):
        bf.fixed_timestamps(_tiny_font(), environ={"SOURCE_DATE_EPOCH": "soon"})
