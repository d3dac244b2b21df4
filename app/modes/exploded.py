"""Exploded view (拆开来看) and the read-head cut-away (剖开读头): every part lifted out and named."""
from __future__ import annotations

from imgui_bundle import imgui

from app import ui
from app.modes.base import Panel

PARTS = ("bigdrum", "readhead", "smalldrum", "tape", "bridge", "mill", "cabinet", "tubes")


class ExplodedPanel(Panel):
    view = "exploded"

    def __init__(self, ctl, driver):
        super().__init__(ctl, driver)
        self.selected = None

    def enter(self) -> None:
        self.selected = None
        super().enter()

    def on_key(self, action: str) -> None:
        """Next/previous walk through the parts one at a time; before the first is the whole exploded table."""
        order = [None, *PARTS, "cutaway"]
        i = order.index(self.selected) + (1 if action == "next" else -1)
        self.select(order[max(0, min(len(order) - 1, i))])

    def select(self, part) -> None:
        self.selected = part
        self.ctl.set_view(part or "exploded")

    def draw(self, scr) -> None:
        t = self.ctl.t
        ui.begin_panel("##exploded", ui.panel_rect(scr))
        ui.heading(scr, t("mode.exploded"))
        ui.wrapped(t("exploded.explain"))
        if imgui.selectable(t("exploded.all"), self.selected is None)[0]:
            self.select(None)
        for part in PARTS:
            if imgui.selectable(t("part." + part), self.selected == part)[0]:
                self.select(part)
        if imgui.selectable(t("part.cutaway"), self.selected == "cutaway")[0]:
            self.select("cutaway")
        imgui.separator()
        if self.selected:
            ui.heading(scr, t("part." + self.selected), 1.1)
            ui.wrapped(t("partinfo." + self.selected))
        imgui.end()
