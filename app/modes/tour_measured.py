"""The tour's measured tables (chapters 8 and 10 on the network pair): the pair's measured costs beside the
roofline's, and every drafter timed side by side, both read from the shipped measurement file."""
from __future__ import annotations

from imgui_bundle import imgui

from app import ui
from app.lesson import measured


def draw_neural_measurement(ctl, scr, kept: str | None = None) -> None:
    """The neural pair's measured costs beside the roofline's, from its measurement file; kept: the words in its
    place while a question (this page's or a later one's) is not answered yet (the rows would answer it)."""
    t, c = ctl.t, ctl.colors
    entry = measured.shipped_pair_measurement()
    imgui.spacing()
    if kept:           # its rows answer the page's question (speed-up, tokens per second): after the reveal
        ui.wrapped(t(kept), c["muted"])
        return
    if entry is None:
        ui.wrapped(t("hw.no_measurements"), c["muted"])
        return
    view = measured.pair_view(entry["data"], t, entry["file"], only=measured.TOUR_PAIR_ROWS)
    ui.wrapped(t("tour.neural_measured", file=entry["file"]), c["muted"])
    above = measured.above_roofline_words(entry["data"], t)
    if above:                               # measured faster than "on paper": say why, or it reads as wrong
        ui.wrapped(above, c["muted"])
    if imgui.begin_table("tourneural", 3, imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_h):
        for col in ("hw.col_figure", "hw.col_measured", "hw.col_paper"):
            imgui.table_setup_column(t(col))
        imgui.table_headers_row()
        for label, figure, paper, _ in view["rows"]:
            imgui.table_next_row()
            for value, wrap in ((label, True), (figure, False), (paper, True)):
                imgui.table_next_column()
                ui.cell(scr, value, wrap=wrap)
        imgui.end_table()


def draw_drafters_measured(ctl, scr, met=None) -> None:
    """Every drafter timed side by side on one computer (the file's), titled with where and from which prompt;
    met: the drafters the lesson has introduced so far (None: all), the only rows shown (a row for EAGLE on the
    heads' page answered the question the EAGLE page asks)."""
    t, c = ctl.t, ctl.colors
    entry = measured.shipped_pair_measurement()
    view = measured.side_by_side_view(entry["data"], t, met) if entry is not None else None
    imgui.spacing()
    if view is None:
        ui.wrapped(t("hw.no_measurements"), c["muted"])
        return
    ui.side_by_side_table(scr, dict(view, title=measured.tour_sbs_title(entry["data"], t)), "toursbs",
                          columns=(0, 2, 3))       # α and the formula: the hardware panel (names wrap less)
    why = measured.tour_sbs_why(entry["data"], t) if view["trees"] else None
    if why:                                  # why the measured order is not the plot's on paper
        ui.wrapped(why, c["muted"])
