"""Every Python file in the project compiles, including scripts that no other test imports (benchmarks/, tools/)."""
import py_compile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for d in ("app", "models", "corpus", "scenes", "benchmarks", "tools", "tests")
                 for p in (ROOT / d).rglob("*.py"))


def test_there_are_sources():
    assert len(SOURCES) > 50


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_compiles(path, tmp_path):
    py_compile.compile(str(path), cfile=str(tmp_path / "x.pyc"), doraise=True)
