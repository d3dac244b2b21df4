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
            ui.wrapped(f"{type(exc).__name__}: {exc}")
        imgui.spacing()
        ui.heading(app, t("hw.measured"), 1.1)
        meas = self.measurements()
        if not meas:
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("hw.no_measurements"))
        for m in meas[:3]:
            if "_error" in m:
                imgui.text_colored(imgui.ImVec4(*c["reject"]), f"{m['_file']}: {m['_error']}")
                continue
            dev = m.get("device")
            dev = (dev.get("name") or dev.get("type")) if isinstance(dev, dict) else (dev or "?")
            fig = m.get("figures") if isinstance(m.get("figures"), dict) else {}
            model = ((m.get("models") or {}).get("target") or {}).get("name", "?")
            imgui.text_colored(imgui.ImVec4(*c["accent"]), f"{m['_file']}")
            ui.wrapped(t("hw.meta", device=dev, date=m.get("date", "?"),
                                 method=f"spectable bench · {model} · {m.get('dtype', '?')}"))
            rows = []
            for group, key, label, fmt in (("decode_batch1", "ms_per_token", "hw.ms_measured", "{:.3f} ms"),
                                           ("copy_bandwidth", "GB_per_s", "hw.copy_bw", "{:,.0f}"),
                                           ("matmul", "TFLOP_per_s", "hw.tflops", "{:,.1f}"),
                                           ("verify_cost", "ratio", "hw.verify_ratio", "{:.2f}×"),
                                           ("draft_cost", "c", "fact.c", "{:.3f}"),
                                           ("speculative", "speedup", "hw.speedup", "{:.2f}×")):
                v = (fig.get(group) or {}).get(key) if isinstance(fig.get(group), dict) else None
                if isinstance(v, (int, float)):
                    rows.append((t(label), fmt.format(v)))
            ui.facts_table(app, rows)
            note = (m.get("weights") or {}).get("note") if isinstance(m.get("weights"), dict) else None
            if note:
                imgui.text_colored(imgui.ImVec4(*c["muted"]), note)
        imgui.spacing()
        ui.heading(app, t("hw.toy"), 1.1)
        run = app.session.run
        if run:
            ui.facts_table(app, [(t("fact.vocab"), f"{app.session.pair().V:,}"),
                                 (t("fact.alpha"), f"{run.alpha_generated:.3f}"),
                                 (t("fact.tpp_counted"), f"{run.tokens_per_pass_counted:.2f}")])
        imgui.end()
        # The roofline gets the wide box under the table, where it can be read from the back row.
        ui.begin_panel("##hwplot", ui.narration_rect(app), bg_alpha=0.9)
        avail = imgui.get_content_region_avail()
        self.plots.image("roofline", avail.x, aspect=avail.x / max(avail.y, 1))
        imgui.end()

    def stage_rect(self):
        x, y, w, h = ui.narration_rect(self.app)
        top = ui.bar_h(self.app)
        return 0.0, top, w, y - top
