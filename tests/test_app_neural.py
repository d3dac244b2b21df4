"""The neural pair in the program: the `pair` setting through the controller, every mode on the shipped Llama pair,
the hardware panel's live measurement, the tour's neural passage, and `spectable run --pair/--target/--draft`."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from app import pairs  # noqa: E402
from app.settings import AppSettings  # noqa: E402
from corpus.errors import InputError  # noqa: E402
from tests.app_helpers import ROOT, run_app  # noqa: E402

TARGET, DRAFT = (str(ROOT / "assets" / "models" / n) for n in ("nahan-target", "nahan-draft"))


def _controller(**settings):
    from app.controller import Controller
    return Controller(AppSettings(**{"language": "en", **settings}), persist=False, scripted=True).start()


@pytest.fixture(autouse=True)
def _no_custom_pair():
    yield
    pairs._custom = None          # a test's --target never leaks into the next (the loaded pairs stay cached)


def test_the_pair_setting_goes_through_the_controller():
    from models.llm.pair import LlamaPair
    from models.ngram import NGramPair
    ctl = _controller(mode="lab")
    assert isinstance(ctl.session.pair(), NGramPair) and not ctl.session.neural
    ctl.update(pair="neural")
    pair = ctl.session.pair()
    assert isinstance(pair, LlamaPair) and pair.name == "nahan-target + nahan-draft" and ctl.session.neural
    run = ctl.session.ensure()
    assert run is not None and ctl.session.error is None
    assert all(tr.extra.get("pair") == "neural" for tr in run.traces)       # the torch rule wrote these passes
    assert pair.decode(run.tokens).startswith(ctl.settings.prompt)
    with pytest.raises(InputError, match="pair must be one of ngram, neural"):
        ctl.update(pair="custom")                      # offered only when --target named checkpoints
    assert ctl.settings.pair == "neural"
    ctl.update(pair="ngram")
    assert isinstance(ctl.session.pair(), NGramPair)


def test_the_step_through_shows_the_neural_pairs_own_p_and_q(capsys, tmp_path):
    """The step-through's numbers are the networks' rows at the test's context, and the rule's r and residual."""
    out = run_app(capsys, tmp_path, "--pair", "neural", "--mode", "step", "--lang", "en", "--no-save",
                  script=["space", "space"])
    assert out["settings"]["pair"] == "neural" and out["lab"]["pair"] == "neural"
    st = out["step"]
    pair = pairs.load("neural")
    ids = pair.encode(st["context"])
    assert st["guess_id"] < pair.V and pair.display(st["guess_id"]) == st["guess"]
    if st["kind"] == "test":
        p, _ = pair.target_row(ids)
        q, _ = pair.draft_row(ids)
        assert st["p"] == pytest.approx(p[st["guess_id"]], rel=1e-4, abs=1e-7)
        assert st["q"] == pytest.approx(q[st["guess_id"]], rel=1e-4, abs=1e-7)
        assert st["ratio"] == pytest.approx(st["p"] / st["q"], rel=1e-4)
        assert st["draft_backed_off"] is False and st["target_backed_off"] is False   # a network never backs off
        if st["verdict"] == "rejected":
            resid = np.maximum(p - q, 0)
            resid /= resid.sum()
            top = int(np.argmax(resid))
            assert st["residual"][0][2] == top and st["residual"][0][1] == pytest.approx(resid[top], rel=1e-3)
    assert out["text"].startswith("慢慢") and out["error"] is None


def test_the_tubes_run_on_the_neural_pair():
    from models.tubes import run_tubes
    ctl = _controller(mode="tubes", pair="neural")
    res = ctl.tubes()
    pair = ctl.session.pair()
    p, _ = pair.target_row(pair.encode(res.prefix))
    assert res.target_p.shape == (pair.V,) and np.allclose(res.target_p, p, atol=1e-6)
    direct = run_tubes(pair, prefix=res.prefix, rounds=res.rounds, draws=res.draws, seed=res.seed, rule=res.rule)
    assert np.array_equal(direct.right_round_c, res.right_round_c)        # the same experiment, seeded


def test_the_lab_shows_the_neural_pair_and_its_long_run():
    from models import analytics
    ctl = _controller(mode="lab", pair="neural")
    shown = ctl.panel.facts_shown()
    pf = analytics.pair_facts(ctl.session.pair(), ctl.settings.gamma, ctl.session.sampler_settings(), seed=0)
    assert shown["alpha"] == f"{pf.alpha:.3f}" and pf.tokens >= 2000
    note = ctl.panel.pair_note()
    assert "6.02M" in note and "0.68M" in note and "2,443" in note       # from the loaded checkpoints


def test_the_hardware_panel_measures_the_pair_live():
    """The live rows are the BenchWorker's measurement of the pair on the table, each beside the roofline's value
    for the same shapes, with the method (device, dtype, threads, warm-up, repeats) stated."""
    ctl = _controller(mode="hardware", pair="neural", gamma=3)
    panel = ctl.panel
    view = panel.live()
    r, err = ctl.bench_worker.result(scripted=True)
    assert err is None and r is not None and view["rows"]
    assert r["settings"]["gamma"] == 3 and r["pair"]["name"] == "nahan-target + nahan-draft"
    for key in ("target_ms", "draft_ms", "c", "tokens_per_pass", "plain_tokens_per_s", "speculative_tokens_per_s",
                "speedup"):
        assert np.isfinite(r[key]) and r[key] > 0, key
    assert r["c"] == pytest.approx(r["draft_ms"] / r["target_ms"], rel=1e-9)
    assert r["speedup"] == pytest.approx(r["speculative_tokens_per_s"] / r["plain_tokens_per_s"], rel=1e-9)
    shown = panel.facts_shown()
    live = {k[len("live: "):]: v for k, v in shown.items() if k.startswith("live: ")}
    t = ctl.t
    from app.lesson.measured import fmt_ms, sig
    run = r["in_run"]                   # the panel shows the costs inside the runs, as the formula uses them
    assert live[t("hw.pair_target_ms")] == \
        f"{fmt_ms(run['plain_ms_per_token'])} | {fmt_ms(r['on_paper']['target_ms'])}"
    assert live[t("fact.c")] == f"{sig(run['c'])} | {sig(r['on_paper']['c'])}"
    assert r["draft_step"] == "eager"    # as the table runs it: the live measurement compiles nothing
    assert live[t("hw.pair_speedup")] == f"×{sig(r['speedup'])} | ×{sig(r['on_paper']['speedup'])}"
    meta = " ".join(view["meta"])
    assert f"threads: {r['device']['threads']}" in meta and r["dtype"] in meta and "2 warm-up" in meta
    assert f"median of {r['settings']['reps']}" in meta
    # another γ is another measurement; the n-gram pair has none
    ctl.update(gamma=2)
    assert ctl.bench_worker.result(scripted=True)[0]["settings"]["gamma"] == 2
    ctl.update(pair="ngram")
    assert not any(k.startswith("live: ") for k in panel.facts_shown())


def test_the_tour_passage_runs_on_the_neural_pair_and_quotes_its_measurement():
    from app.lesson.facts import facts, fill
    from app.lesson.measured import shipped_pair_measurement
    from app.lesson.tour import CHAPTERS, narration
    ch = next(i for i, c in enumerate(CHAPTERS) if c.slug == "08-how-much-faster")
    pages = narration(CHAPTERS[ch].slug).pages
    neural_pages = [k for k, p in enumerate(pages) if p.pair == "neural"]
    assert neural_pages and neural_pages[-1] == len(pages) - 1
    ctl = _controller(mode="tour", chapter=ch)
    assert ctl.settings.pair == "ngram"
    while ctl.tour.page < neural_pages[0]:
        ctl.do("next")
    assert ctl.settings.pair == "neural" and ctl.lab()["pair"] == "ngram"     # the lab's own choice is kept
    from app.lesson.measured import sig
    entry = shipped_pair_measurement()
    d = entry["data"]
    f = facts(ctl)
    for lang in ("zh", "en"):
        # the timed page and the page after it (why it was no faster), their answers included
        last = " ".join(fill(x, f) for x in (pages[-2][lang], pages[-2].action.text[lang], pages[-1][lang],
                                             pages[-1].action.text[lang]))
        assert "—" not in last and "{" not in last
        # the costs inside the measured runs, the formula they give and what held the gain back: all from the file
        run = d["in_run"]
        assert f"c = {f['neural_c']}" in last and f"{run['verify_ratio']:.2f}" in last
        turns = d["guesses_per_pass"] * run["c"] + run["verify_ratio"]           # written out on the page
        assert f"{turns:.2f}" in last and f"×{sig(d['tokens_per_pass'] / turns)}" in last
        from models.measurements import slow_cause
        cause = d.get("cause") or slow_cause(d)
        assert f["neural_cause"] and f["neural_cause"] in last
        assert f"{cause['draft_turns']:.2f}" in f["neural_cause"] or f"{run['verify_ratio']:.2f}" in f["neural_cause"]
        assert f["neural_source"] in last           # where and when it was measured, named
    assert f["neural_c"] == sig(d["in_run"]["c"]) and f["neural_c_paper"] == sig(d["on_paper"]["c"])
    # the measured figure, and words that say which way it went: within a few percent of 1 is no gain or loss
    sp = d["speedup"]
    assert f"(×{sig(sp)}" in f["neural_speed_words"]
    said = next(k for k in ("even", "slower", "faster") if f["neural_speed_words"] == ctl.t(f"tour.neural_{k}",
                                                                                          speedup=f"×{sig(sp)}"))
    assert said == ("even" if abs(sp - 1) <= 0.05 else "slower" if sp < 1 else "faster")
    # a count in words of the page's language (6.02 million / 602 万), not a unit suffix
    words = {"en": ("6.02 million", "0.68 million"), "zh": ("602 万", "68 万")}[ctl.settings.language]
    assert (f["neural_target_params"], f["neural_draft_params"]) == words
    ctl.do("prev")
    while ctl.tour.page >= neural_pages[0]:
        ctl.do("prev")
    assert ctl.settings.pair == "ngram"                                       # back to the counted pair


def test_run_takes_your_checkpoints_as_the_custom_pair(capsys, tmp_path):
    """--target/--draft put any Llama checkpoints on the table as the 'custom' pair; bad ones are one line, exit 2."""
    from app.cli import main
    out = run_app(capsys, tmp_path, "--target", TARGET, "--draft", DRAFT,
                  "--mode", "lab", "--no-save")
    assert out["settings"]["pair"] == "custom" and out["error"] is None and out["text"].startswith("慢慢")
    assert pairs.custom().target == TARGET and "custom" in pairs.choices()
    for argv, needle in [(["--draft", DRAFT], "--draft needs a --target"),
                         (["--target", str(tmp_path / "nowhere")], "does not exist"),
                         (["--pair", "ngram", "--target", TARGET], "do not go with --pair ngram")]:
        capsys.readouterr()
        rc = main(["run", "--frames", "1", "--size", "320x180", "--no-save", *argv])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and needle in err and len(err.splitlines()) == 1, err


def test_a_checkpoint_without_a_draft_runs_every_mode_on_guesses_copied_from_the_text(tmp_path):
    """`spectable run --target X.gguf` alone: the lookup drafter guesses; every mode draws; what needs a draft model
    (the live draft cost, the tubes' q, the quiz's q) says so in its panel instead of failing."""
    from dataclasses import replace

    from app.controller import Controller
    from app.settings import MODES
    from app.window import FIXED_DT, App
    from models.llm.model import LlamaConfig, build_random
    from tests.llm_helpers import write_gguf
    cfg = replace(LlamaConfig.from_name("tiny"), rope_scaling=None, max_position_embeddings=256)
    write_gguf(tmp_path / "t.gguf", build_random(cfg, seed=4, std=0.2))
    pairs.set_custom(str(tmp_path / "t.gguf"), None)
    ctl = Controller(AppSettings(language="en", mode="lab", pair="custom", prompt="The"), persist=False,
                     scripted=True)
    app = App(ctl, size=(640, 360))
    try:
        for mode in MODES:
            ctl.set_mode(mode)
            for _ in range(2):
                ctl.driver.advance(30.0)
                app.draw_frame(FIXED_DT)
        run = ctl.session.run
        assert ctl.session.error is None and run.traces and all(tr.drafter == "lookup" for tr in run.traces)
        facts = ctl.long_run(wait=True)
        assert facts.tokens >= 2000 and 0 <= facts.alpha <= 1
        assert "no draft model" in ctl.modes["quiz"].error and ctl.modes["quiz"].questions() == []
        assert "no draft model" in ctl.bench_worker.result(scripted=True)[1]
        # The tour runs the lesson's pairs: a prompt only the checkpoint's tokenizer knows gives way to the tour's
        ctl.set_mode("tour")
        assert ctl.settings.pair == "ngram" and ctl.settings.prompt == "慢慢" and ctl.session.error is None
        ctl.set_mode("lab")
        assert ctl.settings.prompt == "The" and ctl.settings.pair == "custom"
        # another pair that cannot write after the prompt: an error, and never the old pair's tokens on the table
        app.draw_frame(FIXED_DT)                            # the lab's run, on your checkpoint, is on the table
        assert ctl.session.run is not None and ctl.session.error is None
        ctl.update(pair="ngram")
        assert ctl.session.ensure() is None and "not in the vocabulary" in ctl.session.error
        app.draw_frame(FIXED_DT)
    finally:
        app.close()


def test_a_neural_pair_drafts_with_its_model_by_lookup_and_from_its_own_features():
    """Who drafts on the shipped neural pair: the chain is its own draft model, lookup copies from the text,
    Medusa's heads and EAGLE's layer draft from the target's features (trained on it), and a tree grows from any
    of them; the step-through names the head behind each of Medusa's guesses."""
    ctl = _controller(mode="lab", pair="neural")
    chain = ctl.session.ensure()
    assert chain is not None and ctl.session.error is None
    assert all(tr.drafter == "chain" and tr.extra.get("pair") == "neural" for tr in chain.traces)
    runs = {"chain": chain}
    for name, extra in (("lookup", {}), ("heads", {}), ("eagle", {}), ("tree", {"tree_from": "eagle"}),
                        ("tree", {"tree_from": "heads", "tree_depth": 2})):
        ctl.update(drafter=name, **extra)
        run = ctl.session.ensure()
        assert ctl.session.error is None and run is not None and all(run is not r for r in runs.values())
        assert all(tr.drafter == name and tr.extra.get("pair") == "neural" for tr in run.traces)
        runs[name + extra.get("tree_from", "")] = run
    heads = [tr for tr in runs["heads"].traces if tr.guesses]
    assert heads and all(tr.heads == list(range(2, 2 + len(tr.guesses))) for tr in heads)
    trees = [tr for tr in runs["treeeagle"].traces if tr.tree is not None and tr.tree.nodes]
    assert trees and all(tr.tree.base == "eagle" and tr.lanes_lit == len(tr.tree.nodes) + 1 for tr in trees)
    ctl.update(drafter="chain", pair="ngram")
    assert ctl.session.ensure() is not None and ctl.session.error is None


