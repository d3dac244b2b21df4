"""The controller without a window: modes, the tour, the one update() path, the step-through's stops."""
from __future__ import annotations

import numpy as np
import pytest

from app.controller import Controller
from app.settings import FIELDS, LAB_FIELDS, RUN_FIELDS, STAGE_FIELDS, AppSettings
from corpus.errors import InputError


def _ctl(**settings) -> Controller:
    return Controller(AppSettings(language="en", **settings), persist=False, scripted=True).start()


def test_the_controller_needs_no_window():
    """No pygame, no GL: a fresh interpreter runs the controller through every mode without importing either."""
    import subprocess
    import sys
    from pathlib import Path
    code = ("import sys; from app.controller import Controller; from app.settings import AppSettings, MODES\n"
            "c = Controller(AppSettings(), persist=False, scripted=True).start()\n"
            "for m in MODES: c.do('mode_' + m); c.do('next'); c.do('prev')\n"
            "print(c.mode, c.state()['tokens_written'], 'pygame' in sys.modules, 'moderngl' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    mode, written, pygame, moderngl = out.stdout.split()
    assert mode == "quiz" and int(written) >= 12 and (pygame, moderngl) == ("False", "False")


def test_update_checks_applies_bumps_and_tells_listeners():
    ctl = _ctl(mode="lab")
    heard = []
    ctl.listeners.append(heard.append)
    rev = ctl.revision
    assert ctl.update(gamma=6, lanes=3) == {"gamma", "lanes"}
    assert (ctl.settings.gamma, ctl.settings.lanes, ctl.revision) == (6, 3, rev + 1)
    assert heard == [frozenset({"gamma", "lanes"})]
    assert ctl.update(gamma=6) == frozenset() and ctl.revision == rev + 1     # no change, no revision
    for bad in ({"seed": 2**31}, {"gamma": 0}, {"gamma": "4"}, {"top_p": float("nan")}, {"device": "abacus"},
                {"mode": "karaoke"}, {"prompt": ""}, {"nonsense": 1}):
        with pytest.raises(InputError):
            ctl.update(lanes=5, **bad)
        assert ctl.settings.lanes == 3              # nothing of a refused update is applied
    # A widget's overshoot is brought into range instead (the lab's typed seed).
    ctl.adjust(seed=-7, top_k=10**9)
    assert ctl.settings.seed == 0 and ctl.settings.top_k == FIELDS["top_k"].hi


def test_run_fields_replace_the_run_and_table_fields_do_not():
    ctl = _ctl(mode="lab")
    run = ctl.session.ensure()
    v = ctl.session.version
    ctl.update(c=0.3, lanes=8, context=100)           # what the table shows, not what the sampler draws
    assert ctl.session.ensure() is run and ctl.session.version == v
    ctl.update(seed=5)
    assert ctl.session.ensure() is not run and ctl.session.version == v + 1
    assert set(RUN_FIELDS) <= set(STAGE_FIELDS) <= set(FIELDS) and set(RUN_FIELDS) <= set(LAB_FIELDS)


def test_the_tour_sets_its_values_and_leaving_it_puts_the_labs_back():
    ctl = _ctl(mode="lab", gamma=7, lanes=3, context=100)
    ctl.do("mode_tour")
    ctl.tour.goto(1)
    ctl.panel.apply_chapter()                        # chapter 2: 64 lanes, the target alone
    assert (ctl.settings.lanes, ctl.settings.decoder, ctl.settings.gamma) == (64, "target", 4)
    assert ctl.lab()["lanes"] == 3 and ctl.saved_settings().lanes == 3
    assert all(tr.gamma == 0 for tr in ctl.session.ensure().traces)
    ctl.do("mode_lab")
    assert (ctl.settings.lanes, ctl.settings.decoder, ctl.settings.gamma, ctl.settings.context) == \
        (3, "speculative", 7, 100)
    assert all(tr.gamma == 7 for tr in ctl.session.ensure().traces)


def test_clicker_actions_walk_the_tour_and_blank_holds_it():
    ctl = _ctl(mode="tour")
    ctl.do("next")
    assert (ctl.tour.page, ctl.tour.acted) == (1, False)
    ctl.do("next")                                   # page 2 has an action: it runs first
    assert (ctl.tour.page, ctl.tour.acted) == (1, True)
    ctl.do("blank")
    ctl.do("next")                                   # a clicker key brings the picture back, nothing else
    assert not ctl.blank and (ctl.tour.page, ctl.tour.acted) == (1, True)
    ctl.do("fullscreen")
    ctl.do("screenshot")
    assert ctl.requests == ["fullscreen", "screenshot"]      # the window's to carry out
    ctl.do("language")
    assert ctl.settings.language == "zh" and ctl.t("mode.lab") != "lab"


def test_step_stops_come_from_the_trace_and_its_final_row():
    ctl = _ctl(mode="step", seed=5)
    run = ctl.session.ensure()
    stops = ctl.panel.stops()
    assert len(stops) == sum(tr.tested + (tr.n_accepted == tr.gamma) for tr in run.traces)
    rejected = 0
    for pos in range(len(stops)):
        ctl.step_pos = pos
        ex = ctl.panel.explanation()
        tr = run.traces[ex["step"]]
        if ex["kind"] == "test" and ex["verdict"] == "rejected":
            rejected += 1
            # The bars are the row the replacement was drawn from, as the rule computed it.
            top_id = ex["residual"][0][2]
            assert ex["residual"][0][1] == tr.final_row[top_id] == tr.final_row.max()
            res = np.maximum(0, tr.p_rows[ex["test"]] - tr.q_rows[ex["test"]])
            assert ex["residual"][0][1] == pytest.approx(res.max() / res.sum(), rel=1e-12)
    assert rejected > 0
    ctl.step_pos = 0
    ctl.do("next")
    ctl.do("next")
    assert ctl.step_pos == 2 and ctl.state()["step"]["position"] == 2


def test_a_bad_tour_file_is_an_error_at_load(tmp_path, monkeypatch):
    from app.lesson import tour
    good = {"title": {"zh": "甲", "en": "a"},
            "pages": [{"zh": "甲", "en": "a", "parts": ["tape"], "action": {"do": "play"}}]}
    parsed = tour.parse_narration(good, "x").pages[0]
    assert parsed.action.do == "play" and parsed.parts == ("tape",) and parsed.view == "table"
    assert parsed.hold is None and tour.parse_narration({**good, "pages": [{**good["pages"][0], "hold": "drafted"}]},
                                                        "x").pages[0].hold == "drafted"
    page = lambda **kw: {"pages": [{"zh": "甲", "en": "a", "parts": ["tape"], **kw}]}  # noqa: E731
    bad_cases = [
        (page(action={"do": "play", "step": 2}), "'step'"),
        (page(action={"do": "dance"}), "'do'"),
        (page(view="ceiling"), "unknown view 'ceiling'"),
        (page(view="bridge"), "unknown view 'bridge'"),          # a beat names parts; views only stand the table
        (page(hold="halfway"), "'hold' must be one of start, drafted, end"),
        (page(hold=["drafted"]), "'hold' must be one of"),
        (page(action={"do": "play", "view": "ceiling"}), "view"),
        (page(action={"do": "play", "pass": -1}), "'pass'"),
        (page(action={"do": "play", "kind": "count"}), "kind"),
        (page(action={"do": "checkpoint", "kind": "guess"}), "kind"),
        (page(action={"do": "play", "parts": ["drum"]}), "unknown part 'drum'"),
        (page(action={"do": "play", "parts": []}), "'parts'"),
        ({"pages": [{"zh": "甲", "en": "a"}]}, "'parts'"),             # every beat names what it talks about
        ({"pages": [{"zh": "甲", "en": "a", "parts": ["mill", "mill"]}]}, "twice"),
        ({"pages": [{"zh": "甲", "en": "a", "parts": "mill"}]}, "'parts'"),
        ({"pages": [{"zh": "甲", "parts": ["mill"]}]}, "'en'"),
        ({"pages": []}, "pages"),
        # numbers kept back need a question: the page's own, or the next page's
        (page(keep_back=["busy"], action={"do": "play"}), "'keep_back' needs a question"),
        (page(ask={"zh": "甲", "en": "a"}), "'ask'"),
    ]
    for change, needle in bad_cases:
        with pytest.raises(InputError, match=needle):
            tour.parse_narration({**good, **change}, "file.json")
    asks = {"zh": "甲", "en": "a", "parts": ["tape"], "ask": {"zh": "甲", "en": "a"}, "action": {"do": "play"}}
    two = tour.parse_narration({**good, "pages": [{**good["pages"][0], "keep_back": ["busy"]}, asks]}, "x").pages
    assert two[0].keep_back == ("busy",) and two[1].ask
    # Every shipped chapter loads through the schema, and chapter parameters are legal settings.
    from app.settings import check_value
    for ch in tour.CHAPTERS:
        assert tour.narration(ch.slug).pages
        for k, v in ch.params.items():
            assert check_value(k, v) == v


def test_every_mode_is_registered_once():
    """The mode bar's order (MODES), the modes the controller builds (MODE_PANELS) and the keys agree."""
    from app.keys import ACTIONS
    from app.modes import MODE_PANELS
    from app.settings import MODES
    assert tuple(MODE_PANELS) == MODES
    assert {a[5:] for a in ACTIONS if a.startswith("mode_")} == set(MODES)
