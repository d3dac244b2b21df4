"""Legible on a projector at 1280x720: every mode and every tour beat, in both languages, draws no text smaller
than the minimum (scenes.legibility), no two boxes overlap (panels, the table, its plates and readouts, each
plot's texts), no panel clips its text or shows a scrollbar where it should fit. And the measures can fail."""
from __future__ import annotations

import numpy as np
import pytest

from scenes.legibility import MIN_TEXT_PX, min_text_px, overlapping_pairs

SIZE = (1280, 720)
# The hardware panel lists every measured figure beside its on-paper value: at 720p it scrolls (there is
# more to read than fits), and that scrollbar is a real one. No other panel may show one.
MAY_SCROLL = {"##hw"}


def _app(lang: str, mode: str = "tour", **settings):
    from app.controller import Controller
    from app.settings import AppSettings
    from app.window import App
    ctl = Controller(AppSettings(language=lang, mode=mode, **settings), persist=False, scripted=True)
    return ctl, App(ctl, size=SIZE)


def _settle(ctl, app, frames: int = 3) -> dict:
    """Run the table's played pass and any camera flight to their ends, then draw (the tour's narration box
    fits itself to the page's words over a frame)."""
    from app.window import FIXED_DT
    for _ in range(frames):
        ctl.driver.advance(30.0)
        app.draw_frame(FIXED_DT)
    return dict(app.legibility)


def _check(leg: dict, where: str) -> None:
    assert leg["min_text_px"] >= MIN_TEXT_PX - 1e-6, (where, leg["min_text_px"])
    assert leg["overlaps"] == [], (where, leg["overlaps"])
    assert leg["clipped"] == [], (where, leg["clipped"])
    assert set(leg["scrollbars"]) <= MAY_SCROLL, (where, leg["scrollbars"])


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_mode_is_legible_at_720p(lang):
    from app.settings import MODES
    ctl, app = _app(lang, "lab")
    try:
        for mode in MODES:
            ctl.set_mode(mode)
            _check(_settle(ctl, app), f"{lang} {mode}")
        # The quiz in class mode fills the screen, answered and revealed.
        quiz = ctl.modes["quiz"]
        quiz.set_class_mode(True)
        quiz.answer(1)
        quiz.reveal()
        _check(_settle(ctl, app), f"{lang} quiz class mode")
        quiz.goto(len(quiz.questions()))
        _check(_settle(ctl, app), f"{lang} quiz summary")
    finally:
        app.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_mode_is_legible_with_the_neural_pair(lang):
    """The lab's models switch, its note on the loaded pair, the hardware panel's live measurement: legible too."""
    pytest.importorskip("torch")
    from app.settings import MODES
    ctl, app = _app(lang, "lab", pair="neural")
    try:
        for mode in MODES:
            ctl.set_mode(mode)
            _check(_settle(ctl, app), f"{lang} {mode} neural")
        assert ctl.modes["hardware"].shown_live["rows"]          # the live measurement was drawn
    finally:
        app.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_lab_with_every_drafter_and_plot_is_legible_at_720p(lang):
    """Each drafter in the lab, each plot tab: the drafters plot (eight points and their legend), too big for the
    room under the knobs, is drawn over the table where its text reads; the panel says so."""
    from app.ui import window_boxes
    ctl, app = _app(lang, "lab")
    try:
        for name in ("chain", "lookup", "heads", "tree"):
            ctl.update(drafter=name)
            for plot in ("speedup", "drafters"):
                ctl.panel.plot = plot
                leg = _settle(ctl, app)
                _check(leg, f"{lang} lab {name} {plot}")
                over = [w["name"] for w in window_boxes()]
                assert ("##labplot" in over) == (plot == "drafters"), (name, plot, over)
    finally:
        app.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_tour_beat_is_legible_at_720p(lang):
    ctl, app = _app(lang, "tour", chapter=0)
    beats = 0
    try:
        ctl.tour.goto(0)
        ctl.panel.apply_chapter()
        seen = set()
        while (ctl.tour.chapter, ctl.tour.page, ctl.tour.acted) not in seen:
            st = ctl.tour
            seen.add((st.chapter, st.page, st.acted))
            where = f"{lang} chapter {st.chapter + 1} page {st.page + 1} acted {st.acted}"
            _check(_settle(ctl, app), where)
            if st.beat()[0] == ("tubes",):
                # The tubes' own numbers are what the page talks about: every readout, both TVs and every tube's
                # name stay above the floor (none left out as too small, at the round shown and after every round).
                import re
                lost = [t for t in ctl.driver.stage.legibility["hidden"] if re.match(r"^(TV |\.\d\d|1$|rest$|其他$|.$)", t)]
                assert not lost, (where, lost)
            beats += 1
            ctl.do("next")
    finally:
        app.close()
    from app.lesson.tour import CHAPTERS, narration
    assert beats == sum(len(narration(c.slug).pages) + sum(1 for p in narration(c.slug).pages if p.action)
                        for c in CHAPTERS)


