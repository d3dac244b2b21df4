"""Exports produce valid files, and the step-through panel's numbers are the trace's numbers."""
from __future__ import annotations

import csv
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

from app_helpers import run_app


@pytest.fixture(autouse=True)
def private_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SDL_VIDEODRIVER", "offscreen")


def _traces(seed: int, gamma: int, steps: int, prompt: str = "慢慢"):
    from models.ngram import NGramPair
    from models.sampler import SamplerSettings, SpeculativeSampler
    pair = NGramPair.load()
    s = SpeculativeSampler(pair, SamplerSettings(gamma=gamma, seed=seed))
    s.reset(pair.encode(prompt))
    return pair, [s.step() for _ in range(steps)]


def _stops(traces):
    stops = []
    for k, tr in enumerate(traces):
        stops += [(k, i) for i in range(tr.tested)]
        if tr.n_accepted == tr.gamma:
            stops.append((k, tr.gamma))
    return stops


@pytest.mark.parametrize("seed,forward,back", [(0, 3, 0), (5, 6, 2)])
def test_step_through_numbers_match_the_trace(capsys, tmp_path, seed, forward, back):
    pair, traces = _traces(seed, 4, 12)
    state = run_app(capsys, tmp_path, "--no-save", "--mode", "step", "--seed", str(seed), "--gamma", "4",
                    script=["page down"] * forward + ["page up"] * back)
    ex = state["step"]
    stops = _stops(traces)
    k, i = stops[forward - back]
    assert (ex["step"], ex["test"]) == (k, i)
    tr = traces[k]
    if i == tr.gamma:
        assert ex["kind"] == "bonus" and ex["token_id"] == tr.final_token
        return
    g = tr.guesses[i]
    assert ex["guess_id"] == g and ex["guess"] == pair.display(g)
    assert ex["q"] == pytest.approx(tr.q_rows[i][g], rel=1e-12)
    assert ex["p"] == pytest.approx(tr.p_rows[i][g], rel=1e-12)
    assert ex["ratio"] == pytest.approx(tr.ratios[i], rel=1e-12)
    assert ex["r"] == pytest.approx(tr.r[i], rel=1e-12)
    assert ex["verdict"] == ("accepted" if tr.accepted[i] else "rejected")
    assert (ex["r"] <= ex["ratio"]) == (ex["verdict"] == "accepted")
    if not tr.accepted[i]:
        res = np.maximum(0, tr.p_rows[i] - tr.q_rows[i])
        assert ex["final_token_id"] == tr.final_token and res[tr.final_token] > 0
        top_id = ex["residual"][0][2]
        assert res[top_id] == pytest.approx(res.max())
        assert ex["residual"][0][1] == pytest.approx(res.max() / res.sum())


def test_step_through_replays_exactly_from_seed(capsys, tmp_path):
    a = run_app(capsys, tmp_path, "--no-save", "--mode", "step", "--seed", "7", script=["page down"] * 4)
    b = run_app(capsys, tmp_path, "--no-save", "--mode", "step", "--seed", "7",
                script=["page down"] * 6 + ["page up"] * 2)
    assert a["step"] == b["step"] and a["text"] == b["text"]


def test_exports_are_valid_files(capsys, tmp_path):
    # In the lab (the tour's first chapters run the target alone: a run log with no guesses).
    state = run_app(capsys, tmp_path, "--no-save", "--mode", "lab", "--seed", "3", "--gif-seconds", "0.5",
                    "--gif-fps", "6", script=["f12", "c", "e", "g"])
    files = {}
    for p in state["exports"]:
        files.setdefault(p.rsplit(".", 1)[1], []).append(p)
    # screenshot + 5 plots as PNG for slides and 5 in the print theme (the drafters' among them); the same 10 as SVG;
    # one CSV, one GIF
    assert len(files["png"]) == 11 and len(files["svg"]) == 10 and len(files["csv"]) == 1 and len(files["gif"]) == 1
    assert sum("plot-drafters" in p for p in files["png"] + files["svg"]) == 4
    for p in files["png"]:
        with Image.open(p) as im:
            im.verify()
    for p in files["png"]:
        if "-plot-" in p:
            with Image.open(p) as im:
                assert im.size == (1920, 1080)          # a slide's size, not the panel's
                corner = np.asarray(im.convert("RGB"))[5, 5]
            # The print theme is dark ink on white; the screen theme keeps the panel's dark background.
            assert (corner.min() > 240) == ("-print-" in p), p
    for p in files["svg"]:
        assert ET.parse(p).getroot().tag.endswith("svg")
    with Image.open(files["gif"][0]) as im:
        assert im.format == "GIF"
        total_ms = 0
        for i in range(im.n_frames):      # Pillow merges identical frames, so count time, not frames
            im.seek(i)
            total_ms += im.info["duration"]
        assert abs(total_ms - 500) <= 30          # 0.5 s at 6 frames/s (GIF stores centiseconds per frame)
    pair, traces = _traces(3, 4, 12)
    raw = open(files["csv"][0], "rb").read()
    assert raw.startswith(b"\xef\xbb\xbf")         # UTF-8 with a BOM: Excel opens the Chinese ungarbled
    with open(files["csv"][0], encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == sum(tr.gamma for tr in traces)
    for row in rows:
        tr = traces[int(row["step"])]
        i = int(row["guess_index"])
        g = tr.guesses[i]
        assert row["guess"] == pair.display(g)
        assert float(row["p"]) == pytest.approx(tr.p_rows[i][g], rel=1e-5)
        assert float(row["q"]) == pytest.approx(tr.q_rows[i][g], rel=1e-5)
        assert float(row["r"]) == pytest.approx(tr.r[i], rel=1e-5)
        expect = ("accepted" if tr.accepted[i] else "rejected") if i < tr.tested else "untested"
        assert row["verdict"] == expect


def test_screenshot_matches_the_window(capsys, tmp_path):
    shot = tmp_path / "last.png"
    state = run_app(capsys, tmp_path, "--no-save", "--screenshot", str(shot), script=["f12"])
    a = np.asarray(Image.open(shot).convert("RGB"), dtype=int)
    b = np.asarray(Image.open(state["exports"][0]).convert("RGB"), dtype=int)
    assert a.shape == b.shape
