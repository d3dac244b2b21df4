"""Measurement files are validated once (models.measurements) for both readers: models.hardware lists no
device from a bad file and the hardware panel shows its one-line reason; nothing crashes."""
from __future__ import annotations

import json

import pytest

from app.lesson import measured as F
from app.i18n import Strings
from models import hardware
from models.measurements import read_measurement

GOOD = {"device": {"name": "NVIDIA H200", "type": "cuda", "memory_bytes": 141e9}, "dtype": "bf16",
        "measured": {"copy_bandwidth_GBps": 4300.0, "matmul_tflops": 790.0},
        "figures": {"decode_batch1": {"ms_per_token": 4.1, "on_paper_ms": 3.7, "fraction_of_roofline": 0.9,
                                      "method": "median"},
                    "batch_sweep": {"points": [{"batch": 4, "context": 4096, "tokens_per_s": 900.0}]}}}

BAD = {
    "infinite bandwidth": ('{"measured": {"copy_bandwidth_GBps": Infinity, "matmul_tflops": 790}}',
                           "measured.copy_bandwidth_GBps = inf is not a finite number"),
    "1e308 bandwidth, 1e-300 FLOPs": ('{"device": {"bandwidth_Bps": 1e308, "flops": 1e-300}}', "out of range"),
    "1e400 literal": ('{"bandwidth_TBps": 1e400, "tflops": 1}', "not a finite number"),
    "a 400-digit integer": ('{"bandwidth_Bps": 1' + "0" * 400 + ', "flops": 1e12}', "out of range"),
    "NaN FLOPs": ('{"bandwidth_GBps": 100, "flops": NaN}', "flops = nan is not a finite number"),
    "text bandwidth": ('{"device": {"bandwidth_GBps": "fast", "flops": 1e12}}', "must be a number, not text"),
    "true as FLOPs": ('{"bandwidth_GBps": 100, "tflops": true}', "must be a number, not true/false"),
    "device is a list": ('{"device": [1, 2]}', "device must be an object or a name"),
    "device id with a slash": ('{"device": {"id": "../x", "bandwidth_GBps": 100, "tflops": 1}}', "device.id"),
    "negative figure": (json.dumps({"figures": {"decode_batch1": {"ms_per_token": -1}}}), "out of range"),
    "absurd figure": (json.dumps({"figures": {"speculative": {"speedup": 1e308}}}), "out of range"),
    "tiny figure": (json.dumps({"figures": {"verify_cost": {"ratio": 1e-300}}}), "too small"),
    "points not a list": (json.dumps({"figures": {"batch_sweep": {"points": {"a": 1}}}}), "points must be a list"),
    "a point of text": (json.dumps({"figures": {"batch_sweep": {"points": ["x"]}}}), "points[0] must be an object"),
    "method not text": (json.dumps({"figures": {"matmul": {"TFLOP_per_s": 1, "method": [1]}}}), "method must be text"),
    "nested 200,000 deep": ("[" * 200_000 + "]" * 200_000, "nested more than 64 levels"),
    "nested 100 deep in a dict": ('{"a": ' * 100 + "1" + "}" * 100, "nested more than 64 levels"),
    "not UTF-8": (b"\xff\xfe{}", "not UTF-8"),
    # a pair measurement (schema /2): the figures measured inside the runs are checked like every figure
    "in-run c negative": (json.dumps({"schema": "spectable-pair-bench/2", "in_run": {"c": -0.2}}), "in_run.c"),
    "in-run formula NaN": ('{"schema": "spectable-pair-bench/2", "in_run": {"speedup_formula": NaN}}',
                           "in_run.speedup_formula = nan"),
    "in_run a list": (json.dumps({"schema": "spectable-pair-bench/2", "in_run": [1]}), "in_run must be an object"),
    "notes not a list": (json.dumps({"schema": "spectable-pair-bench/2", "notes": "x"}), "notes must be a list"),
    "a note not text": (json.dumps({"schema": "spectable-pair-bench/2", "notes": [3]}), "notes[0] must be text"),
    "drafter a number": (json.dumps({"schema": "spectable-pair-bench/2", "drafter": 3}), "drafter must be text"),
    "a list": ("[1, 2]", "the file must be an object"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_measurement_file_is_skipped_with_its_reason(tmp_path, case):
    content, reason = BAD[case]
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "good.json").write_text(json.dumps(GOOD), encoding="utf-8")
    (folder / "bad.json").write_bytes(content if isinstance(content, bytes) else content.encode())
    before = sorted(p.name for p in folder.iterdir())
    devices = hardware.load_measurements(folder)
    assert list(devices) == ["measured-good"]                            # the good file still counts
    assert len(hardware.MEASUREMENT_ERRORS) == 1 and hardware.MEASUREMENT_ERRORS[0].startswith("bad.json: ")
    assert reason in hardware.MEASUREMENT_ERRORS[0] and "\n" not in hardware.MEASUREMENT_ERRORS[0]
    entries = {e["file"]: e for e in F.measurement_files(folder)}        # the panel's reader: the same verdict
    assert reason in entries["bad.json"]["error"] and "data" in entries["good.json"]
    view = F.measurement_view(entries["bad.json"], Strings("en"), "h200", "llama-3.1-8b")
    assert view["error"].startswith("bad.json could not be read") and view["rows"] == []
    for d in devices.values():                                           # what is listed computes finitely
        r = hardware.roofline(d, "llama-3.1-8b", 64, 4096)
        assert all(v == v and abs(v) < float("inf") for v in r.as_dict().values() if isinstance(v, float))
        hardware.busy_fraction(d, "llama-3.1-8b", 9)
    assert sorted(p.name for p in folder.iterdir()) == before            # reading writes nothing


def test_a_good_file_passes_unchanged_and_the_shipped_one_validates(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(GOOD), encoding="utf-8")
    assert read_measurement(path) == GOOD
    for shipped in sorted(hardware.MEASUREMENTS_DIR.glob("*.json")):
        read_measurement(shipped)
    hardware.reload_measurements()
    assert hardware.MEASUREMENT_ERRORS == []


def test_a_file_too_large_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (4 << 20) + b"{}")
    hardware.load_measurements(tmp_path)
    assert "too large" in hardware.MEASUREMENT_ERRORS[0]
