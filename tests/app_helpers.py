"""Helpers for the app tests: run the real program in-process (app.cli.main) or as a subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZE = "480x270"


def script_frames(script: list[str]) -> int:
    """Frames a scripted run needs to deliver every entry and draw the last one: frame 0 lays out, then one
    frame per key and N per `wait N`."""
    return 1 + sum(int(e.split()[1]) if e.startswith("wait ") else 1 for e in script)


def run_app(capsys, tmp_path, *args, script: list[str] | None = None, frames: int | None = None) -> dict:
    """spectable run --json in this process; returns the final state. Settings go to tmp_path/config.
    frames: the run's length (default: two frames, or just enough for the whole script)."""
    from app.cli import main
    if frames is None:
        frames = max(2, script_frames(script)) if script else 2
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
