"""The shipped subset CJK font: where it is, its family name, and which characters it cannot draw.

The font (assets/fonts/SpectableSans-SC.otf, a subset of Noto Sans CJK SC under the SIL OFL 1.1) is
built by tools/build_font.py; nothing in the program depends on a system font.
"""

from __future__ import annotations

import functools
from pathlib import Path

from corpus.errors import InputError
from corpus.resources import ASSETS

FONT_FAMILY = "Spectable Sans SC"
FONT_FILE = "SpectableSans-SC.otf"
FONT_DIR = ASSETS / "fonts"


def font_path() -> Path:
    """Path of the shipped font file; InputError (one line) if it is missing."""
    path = FONT_DIR / FONT_FILE
    if not path.is_file():
        raise InputError(f"font file {path} is missing (rebuild it with: python tools/build_font.py)")
    return path


@functools.lru_cache(maxsize=1)
def _codepoints() -> frozenset[int]:
    # Read only the cmap (lazy load): the glyph outlines are never parsed, so this takes milliseconds.
    from fontTools.ttLib import TTFont  # lazy: fontTools only on this path

    with TTFont(str(font_path()), lazy=True) as font:
        return frozenset(font.getBestCmap())


def covered(ch: str) -> bool:
    """True if the font has a glyph for this character (whitespace and newlines count as drawable)."""
    return ch.isspace() or ord(ch) in _codepoints()


def missing_characters(text: str) -> set[str]:
    """Characters of `text` the font cannot draw (empty set: all drawable); whitespace is never missing."""
    return {ch for ch in set(text) if not covered(ch)}
