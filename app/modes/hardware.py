"""Hardware panel: on-paper numbers (models.hardware) beside measured ones (assets/measurements) and the toy's."""
from __future__ import annotations

import json

from imgui_bundle import imgui

from app import ui
from app.modes.base import Panel
from app.paths import MEASUREMENTS_DIR


def load_measurements() -> list[dict]:
    """Every measurement file, newest first; a file that does not parse is listed with its error."""
    out = []
    for path in sorted(MEASUREMENTS_DIR.glob("*.json")) if MEASUREMENTS_DIR.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            data["_file"] = path.name
            out.append(data)
        except (OSError, ValueError) as exc:
            out.append({"_file": path.name, "_error": str(exc)})
    return out


def _find(d: dict, *names):
    """First of several possible keys, searched one level deep (the bench JSON groups its figures)."""
    for n in names:
        if n in d:
            return d[n]
    for v in d.values():
        if isinstance(v, dict):
            for n in names:
                if n in v:
                    return v[n]
    return None


class HardwarePanel(Panel):
    view = "readhead"

    def __init__(self, app):
        super().__init__(app)
        self.plots = ui.PlotTextures(app)
        self._meas = None

    def measurements(self):
        if self._meas is None:
            self._meas = load_measurements()
        return self._meas

    def draw(self) -> None:
        app, t, s = self.app, self.app.t, self.app.settings
        c = app.colors
        ui.begin_panel("##hw", ui.panel_rect(app))
        ui.heading(app, t("hw.paper", device=s.device, model=s.model))
        try:
            r = app.session.roofline()
            ui.facts_table(app, [
                (t("fact.lanes"), f"{s.lanes}"), (t("fact.context"), f"{s.context:,}"),
                (t("fact.bytes_per_step"), f"{r['bytes_per_step'] / 1e9:.2f} GB"),
                (t("fact.ms_per_token"), f"{r['ms_per_token']:.3f} ms"),
                (t("fact.tokens_per_s"), f"{r['tokens_per_s']:,.0f}"),
                (t("fact.busy"), f"{100 * r['arithmetic_busy']:.2f}%"),
                (t("fact.lanes_to_saturate"), f"{r['lanes_to_saturate']:.0f}"),
            ])
        except Exception as exc:  # noqa: BLE001
            imgui.text_wrapped(f"{type(exc).__name__}: {exc}")
        imgui.spacing()
        ui.heading(app, t("hw.measured"), 1.1)
        meas = self.measurements()
        if not meas:
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("hw.no_measurements"))
        for m in meas[:3]:
            if "_error" in m:
                imgui.text_colored(imgui.ImVec4(*c["reject"]), f"{m['_file']}: {m['_error']}")
                continue
            dev = _find(m, "device", "device_name", "gpu") or "?"
            date = _find(m, "date", "timestamp", "measured_at") or "?"
            method = _find(m, "method", "how") or "?"
            imgui.text_colored(imgui.ImVec4(*c["accent"]), f"{m['_file']}")
            imgui.text_wrapped(t("hw.meta", device=dev, date=date, method=method))
            rows = []
            for key, label in (("ms_per_token", "fact.ms_per_token"), ("copy_bandwidth_gbs", "hw.copy_bw"),
                               ("bandwidth_gbs", "hw.copy_bw"), ("verify_cost_ratio", "hw.verify_ratio"),
                               ("c", "fact.c"), ("speedup", "hw.speedup")):
                v = _find(m, key)
                if isinstance(v, (int, float)):
                    rows.append((t(label), f"{v:,.3g}"))
            ui.facts_table(app, rows)
        imgui.spacing()
        ui.heading(app, t("hw.toy"), 1.1)
        run = app.session.run
        if run:
            ui.facts_table(app, [(t("fact.vocab"), f"{app.session.pair().V:,}"),
                                 (t("fact.alpha"), f"{run.alpha_generated:.3f}"),
                                 (t("fact.tpp_counted"), f"{run.tokens_per_pass_counted:.2f}")])
        imgui.spacing()
        self.plots.image("roofline", imgui.get_content_region_avail().x)
        imgui.end()