def test_the_measures_can_fail():
    """A panel over the table, text below the minimum, a scrollbar in the mode bar: each is reported."""
    from app import ui
    ctl, app = _app("en", "lab")
    try:
        leg = _settle(ctl, app, 2)
        assert leg["overlaps"] == []
        lab = ctl.panel
        lab.stage_rect = lambda scr: (0.0, ui.bar_h(scr), scr.w, scr.h * 0.8)      # the table under the panel
        leg = _settle(ctl, app, 1)
        assert ["##lab", "table"] in leg["overlaps"] or ["table", "##lab"] in leg["overlaps"]
        del lab.stage_rect
        ctl.update(ui_scale=0.75)
        leg = _settle(ctl, app, 1)
        assert leg["min_text_px"] < MIN_TEXT_PX       # below the default scale: reported as drawn
    finally:
        app.close()
    assert overlapping_pairs([("a", 0, 0, 10, 10), ("b", 9, 9, 10, 10), ("c", 10, 0, 5, 5)], tolerance=0.5) \
        == [("a", "b")]


def test_the_minimum_follows_the_picture():
    assert min_text_px(720) == MIN_TEXT_PX and min_text_px(1080) == 24 and min_text_px(300) == 14


def test_panel_text_is_measured_by_its_em():
    """ImGui sizes a font by its line: the shipped font's em is 1/1.448 of that, and the panels are sized so
    the em, not the line, meets the minimum (and reads as large as the table's labels)."""
    from app import ui
    from app.paths import resolve_font
    ratio = ui.em_ratio(resolve_font())
    assert ratio == pytest.approx(1000 / 1448)
    size = ui.panel_font_size(720, 1.0, ratio)
    assert size * ratio >= MIN_TEXT_PX and (size - 1) * ratio < MIN_TEXT_PX + 1
    assert ui.panel_font_size(1080, 1.0, ratio) * ratio >= 24


@pytest.mark.parametrize("view", ["table", "bigdrum", "readhead", "cutaway", "smalldrum", "tape", "bridge", "mill",
                                  "cabinet", "tubes", "exploded"])
