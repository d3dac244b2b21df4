"""The hardware panel: measured figures beside their on-paper values from the same file, adaptive units,
honest scaling between devices, a picker for several files, and a message (not a crash) for a bad file."""
from __future__ import annotations

import copy
import json
import re
import shutil

import pytest

from app.lesson import measured as F
from app.i18n import Strings
from app.paths import MEASUREMENTS_DIR
from tests.app_helpers import run_app

CPU_FILE = MEASUREMENTS_DIR / "cpu-llama-3.2-1b.json"
NUM = re.compile(r"[-+]?\d[\d,]*\.?\d*")


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in NUM.findall(text)]


def _close(shown: float, exact: float, rel: float = 6e-3) -> bool:
    """A value shown with 3 significant figures is within half a unit of its last digit."""
    return abs(shown - exact) <= rel * abs(exact) + 1e-12


@pytest.fixture
def meas_dir(tmp_path, monkeypatch):
    """A private measurements folder (assets/ is never touched) and private settings."""
    folder = tmp_path / "measurements"
    folder.mkdir()
    monkeypatch.setattr("app.paths.MEASUREMENTS_DIR", folder)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return folder


@pytest.fixture
def panel_state(monkeypatch):
    """spectable run --json plus what the hardware panel drew on its last frame."""
    from app.window import App
    original = App.state

    def state(self):
        out = original(self)
        out["hardware_panel"] = self.ctl.modes["hardware"].shown
        return out

    monkeypatch.setattr(App, "state", state)


def _settings(tmp_path, **values):
    cfg = tmp_path / "config" / "spectable"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "settings.json").write_text(json.dumps(values), encoding="utf-8")


def _h200_file(folder, device="NVIDIA H200", date="2026-12-01T10:00:00+00:00"):
    """A GPU file made from the CPU one (same schema), with figures the test can tell apart."""
    data = json.loads(CPU_FILE.read_text(encoding="utf-8"))
    g = copy.deepcopy(data)
    g["date"] = date
    g["device"].update(type="cuda", name=device, cuda="12.8")
    g["models"]["target"]["name"] = "llama-3.1-8b"
    g["figures"]["decode_batch1"]["ms_per_token"] = 4.1234
    g["figures"]["copy_bandwidth"]["GB_per_s"] = 4123.4
    g["figures"]["matmul"]["TFLOP_per_s"] = 712.3
    (folder / "h200-llama-3.1-8b.json").write_text(json.dumps(g), encoding="utf-8")
    return g


def test_units_are_adaptive():
    assert F.fmt_flops(20.27599929989957e9) == "20.3 GFLOP/s"
    assert F.fmt_flops(989e12) == "989 TFLOP/s"
    assert F.fmt_flops(1.5e12) == "1.50 TFLOP/s"
    assert F.fmt_bandwidth(35.79405243761432e9) == "35.8 GB/s"
    assert F.fmt_bandwidth(3.35e12) == "3.35 TB/s"
    assert F.fmt_bandwidth(4.8e12) == "4.80 TB/s"
    assert F.fmt_bandwidth(999.7e9) == "1,000 GB/s"      # rounds up to a new digit without a stray decimal
    assert F.sig(0.06587996936719365) == "0.0659" and F.sig(136.536) == "137" and F.sig(9.996) == "10.0"


