"""Lab mode (实验台): every knob of the run; the table, numbers and plots follow at once."""
from __future__ import annotations

from pathlib import Path

from imgui_bundle import imgui

from app import figures, pairs, ui
from app.modes.base import Panel
from app.session import NOT_MEASURED
from app.settings import FIELDS
from models.drafters import BASES, kind, names, node_count
from models import hardware


class LabPanel(Panel):
    view = "table"
    narration_frac = 0.34       # the results box under the table: four rows of figures and the text

    def __init__(self, ctl, driver):
        super().__init__(ctl, driver)
        self.plots = ui.PlotTextures(ctl)
        self.plot = "speedup"
        self.prompt_buf = ctl.settings.prompt
        self.open_more: bool | None = None     # open or fold "more" on the next frame (None: as the user left it)

    def draw(self, scr) -> None:
        ctl, t, s = self.ctl, self.ctl.t, self.ctl.settings
        c = ctl.colors
        ui.begin_panel("##lab", ui.panel_rect(scr))
        ui.heading(scr, t("mode.lab"))
        imgui.push_item_width(imgui.get_content_region_avail().x * 0.55)
        changed, self.prompt_buf = imgui.input_text(t("lab.prompt"), self.prompt_buf)
        new = {}
        if changed and self.prompt_buf:
            new["prompt"] = self.prompt_buf
        if ctl.session.error:
            imgui.text_colored(imgui.ImVec4(*c["reject"]), ctl.session.error)
        # Every widget's value goes through the controller (ctl.adjust: checked and brought into range).
        # ImGui sliders hold float32: round so 0.1 stays 0.1 (not 0.10000000149) in the run key and the file.
        self.drafter_widgets(scr, new)          # who drafts, and γ (a tree: its width and depth), on one line
        _, c_ = imgui.slider_float(t("lab.c"), s.c, 0.0, 1.0, "%.2f")
        _, temp = imgui.slider_float(t("lab.temperature"), s.temperature, 0.0, 2.0, "%.2f")
        new["c"], new["temperature"] = round(c_, 4), round(temp, 4)
        _, new["seed"] = imgui.input_int(t("lab.seed"), s.seed)
        _, new["steps"] = imgui.slider_int(t("lab.steps"), s.steps, 1, 60)
        _, new["lanes"] = imgui.slider_int(t("lab.lanes"), s.lanes, 1, 512, flags=imgui.SliderFlags_.logarithmic)
        _, new["context"] = imgui.slider_int(t("lab.context"), s.context, 1, 131072,
                                             flags=imgui.SliderFlags_.logarithmic)
        devices = self.devices()
        room = imgui.get_content_region_avail().x          # the device and the weights share one line
        imgui.set_next_item_width(room * 0.34)
        if devices and imgui.begin_combo(t("lab.device"), s.device):
            for d in devices:
                if imgui.selectable(d, d == s.device)[0]:
                    new["device"] = d
            imgui.end_combo()
        imgui.same_line()
        imgui.set_next_item_width(room * 0.2)
        self.weights_widget(new)
        # Sampling details and the tokenizer, folded away: the panel's first screen fits a projector at 720p.
        if self.open_more is not None:         # a screenshot or test opens (or folds) it, as a click would
            imgui.set_next_item_open(self.open_more)
            self.open_more = None
        if imgui.collapsing_header(t("lab.more")):
            # Which models drive the table: the counted n-gram pair, the shipped neural pair, your checkpoints.
            imgui.text(t("lab.pair"))
            for name in pairs.choices():
                imgui.same_line()
                if imgui.radio_button(self.pair_label(name), s.pair == name):
                    new["pair"] = name
            if pairs.is_neural(s.pair):
                ui.wrapped(self.pair_note(), color=c["muted"])
            _, new["top_k"] = imgui.slider_int(t("lab.top_k"), s.top_k, 0, 50)
            _, top_p = imgui.slider_float(t("lab.top_p"), s.top_p, 0.05, 1.0, "%.2f")
            new["top_p"] = round(top_p, 4)
            if not pairs.is_neural(s.pair):          # a neural pair has its own vocabulary
                if imgui.radio_button(t("lab.char"), s.tokens == "char"):
                    new["tokens"] = "char"
                imgui.same_line()
                if imgui.radio_button(t("lab.word"), s.tokens == "word"):
                    new["tokens"] = "word"
            self.tree_details(new)
        imgui.pop_item_width()
        ctl.adjust(**new)
        imgui.separator()
        # The plot tabs on one line, wrapping to the next only when the panel is too narrow for them all.
        room = imgui.get_content_region_avail().x
        used = 0.0
        style = imgui.get_style()
        tabs = [n for n in ("speedup", "tpp", "roofline", "drafters") if n in figures.plot_names(ctl)]
        if self.plot not in tabs:
            self.plot = "speedup"
        for k, name in enumerate(tabs):
            label = t("plot.tab." + name)
            w = imgui.calc_text_size(label).x + imgui.get_frame_height() + style.item_inner_spacing.x
            if k and used + style.item_spacing.x + w <= room:
                imgui.same_line()
                used += style.item_spacing.x + w
            else:
                used = w
            if imgui.radio_button(label, self.plot == name):
                self.plot = name
        width, room = imgui.get_content_region_avail()
        big = self.plot == "drafters" and room < 0.8 * width / 1.05
        if big:
            ui.wrapped(t("lab.plot_over_table"), c["muted"])
        else:
            self.plots.image(scr, self.plot, width)
        imgui.end()
        if big:
            # Eight drafters and their legend do not fit under the knobs: the plot is drawn over the table, at a
            # size its text and points can be read at, while its tab is chosen.
            ui.begin_panel("##labplot", self.stage_rect(scr), bg_alpha=0.96)
            self.plots.image(scr, self.plot, imgui.get_content_region_avail().x)
            imgui.end()
        # Lower left, under the table: the text the run wrote and what it adds up to.
        ui.begin_panel("##labresult", ui.narration_rect(scr), bg_alpha=0.9)
        self.draw_text(scr)
        imgui.separator()
        f = ctl.facts()
        dk = kind(s.drafter)
        if dk.formulas:
            rows = [(t("fact.alpha"), f["alpha"]), (t("fact.tpp_counted"), f["tpp_counted"]),
                    (t("fact.tpp_formula"), f["tpp_formula"]), (t("fact.speedup_now"), f["speedup_now"]),
                    (t("fact.best_gamma_speedup"), f"γ = {f['best_gamma']} → {f['best_speedup']}")]
        else:
            # The chain's formulas do not describe the other drafters: their counts, and the roofline's speedup.
            rows = [(t("fact.drafter_kept"), f["drafter_run_kept"]), (t("fact.drafter_tpp"), f["drafter_run_tpp"]),
                    (t("fact.drafter_lanes"), f["drafter_run_lanes"]),
                    (t("fact.drafter_speedup"), f["drafter_run_speedup"])]
        rows += [(t("fact.tokens_per_s"), f["tokens_per_s"]), (t("fact.busy"), f["busy"]),
                 (t("fact.busy_spec" if dk.gamma_knob else "fact.busy_tree", lanes=f["spec_lanes"]),
                  f["busy_spec"])]
        if imgui.begin_table("labfacts", 4, imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_h):
            # Each value column as wide as its widest value (never cut); the names share the rest and wrap.
            pad = 2 * imgui.get_style().cell_padding.x
            for k, name in enumerate(("a", "av", "b", "bv")):
                if k % 2:
                    widest = max(imgui.calc_text_size(v).x for _, v in rows[k // 2::2]) + pad
                    imgui.table_setup_column(name, imgui.TableColumnFlags_.width_fixed, widest)
                else:
                    imgui.table_setup_column(name, imgui.TableColumnFlags_.width_stretch)
            for i in range(0, len(rows), 2):
                imgui.table_next_row()
                for label, value in rows[i:i + 2]:
                    imgui.table_next_column()
                    ui.cell(scr, label)
                    imgui.table_next_column()
                    ui.cell(scr, value, c["accent"], wrap=False)
            imgui.end_table()
        imgui.end()

    def pair_label(self, name: str) -> str:
        if name == pairs.CUSTOM:
            cp = pairs.custom()
            return self.ctl.t("lab.pair_custom", name=Path(cp.target).name if cp else "?")
        return self.ctl.t(f"lab.pair_{name}")

    def pair_note(self) -> str:
        """What the neural pair is: its models' parameters and vocabulary, from the loaded checkpoints."""
        ctl = self.ctl
        try:
            pair = ctl.session.pair()
        except NOT_MEASURED as exc:    # a checkpoint that cannot load (torch: RuntimeError) is shown, not fatal
            return f"{type(exc).__name__}: {exc}"
        n = pair.params
        return ctl.t("lab.pair_note", target=f"{n['target'] / 1e6:.2f}M",
                     draft=f"{n['draft'] / 1e6:.2f}M" if n["draft"] is not None else ctl.t("lab.pair_no_draft"),
                     vocab=f"{pair.V:,}")

    def drafter_widgets(self, scr, new: dict) -> None:
        """One line: who drafts (a menu, what each one is on hover), then γ, or for a tree its width and depth (which
        replace γ; its nodes and lanes on hover). Where a tree's candidates come from and how siblings are drawn sit
        under "more". Every value goes through the controller like every knob."""
        t, s = self.ctl.t, self.ctl.settings
        full = imgui.calc_item_width()
        imgui.push_item_width(full * 0.42)
        if imgui.begin_combo(t("lab.drafter"), t(f"lab.drafter_{s.drafter}")):
            for name in names():
                if imgui.selectable(t(f"lab.drafter_{name}"), s.drafter == name)[0]:
                    new["drafter"] = name
                imgui.set_item_tooltip(t(f"lab.note.{name}"))
            imgui.end_combo()
        imgui.set_item_tooltip(t(f"lab.note.{s.drafter}"))
        imgui.pop_item_width()
        imgui.same_line()
        if kind(s.drafter).gamma_knob:
            imgui.push_item_width(full * 0.4)
            _, new["gamma"] = imgui.slider_int("γ", s.gamma, *FIELDS["gamma"].int_range())
            imgui.set_item_tooltip(t("lab.gamma"))
            imgui.pop_item_width()
        if "tree_width" not in kind(s.drafter).options:
            return
        n = node_count([s.tree_width] * s.tree_depth)
        tip = t("lab.tree_nodes", nodes=n, lanes=n + 1) + "  " + t("lab.gamma_tree")
        imgui.push_item_width(full * 0.28)
        _, new["tree_width"] = imgui.slider_int("##tree_width", s.tree_width, 1, 4, t("lab.tree_width_fmt"))
        imgui.set_item_tooltip(tip)
        imgui.same_line()
        _, new["tree_depth"] = imgui.slider_int("##tree_depth", s.tree_depth, 1, 4, t("lab.tree_depth_fmt"))
        imgui.set_item_tooltip(tip)
        imgui.pop_item_width()

    def tree_details(self, new: dict) -> None:
        """Under "more": where a tree's candidates come from, how siblings are drawn (and that its depth is γ)."""
        t, s = self.ctl.t, self.ctl.settings
        if "tree_from" not in kind(s.drafter).options:
            return
        pair = self.ctl.session.pair()
        network = pairs.is_neural(s.pair)
        for base in BASES:
            if kind(base).problem_on(pair):          # EAGLE on the counted pair, heads on a network without them
                continue
            word = "lab.tree_from_chain_network" if network and base == "chain" else f"lab.tree_from_{base}"
            if imgui.radio_button(t(word), s.tree_from == base):
                new["tree_from"] = base
            imgui.same_line()
        imgui.new_line()
        for sampling in ("iid", "distinct"):
            if sampling == "distinct":
                imgui.same_line()
            if imgui.radio_button(t(f"lab.sampling_{sampling}"), s.tree_sampling == sampling):
                new["tree_sampling"] = sampling
        n = node_count([s.tree_width] * s.tree_depth)
        ui.wrapped(t("lab.tree_nodes", nodes=n, lanes=n + 1) + "  " + t("lab.gamma_tree"), self.ctl.colors["muted"])

    def facts_shown(self) -> dict[str, str]:
        f = self.ctl.facts()
        mine = ("alpha", "tpp_counted", "tpp_formula", "speedup_now", "best_gamma", "best_speedup") \
            if kind(self.ctl.settings.drafter).formulas else \
            ("drafter_run_kept", "drafter_run_tpp", "drafter_run_lanes", "drafter_run_speedup")
        return {k: f[k] for k in mine + ("tokens_per_s", "busy", "busy_spec", "bytes_per_step")}

    def stage_rect(self, scr):
        x, y, w, h = ui.narration_rect(scr)
        top = ui.bar_h(scr)
        return 0.0, top, w, y - top

    def weights_widget(self, new: dict) -> None:
        """The target's weight format on paper (bf16, int8, int4): fewer bytes a pass, the roofline moves."""
        s, t = self.ctl.settings, self.ctl.t
        current = hardware.get_model(s.model)
        if imgui.begin_combo(t("lab.weights"), current.weights):
            for fmt in hardware.WEIGHT_FORMATS:
                if imgui.selectable(fmt, fmt == current.weights)[0]:
                    new["model"] = hardware.with_weights(s.model, fmt)
            imgui.end_combo()

    def devices(self) -> list[str]:
        return list(hardware.DEVICES)

    def draw_text(self, scr) -> None:
        """The written text: prompt muted, accepted guesses copper, target-written tokens blue."""
        ctl = self.ctl
        run = ctl.session.run
        if not run:
            return
        pair = ctl.session.pair()
        c = ctl.colors
        imgui.text_colored(imgui.ImVec4(*c["muted"]), ctl.t("lab.text"))
        w = imgui.get_content_region_avail().x
        x = 0.0
        ui.push_font(scr, 1.25)
        pieces = [(pair.display(i), c["muted"]) for i in run.prompt_ids]
        for tr in run.traces:
            for k, tok in enumerate(tr.tokens_written):
                pieces.append((pair.display(tok), c["accent"] if k < tr.n_accepted else c["target"]))
        for text, col in pieces[-160:]:
            tw = imgui.calc_text_size(text).x
            if x > 0 and x + tw < w:
                imgui.same_line(0, 0)
            else:
                x = 0.0
            imgui.text_colored(imgui.ImVec4(*col), text)
            x += tw
        ui.pop_font()
