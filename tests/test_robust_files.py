"""Files the bench writes are complete under their name or absent: a full disk leaves no temp file behind and
the old measurement file whole; the command says so in one line."""
from __future__ import annotations

import builtins
import errno
import json
import resource
import signal

import pytest

import corpus.atomic
from corpus.errors import InputError
from models.llm.bench import write_json_atomic

RESULT = {"schema": "spectable-bench/1", "figures": {"decode_batch1": {"ms_per_token": 4.2}}}


def _full_disk(monkeypatch):
    """Every write through corpus.atomic fails as on a full disk (ENOSPC), after the temp file exists."""
    real_open = builtins.open

    def full_open(path, mode="r", *args, **kwargs):
        fh = real_open(path, mode, *args, **kwargs)
        if "w" in mode:
            def write(_data):
                raise OSError(errno.ENOSPC, "No space left on device")
            fh.write = write
        return fh
    monkeypatch.setattr(corpus.atomic, "open", full_open, raising=False)


def test_a_full_disk_leaves_no_temp_file_and_the_old_file_whole(tmp_path, monkeypatch):
    out = tmp_path / "bench.json"
    out.write_text('{"old": true}\n', encoding="utf-8")
    _full_disk(monkeypatch)
    with pytest.raises(InputError, match="cannot write .*bench.json: No space left on device"):
        write_json_atomic(out, RESULT)
    assert [p.name for p in tmp_path.iterdir()] == ["bench.json"]
    assert json.loads(out.read_text(encoding="utf-8")) == {"old": True}


def test_a_write_the_kernel_refuses_leaves_no_temp_file(tmp_path):
    """A real failed write(2): the file-size limit set to 0 makes every write EFBIG, as a full disk does ENOSPC."""
    out = tmp_path / "bench.json"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))
    try:
        with pytest.raises(InputError, match="cannot write"):
            write_json_atomic(out, RESULT)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old_handler)
    assert list(tmp_path.iterdir()) == []


def test_bench_on_a_full_disk_is_one_line_exit_2_and_no_temp(tmp_path, monkeypatch, capsys):
    from tests.llm_helpers import run_cli
    monkeypatch.setattr("models.llm.bench.run_bench", lambda s, progress=True: dict(RESULT))
    monkeypatch.setattr("models.llm.bench.summary_lines", lambda r: ["summary"])
    _full_disk(monkeypatch)
    rc, out, err = run_cli(["bench", "--target", "tiny", "--draft", "tiny-draft", "--out", tmp_path / "m.json"],
                           capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "No space left on device" in err
    assert list(tmp_path.iterdir()) == []


def test_a_figure_that_is_not_finite_is_written_as_null(tmp_path):
    out = tmp_path / "b.json"
    write_json_atomic(out, {"figures": {"x": {"tokens_per_s": float("inf"), "ratio": float("nan"), "ok": 1.5}},
                            "points": [float("-inf"), 2]})
    assert json.loads(out.read_text()) == {"figures": {"x": {"tokens_per_s": None, "ratio": None, "ok": 1.5}},
                                           "points": [None, 2]}


def _stale(path, age_s=3600):
    import os
    import time
    path.write_bytes(b"")
    os.utime(path, (time.time() - age_s, time.time() - age_s))
    return path


def test_a_bench_killed_mid_write_leaves_a_temp_that_the_next_bench_removes(tmp_path, monkeypatch, capsys):
    from tests.llm_helpers import run_cli
    stale = _stale(tmp_path / ".m.json.k1ll3d.tmp.json")
    live = _stale(tmp_path / ".m.json.wr1t1ng.tmp.json", age_s=0)         # another bench writing right now
    monkeypatch.setattr("models.llm.bench.run_bench", lambda s, progress=True: dict(RESULT))
    monkeypatch.setattr("models.llm.bench.summary_lines", lambda r: ["summary"])
    rc, _, err = run_cli(["bench", "--target", "tiny", "--draft", "tiny-draft", "--out", tmp_path / "m.json"], capsys)
    assert rc == 0, err
    assert not stale.exists() and live.exists() and json.loads((tmp_path / "m.json").read_text()) == RESULT


def test_a_temp_file_beside_the_measurements_is_no_measurement(tmp_path):
    from app.lesson import measured as facts
    from models import hardware
    (tmp_path / "run.json").write_text(json.dumps({"bandwidth_GBps": 100, "tflops": 1}), encoding="utf-8")
    (tmp_path / ".run.json.k1ll3d.tmp.json").write_text('{"bandwidth_GB', encoding="utf-8")
    assert list(hardware.load_measurements(tmp_path)) == ["measured-run"] and hardware.MEASUREMENT_ERRORS == []
    assert [e["file"] for e in facts.measurement_files(tmp_path)] == ["run.json"]


def test_a_corpus_build_removes_the_temp_files_a_killed_build_left(tmp_path):
    from corpus.build import build_and_save
    (tmp_path / "a.txt").write_text("标题\n甲乙丙甲乙\n", encoding="utf-8")
    left = [_stale(tmp_path / ".t.npz.k1ll3d.tmp.npz"), _stale(tmp_path / ".t.json.k1ll3d.tmp.json")]
    build_and_save([tmp_path / "a.txt"], tmp_path / "t.npz")
    assert not any(p.exists() for p in left)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "t.json", "t.npz"]
