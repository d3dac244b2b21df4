"""Where the shipped files are (shaders, fonts, narration, tour pages, measurement files, the neural pair).

In a checkout, and in an editable install of one, they are the assets/ folder beside the packages. A wheel
(`pip install .`, pipx) installs that folder as the package `spectable_assets` (pyproject.toml maps it),
found here through the import system like any package's data. It lives in corpus/, the root of the data
flow, so models/ and scenes/ can find their files without importing the app.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

PACKAGE = "spectable_assets"


def _assets() -> Path:
    checkout = Path(__file__).resolve().parent.parent / "assets"
    if (checkout / "shaders").is_dir():
        return checkout
    spec = importlib.util.find_spec(PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return checkout      # neither: every reader of a missing file says which one in its own line


ASSETS = _assets()


def cache_dir() -> Path:
    """The user's cache folder for the program ($XDG_CACHE_HOME/spectable, else ~/.cache/spectable; on Windows
    %LOCALAPPDATA%\\spectable\\cache, on macOS ~/Library/Caches/spectable): jieba's dictionary, the kernel choices."""
    base = os.environ.get("XDG_CACHE_HOME")
    if base:
        path = Path(base) / "spectable"
    elif sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        path = Path(os.environ["LOCALAPPDATA"]) / "spectable" / "cache"
    elif sys.platform == "darwin":
        path = Path.home() / "Library" / "Caches" / "spectable"
    else:
        path = Path.home() / ".cache" / "spectable"
    path.mkdir(parents=True, exist_ok=True)
    return path