def test_render_reports_min_text_and_overlaps(capsys, tmp_path, view):
    import json

    from app.cli import main
    assert main(["render", "--view", view, "--msaa", "0", "--lang", "both", "--out", str(tmp_path / "v.png"),
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["min_text_px"] >= MIN_TEXT_PX - 1e-6 and d["overlaps"] == [], (view, d)
    assert isinstance(d["hidden_labels"], int)


def test_ui_scale_steps_by_a_quarter():
    from app.controller import Controller
    from app.settings import AppSettings
    ctl = Controller(AppSettings(ui_scale=1.0), persist=False, scripted=True).start()
    seen = []
    for _ in range(3):
        ctl.do("scale_up")
        seen.append(ctl.settings.ui_scale)
    assert seen == [1.25, 1.5, 1.75]
    for _ in range(5):
        ctl.do("scale_down")
    assert ctl.settings.ui_scale == 0.75        # the smallest step: text still at least 14 px (scenes.legibility)


def test_larger_ui_scale_gives_larger_panel_text():
    from app import ui
    from app.paths import resolve_font
    r = ui.em_ratio(resolve_font())
    sizes = [ui.panel_font_size(720, s, r) for s in (0.75, 1.0, 1.25, 1.5)]
    assert sizes == sorted(sizes) and len(set(sizes)) == 4
    assert np.isclose(sizes[2] / sizes[1], 1.25, atol=0.05)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_chapter_6s_tubes_and_panel_read_the_same_round(lang):
    """While the tubes fill, the TV on each rack's base and the panel's TV are one round's, the round the HUD and
    the panel name (the panel used to show the 200th round's beside the tubes' seventh); after every round, the
    page's numbers are the last round's and so are the racks'."""
    from app.lesson.tour import CHAPTERS, narration
    from app.window import FIXED_DT
    slug = "06-same-as-target"
    pages = narration(slug).pages
    k = next(i for i, p in enumerate(pages) if p.ask)
    ctl, app = _app(lang, "tour", chapter=[c.slug for c in CHAPTERS].index(slug))
    try:
        ctl.tour.goto([c.slug for c in CHAPTERS].index(slug))
        ctl.panel.apply_chapter()
        ctl.tour.page = k
        ctl.panel.apply_page()
        _settle(ctl, app, 1)
        ctl.do("next")                                        # the tubes start to fill
        for seconds in (6.0, 7.0):
            for _ in range(int(seconds / 0.5)):           # the camera's flight first, then the rounds
                app.draw_frame(FIXED_DT)
                ctl.driver.advance(0.5)
            app.draw_frame(FIXED_DT)
            shown = ctl.panel.facts_shown()
            rnd = ctl.panel.tube_round_shown()
            assert shown["tube_round"] == f"{rnd + 1} / {ctl.tubes().rounds}" and 0 < rnd < ctl.tubes().rounds - 1
            on_table = sorted(b[0] for b in ctl.driver.stage.legibility["boxes"] if str(b[0]).startswith("TV "))
            assert on_table == sorted([f"TV {float(shown['tv_left']):.3f}", f"TV {float(shown['tv_right']):.3f}"]), \
                (on_table, shown)
        ctl.do("next")                                        # the pages after every round: the one with the TVs
        _settle(ctl, app)
        while "tv_left" not in ctl.panel.facts_shown():
            ctl.do("next")
            _settle(ctl, app)
        shown = ctl.panel.facts_shown()
        f = ctl.facts()
        assert shown["tv_left"] == f["tv_left"] and shown["tube_round"] == f"{ctl.tubes().rounds} / {ctl.tubes().rounds}"
        on_table = [b[0] for b in ctl.driver.stage.legibility["boxes"] if str(b[0]).startswith("TV ")]
        assert f"TV {float(f['tv_left']):.3f}" in on_table and f"TV {float(f['tv_right']):.3f}" in on_table
    finally:
        app.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_plot_keeps_its_text_above_the_floor_at_1080p(lang):
    """At a projector's 1080p a panel's plot is laid out with 24 px text: every text in it, the title included, is
    at least that (a title used to be set by matplotlib's own 12 pt, 16.7 px at any size), and none runs off the
    figure or onto another."""
    from app import figures, plots
    from app.controller import Controller
    from app.settings import AppSettings
    text_px = min_text_px(1080)
    ctl = Controller(AppSettings(language=lang, mode="lab", lanes=64, context=4096), persist=False,
                     scripted=True).start()
    for name in figures.plot_names(ctl) + figures.PAGE_PLOTS:
        shape = 1.05 if name == "drafters" else 1.6          # as ui.PlotTextures.image lays a panel's plot out
        fig = figures.make(ctl, name, (740, int(740 / shape)), text_px)
        plots.figure_rgba(fig)
        smallest, overlaps, cut = plots.text_report(fig)
        plots.close(fig)
        assert smallest >= text_px - 1e-6, (name, smallest)
        assert not cut, (name, cut)
