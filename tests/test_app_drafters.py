"""Who drafts, in the program: the declared settings (checked, run and stage fields, saved), the session's run with
each drafter, the step-through's explanation of every verdict read back against the trace (lookup's one-hot q and
p-with-x-removed residual, which head proposed, each round of the multi-candidate rule and its residual update,
recomputed here from the rows), the tube rules a tree allows, the drafters plot's data and the long-run file."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app.settings import (FIELDS, LAB_FIELDS, RUN_FIELDS, STAGE_FIELDS, AppSettings, parse_settings,
                          save_settings)
from corpus.errors import InputError

REPEAT = "我们一同走出去，我们"      # our own words, not the book's


def controller(**values):
    from app.controller import Controller
    return Controller(AppSettings(mode="lab", **values), persist=False, scripted=True).start()


# ------------------------------------------------------------------ settings
def test_drafter_fields_are_declared_checked_and_saved(tmp_path):
    from models.drafters import BASES, SAMPLINGS, names
    assert FIELDS["drafter"].legal() == names() == ("chain", "lookup", "heads", "eagle", "tree")
    assert FIELDS["tree_from"].legal() == BASES and FIELDS["tree_sampling"].legal() == SAMPLINGS
    for name in ("drafter", "tree_width", "tree_depth", "tree_from", "tree_sampling"):
        assert name in LAB_FIELDS and name in RUN_FIELDS and name in STAGE_FIELDS
    ctl = controller()
    rev = ctl.revision
    for bad in ({"drafter": "medusa"}, {"tree_width": 5}, {"tree_depth": 0}, {"tree_from": "lookup"},
                {"tree_sampling": "greedy"}, {"tree_width": 2.5}, {"drafter": "tree", "tree_depth": 9}):
        with pytest.raises(InputError):
            ctl.update(**bad)
    assert ctl.revision == rev and ctl.settings.drafter == "chain"       # a refused update applies nothing
    assert ctl.update(drafter="tree", tree_width=3, tree_depth=1, tree_from="heads", tree_sampling="distinct")
    path = tmp_path / "settings.json"
    save_settings(ctl.saved_settings(), path)
    back = parse_settings(path.read_text(encoding="utf-8"))
    assert (back.drafter, back.tree_width, back.tree_depth, back.tree_from, back.tree_sampling) == \
        ("tree", 3, 1, "heads", "distinct")
    # a hand-edited file: out of range is clamped, an unknown drafter falls back to the chain
    raw = json.loads(path.read_text(encoding="utf-8")) | {"tree_width": 40, "tree_depth": -3, "drafter": "nope"}
    fixed = parse_settings(json.dumps(raw))
    assert (fixed.drafter, fixed.tree_width, fixed.tree_depth) == ("chain", 4, 1)


def test_each_drafter_runs_on_the_table_and_in_the_state():
    from models.drafters import node_count
    ctl = controller(prompt=REPEAT)
    for name in ("lookup", "heads", "tree"):
        ctl.update(drafter=name)
        run = ctl.session.ensure()
        assert ctl.session.error is None and all(tr.drafter == name for tr in run.traces)
        st = ctl.state()
        assert st["drafter"] == name and st["settings"]["drafter"] == name
        assert st["drafter_settings"]["drafter"] == name
        # the lab's result table shows this run's counts, not the chain's formulas (which describe only the chain)
        assert {"drafter_run_kept", "drafter_run_tpp", "drafter_run_lanes", "drafter_run_speedup"} <= set(st["facts"])
        assert "tpp_formula" not in st["facts"]
    n = node_count([2, 2])
    assert all(tr.lanes_lit == n + 1 for tr in ctl.session.run.traces)
    assert ctl.state()["facts"]["drafter_run_lanes"] == str(n + 1)
    ctl.update(tree_from="heads", tree_width=3, tree_depth=2)
    tr = ctl.session.ensure().traces[0]
    assert tr.lanes_lit == 3 + 9 + 1 and {nd.head for nd in tr.tree.nodes} == {2, 3}
    assert ctl.state()["drafter_settings"] == {"drafter": "tree", "tree_from": "heads", "tree_sampling": "iid",
                                               "tree_width": 3, "tree_depth": 2, "tree_widths": None}
    ctl.update(decoder="target")
    assert ctl.state()["drafter"] is None and ctl.state()["drafter_settings"] is None


# ------------------------------------------------------------------ step-through
def _explanations(ctl):
    panel = ctl.modes["step"]
    out = []
    for pos in range(len(panel.stops())):
        ctl.step_pos = pos
        out.append(panel.explanation())
    return out


def test_lookup_verdicts_are_explained_with_a_one_hot_q():
    ctl = controller(prompt=REPEAT, drafter="lookup")
    run, pair = ctl.session.ensure(), ctl.session.pair()
    exs = _explanations(ctl)
    tests = [e for e in exs if e["kind"] == "test"]
    plains = [e for e in exs if e["kind"] == "plain"]
    assert tests and plains
    assert len(tests) == sum(tr.tested for tr in run.traces)
    assert len(plains) == sum(1 for tr in run.traces if not tr.guesses)
    for e in tests:
        tr = run.traces[e["step"]]
        i = e["test"]
        x = tr.guesses[i]
        span = tr.source_span
        assert e["q"] == 1.0 and e["ratio"] == pytest.approx(e["p"]) and e["p"] == tr.p_rows[i][x]
        assert e["source_span"]["copied"] == pair.decode(tr.context[span["copy"][0]:span["copy"][1]])
        assert e["source_span"]["matched"] == pair.decode(tr.context[span["match"][0]:span["match"][1]])
        assert e["guess_id"] == tr.context[span["copy"][0] + i]          # copied from the text
        if e["verdict"] == "rejected":
            # the residual of a one-hot q: p with x removed, renormalised
            want = tr.p_rows[i].copy()
            want[x] = 0.0
            want /= want.sum()
            assert x not in [tid for _, _, tid in e["residual"]]
            for _, share, tid in e["residual"]:
                assert share == pytest.approx(want[tid], rel=1e-9)
            assert e["residual"][0][1] == pytest.approx(want.max(), rel=1e-9)
    for e in plains:
        tr = run.traces[e["step"]]
        assert e["source_span"] is None and e["token_id"] == tr.final_token
        assert e["p_token"] == pytest.approx(tr.p_rows[0][tr.final_token])


def test_heads_verdicts_say_which_head_proposed():
    ctl = controller(prompt=REPEAT, drafter="heads")
    run, pair = ctl.session.ensure(), ctl.session.pair()
    for e in _explanations(ctl):
        if e["kind"] != "test":
            continue
        tr = run.traces[e["step"]]
        # Medusa's numbering on screen (the exhibit's "第 k 个头猜再往后第 k 个"): guess i comes from head i, the
        # target's own output layer having guessed the token before it.
        assert e["head"] == e["test"] + 1 == tr.heads[e["test"]] - 1
        assert e["features"] == pair.decode(tr.context[:-1][-2:]).replace("\n", "↵")
        assert e["q"] == tr.q_rows[e["test"]][e["guess_id"]]


def test_tree_verdicts_show_each_round_and_its_residual_update():
    ctl = controller(prompt=REPEAT, drafter="tree", steps=8)
    run = ctl.session.ensure()
    exs = _explanations(ctl)
    assert len(exs) == sum(len(tr.tree.checks) + (tr.final_kind == "bonus") for tr in run.traces)
    later_rounds = 0
    for e in exs:
        tr = run.traces[e["step"]]
        tree = tr.tree
        assert e["nodes"] == len(tree.nodes) and e["lanes_lit"] == len(tree.nodes) + 1
        if e["kind"] == "bonus":
            assert tr.final_kind == "bonus" and e["token_id"] == tr.final_token
            continue
        c = tree.checks[e["test"]]
        nd = tree.nodes[c.node]
        assert (e["node"], e["round"], e["depth"]) == (c.node, c.round, nd.depth)
        assert (e["p"], e["q"], e["ratio"], e["r"]) == (c.p_x, c.q_x, c.ratio, c.r)
        assert e["verdict"] == ("accepted" if c.accepted else "rejected") and (c.r < c.ratio) == c.accepted
        kids = tree.children(nd.parent)
        assert [k["node"] for k in e["candidates"]] == kids and e["rounds"] == len(kids)
        # the running target this round met: p after the parent at round 1, else the last residual
        target = tree.target_rows[c.target_row]
        p_here = tree.p_rows[0 if nd.parent < 0 else 1 + nd.parent]
        if c.round == 1:
            assert np.array_equal(target, p_here)
        else:
            later_rounds += 1
            assert e["target_is_residual"]
        assert e["p"] == pytest.approx(target[nd.token])
        if not c.accepted:
            # the update, recomputed: norm(max(0, p_i - q_i)), q_i the row this candidate was drawn from
            q = tree.q_rows[nd.q_row]
            res = np.maximum(target - q, 0.0)
            res = res / res.sum() if res.sum() > 0 else target
            for _, share, tid in e["residual"]:
                assert share == pytest.approx(res[tid], rel=1e-9, abs=1e-15)
            assert e["residual"][0][1] == pytest.approx(res.max(), rel=1e-9)
            assert e["position_exhausted"] == (c.round == len(kids))
            if e["position_exhausted"]:
                assert e["final_token_id"] == tr.final_token and res[tr.final_token] > 0
        else:
            assert e["next_candidates"] == len(tree.children(c.node))
    assert later_rounds >= 1


def test_step_through_holds_the_table_at_each_tree_check(capsys, tmp_path):
    from tests.app_helpers import run_app
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "step", "--drafter", "tree", "--prompt", REPEAT,
                 script=["page down"] * 2)
    e = st["step"]
    assert st["drafter"] == "tree" and st["settings"]["tree_width"] == 2 and e["drafter"] == "tree"
    assert e["position"] == 2 and {"node", "round", "rounds", "candidates", "target"} <= set(e)
    assert st["lanes_lit"] == 7
    for bad in (["--tree-width", "9"], ["--drafter", "medusa"], ["--tree-sampling", "greedy"]):
        from app.cli import main
        capsys.readouterr()
        try:
            rc = main(["run", "--frames", "1", *bad])
        except SystemExit as exc:         # argparse's own usage errors exit 2 with one line
            rc = exc.code
        assert rc == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("spectable: error:") and bad[0] in err[0], err


# ------------------------------------------------------------------ tubes
def test_a_tree_offers_the_exact_rule_and_typical_acceptance_in_the_tubes():
    ctl = controller(drafter="tree")
    panel = ctl.modes["tubes"]
    assert panel.rules() == ("exact", "typical")
    seen = []
    for _ in range(4):
        panel.on_key("next")
        seen.append((ctl.settings.tube_rule, ctl.settings.skip_bonus))
    assert seen == [("typical", False), ("exact", True), ("exact", False), ("typical", False)]
    res = ctl.tube_worker.get()
    assert res.drafter == "tree" and res.width == 2
    ctl.update(tree_width=1)
    assert len(panel.rules()) == 5
    ctl.update(drafter="lookup", tube_rule="typical")
    res = ctl.tube_worker.get()
    assert res.rule == "typical" and res.drafter == "lookup" and res.typical_threshold is not None
    assert res.tv_right > 0.05                     # the typical tube drifts from p


# ------------------------------------------------------------------ the drafters plot
def test_the_drafters_plot_shows_the_long_runs_and_says_what_they_were_counted_on():
    from app import figures, plots
    from models.drafter_analytics import shipped_long_runs
    from models.sampler import SamplerSettings
    ctl = controller()
    fig = figures.drafter_points(ctl, wait=True)
    doc = shipped_long_runs(ctl.session.pair(), SamplerSettings(gamma=4))
    assert fig["source"] == "long" and [p["tokens_per_pass"] for p in fig["points"]] == \
        [p["tokens_per_pass"] for p in doc["points"]]
    f = ctl.facts()
    assert f["drafters_source"] == "long" and f["drafter_heads_lanes"] == "5" and f["drafter_lookup_lanes"] == "4.7"
    assert f["drafter_tree_2x2_tpp"] == f"{doc['points'][3]['tokens_per_pass']:.2f}"
    assert f["drafter_lookup_speedup"] == f"{fig['points'][1]['speedup_model']:.2f}×"
    for lang in ("zh", "en"):
        ctl.update(language=lang)
        mp = figures.make(ctl, "drafters")
        title = mp.axes[0].get_title()
        assert ctl.t("plot.drafters_long", tokens="20,000", seed=0) in title
        plots.close(mp)
    # away from the settings the long runs were counted at, a short run is counted (and says so)
    ctl.update(gamma=2)
    fig = figures.drafter_points(ctl, wait=True)
    assert fig["source"] == "short" and fig["chars"] == 600
    assert {p["key"] for p in fig["points"]} >= {"chain", "lookup", "heads", "tree_2x2", "tree_3x2"}
    assert all(p["tokens"] >= 600 for p in fig["points"])
    mp = figures.make(ctl, "drafters")
    assert ctl.t("plot.drafters_short", tokens="600") in mp.axes[0].get_title()
    plots.close(mp)


def test_a_repeated_iid_candidate_is_named_and_cannot_pass():
    ctl = controller(prompt=REPEAT, drafter="tree", steps=30)
    repeats = [e for e in _explanations(ctl) if "repeat_of" in e]
    assert repeats, "the run has i.i.d. siblings that repeat a rejected token"
    for e in repeats:
        first = e["candidates"][e["repeat_of"] - 1]
        assert first["token_id"] == e["guess_id"] and first["verdict"] == "rejected"
        assert e["p"] == 0.0 and e["verdict"] == "rejected"
    ctl.update(tree_sampling="distinct")
    assert not [e for e in _explanations(ctl) if "repeat_of" in e]


# ------------------------------------------------------------------ chapter 10
def test_a_tour_page_may_set_lab_settings_and_its_own_demo_events():
    from app.lesson import tour
    good = {"title": {"zh": "标题", "en": "title"},
            "pages": [{"zh": "一", "en": "one", "parts": ["tape"]},
                      {"zh": "二", "en": "two", "parts": ["tape"], "params": {"drafter": "lookup", "prompt": "慢慢"},
                       "events": ["copied_kept"]},
                      {"zh": "三", "en": "three", "parts": ["tubes"], "params": {"tube_rule": "typical"}}]}
    pages = tour.parse_narration(good, "x").pages
    assert pages[1].params == {"drafter": "lookup", "prompt": "慢慢"} and pages[1].events == ("copied_kept",)
    for bad, says in (({"params": {"drafter": "medusa"}}, "drafter"), ({"params": {"language": "en"}}, "language"),
                      ({"params": {"tree_width": 9}}, "tree_width"), ({"params": {}}, "params"),
                      ({"events": ["a_pink_elephant"]}, "events"), ({"events": "copied_kept"}, "events")):
        raw = json.loads(json.dumps(good))
        raw["pages"][2].update(bad)
        with pytest.raises(InputError) as exc:
            tour.parse_narration(raw, "file.json")
        assert "file.json: page 3" in str(exc.value) and says in str(exc.value) and "\n" not in str(exc.value)


def test_chapter_ten_runs_heads_lookup_a_tree_and_typical_acceptance_live():
    """Each page of chapter 10 sets who drafts through update(); the pass its action plays is the run's first and
    shows what the words say (heads keep and replace; lookup copies and keeps; the tree keeps a later round);
    the figures beside them are the long runs'; the tubes' page breaks them with typical acceptance; Medusa-1 and
    EAGLE run on the neural pair, each right after the counted pair's analogue."""
    from app.lesson import tour
    from app.lesson.facts import facts
    ctl = controller(prompt="孔乙己", seed=3)
    ctl.set_mode("tour")
    ch = [c.slug for c in tour.CHAPTERS].index("10-no-second-model")
    ctl.tour.goto(ch)
    ctl.panel.apply_chapter()
    seen = {}
    for k, page in enumerate(ctl.tour.pages()):
        ctl.tour.page = k
        ctl.panel.apply_page()
        s = ctl.settings
        run = ctl.session.ensure()
        seen[k] = (s.drafter, s.tube_rule, s.pair)
        first = run.traces[0]
        assert first.drafter == s.drafter
        if page.events:
            from models.demo import EVENTS
            assert all(EVENTS[e](first) for e in page.events), (k, page.events)
    # the counted pair's heads, then Medusa-1's trained heads on the neural pair; the tubes (asked, then after every
    # round); the counted tree, then EAGLE on the neural pair; Lookahead's page; lookup; the recap beside the tubes
    assert [v[0] for v in seen.values()] == ["heads", "heads", "chain", "chain", "tree", "eagle", "chain", "lookup",
                                             "chain"]
    assert [k for k, v in seen.items() if v[2] == "neural"] == [1, 5]
    assert seen[2][1] == seen[3][1] == seen[8][1] == "typical"
    # EAGLE on the network is asked about before the measured table (its rows would answer) is shown
    pages = ctl.tour.pages()
    assert pages[5].ask is not None and "plot" in pages[5].keep_back
    ctl.tour.page = 2
    ctl.panel.apply_page()
    assert ctl.tubes().tv_right > 0.05
    f = facts(ctl)
    assert f["drafters_source"] == "long" and f["drafter_tree_3x4_lanes"] == "121"
    # leaving the tour puts the lab's own values back: the tour's drafter never outlives it
    ctl.set_mode("lab")
    assert (ctl.settings.drafter, ctl.settings.prompt, ctl.settings.tube_rule) == ("chain", "孔乙己", "exact")


