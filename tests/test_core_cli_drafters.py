"""The drafters on the command line (--drafter for tubes, alpha, step, generate), the roofline speed-up per drafter,
and bad drafter input as one line with exit code 2."""
from __future__ import annotations

import pytest

from models.drafters import DraftCost
from tests.test_core_cli import run, run_json


def test_tubes_per_drafter_keep_todays_keys_and_typical_is_biased(capsys):
    keys = ("target_p", "left_counts", "right_counts", "right_accepted", "right_replaced", "tv_left", "tv_right",
            "chi2_p_left", "chi2_p_right", "alpha", "rule", "exact")
    for drafter in (["chain"], ["lookup"], ["heads"], ["tree", "--tree-width", "3"],
                    ["tree", "--tree-from", "heads", "--tree-sampling", "distinct"]):
        base = ["tubes", "--rounds", "100", "--draws", "200", "--seed", "2", "--drafter", *drafter]
        t = run_json(capsys, *base)
        assert all(k in t for k in keys) and t["drafter"] == drafter[0] and t["exact"] is True
        assert sum(t["right_counts"].values()) == 20_000 and t["chi2_p_right"] > 1e-4
        typ = run_json(capsys, *base, "--rule", "typical")
        assert typ["exact"] is False and typ["rule"] == "typical" and 0 < typ["typical_threshold"] <= 0.09
        assert typ["chi2_p_right"] < 1e-9 and typ["tv_right"] > t["tv_right"]
    lk = run_json(capsys, "tubes", "--drafter", "lookup", "--rounds", "10", "--draws", "10")
    assert lk["draft_q"]["慢"] == 1.0 and lk["proposed"] is True               # 慢慢: the earlier 慢 is followed by 慢
    rc, out, _ = run(capsys, "tubes", "--drafter", "tree", "--rule", "typical", "--rounds", "5", "--draws", "10")
    assert rc == 0 and "2 candidates" in out and "min(ε, δ·exp(−H(p)))" in out


def test_alpha_per_drafter_counts_tokens_lanes_and_the_roofline_speedup(capsys):
    base = ["alpha", "--gamma", "4", "--chars", "3000", "--seed", "1"]
    chain = run_json(capsys, *base)
    assert chain["drafter"] == "chain" and chain["lanes_per_pass"] == 5 and chain["alpha_corpus"] is not None
    # batch 1 on H100 with 5 lanes is memory-bound: the roofline speed-up is the formula's with the counted tokens
    assert chain["cost_model"]["bound"] == "memory"
    assert chain["speedup_model"] == pytest.approx(chain["tokens_per_pass_counted"] / (1 + 4 * 0.1), rel=1e-12)
    assert chain["speedup_model_c0"] == pytest.approx(chain["tokens_per_pass_counted"], rel=1e-12)
    lookup = run_json(capsys, *base, "--drafter", "lookup")
    assert 1 <= lookup["lanes_per_pass"] <= 5 and lookup["speedup_model"] == lookup["speedup_model_c0"]
    assert lookup["speedup_model"] == pytest.approx(lookup["tokens_per_pass_counted"], rel=1e-12)
    assert lookup["alpha_corpus"] is None and lookup["speedup"] is None and 0 < lookup["proposing_share"] <= 1
    heads = run_json(capsys, *base, "--drafter", "heads")
    assert heads["lanes_per_pass"] == 5 and heads["cost_model"]["heads_per_pass"] == 4
    assert heads["speedup_model"] < heads["tokens_per_pass_counted"]            # the heads' weights are read too
    tree = run_json(capsys, *base, "--drafter", "tree", "--tree-width", "4")
    assert tree["lanes_per_pass"] == 4 + 16 + 64 + 256 + 1 and tree["cost_model"]["bound"] == "arithmetic"
    assert tree["alpha_per_position"] > tree["alpha_generated"]                  # a position has 4 tries
    narrow = run_json(capsys, *base, "--drafter", "tree", "--tree-widths", "2,1,1,1")
    assert narrow["lanes_per_pass"] == 9 and narrow["tree_widths"] == [2, 1, 1, 1]
    for d in (chain, lookup, heads, tree):
        assert 1 <= d["tokens_per_pass_counted"] <= 5 and d["arithmetic_per_token"] == pytest.approx(
            d["lanes_per_pass"] / d["tokens_per_pass_counted"])
    gpu = run_json(capsys, *base, "--device", "h200", "--context", "4096")
    from models.hardware import MODELS
    m = MODELS["llama-3.1-8b"]
    assert gpu["cost_model"]["device"] == "h200"
    assert gpu["cost_model"]["read_ms"] == pytest.approx((m.weight_bytes + 4096 * 131072) / 4.8e12 * 1e3)


