"""`pip install .` as pipx or a wheel does it (not editable): the installed program runs outside the checkout
with everything it ships (shaders, font, narration, tour pages, tables, measurement files, the neural pair),
and another package's `models` (or app, corpus, scenes) earlier on the path is one line, exit 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The project's wheel, built from this checkout and installed into a folder of its own."""
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp / "dist"), str(REPO)], check=True, timeout=600, capture_output=True)
    wheels = sorted((tmp / "dist").glob("spectable-*.whl"))
    assert len(wheels) == 1
    site = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    str(wheels[0])], check=True, timeout=600, capture_output=True)
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return site, elsewhere


def _spectable(site: Path, cwd: Path, *argv, path_first: Path | None = None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in (path_first, site) if p))
    return subprocess.run([sys.executable, str(site / "bin" / "spectable"), *argv], cwd=cwd, env=env,
                          capture_output=True, timeout=300)


def test_the_installed_program_imports_from_the_install_not_the_checkout(installed):
    site, elsewhere = installed
    code = "import app, models, corpus, scenes, corpus.resources as r; print(app.__file__); print(r.ASSETS)"
    r = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=dict(os.environ, PYTHONPATH=str(site)),
                       capture_output=True, timeout=60, text=True)
    module, assets = r.stdout.split()
    assert Path(module).is_relative_to(site) and Path(assets) == site / "spectable_assets", r.stdout


@pytest.mark.parametrize("argv, check", [
    (["render", "--out", "table.png"], lambda d, out: (d / "table.png").read_bytes()[:4] == b"\x89PNG"),
    (["probs", "--prefix", "孔乙", "--json"], lambda d, out: json.loads(out)["target"]["己"] > 0.9),
    (["generate", "--pair", "neural", "--tokens", "5", "--json"], lambda d, out: json.loads(out)["tokens_written"] >= 5),
    (["roofline", "--json"], lambda d, out: json.loads(out)["weight_bytes"] > 1e9),
    (["run", "--no-save", "--mode", "hardware", "--frames", "2", "--screenshot", "shot.png"],
     lambda d, out: (d / "shot.png").read_bytes()[:4] == b"\x89PNG"),
], ids=["render", "tables", "neural-pair", "hardware", "window"])
def test_the_installed_program_runs_with_what_it_ships(installed, argv, check):
    site, elsewhere = installed
    r = _spectable(site, elsewhere, *argv)
    assert r.returncode == 0, r.stderr.decode()
    assert check(elsewhere, r.stdout.decode())


@pytest.mark.parametrize("name", ["models", "app", "scenes"])
def test_another_package_with_one_of_our_names_is_one_line(installed, tmp_path, name):
    site, elsewhere = installed
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("", encoding="utf-8")
    r = _spectable(site, elsewhere, "probs", path_first=tmp_path)
    err = r.stderr.decode()
    assert r.returncode == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"spectable: error: the Python package '{name}' that this environment imports is not "
                          f"spectable's ({tmp_path / name / '__init__.py'})")