def test_chapter_ten_draws_only_the_drafters_it_has_introduced():
    """The drafters plot beside a page draws the drafters the chapter's pages have named so far (the heads' page:
    the chain and the heads, no tree of 121 lanes before the tree is taught); the lab's draws every one. A
    drafter keeps its mark and the axes their range as pages add drafters (a class reads the shapes)."""
    from app import figures, plots
    from app.lesson import tour
    ctl = controller()
    ctl.set_mode("tour")
    ctl.tour.goto([c.slug for c in tour.CHAPTERS].index("10-no-second-model"))
    ctl.panel.apply_chapter()
    met = []
    for k, _page in enumerate(ctl.tour.pages()):
        ctl.tour.page = k
        met.append(ctl.panel.drafters_met())
    assert met[0] == {"chain", "heads"} and "tree" not in met[3] and "tree" in met[4] and "lookup" in met[7]
    points = {(p["lanes_per_pass"], p["tokens_per_pass"]): p["drafter"]
              for p in figures.drafter_points(ctl, wait=True)["points"]}

    def marks(only):
        fig = figures.make(ctl, "drafters", only=only)
        ax = fig.axes[0]
        out = {points[(ln.get_xdata()[0], ln.get_ydata()[0])]: ln.get_marker() for ln in ax.lines
               if len(ln.get_xdata()) == 1 and (ln.get_xdata()[0], ln.get_ydata()[0]) in points}
        limits = (ax.get_xlim(), ax.get_ylim())
        plots.close(fig)
        return out, limits
    few, few_limits = marks(met[0])
    every, every_limits = marks(None)
    assert set(few) == {"chain", "heads"} and set(every) >= {"chain", "heads", "lookup", "tree"}
    assert all(every[d] == m for d, m in few.items()) and few_limits == every_limits


