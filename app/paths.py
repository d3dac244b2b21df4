"""Where the program finds its shipped assets and the user's config folder."""
from __future__ import annotations

import os
from pathlib import Path

from corpus.resources import ASSETS
from corpus.errors import InputError

I18N_DIR = ASSETS / "i18n"
TOUR_DIR = ASSETS / "tour"
MEASUREMENTS_DIR = ASSETS / "measurements"


def config_dir() -> Path:
    """The user's config folder ($XDG_CONFIG_HOME/spectable, else ~/.config/spectable; %APPDATA% on Windows)."""
    base = os.environ.get("XDG_CONFIG_HOME")
    if not base:
        base = os.environ.get("APPDATA") if os.name == "nt" else None
    if not base:
        base = str(Path.home() / ".config")
    return Path(base) / "spectable"


def default_export_dir() -> Path:
    """Screenshots, plots, logs and GIFs go here unless --export-dir says otherwise."""
    return Path.home() / "spectable-exports"


def resolve_font() -> Path:
    """The shipped CJK font (scenes.fonts); SPECTABLE_FONT overrides it (tests point it at a missing file)."""
    override = os.environ.get("SPECTABLE_FONT")
    if override:
        p = Path(override)
        if not p.is_file():
            raise InputError(f"font file {p} is missing (SPECTABLE_FONT)")
        return p
    try:
        from scenes.fonts import font_path  # lazy: a missing scenes.fonts is handled below
    except ImportError:
        raise InputError("the shipped font module scenes.fonts is missing") from None
    return Path(font_path())
