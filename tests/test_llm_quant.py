"""Packed weights (models/llm/formats.py): int8 per channel and int4 in groups of 32 multiply by the matrix they claim
to hold, within each format's rounding; a model with them stays exact under the rule (greedy speculative equals
greedy plain; traces replay under the numpy rule; rows after rollbacks equal fresh forwards); the bytes a step
streams follow the format; a missing kernel is one line; fp32 packing and the compiled draft step change no
value beyond summation order."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from corpus.errors import InputError
from models import acceptance
from models.llm import formats as quant
from models.llm.model import LlamaConfig, build_random
from models.llm.speculative import PlainDecoder, SpeculativeDecoder, compile_step, decode_one_token
from models.llm.formats import GROUP, PackedLinear, prepare_weights, streamed_bytes
from tests.llm_helpers import make_checkpoint, run_cli


def _model(name, fmt, seed=1, std=0.1):
    m = build_random(LlamaConfig.from_name(name), seed=seed, std=std)
    prepare_weights(m, fmt)
    return m


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(["int8", "int4"]), n=st.integers(1, 70), groups=st.integers(1, 4),
       scale=st.floats(1e-3, 10.0), seed=st.integers(0, 2**16))
def test_packed_product_is_the_product_with_the_dequantised_matrix(fmt, n, groups, scale, seed):
    gen = torch.Generator().manual_seed(seed)
    k = GROUP * groups
    w = torch.randn(n, k, generator=gen) * scale
    lin = PackedLinear(w, fmt)
    deq = lin.dequantize()
    assert deq.shape == w.shape
    # each weight within half a step of its grid: amax/127 per row (int8), the group's range/15 (int4)
    if fmt == "int8":
        step = w.abs().amax(1, keepdim=True) / 127
    else:
        g = w.view(n, groups, GROUP)
        step = ((g.amax(-1) - g.amin(-1)) / 15).repeat_interleave(GROUP, 1)
    assert ((deq - w).abs() <= step * 0.55 + 1e-6).all()    # scales rounded to bf16: a hair over half a step
    x = torch.randn(3, k, generator=gen)
    ref = x.bfloat16().float() @ deq.t()
    y = lin(x)
    assert y.shape == (3, n) and y.dtype == torch.float32
    tol = 2e-2 * (x.abs() @ deq.abs().t()) + 1e-4       # bf16 activations and accumulation
    assert ((y - ref).abs() <= tol).all()


def test_int4_rows_that_are_not_whole_groups_fall_back_to_int8_and_say_so():
    m = build_random(LlamaConfig(name="odd", vocab_size=100, dim=48, n_layers=1, n_heads=2, n_kv_heads=1,
                                 head_dim=24, intermediate_size=64, rope_scaling=None, max_position_embeddings=64),
                     seed=0)
    notes = prepare_weights(m, "int4")
    assert any("int8" in n and "48" in n for n in notes)
    assert m.layers[0].attention.wqkv.fmt == "int8" and m.layers[0].feed_forward.w2.fmt == "int4"


def test_streamed_bytes_follow_the_format():
    sizes = {fmt: streamed_bytes(_model("tiny", fmt)) for fmt in ("fp32", "int8", "int4")}
    cfg = LlamaConfig.from_name("tiny")
    assert sizes["fp32"] == cfg.weight_bytes_read_per_token(torch.float32)
    assert 0.24 < sizes["int8"] / sizes["fp32"] < 0.30          # a byte a weight, scales and norms on top
    assert sizes["int4"] < sizes["int8"]                        # half a byte, a scale and a zero per 32; head int8


@pytest.mark.parametrize("fmt", ["int8", "int4", "fp32"])
def test_quantised_pairs_stay_exact_greedy_equals_plain(fmt):
    torch.manual_seed(0)
    target, draft = _model("tiny", fmt, seed=1), _model("tiny-draft", fmt, seed=2)
    for m in (target, draft):
        m.setup_caches(1, 96)
    prompt = [3, 1, 4, 1, 5]
    plain = PlainDecoder(target).generate(prompt, 40)
    for gamma in (1, 4):
        res = SpeculativeDecoder(target, draft, gamma=gamma).generate(prompt, 40)
        assert res.tokens == plain


@pytest.mark.parametrize("fmt", ["int8", "int4"])
def test_quantised_pair_traces_replay_under_the_numpy_rule(fmt):
    """The rule is exact for whatever p the packed target gives: every trace replays under the numpy rule, and
    its rows are what a fresh forward of the packed models computes for that text (rollbacks correct)."""
    from models.llm.pair import LlamaSampler
    from models.sampler import SamplerSettings
    from tests.test_llm_pair import fresh_rows, tiny_pair

    pair = tiny_pair()
    for m in (pair.target, pair.draft):
        prepare_weights(m, fmt)
    s = LlamaSampler(pair, SamplerSettings(gamma=2, temperature=1.0, seed=5))    # unrelated random nets: α is low
    s.reset(pair.encode("慢慢地"))
    traces = [s.step() for _ in range(25)]
    while {t.final_kind for t in traces} != {"bonus", "replacement"} and len(traces) < 150:
        traces.append(s.step())                 # both kinds of pass, so rollbacks of every kind are checked
    assert {t.final_kind for t in traces} == {"bonus", "replacement"}
    for t in traces[-40:]:
        v = acceptance.verify(t.guesses, t.q_rows, t.p_rows, np.array(t.r), t.extra["u_final"])
        assert v.n_accepted == t.n_accepted and v.final_token == t.final_token and v.final_kind == t.final_kind
        assert np.allclose(fresh_rows(pair.target, t.context + t.guesses)[-3:], t.p_rows, atol=2e-5)
        assert np.allclose(fresh_rows(pair.draft, t.context + t.guesses[:1])[-2:], t.q_rows, atol=2e-5)


def test_a_missing_kernel_is_one_line(monkeypatch):
    from models.llm import kernels
    monkeypatch.setattr(kernels, "_op", lambda name: None)        # torch without its packed kernels
    monkeypatch.setattr(kernels, "_ort", lambda: None)            # and no ONNX Runtime
    with pytest.raises(InputError, match="has no _weight_int4pack_mm_for_cpu kernel"):
        quant.check_kernels("int4", torch.device("cpu"))
    with pytest.raises(InputError, match="int4 weights run on the CPU"):
        quant.check_kernels("int4", torch.device("meta"))
    with pytest.raises(InputError, match="unknown weight format"):
        quant.compute_dtype("int3")


def test_fp32_packing_changes_only_the_order_of_sums():
    a, b = build_random(LlamaConfig.from_name("tiny"), seed=4), build_random(LlamaConfig.from_name("tiny"), seed=4)
    prepare_weights(b, "fp32")
    assert isinstance(b.layers[0].attention.wqkv, PackedLinear)
    for m in (a, b):
        m.setup_caches(1, 64)
    with torch.no_grad():
        for T in (1, 5, 9):
            ids, pos = torch.arange(3, 3 + T)[None], torch.arange(T)
            assert torch.allclose(a(ids, pos), b(ids, pos), rtol=1e-5, atol=1e-5)


def test_compiled_draft_step_gives_the_eager_rows():
    a, b = build_random(LlamaConfig.from_name("tiny-draft"), seed=5), \
        build_random(LlamaConfig.from_name("tiny-draft"), seed=5)
    for m in (a, b):
        m.setup_caches(1, 64)
    fn, why = compile_step(a)
    if fn is None:                           # no C++ compiler here: the failure is the documented fallback
        assert "ran eagerly" in why
        return
    with torch.inference_mode():
        for i, tok in enumerate([5, 9, 2, 7, 7, 1]):
            x, pos = torch.tensor([[tok]]), torch.tensor([i])
            assert torch.allclose(fn(x, pos), decode_one_token(b, x, pos), rtol=1e-5, atol=1e-5)


def test_llm_generate_with_int_weights_and_the_lookup_drafter(tmp_path, capsys):
    make_checkpoint(tmp_path / "t", "tiny", tokenizer=True)
    for fmt in ("int8", "int4"):
        rc, out, _ = run_cli(["llm-generate", "--checkpoint", tmp_path / "t", "--prompt-ids", "5,6,7,5,6,7,5,6",
                              "--tokens", 12, "--dtype", fmt, "--drafter", "lookup", "--json"], capsys)
        d = json.loads(out)
        assert rc == 0 and d["mode"] == "speculative" and d["drafter"] == "lookup" and d["dtype"] == fmt
        rc, out, _ = run_cli(["llm-generate", "--checkpoint", tmp_path / "t", "--prompt-ids", "5,6,7,5,6,7,5,6",
                              "--tokens", 12, "--dtype", fmt, "--json"], capsys)
        assert json.loads(out)["tokens"] == d["tokens"]       # greedy: the copies change the time, not the text
    rc, _, err = run_cli(["llm-generate", "--checkpoint", tmp_path / "t", "--prompt-ids", "5", "--tokens", 2,
                          "--drafter", "chain"], capsys)
    assert rc == 2 and "needs a draft" in err and len(err.strip().splitlines()) == 1


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(["Q4_0", "Q4_1"]), rows=st.integers(1, 40), blocks=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_q4_codes_are_the_blocks_ggml_dequantises(kind, rows, blocks, seed):
    import gguf

    from models.llm.gguf import q4_codes
    x = np.random.default_rng(seed).normal(size=(rows, 32 * blocks)).astype(np.float32)
    qt = getattr(gguf.GGMLQuantizationType, kind)
    data = gguf.quants.quantize(x, qt)
    codes, scale, zero = q4_codes(data, kind)
    w = (codes.astype(np.float32) - 8) * np.repeat(scale, 32, 1) + np.repeat(zero, 32, 1)
    assert codes.max() <= 15 and np.array_equal(w, gguf.quants.dequantize(data, qt))


@pytest.mark.parametrize("kind", ["Q4_0", "Q4_1"])
def test_a_4bit_gguf_is_packed_from_its_own_codes(kind, tmp_path):
    """int4 from a Q4_0/Q4_1 file packs the file's codes (no requantisation): every streamed matrix multiplies by
    what the gguf package dequantises, up to the bf16 rounding of its scales; the head stays int8."""
    import gguf
    from dataclasses import replace

    from models.llm.checkpoint import load_weights, read_config, resolve
    from models.llm.gguf import load_gguf
    from tests.llm_helpers import write_gguf
    cfg = replace(LlamaConfig.from_name("tiny"), name="g", rope_scaling=None, max_position_embeddings=128)
    path = tmp_path / f"{kind}.gguf"
    write_gguf(path, build_random(cfg, seed=3, std=0.1), getattr(gguf.GGMLQuantizationType, kind))
    floats = load_gguf(path)
    src = resolve(str(path))
    packed = load_weights(src, read_config(src), dtype=torch.float32, device="cpu", fmt="int4")
    assert any("as they are" in n for n in packed.load_notes)
    for a, b in zip(floats.layers, packed.layers):
        for name in ("wqkv", "wo"):
            ref, got = getattr(a.attention, name).weight, getattr(b.attention, name).dequantize()
            assert torch.allclose(got, ref, rtol=2 ** -7, atol=ref.abs().max().item() * 2 ** -8)
        assert torch.allclose(b.feed_forward.w13.dequantize(), a.feed_forward.w13.weight, rtol=2 ** -7,
                              atol=a.feed_forward.w13.weight.abs().max().item() * 2 ** -8)
    assert packed.output.fmt == "int8"