def test_panel_shows_the_files_numbers_beside_their_on_paper_values(tmp_path, capsys, meas_dir, panel_state):
    shutil.copy(CPU_FILE, meas_dir)
    data = json.loads(CPU_FILE.read_text(encoding="utf-8"))
    fig = data["figures"]
    state = run_app(capsys, tmp_path, "--mode", "hardware", "--lang", "en")
    panel = state["hardware_panel"]
    assert state["mode"] == "hardware" and panel["file"] == CPU_FILE.name and not panel.get("error")
    rows = {label: (measured, paper, method) for label, measured, paper, method in panel["rows"]}
    t = Strings("en")

    measured, paper, method = rows[t("hw.copy_bandwidth")]
    assert measured.endswith(" GB/s") and _close(_numbers(measured)[0], fig["copy_bandwidth"]["GB_per_s"])
    assert method == fig["copy_bandwidth"]["method"]
    measured, paper, method = rows[t("hw.matmul_rate")]
    # 0.0203 TFLOP/s is shown as GFLOP/s, never as "0.0"
    assert measured.endswith(" GFLOP/s") and _close(_numbers(measured)[0], fig["matmul"]["TFLOP_per_s"] * 1e3)
    measured, paper, method = rows[t("hw.decode_b1")]
    d = fig["decode_batch1"]
    assert _close(_numbers(measured)[0], d["ms_per_token"])
    on_paper, pct = _numbers(paper)[:2]
    assert _close(on_paper, d["on_paper_ms"]) and abs(pct - 100 * d["fraction_of_roofline"]) <= 0.5
    assert method == d["method"]
    v = fig["verify_cost"]
    measured, paper, _ = rows[t("hw.verify_k", k=f"{v['tokens']:.0f}")]
    assert abs(_numbers(measured)[0] - v["ratio"]) <= 0.005 and abs(_numbers(paper)[0] - v["on_paper_ratio"]) <= 0.005
    measured, paper, _ = rows[t("fact.c")]
    assert _close(_numbers(measured)[0], fig["draft_cost"]["c"]) and _close(_numbers(paper)[0],
                                                                           fig["draft_cost"]["on_paper_c"])
    for p in fig["batch_sweep"]["points"]:
        measured, paper, method = rows[t("hw.batch_point", batch=p["batch"], context=f"{p['context']:,}")]
        assert _close(_numbers(measured)[0], p["tokens_per_s"]) and _close(_numbers(paper)[0],
                                                                          p["on_paper_tokens_per_s"])
        assert method == fig["batch_sweep"]["method"]
    sp = fig["speculative"]
    measured, paper, _ = rows[t("hw.spec_speedup", alpha=f"{sp['alpha']:.2f}")]
    assert _close(_numbers(measured)[0], sp["speedup"]) and _close(_numbers(paper)[0], sp["on_paper_speedup"])

    meta = " ".join(panel["meta"])
    for part in (data["device"]["name"], data["dtype"], data["device"]["torch"], data["date"][:10]):
        assert part in meta
    assert panel["note"] == t("hw.random_note")
    # A CPU run is labelled as this CPU and never scaled to the on-paper H100.
    assert panel["where"] == t("hw.this_cpu", device=data["device"]["name"]) and panel["scaled"] is None


def test_chinese_panel_translates_the_note_and_labels(tmp_path, capsys, meas_dir, panel_state):
    shutil.copy(CPU_FILE, meas_dir)
    panel = run_app(capsys, tmp_path, "--mode", "hardware", "--lang", "zh")["hardware_panel"]
    zh = Strings("zh")
    assert panel["note"] == zh("hw.random_note") != Strings("en")("hw.random_note")
    assert zh("hw.copy_bandwidth") in [r[0] for r in panel["rows"]]
    device = json.loads(CPU_FILE.read_text(encoding="utf-8"))["device"]["name"]
    assert panel["where"] == zh("hw.this_cpu", device=device) and panel["scaled"] is None


def test_several_files_are_listed_and_a_gpu_run_is_scaled_not_relabelled(tmp_path, capsys, meas_dir, panel_state):
    from models.hardware import DEVICES
    shutil.copy(CPU_FILE, meas_dir)
    g = _h200_file(meas_dir)
    _settings(tmp_path, device="h100-sxm", model="llama-3.1-8b")
    panel = run_app(capsys, tmp_path, "--mode", "hardware", "--lang", "en", "--no-save")["hardware_panel"]
    assert sorted(panel["files"]) == sorted([CPU_FILE.name, "h200-llama-3.1-8b.json"])
    assert panel["file"] == "h200-llama-3.1-8b.json"          # the newest file is shown first
    h100, h200 = DEVICES["h100-sxm"], DEVICES["h200"]
    scaled = panel["scaled"]
    ratio = f"{h100.bandwidth_Bps / 1e12:.2f}/{h200.bandwidth_Bps / 1e12:.2f} TB/s"
    assert ratio in scaled and "not a measurement" in scaled
    ms = g["figures"]["decode_batch1"]["ms_per_token"]
    expect_ms = ms * h200.bandwidth_Bps / h100.bandwidth_Bps
    assert _close(_numbers(scaled.split("≈")[1])[0], expect_ms)
    # the measured rows still say what the H200 measured, and the device line names the H200
    rows = {r[0]: r for r in panel["rows"]}
    t = Strings("en")
    assert _close(_numbers(rows[t("hw.decode_b1")][1])[0], ms)
    assert rows[t("hw.copy_bandwidth")][1] == "4.12 TB/s" and rows[t("hw.matmul_rate")][1] == "712 TFLOP/s"
    assert panel["where"] == t("hw.measured_on", device="NVIDIA H200")
    assert "H100" not in " ".join(panel["meta"])