def test_chapter_ten_asks_what_lookaheads_arithmetic_costs_and_draws_it():
    """Lookahead's page asks whether 120× the operations fill the arithmetic, then draws the busy shares on the
    mill's GPU (on paper) and on this computer (measured): the figures its reveal names."""
    from app import derived, figures, plots
    from app.lesson.facts import facts, fill
    from app.lesson.measured import computer_roofline
    from app.lesson.tour import narration
    ctl = controller()
    page = next(p for p in narration("10-no-second-model").pages if "Lookahead" in p["en"])
    assert page.ask is not None and page.plot == "arith_multiples" and "plot" in page.keep_back
    f = facts(ctl)
    said = fill(page.action.text["en"], f)
    mine = computer_roofline(ctl)
    assert f["busy_x120"] in said and f"{derived.LOOKAHEAD_OPS / mine['lanes']:.0f} times" in said
    fig = figures.make(ctl, "arith_multiples", (640, 400), 16)
    plots.figure_rgba(fig)
    ends = [r.get_x() + r.get_width() for r in fig.axes[0].patches]        # where each bar ends, in shares
    texts = [tx.get_text() for tx in fig.axes[0].texts]
    plots.close(fig)
    one = derived.roofline(ctl.settings.device, ctl.settings.model, 1, ctl.settings.context).arithmetic_busy
    gamma = ctl.settings.gamma
    assert ends[:3] == pytest.approx([one, (gamma + 1) * one, derived.LOOKAHEAD_OPS * one])   # the GPU's, under full
    # this computer's past full drawn to their length (a check's 1.3× and Lookahead's 31× are not one capped bar)
    lanes = mine["lanes"]
    assert ends[3:] == pytest.approx([1 / lanes, (gamma + 1) / lanes, derived.LOOKAHEAD_OPS / lanes])
    assert ends[5] > 1.0 and ends[5] > 10 * ends[4]
    assert any(f"{derived.LOOKAHEAD_OPS / mine['lanes']:.0f}" in tx for tx in texts)    # ... and its time said
