"""Tests of the shipped subset CJK font: it exists, renders, covers the corpus and the program's strings."""

from __future__ import annotations

import sys
from pathlib import Path

import freetype
import numpy as np
import pytest

from corpus.errors import InputError
from scenes import fonts

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path("/work/shared/corpus/nahan")
DEFAULT_STORIES = ("02", "05", "07", "08", "14")  # the default corpus vocabulary's five stories

sys.path.insert(0, str(REPO / "tools"))
import build_font  # noqa: E402  (a script folder, not a package)


@pytest.fixture(scope="module")
def face() -> freetype.Face:
    return freetype.Face(str(fonts.font_path()))


def _ink(face: freetype.Face, ch: str, px: int = 32) -> int:
    face.set_pixel_sizes(0, px)
    face.load_char(ch, freetype.FT_LOAD_RENDER)
    bitmap = face.glyph.bitmap
    return int(np.count_nonzero(np.array(bitmap.buffer, dtype=np.uint8)))


def test_font_file_is_shipped_renamed_and_small(face):
    path = fonts.font_path()
    assert path.suffix == ".otf" and path.stat().st_size < 6_000_000
    assert face.family_name.decode() == fonts.FONT_FAMILY
    # OFL: a Modified Version may not use the Reserved Font Name ("Source") nor the "Noto" trademark.
    assert b"Noto" not in face.family_name and b"Noto" not in face.postscript_name
    assert b"Source" not in face.family_name


@pytest.mark.parametrize("ch", list("孔乙己↵γα✓✗→≤Σ·"))
def test_glyph_renders_with_ink(face, ch):
    assert face.get_char_index(ch) != 0, f"{ch!r} maps to .notdef"
    assert _ink(face, ch) > 20


def test_drawn_symbols_differ_from_each_other(face):
    # The glyphs drawn by the build script must be distinct shapes, not one placeholder repeated.
    def bitmap(ch):
        face.set_pixel_sizes(0, 32)
        face.load_char(ch, freetype.FT_LOAD_RENDER)
        b = face.glyph.bitmap
        return bytes(b.buffer), b.rows, b.width
    shapes = {bitmap(ch) for ch in "↵✗✘✔↻↺⏸⏵"}
    assert len(shapes) == 8


def test_covers_default_corpus_vocabulary():
    texts = [p.read_text(encoding="utf-8") for s in DEFAULT_STORIES for p in CORPUS.glob(f"{s}-*.txt")]
    assert len(texts) == len(DEFAULT_STORIES)
    vocabulary = set("".join(texts))
    assert len(vocabulary) > 1500
    assert fonts.missing_characters("".join(vocabulary)) == set()


def test_covers_whole_book_and_gb2312():
    book = "".join(p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.txt")))
    assert fonts.missing_characters(book) == set()
    gb = build_font.gb2312_characters()
    assert sum("\u4e00" <= c <= "\u9fff" for c in gb) == 6763
    assert fonts.missing_characters("".join(gb)) == set()


def test_covers_the_programs_own_strings():
    chars = build_font.repository_characters(REPO)
    missing = fonts.missing_characters("".join(chars))
    assert not missing, f"font lacks {''.join(sorted(missing))!r}: rebuild it with python tools/build_font.py"


def test_missing_characters_reports_only_undrawable():
    assert fonts.missing_characters("") == set()
    assert fonts.missing_characters("Hello, 世界!\n\t ") == set()
    # U+20000 (CJK Extension B) and U+A66E (Cyrillic) are outside the subset's character set.
    assert fonts.missing_characters("孔\U00020000乙\ua66e") == {"\U00020000", "\ua66e"}


def test_font_path_missing_raises_input_error(monkeypatch, tmp_path):
    monkeypatch.setattr(fonts, "FONT_DIR", tmp_path)
    with pytest.raises(InputError) as err:
        fonts.font_path()
    assert "\n" not in str(err.value) and "build_font.py" in str(err.value)


def test_repository_scan_picks_up_new_strings(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "narration.py").write_text('TEXT = "鼋鼍 ⟳"\n', encoding="utf-8")
    (tmp_path / "assets" / "x").mkdir(parents=True)
    (tmp_path / "assets" / "x" / "labels.json").write_text('{"a": "龘"}', encoding="utf-8")
    assert {"鼋", "鼍", "⟳", "龘"} <= build_font.repository_characters(tmp_path)


def test_licence_and_notice_ship_with_the_font():
    ofl = (fonts.FONT_DIR / "OFL.txt").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE Version 1.1" in ofl and "Copyright 2014-2021 Adobe" in ofl
    assert "TERMINATION" in ofl and "DISCLAIMER" in ofl
    notice = (fonts.FONT_DIR / "README.md").read_text(encoding="utf-8")
    assert "Noto Sans CJK SC" in notice and "2.004" in notice and "tools/build_font.py" in notice
