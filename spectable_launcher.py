"""The `spectable` console script. It checks, before anything of the program is imported, that the four
top-level packages it ships (app, models, corpus, scenes: names other projects use too) are its own, installed
beside this file, so a collision with another installed package is one line, not a baffling traceback."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PACKAGES = ("app", "models", "corpus", "scenes")


def foreign_package() -> tuple[str, str] | None:
    """(name, where it was found) for the first of PACKAGES that is not the one beside this file, else None."""
    home = Path(__file__).resolve().parent
    for name in PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        if origin is None:
            places = list(getattr(spec, "submodule_search_locations", None) or [])
            return name, (places[0] if places else "nowhere: it is missing")
        if Path(origin).resolve().parent.parent != home:
            return name, origin
    return None


def main() -> int:
    clash = foreign_package()
    if clash is not None:
        name, where = clash
        print(f"spectable: error: the Python package '{name}' that this environment imports is not spectable's "
              f"({where}); another installed package uses the same name: run spectable in a virtual environment "
              "of its own", file=sys.stderr)
        return 2
    from app.cli import main as cli_main
    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