def test_picking_a_file_and_matching_devices(tmp_path, meas_dir):
    """The combo's choice (HardwarePanel.selected) decides the file; the same chip is not scaled."""
    from app.controller import Controller
    from app.settings import AppSettings
    shutil.copy(CPU_FILE, meas_dir)
    _h200_file(meas_dir)
    ctl = Controller(AppSettings(mode="hardware"), persist=False, scripted=True).start()
    panel = ctl.panel
    assert panel is ctl.modes["hardware"] and panel.current()["file"] == "h200-llama-3.1-8b.json"
    panel.selected = CPU_FILE.name
    assert panel.current()["file"] == CPU_FILE.name
    t = Strings("en")
    h200 = next(e for e in F.measurement_files(meas_dir) if e["file"].startswith("h200"))
    assert F.measurement_view(h200, t, "h200", "llama-3.1-8b")["scaled"] is None
    other_model = F.measurement_view(h200, t, "h100-sxm", "llama-3.2-1b")["scaled"]
    assert other_model == t("hw.scale_model_differs", model="llama-3.1-8b", paper_model="llama-3.2-1b")
    assert F.sheet_device_of("NVIDIA H100 80GB HBM3").id == "h100-sxm" and F.sheet_device_of("AMD EPYC") is None


@pytest.mark.parametrize("content", [
    "{not json", "[1, 2, 3]", json.dumps({"figures": {"decode_batch1": "x"}}), json.dumps({"note": "no figures"}),
    '{"device": {"name": "X", "copy_bandwidth_GBps": Infinity, "matmul_tflops": 1}}', "[" * 200_000 + "]" * 200_000],
    ids=["not-json", "a-list", "figure-of-wrong-type", "no-figures", "infinite-bandwidth", "nested-200000-deep"])
def test_a_corrupt_file_is_a_message_not_a_crash(tmp_path, capsys, meas_dir, panel_state, content):
    (meas_dir / "broken.json").write_text(content, encoding="utf-8")
    state = run_app(capsys, tmp_path, "--mode", "hardware", "--lang", "en")
    panel = state["hardware_panel"]
    assert state["mode"] == "hardware" and panel["file"] == "broken.json"
    if content.startswith('{"note'):      # parses, and is valid, but holds no figures
        assert panel["rows"] == [] and Strings("en")("hw.no_figures") in panel["notes"]
    else:
        assert panel["error"].startswith("broken.json could not be read")


def test_no_measurement_folder_is_a_message(tmp_path, capsys, meas_dir, panel_state, monkeypatch):
    monkeypatch.setattr("app.paths.MEASUREMENTS_DIR", tmp_path / "nowhere")
    panel = run_app(capsys, tmp_path, "--mode", "hardware", "--lang", "en")["hardware_panel"]
    assert panel["files"] == [] and panel["message"] == Strings("en")("hw.no_measurements")


def test_the_panel_lists_every_drafter_the_shipped_file_measured_side_by_side():
    """The shipped neural pair's file holds every drafter measured in one run; the panel shows one row each, its
    figures the file's own (α, tokens a pass, the speed-up and the formula with its costs), and a file without
    them shows no table."""
    entry = F.shipped_pair_measurement()
    data = entry["data"]
    view = F.pair_view(data, Strings("en"), entry["file"])
    sbs = view["side_by_side"]
    measured = data["side_by_side"]["drafters"]
    assert len(sbs["rows"]) == len(measured) >= 5
    by_name = {row[0]: row for row in sbs["rows"]}
    eagle = by_name[Strings("en")("lab.drafter_eagle")]
    assert eagle[2] == f"{measured['eagle']['tokens_per_pass']:.2f}"
    assert eagle[3] == f"×{measured['eagle']['speedup']:.2f}"
    assert len({row[0] for row in sbs["rows"]}) == len(sbs["rows"])          # each drafter named apart
    bare = {k: v for k, v in data.items() if k != "side_by_side"}
    assert F.pair_view(bare, Strings("en"), entry["file"])["side_by_side"] is None


def test_the_tour_says_why_trees_come_last_on_the_measuring_computer():
    """Chapter 10's side-by-side table in the tour names the computer and the prompt it was timed on, and says why
    its order is not the plot's on paper: the lanes that computer is busy after, against the lanes a tree checks
    (both the file's own figures)."""
    entry = F.shipped_pair_measurement()
    data = entry["data"]
    for lang in ("zh", "en"):
        t = Strings(lang)
        title, why = F.tour_sbs_title(data, t), F.tour_sbs_why(data, t)
        assert data["device"]["name"] in title and data["settings"]["prompt"] in title
        trees = max(d["lanes_per_pass"] for k, d in data["side_by_side"]["drafters"].items() if k.startswith("tree"))
        assert f"{data['machine']['lanes_to_saturate']:.0f}" in why and f"{trees:.0f}" in why
    bare = {k: v for k, v in data.items() if k != "side_by_side"}
    assert F.tour_sbs_why(bare, Strings("en")) is None
