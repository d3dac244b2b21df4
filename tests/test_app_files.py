"""Every file the program writes is complete under its final name or absent: a failed export is a status-line
message (never naming the hidden temp file) and the lesson goes on; temp files a kill left are cleaned at start."""
from __future__ import annotations

import csv
import errno
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest
from PIL import Image

from app_helpers import ROOT, SIZE, run_app

EXPORT_KEYS = ["f12", "c", "e", "g"]


@pytest.fixture(autouse=True)
def private_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SDL_VIDEODRIVER", "offscreen")


def test_an_export_folder_we_cannot_write_is_a_message(capsys, tmp_path):
    (tmp_path / "plain-file").write_text("x")
    out = tmp_path / "plain-file" / "exports"
    state = run_app(capsys, tmp_path, "--no-save", "--mode", "lab", "--export-dir", str(out), "--gif-seconds", "0.2",
                    script=EXPORT_KEYS + ["2", "page down"])
    failed = [m for m in state["messages"] if m.startswith("导出失败") or m.startswith("export failed")]
    assert state["exports"] == [] and len(failed) == 4 and state["mode"] == "lab"     # and the window went on
    assert all("plain-file" in m and ".tmp" not in m for m in failed)


def test_a_full_disk_is_a_message_that_never_names_the_temp_file(capsys, tmp_path, monkeypatch):
    import corpus.atomic
    real_replace = os.replace

    def full(src, dst):
        if ".tmp" in str(src):
            raise OSError(errno.ENOSPC, "No space left on device", str(src))
        return real_replace(src, dst)

    monkeypatch.setattr(corpus.atomic.os, "replace", full)
    out = tmp_path / "out"
    state = run_app(capsys, tmp_path, "--mode", "lab", "--export-dir", str(out), "--gif-seconds", "0.2",
                    script=EXPORT_KEYS + ["l"])
    msgs = state["messages"]
    assert state["exports"] == [] and state["language"] == "en"
    assert any("No space left on device" in m and str(out) in m for m in msgs)
    assert any(m.startswith("settings not saved") for m in msgs)          # 'l' saves at once: that failed too
    assert not any(".tmp" in m for m in msgs)
    assert [p.name for p in out.iterdir()] == []                          # nothing half-written left behind


def test_stale_export_temp_files_are_removed_at_start(capsys, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    stale = [out / ".spectable-replay-20260101-101010-001.gif.k1ll.tmp.gif",
             out / ".spectable-runlog-20260101-101010-001.csv.k1ll.tmp.csv",
             out / ".spectable-screenshot-20260101-101010-001.png.k1ll.tmp.png"]
    keep = [out / ".spectable-plot-x.png.fresh.tmp.png", out / "notes.txt", out / ".hidden"]
    for p in stale + keep:
        p.write_bytes(b"half")
    old = time.time() - 3600
    for p in stale + [out / "notes.txt", out / ".hidden"]:
        os.utime(p, (old, old))
    run_app(capsys, tmp_path, "--no-save", "--export-dir", str(out))
    assert not any(p.exists() for p in stale) and all(p.exists() for p in keep)


def _complete(path) -> None:
    """The file parses whole, as its kind."""
    ext = path.suffix
    if ext in (".png", ".gif"):
        with Image.open(path) as im:
            im.load()
            if ext == ".gif":
                for i in range(im.n_frames):
                    im.seek(i)
                    im.load()
    elif ext == ".svg":
        assert ET.parse(path).getroot().tag.endswith("svg")
    elif ext == ".csv":
        from app.exports import LOG_COLUMNS
        assert path.read_bytes().startswith(b"\xef\xbb\xbf")      # UTF-8 with a BOM (Excel)
        with open(path, encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            rows = list(reader)
        assert tuple(reader.fieldnames) == LOG_COLUMNS       # the target alone's log has a header and no guesses
        assert all(None not in r.values() and None not in r for r in rows)
    elif ext == ".json" or path.name == "settings.json":
        json.loads(path.read_text(encoding="utf-8"))
    elif ext == ".mp4":
        assert path.stat().st_size > 0
    else:
        raise AssertionError(f"unexpected file {path}")


def test_killed_mid_export_every_file_is_complete_or_absent(tmp_path):
    out, cfg = tmp_path / "out", tmp_path / "config"
    script = tmp_path / "keys.txt"
    script.write_text("\n".join((EXPORT_KEYS + ["1", "2"]) * 40) + "\n", encoding="utf-8")
    env = dict(os.environ, XDG_CONFIG_HOME=str(cfg), SDL_VIDEODRIVER="offscreen")
    def finished():
        return [p for p in out.iterdir() if not p.name.startswith(".")] if out.exists() else []
    # Killed a moment after an export has landed (the next is then being written): timed from the first file, not
    # from the start, which a loaded machine can take seconds longer to reach.
    for after in (0.4, 1.3):
        before = len(finished())
        proc = subprocess.Popen([sys.executable, "-m", "app", "run", "--frames", "100000", "--size", SIZE,
                                 "--export-dir", str(out), "--gif-seconds", "2", "--script", str(script)],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(finished()) <= before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(after)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finals = [p for p in out.iterdir() if not p.name.startswith(".")] + list((cfg / "spectable").glob("settings.json"))
    assert finals, "the runs exported nothing before the kill"
    for p in finals:
        _complete(p)
    # Whatever temp files the kills left, the next start removes (once they are older than a live write's).
    leftover = out / ".spectable-replay-20260101-101010-001.gif.k1ll.tmp.gif"
    leftover.write_bytes(b"GIF89a")
    old = time.time() - 3600
    for p in list(out.iterdir()) + list((cfg / "spectable").iterdir()):
        if p.name.startswith("."):
            os.utime(p, (old, old))
    proc = subprocess.run([sys.executable, "-m", "app", "run", "--frames", "1", "--size", SIZE, "--export-dir", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert not [p for p in list(out.iterdir()) + list((cfg / "spectable").iterdir()) if ".tmp" in p.name]
