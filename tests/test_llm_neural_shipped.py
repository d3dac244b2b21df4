"""The shipped 《呐喊》 pair: small, loadable, 《药》 held out; transformers loads the target as it is and generates
greedily what our backend generates; the torch decoder's first token and the test tubes follow the target's p."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from models.llm.hf import load_checkpoint
from models.llm.checkpoint import MODELS_DIR
from models.llm.pair import LlamaPair, LlamaSampler, LlamaTargetSampler
from models.sampler import SamplerSettings
from models.tubes import chi2_pvalue
from tests.llm_helpers import one_thread

_threads = pytest.fixture(autouse=True, scope="module")(one_thread)


def test_transformers_loads_the_shipped_target_and_generates_our_greedy_tokens():
    from transformers import LlamaForCausalLM
    pair = LlamaPair.shipped()
    hf = LlamaForCausalLM.from_pretrained(str(MODELS_DIR / "nahan-target"), dtype=torch.float32).eval()
    prompt = pair.encode("孔乙己一到店，")
    n = 60
    with torch.no_grad():
        out = hf.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False, num_beams=1,
                          pad_token_id=0)[0, len(prompt):].tolist()
        ours_logits = pair.target(torch.tensor([prompt]), torch.arange(len(prompt)), eager=True)[0]
        theirs_logits = hf(torch.tensor([prompt])).logits[0]
    assert torch.allclose(ours_logits, theirs_logits, atol=1e-4)
    plain = LlamaTargetSampler(pair, SamplerSettings(temperature=0.0))
    plain.reset(prompt)
    plain.run_tokens(n)
    spec = LlamaSampler(pair, SamplerSettings(gamma=4, temperature=0.0))
    spec.reset(prompt)
    spec.run_tokens(n)
    assert plain.written[:n] == out == spec.written[:n]
    assert len(set(out)) > 5                                 # real text, not one character repeated


def test_the_shipped_pair_is_small_loadable_and_held_out_yao():
    from tokenizers import Tokenizer
    total = 0
    for name, lo, hi in (("nahan-draft", 3e5, 1e6), ("nahan-target", 5e6, 15e6)):
        d = MODELS_DIR / name
        for f in d.iterdir():
            assert f.stat().st_size <= 20e6, f
            total += f.stat().st_size
        model = load_checkpoint(d)
        assert lo <= model.config.param_count() <= hi
        tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        assert tok.get_vocab_size() == model.config.vocab_size
        man = json.loads((d / "training.json").read_text(encoding="utf-8"))
        assert man["heldout"]["file"] == "03-yao.txt" and len(man["pieces"]) == 14
        assert {"02", "05", "07", "08", "14"} <= {p["file"][:2] for p in man["pieces"]}
        assert man["params"] == model.config.param_count() and man["curve"][-1]["step"] == man["recipe"]["steps"]
    assert total <= 30e6


def test_shipped_pair_first_token_follows_p_and_its_tubes_too():
    pair = LlamaPair.shipped()
    prefix = pair.encode("慢慢")
    p, _ = pair.target_row(prefix)
    counts = np.zeros(pair.V)
    s = LlamaSampler(pair, SamplerSettings(gamma=1, temperature=1.0, seed=7))
    for _ in range(400):
        s.rewind(prefix)
        counts[s.step().tokens_written[0]] += 1
    assert chi2_pvalue(counts, p) > 1e-3
    from models.tubes import run_tubes
    good = run_tubes(pair, "慢慢", rounds=200, draws=50, seed=1)
    bad = run_tubes(pair, "慢慢", rounds=200, draws=50, seed=1, rule="draft_only")
    assert good.chi2_p_right > 1e-3 and good.chi2_p_left > 1e-3
    assert bad.chi2_p_right < 1e-6
    assert abs(good.target_p.sum() - 1) < 1e-9 and np.allclose(good.target_p, p)


@pytest.mark.parametrize("which", ["medusa", "eagle"])
def test_the_shipped_self_drafters_fill_the_tubes_with_p(which):
    """Medusa's heads and EAGLE's layer trained on the shipped target: the speculative tube converges to p (a χ²
    test over 10,000 draws), and the rule that keeps every guess does not (the drafter's q is not p)."""
    from models.tubes import run_tubes
    pair = LlamaPair.shipped()
    drafter = pair.feature_drafter(which)
    good = run_tubes(pair, "慢慢", rounds=200, draws=50, seed=2, drafter=drafter)
    bad = run_tubes(pair, "慢慢", rounds=200, draws=50, seed=2, drafter=drafter, rule="draft_only")
    assert good.chi2_p_right > 1e-3 and good.chi2_p_left > 1e-3
    assert bad.chi2_p_right < good.chi2_p_right


@pytest.mark.parametrize("drafter, extra", [("heads", {}), ("eagle", {}), ("tree", {"tree_from": "eagle"}),
                                            ("tree", {"tree_from": "heads", "tree_depth": 2})])
def test_greedy_speculation_with_self_drafters_writes_the_targets_own_greedy_text(drafter, extra):
    """At temperature 0 the text is the target's argmax chain whoever guesses: Medusa's heads, EAGLE's layer and
    trees grown from either write exactly what the target alone writes on the shipped pair."""
    from models.drafters import make_drafter
    pair = LlamaPair.shipped()
    prompt = pair.encode("孔乙己一到店，")
    n = 48
    plain = LlamaTargetSampler(pair, SamplerSettings(temperature=0.0))
    plain.reset(prompt)
    plain.run_tokens(n)
    spec = LlamaSampler(pair, SamplerSettings(gamma=4, temperature=0.0), drafter=make_drafter(drafter, pair, **extra))
    spec.reset(prompt)
    traces = spec.run_tokens(n)
    assert spec.written[:n] == plain.written[:n]
    assert sum(t.n_accepted for t in traces) > 0            # the guesses were used, not all refused