def test_step_and_generate_per_drafter(capsys):
    s = run_json(capsys, "step", "--prefix", "孔乙己，孔乙", "--seed", "1", "--drafter", "lookup")
    st = s["steps"][0]
    assert st["drafter"] == "lookup" and st["source_span"]["matched"] == "孔乙"
    assert st["source_span"]["copied"] == "".join(st["guesses"]) == "己，孔乙"
    h = run_json(capsys, "step", "--prefix", "孔乙", "--seed", "1", "--drafter", "heads", "--gamma", "3")
    # numbered as Medusa numbers them: the target's own output layer guesses the next token, head k the k-th after it
    assert h["steps"][0]["heads"] == [1, 2, 3] and h["steps"][0]["lanes_lit"] == 4
    t = run_json(capsys, "step", "--prefix", "孔乙", "--seed", "3", "--drafter", "tree", "--tree-widths", "3,2",
                 "--steps", "3")
    for st in t["steps"]:
        tree = st["tree"]
        assert len(tree["nodes"]) == 9 and tree["lanes_lit"] == st["lanes_lit"] == 10
        assert [c["verdict"] for c in tree["checks"]].count("accepted") == len(tree["accepted_path"])
        for c in tree["checks"]:
            assert (c["residual_top"] is None) == (c["verdict"] == "accepted")
        assert len(st["tokens_written"]) == len(tree["accepted_path"]) + 1
    for lang in ("zh", "en"):
        rc, out, _ = run(capsys, "step", "--prefix", "孔乙", "--seed", "3", "--drafter", "tree", "--lang", lang)
        assert rc == 0 and "p/q" in out
    g = run_json(capsys, "generate", "--prefix", "孔乙", "--tokens", "60", "--drafter", "tree", "--tree-width", "2")
    assert g["drafter"] == "tree" and g["lanes_per_pass"] == 31 and g["marks"].count("◆") == g["passes"]
    c = run_json(capsys, "generate", "--prefix", "孔乙", "--tokens", "60", "--seed", "1")
    assert c["drafter"] == "chain" and c["lanes_per_pass"] == 5


@pytest.mark.parametrize("argv", [
    ["tubes", "--drafter", "medusa"],
    ["alpha", "--drafter", "tree", "--tree-width", "0"],
    ["alpha", "--drafter", "tree", "--tree-width", "17"],
    ["alpha", "--drafter", "tree", "--tree-depth", "0"],
    ["step", "--drafter", "tree", "--tree-widths", "2,x"],
    ["step", "--drafter", "tree", "--tree-widths", "9,9,9"],
    ["step", "--drafter", "tree", "--tree-widths", "2,2", "--tree-width", "3"],
    ["step", "--drafter", "chain", "--tree-width", "3"],
    ["generate", "--drafter", "heads", "--gamma", "13"],
    ["tubes", "--drafter", "tree", "--rule", "resample_from_p", "--rounds", "2", "--draws", "5"],
    ["tubes", "--rule", "typical", "--typical-epsilon", "0", "--rounds", "2", "--draws", "5"],
    ["tubes", "--typical-delta", "0.5", "--rounds", "2", "--draws", "5"],
    ["generate", "--drafter", "tree", "--lenience", "0.5", "--tokens", "5"],
    ["corpus", "build", "/nonexistent", "--heads", "1", "--out", "x.npz"],
    ["alpha", "--drafter", "lookup", "--device", "tpu-v9", "--chars", "10"],
    ["alpha", "--context", "-1", "--chars", "10"],
])
def test_bad_drafter_input_one_line_exit_2(capsys, argv):
    rc, out, err = run(capsys, *argv)
    assert rc == 2
    assert err.startswith("spectable: error:") and err.count("\n") == 1 and "Traceback" not in err


def test_speedup_model_by_hand():
    """The roofline speed-up's pieces against SCIENCE.md's figures: H100, Llama 3.1 8B, batch 1."""
    from models.drafter_analytics import speedup_model
    from models.hardware import MODELS
    m = MODELS["llama-3.1-8b"]
    read = m.weight_bytes / 3.35e12 * 1e3
    chain = speedup_model(2.5, 5, DraftCost(draft_runs=4), c=0.1)
    assert chain["target_step_ms"] == pytest.approx(read) and chain["pass_ms"] == pytest.approx(1.4 * read)
    assert chain["speedup_model"] == pytest.approx(2.5 / 1.4)
    wide = speedup_model(3.0, 341, DraftCost(), c=0.1)                       # 341 lanes > 295: arithmetic-bound
    assert wide["bound"] == "arithmetic" and wide["pass_ms"] == pytest.approx(2 * m.params * 341 / 989e12 * 1e3)
    heads = speedup_model(2.0, 5, DraftCost(heads=4), c=0.1)
    hp = m.hidden * m.hidden + m.hidden + m.hidden * m.vocab                 # a Medusa-1 head: ResBlock + LM head
    assert heads["head_params"] == 4 * hp and heads["draft_ms"] == 0
    assert heads["pass_ms"] == pytest.approx((m.weight_bytes + 4 * hp * 2) / 3.35e12 * 1e3)
    ctx = speedup_model(2.0, 5, DraftCost(), context=4096)
    assert ctx["read_ms"] == pytest.approx((m.weight_bytes + 4096 * 131072) / 3.35e12 * 1e3)
