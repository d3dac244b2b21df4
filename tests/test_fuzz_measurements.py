"""Fuzzing measurement files with hypothesis: a real bench file with any field replaced by any JSON value (NaN,
Infinity, 1e308, 1e-300, 400-digit integers, text, lists, objects), or any JSON at all. Both readers (the
hardware model and the hardware panel) give the one user error per bad file and never raise; a device they
list computes finite figures; the panel's text stays short; nothing is written."""
from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from app.lesson import measured as F
from app.i18n import Strings
from models import hardware
from tests.fuzz_helpers import budget, json_values

SHIPPED = json.loads((hardware.MEASUREMENTS_DIR / "cpu-llama-3.2-1b.json").read_text(encoding="utf-8"))
KEYS = ("device", "measured", "figures", "copy_bandwidth_GBps", "matmul_tflops", "name", "type", "id",
        "memory_bytes", "bandwidth_Bps", "flops", "GB_per_s", "TFLOP_per_s", "decode_batch1", "ms_per_token",
        "points", "batch", "tokens_per_s", "method", "speculative", "speedup", "alpha", "date", "weights", "note")
T = Strings("en")


def _paths(d, prefix=()):
    """Every (path) to a value inside the shipped file, so damage lands where the readers look."""
    yield prefix
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from _paths(v, prefix + (i,))


PATHS = [p for p in _paths(SHIPPED) if p]


@st.composite
def measurement_file(draw):
    if draw(st.integers(0, 9)) == 0:
        return json.dumps(draw(json_values(KEYS)))
    data = copy.deepcopy(SHIPPED)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        node = data
        try:
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = draw(json_values(KEYS))
        except (KeyError, IndexError, TypeError):    # an earlier change removed this path
            pass
    return json.dumps(data)


@budget(200)
@given(st.lists(measurement_file(), min_size=1, max_size=3))
def test_any_measurement_file_is_listed_or_reported_never_a_crash(files):
    with tempfile.TemporaryDirectory() as d:
        for i, text in enumerate(files):
            (Path(d) / f"m{i}.json").write_text(text, encoding="utf-8")
        before = sorted(os.listdir(d))
        devices = hardware.load_measurements(Path(d))
        entries = F.measurement_files(Path(d))
        assert sorted(os.listdir(d)) == before
    assert len(entries) == len(files)
    bad = {e["file"] for e in entries if "error" in e}
    assert {m.split(":")[0] for m in hardware.MEASUREMENT_ERRORS} == bad        # one verdict, both readers
    for dev in devices.values():
        assert 1e6 <= dev.bandwidth_Bps <= 1e16 and 1e6 <= dev.flops <= 1e19
        for batch, context in ((1, 0), (64, 4096)):
            r = hardware.roofline(dev, "llama-3.1-8b", batch, context)
            assert all(abs(v) < float("inf") for v in r.as_dict().values() if isinstance(v, float))
        assert 0 <= hardware.busy_fraction(dev, "llama-3.1-8b", 9) <= 1
    for e in entries:
        for paper in ("h200", "h100-sxm", *devices):
            view = F.measurement_view(e, T, paper, "llama-3.1-8b")
            cells = [c for row in view["rows"] for c in row[:3]] + view["meta"] + [view["scaled"] or ""]
            assert all(isinstance(c, str) and len(c) < 400 for c in cells), cells
            if "error" in e:
                assert view["error"] and "\n" not in view["error"] and view["rows"] == []
