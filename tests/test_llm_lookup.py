"""A checkpoint without a draft (SmolLM2 is one) runs speculatively with the lookup drafter: guesses copied from the
text, checked by the torch rule with KV rollback. Tested on a tiny GGUF written by the gguf package itself."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from corpus.errors import InputError
from models.drafters import LookupDrafter
from models.llm.model import LlamaConfig, build_random
from models.llm.pair import LlamaPair, LlamaSampler, LlamaTargetSampler
from models.sampler import SamplerSettings, make_sampler
from tests.llm_helpers import one_thread, rewrite_gguf, write_gguf

_threads = pytest.fixture(autouse=True, scope="module")(one_thread)

CFG = replace(LlamaConfig.from_name("tiny"), name="g", rope_scaling=None, max_position_embeddings=256)
PROMPT = "the other in the other in the other"


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("lookup") / "tiny.gguf"
    write_gguf(path, build_random(CFG, seed=5, std=0.1))
    return path


@pytest.fixture(scope="module")
def pair(gguf_path):
    return LlamaPair.load(str(gguf_path), None)


def _run(pair, settings, n=12, drafter=True):
    sm = LlamaSampler(pair, settings, drafter=LookupDrafter()) if drafter else LlamaTargetSampler(pair, settings)
    sm.reset(pair.encode(PROMPT))
    return sm, [sm.step() for _ in range(n)]


def test_lookup_copies_from_the_text_and_the_rule_checks_each_copy(pair):
    sm, traces = _run(pair, SamplerSettings(gamma=4, seed=3))
    assert any(t.guesses for t in traces), "the repeated prompt gives the lookup drafter something to copy"
    for t in traces:
        assert t.drafter == "lookup" and t.extra["gamma_setting"] == 4 and t.gamma == len(t.guesses) <= 4
        assert t.lanes_lit == t.gamma + 1 and t.p_rows.shape == (t.gamma + 1, pair.V)
        if not t.guesses:
            assert t.source_span is None and t.final_kind == "bonus"
            continue
        a, b = t.source_span["copy"]
        assert t.guesses == t.context[a:b]                          # copied, not invented
        assert np.array_equal(t.q_rows, np.eye(pair.V, dtype=np.float32)[t.guesses])   # q one-hot
        for i in range(t.tested):                                   # the rule: keep x iff r < p(x)/q(x) = p(x)
            x = t.guesses[i]
            assert t.ratios[i] == pytest.approx(float(t.p_rows[i][x]), rel=1e-6)
            assert t.accepted[i] == (t.r[i] < t.ratios[i])
        if t.final_kind == "replacement":                           # residual: p with the rejected guess removed
            x = t.guesses[t.n_accepted]
            assert t.final_row[x] == 0.0 and t.final_row[t.final_token] > 0
    # p at every position is the target's own row for that context (the caches rolled back correctly)
    for t in traces[-3:]:
        for i in range(t.gamma + 1):
            ctx = t.context + t.guesses[:i]
            fresh, _ = pair.target_row(ctx)
            assert np.allclose(t.p_rows[i], fresh, atol=2e-5)


def test_greedy_lookup_writes_what_the_target_alone_writes(pair):
    s = SamplerSettings(gamma=4, temperature=0.0, seed=1)
    spec, _ = _run(pair, s, n=15)
    alone, _ = _run(pair, s, n=len(spec.written), drafter=False)
    assert spec.written == alone.written[:len(spec.written)]


def test_the_cli_runs_a_gguf_target_with_the_lookup_drafter(gguf_path, capsys):
    from app.cli import main
    rc = main(["generate", "--target", str(gguf_path), "--drafter", "lookup", "--prefix", PROMPT, "--tokens", "20",
               "--seed", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["tokens_written"] >= 20 and len(out["marks"]) == out["tokens_written"]
    assert out["drafter"] == "lookup"
    rc = main(["step", "--target", str(gguf_path), "--drafter", "lookup", "--prefix", PROMPT, "--steps", "3",
               "--json"])
    steps = json.loads(capsys.readouterr().out)["steps"]
    assert rc == 0 and len(steps) == 3 and all(s["drafter"] == "lookup" for s in steps)


@pytest.mark.parametrize("argv, needle", [
    (["generate", "--target", "{g}"], "give --draft"),
    (["generate", "--target", "{g}", "--drafter", "heads"], "this pair runs lookup"),
    (["generate", "--target", "{g}", "--drafter", "eagle"], "self-drafters"),
    (["generate", "--target", "{g}", "--drafter", "tree"], "self-drafters; this pair runs lookup"),
    (["run", "--target", "{g}", "--drafter", "tree", "--frames", "1", "--no-save"],
     "self-drafters; this pair runs lookup"),
])
def test_a_target_without_a_draft_needs_the_lookup_drafter(gguf_path, capsys, argv, needle):
    from app.cli import main
    rc = main([a.format(g=gguf_path) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and needle in err, err


def test_make_sampler_refuses_the_chain_without_a_draft(pair):
    with pytest.raises(InputError, match="no draft model"):
        make_sampler(pair, SamplerSettings())
    assert isinstance(make_sampler(pair, SamplerSettings(), target_only=True), LlamaTargetSampler)


def test_gguf_metadata_goes_through_the_config_checks(tmp_path):
    bad = tmp_path / "bad.gguf"
    model = build_random(CFG, seed=5, std=0.1)
    write_gguf(bad, model)
    rewrite_gguf(bad, tmp_path / "bad2.gguf",
                 edit=lambda k, v: 0.0 if k == "llama.attention.layer_norm_rms_epsilon" else v)
    from models.llm.gguf import gguf_config
    with pytest.raises(InputError, match="GGUF metadata.*rms_norm_eps"):
        gguf_config(tmp_path / "bad2.gguf")
    assert torch.get_num_threads() == 1