def test_a_network_without_self_drafters_refuses_heads_and_eagle(monkeypatch):
    """A network pair with no self-drafters beside its target (a user's checkpoints) offers no features: heads and
    EAGLE are one line in the lab, the last run kept, and a tree grows from its draft model only."""
    from models.llm.pair import LlamaPair
    monkeypatch.setattr(LlamaPair, "self_drafters", lambda self: None)
    ctl = _controller(mode="lab", pair="neural")
    chain = ctl.session.ensure()
    assert chain is not None and ctl.session.error is None
    for name in ("heads", "eagle"):
        ctl.update(drafter=name)
        assert ctl.session.ensure() is chain                  # the last good run stays on the table
        assert "self-drafters" in ctl.session.error and "\n" not in ctl.session.error
    ctl.update(drafter="tree", tree_from="eagle")
    assert ctl.session.ensure() is chain and "self-drafters" in ctl.session.error
    assert ctl.drafter_figures(wait=True) == {"points": [], "source": "none", "chars": 0, "seed": 0}


def test_the_drafters_plot_follows_a_pair_switch(tmp_path, monkeypatch):
    """The drafters are compared on the n-gram pair (the shipped long runs) and on the network pair (a short run
    of every drafter it can run, EAGLE and its tree among them); after a switch one pair's figures are never
    served for the other."""
    from app import figures
    from app.controller import Controller
    from app.session import DrafterWorker
    monkeypatch.setattr(DrafterWorker, "SHORT_CHARS", 40)
    ctl = Controller(AppSettings(language="en", mode="lab", prompt="慢慢"), persist=False, scripted=True,
                     export_dir=tmp_path).start()
    counted = ctl.drafter_figures(wait=True)
    assert counted["source"] in ("long", "short") and counted["points"]
    assert "eagle" not in [p["drafter"] for p in counted["points"]]
    ctl.update(pair="neural", prompt="孔乙")
    net = ctl.drafter_figures(wait=True)
    assert net["source"] == "short" and net["chars"] == 40
    assert {"chain", "lookup", "heads", "eagle", "tree"} <= {p["drafter"] for p in net["points"]}
    assert "drafters" in figures.plot_names(ctl)
    ctl.update(pair="ngram", prompt="慢慢")
    assert ctl.drafter_figures(wait=True) == counted


def test_starting_on_the_neural_pair_every_fact_says_why_it_is_missing():
    """Started on the network pair (not switched to it): a number the pair cannot give shows '—' and the status
    line names its cause, never an AttributeError."""
    from app.controller import Controller
    ctl = Controller(AppSettings(language="en", mode="lab", pair="neural", prompt="孔乙"), persist=False,
                     scripted=True).start()
    f = ctl.facts()
    assert "alpha_corpus" in f.errors
    assert not any("no count table" in m for m in ctl.recent_messages())   # nobody has seen that '—' yet
    assert f["alpha_corpus"] == "—"                                        # a panel shows it ...
    ctl.facts()
    assert any("no count table" in m for m in ctl.recent_messages())       # ... and the status line says why
