"""Where the shipped files are (shaders, fonts, narration, tour pages, measurement files, the neural pair).

In a checkout, and in an editable install of one, they are the assets/ folder beside the packages. A wheel
(`pip install .`, pipx) installs that folder as the package `spectable_assets` (pyproject.toml maps it),
found here through the import system like any package's data. It lives in corpus/, the root of the data
flow, so models/ and scenes/ can find their files without importing the app.
"""
from __future__ import annotations

import importlib.util
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
