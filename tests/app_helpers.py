"""Helpers for the app tests: run the real program in-process (app.cli.main) or as a subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZE = "480x270"


def run_app(capsys, tmp_path, *args, script: list[str] | None = None, frames: int = 2) -> dict:
    """spectable run --json in this process; returns the final state. Settings go to tmp_path/config."""
    from app.cli import main
    argv = ["run", "--frames", str(frames), "--size", SIZE, "--json", "--export-dir", str(tmp_path / "out"), *args]
    if script is not None:
        path = tmp_path / "keys.txt"
        path.write_text("\n".join(script) + "\n", encoding="utf-8")
        argv += ["--script", str(path)]
    capsys.readouterr()
    rc = main(argv)
    cap = capsys.readouterr()
    out = cap.out
    assert rc == 0, cap.err
    return json.loads(out.strip().splitlines()[-1])


def run_subprocess(args: list[str], env_changes: dict, tmp_path: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
