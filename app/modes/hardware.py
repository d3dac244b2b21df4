"""Hardware panel: on-paper numbers (models.hardware) beside measured ones (assets/measurements) and the toy's."""
from __future__ import annotations

from imgui_bundle import imgui

from app import derived, pairs, ui
from app.lesson import measured
from app.lesson.facts import UNAVAILABLE
from app.modes.base import Panel
from app.session import NOT_MEASURED
from corpus.errors import InputError
from models.measurements import PAIR_SCHEMAS


def load_measurements() -> list[dict]:
    """Every measurement file, newest first: {'file', 'data'} or {'file', 'error'} (shown, never fatal)."""
    return measured.measurement_files()


class HardwarePanel(Panel):
    view = "readhead"

    def __init__(self, ctl, driver):
        super().__init__(ctl, driver)
        self.plots = ui.PlotTextures(ctl)
        self._meas = None
        self.selected: str | None = None     # file name picked in the combo; None = the newest
        self.shown: dict = {}                # what the last frame drew (tests read it)
        self.shown_live: dict | None = None  # the live measurement as the last frame drew it

    def measurements(self):
        if self._meas is None:
            try:
                self._meas = load_measurements()
            except UNAVAILABLE as exc:     # an unreadable folder is a message, not a crash
                self._meas = [{"file": str(measured.measurement_dir()), "error": f"{type(exc).__name__}: {exc}"}]
        return self._meas

    def current(self):
        """The file picked, else the newest one about the models on the table (a pair measurement for a neural
        pair, a device bench for the n-gram pair), else the newest."""
        meas = self.measurements()
        for e in meas:
            if e["file"] == self.selected:
                return e
        neural = self.ctl.session.neural
        for e in meas:
            if ((e.get("data") or {}).get("schema") in PAIR_SCHEMAS) == neural:
                return e
        return meas[0] if meas else None

    def stage_rect(self, scr):
        """Above the roofline plot, which takes the wide box under the table: the plot never covers the read
        head's lanes."""
        x, y, w, h = ui.narration_rect(scr)
        top = ui.bar_h(scr)
        return 0.0, top, w, y - top

    def draw(self, scr) -> None:
        ctl, t, s = self.ctl, self.ctl.t, self.ctl.settings
        c = ctl.colors
        muted = imgui.ImVec4(*c["muted"])
        ui.begin_panel("##hw", ui.panel_rect(scr))
        if ctl.session.neural:
            # The models on the table first: measured now on this computer, then their own long-run numbers; the
            # on-paper figures for the lab's device and model follow, under their own heading.
            custom = s.pair == pairs.CUSTOM            # the user's checkpoints, not the shipped pair
            ui.heading(scr, t("hw.live_custom" if custom else "hw.live"))
            self._draw_live(scr, t, c, muted)
            imgui.spacing()
            ui.heading(scr, t("hw.custom_own" if custom else "hw.neural_own"), 1.1)
            ui.facts_table(scr, self.toy_rows())
            imgui.spacing()
        ui.heading(scr, t("hw.paper", device=s.device, model=s.model), 1.1 if ctl.session.neural else 1.0)
        try:
            ui.facts_table(scr, [(t(f"fact.{k}"), v) for k, v in self.paper_rows().items()])
        except InputError as exc:        # a device or model the hardware model does not know: say which
            ui.wrapped(str(exc))
        imgui.spacing()
        ui.heading(scr, t("hw.measured"), 1.1)
        self._draw_measurement(scr, t, s, c, muted)
        if not ctl.session.neural:
            imgui.spacing()
            ui.heading(scr, t("hw.toy"), 1.1)
            # The pair's own figures come from its long run (computed once per table and γ; '…' until it lands).
            ui.facts_table(scr, self.toy_rows())
        imgui.end()
        # The roofline gets the wide box under the table, where it can be read from the back row.
        ui.begin_panel("##hwplot", ui.narration_rect(scr), bg_alpha=0.9)
        avail = imgui.get_content_region_avail()
        self.plots.image(scr, "roofline_computer", avail.x, height=avail.y)    # this computer beside
        imgui.end()

    # ---- the neural pair measured live on this machine (app.session.BenchWorker) --------------------------
    def enter(self) -> None:
        super().enter()
        if self.ctl.session.neural and not self.ctl.scripted:
            worker = self.ctl.bench_worker
            if worker.result()[0] is None and worker.result()[1] is None:
                worker.start()                 # measured when the panel is first shown for this pair and γ

    def live(self) -> dict | None:
        """The live measurement's view (app.lesson.facts.pair_view), {'progress': note} while it runs, {'error': line}
        when it failed, or None before it has started."""
        ctl = self.ctl
        worker = ctl.bench_worker
        try:
            r, err = worker.result(scripted=ctl.scripted)
        except NOT_MEASURED as exc:    # a measurement that fails is a message, never a crash
            r, err = None, f"{type(exc).__name__}: {exc}"
        if worker.running():
            return {"progress": ctl.t("hw.live_progress", step=worker.step, note=worker.progress or "…")}
        if err is not None:
            return {"error": err}
        if r is None:
            return None
        return measured.pair_view(r, ctl.t)

    def _draw_live(self, scr, t, c, muted) -> None:
        view = self.live()
        self.shown_live = view
        if view is None or view.get("error"):
            if view is not None:
                ui.wrapped(view["error"], color=c["reject"])
            if imgui.button(t("hw.live_start")):
                self.ctl.bench_worker.start()
            return
        if "progress" in view:
            imgui.text_colored(imgui.ImVec4(*c["accent"]), view["progress"])
            return
        for line in view["meta"]:
            ui.wrapped(line, color=c["muted"])
        self._rows_table(scr, "hwlive", view["rows"], t)
        for note in view["notes"]:
            ui.wrapped(note, color=c["muted"])
        self._side_by_side(scr, view.get("side_by_side"))
        if imgui.button(t("hw.live_again")):
            self.ctl.bench_worker.start()

    def _side_by_side(self, scr, sbs) -> None:
        """Every drafter measured side by side in the file: α, tokens a pass, the speed-up and its formula."""
        if sbs:
            ui.side_by_side_table(scr, sbs, "hwsbs")

    def _rows_table(self, scr, name: str, rows, t) -> None:
        flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_h
        if rows and imgui.begin_table(name, 3, flags):
            imgui.table_setup_column(t("hw.col_figure"))
            imgui.table_setup_column(t("hw.col_measured"))
            imgui.table_setup_column(t("hw.col_paper"))
            imgui.table_headers_row()
            for label, figure, paper, method in rows:
                imgui.table_next_row()
                imgui.table_next_column()
                ui.cell(scr, label)
                if method and imgui.is_item_hovered():
                    imgui.set_tooltip(method)
                imgui.table_next_column()
                ui.cell(scr, figure, wrap=False)
                if method and imgui.is_item_hovered():
                    imgui.set_tooltip(method)
                imgui.table_next_column()
                ui.cell(scr, paper)
            imgui.end_table()

    def paper_rows(self) -> dict[str, str]:
        """The on-paper rows: fact name -> the value shown (models.hardware.roofline for the lab's settings)."""
        s = self.ctl.settings
        r = derived.roofline(s.device, s.model, s.lanes, s.context)
        return {"lanes": f"{s.lanes}", "context": f"{s.context:,}",
                "bytes_per_step": f"{r.bytes_per_step / 1e9:.2f} GB",
                "ms_per_token": f"{r.ms_per_token:.3f} ms",
                "tokens_per_s": f"{r.tokens_per_s:,.0f}",
                "busy": f"{100 * r.arithmetic_busy:.1f}%",
                # what the mill shows while the big drum checks γ + 1 positions per sequence
                "busy_spec": self.ctl.facts()["busy_spec"],
                "lanes_to_saturate": f"{r.lanes_to_saturate:.0f}"}

    def facts_shown(self) -> dict[str, str]:
        f = self.ctl.facts()
        try:
            rows = self.paper_rows()
        except UNAVAILABLE:            # the panel shows the error instead
            rows = {}
        out = {**rows, **{k: f[k] for k in ("vocab", "alpha", "tpp_formula", "tpp_counted")}}
        live = self.live() if self.ctl.session.neural else None
        if live is not None and "rows" in live:
            out.update({f"live: {label}": f"{measured} | {paper}" for label, measured, paper, _ in live["rows"]})
        return out

    def toy_rows(self) -> list[tuple[str, str]]:
        """The toy's rows: its vocabulary and the pair's long-run α and tokens per pass (app.lesson.facts)."""
        t, f = self.ctl.t, self.ctl.facts()
        vocab = "fact.vocab_neural" if self.ctl.session.neural else "fact.vocab"
        return [(t(vocab if k == "vocab" else f"fact.{k}"), f[k]) for k in ("vocab", "alpha", "tpp_formula",
                                                                              "tpp_counted")]

    def _draw_measurement(self, scr, t, s, c, muted) -> None:
        meas = self.measurements()
        entry = self.current()
        if entry is None:
            self.shown = {"files": [], "message": t("hw.no_measurements")}
            imgui.text_colored(muted, t("hw.no_measurements"))
            return
        if len(meas) > 1:        # several runs (a CPU rehearsal, the H200 file): the teacher picks one
            imgui.set_next_item_width(imgui.get_content_region_avail().x * 0.6)
            if imgui.begin_combo(t("hw.pick"), entry["file"]):
                for e in meas:
                    if imgui.selectable(e["file"], e is entry)[0]:
                        self.selected = e["file"]
                imgui.end_combo()
        try:
            view = measured.measurement_view(entry, t, s.device, s.model)
        except (*UNAVAILABLE, TypeError, AttributeError) as exc:   # a file of an odd shape is a message, not a crash
            view = {"file": entry["file"], "error": t("hw.bad_file", file=entry["file"],
                                                      error=f"{type(exc).__name__}: {exc}")}
        self.shown = dict(view, files=[e["file"] for e in meas])
        if view.get("error"):
            ui.wrapped(view["error"], color=c["reject"])
            return
        if len(meas) == 1:       # with several, the combo already names the file
            imgui.text_colored(imgui.ImVec4(*c["accent"]), view["file"])
        for line in view["meta"]:
            ui.wrapped(line)
        if view.get("where"):
            ui.wrapped(view["where"])
        if view.get("note"):
            imgui.text_colored(imgui.ImVec4(*c["accent"]), view["note"])
        rows = view["rows"]
        self._rows_table(scr, "hwmeas", rows, t)
        if view.get("scaled"):
            ui.wrapped(view["scaled"], color=c["accent"])
        for note in view["notes"]:
            ui.wrapped(note, color=c["muted"])
        self._side_by_side(scr, view.get("side_by_side"))
        methods = [(label, m) for label, _, _, m in rows if m]
        if methods and imgui.tree_node(t("hw.methods")):
            seen = set()
            for label, m in methods:
                if m not in seen:
                    seen.add(m)
                    ui.wrapped(f"{label}: {m}", color=c["muted"])
            imgui.tree_pop()
