"""A fifth drafter, written and registered here only (no product file knows it), runs everywhere a drafter runs: the
sampler (exact by enumeration), the settings and the command line, the lab's run and facts, the step-through, the
test tubes, the drafters' comparison and the window (the table: tests/test_scene_drafter_plugin.py). It is what the
registry promises: adding a drafter is its module, its registration and its tests.

The drafter: greedy drafting, the draft model's most likely token at each position. Its proposal is a function of
the context alone, so q is one-hot at the guess and the one rule keeps the text exactly p-distributed."""
from __future__ import annotations

import numpy as np
import pytest

from models.drafters import DRUM, DraftCost, DrafterKind, FirstGuess, kind, names, registered
from models.drafters.base import ChainProposal, Drafter, one_hot_rows

REPEAT = "我们一同走出去，我们"      # our own words, not the book's


class GreedyDrafter(Drafter):
    name = "greedy"
    deterministic = True

    def propose(self, rows, context, gamma, u) -> ChainProposal:
        tail = list(context[-2:])
        guesses: list[int] = []
        backed = []
        for _ in range(gamma):
            q, bo = rows.draft_row(tail + guesses)
            guesses.append(int(np.argmax(q)))            # ties: the lowest id
            backed.append(bo)
        return ChainProposal(guesses, one_hot_rows(guesses, rows.pair.V), backed)

    def first_guess(self, rows, context) -> FirstGuess:
        q, _ = rows.draft_row(context)
        return FirstGuess(one_hot_rows([int(np.argmax(q))], len(q))[0], copied=True)

    def cost(self, gamma: int) -> DraftCost:
        return DraftCost(draft_runs=gamma, note="γ greedy runs of the draft model")


GREEDY = DrafterKind("greedy", lambda pair, options, heads: GreedyDrafter(), draft_model=True, look=DRUM,
                     hue="#e377c2")


@pytest.fixture
def greedy():
    with registered(GREEDY) as k:
        yield k
    assert "greedy" not in names()           # gone again: no other test sees it


def controller(**values):
    from app.controller import Controller
    from app.settings import AppSettings
    return Controller(AppSettings(mode="lab", **values), persist=False, scripted=True).start()


# ------------------------------------------------------------------ the rule and the sampler
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_the_plugged_in_drafter_is_exact_by_enumeration(seed, gamma):
    from models.sampler import SamplerSettings, SpeculativeSampler
    from tests.core_helpers import TablePair
    from tests.test_core_drafters import _assert_p, _assert_pp, _tables, first_tokens
    rng = np.random.default_rng(seed)
    p_t, q_t = _tables(rng)
    s = SpeculativeSampler(TablePair(p_t, q_t), SamplerSettings(gamma=gamma), drafter=GreedyDrafter())
    _assert_p(first_tokens(s, [1], 1), p_t[1], 4)
    _assert_pp(first_tokens(s, [1], 2), p_t, 1, 4)


def test_a_registered_drafter_is_a_setting_and_a_command_line_choice(greedy, capsys):
    from app.cli import main
    from app.settings import FIELDS, check_value
    assert "greedy" in FIELDS["drafter"].legal() and check_value("drafter", "greedy") == "greedy"
    rc = main(["step", "--drafter", "greedy", "--prefix", "慢慢", "--steps", "2", "--json"])
    import json
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["drafter"] == "greedy" and all(st["drafter"] == "greedy" for st in out["steps"])


def test_an_unregistered_drafter_is_not_a_choice():
    from app.settings import FIELDS, clamp_value
    assert "greedy" not in FIELDS["drafter"].legal() and clamp_value("drafter", "greedy") == "chain"


# ------------------------------------------------------------------ the lab, the step-through, the tubes
def test_the_lab_runs_it_and_counts_its_run(greedy):
    ctl = controller(prompt=REPEAT, drafter="greedy")
    run = ctl.session.ensure()
    assert ctl.session.error is None and run is not None
    pair = ctl.session.pair()
    for tr in run.traces:
        assert tr.drafter == "greedy" and len(tr.guesses) == tr.gamma == 4
        for i, x in enumerate(tr.guesses):     # each guess is the draft's argmax after the ones before it
            q, _ = pair.draft_row(list(tr.context[-2:]) + tr.guesses[:i])
            assert x == int(np.argmax(q)) and tr.q_rows[i][x] == 1.0
    st = ctl.state()
    assert st["drafter"] == "greedy"
    # not the chain's formulas: this run's counts and the roofline's speedup from them (its cost: γ draft runs)
    assert {"drafter_run_kept", "drafter_run_tpp", "drafter_run_speedup"} <= set(st["facts"])
    assert "tpp_formula" not in st["facts"]
    assert kind("greedy").positions({}, 4) + 1 == run.traces[0].lanes_lit


def test_the_step_through_explains_its_one_hot_guesses(greedy):
    ctl = controller(prompt=REPEAT, drafter="greedy")
    run = ctl.session.ensure()
    panel = ctl.modes["step"]
    tests = 0
    for pos in range(len(panel.stops())):
        ctl.step_pos = pos
        e = panel.explanation()
        assert e["drafter"] == "greedy" and e["look"] == DRUM
        if e["kind"] != "test":
            continue
        tests += 1
        tr = run.traces[e["step"]]
        assert e["q"] == 1.0 and e["ratio"] == pytest.approx(e["p"]) and e["guess_id"] == tr.guesses[e["test"]]
    assert tests == sum(tr.tested for tr in run.traces)


def test_the_tubes_run_it_and_stay_exact(greedy):
    ctl = controller(drafter="greedy")
    assert ctl.modes["tubes"].rules() == ("exact", "resample_from_p", "exact_match_only", "draft_only", "typical")
    res = ctl.tube_worker.get()
    assert res.drafter == "greedy" and res.proposed
    assert res.chi2_p_right > 1e-3 and res.tv_right < 0.05


def test_the_comparison_counts_it_beside_the_others(greedy):
    from models.drafter_analytics import compare_drafters
    from models.ngram import NGramPair
    from models.sampler import SamplerSettings
    points = compare_drafters(NGramPair.load(), SamplerSettings(gamma=3, seed=2), ["孔乙"], 60)
    mine = [p for p in points if p["drafter"] == "greedy"]
    assert len(mine) == 1 and mine[0]["lanes_per_pass"] == 4.0 and mine[0]["tokens_per_pass"] >= 1.0


@pytest.mark.parametrize("mode", ["lab", "step", "tubes"])
def test_the_program_draws_each_mode_with_it(greedy, mode, capsys, tmp_path):
    """The window (offscreen) with the drafter chosen on the command line: the mode draws, the state says who
    drafts (the menus name it by its key, since its words are in no catalog: a gap visible, never a crash)."""
    from tests.app_helpers import run_app
    st = run_app(capsys, tmp_path, "--no-save", "--mode", mode, "--drafter", "greedy", "--prompt", REPEAT)
    assert st["mode"] == mode and st["drafter"] == "greedy" and st["settings"]["drafter"] == "greedy"
