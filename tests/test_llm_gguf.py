"""GGUF checkpoints written by the gguf package itself: config, un-permuted q/k, dequantised weights, the tokenizer
from the metadata; transformers' own GGUF loader computes the same logits; broken files are one-line errors."""
from __future__ import annotations

from dataclasses import replace

import gguf
import pytest
import torch

from corpus.errors import InputError
from models.llm.model import LlamaConfig, build_random
from models.llm.hf import hf_state_dict
from models.llm.gguf import gguf_config, gguf_tokenizer, load_gguf
from tests.llm_helpers import one_thread, rewrite_gguf, write_gguf

_threads = pytest.fixture(autouse=True, scope="module")(one_thread)

CFG = replace(LlamaConfig.from_name("tiny"), name="g", rope_scaling=None, max_position_embeddings=128)


def _logits(model, ids):
    model.setup_caches(1, 32)
    with torch.no_grad():
        return model(torch.tensor([ids]), torch.arange(len(ids)))[0]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf")
    model = build_random(CFG, seed=3, std=0.1)
    write_gguf(d / "f32.gguf", model)
    return d, model


def test_f32_gguf_loads_to_the_same_model(tiny):
    d, model = tiny
    cfg = gguf_config(d / "f32.gguf")
    assert cfg.rms_norm_eps == pytest.approx(CFG.rms_norm_eps) and cfg.rope_scaling is None
    assert replace(cfg, name="g", rms_norm_eps=CFG.rms_norm_eps) == CFG
    ids = [5, 9, 300, 2, 77, 41, 8]
    assert torch.equal(_logits(load_gguf(d / "f32.gguf"), ids), _logits(model, ids))


def test_quantised_tensors_are_dequantised_by_the_gguf_package(tiny, tmp_path):
    d, model = tiny
    q8 = tmp_path / "q8.gguf"
    write_gguf(q8, model, gguf.GGMLQuantizationType.Q8_0)
    assert q8.stat().st_size < 0.4 * (d / "f32.gguf").stat().st_size
    # the model whose matrices are what Q8_0 keeps of ours: our loader must give exactly that one
    expect = build_random(CFG, seed=3, std=0.1)
    with torch.no_grad():
        for name, t in hf_state_dict(expect).items():
            if t.ndim == 2:
                rt = gguf.quants.dequantize(gguf.quants.quantize(t.numpy().copy(), gguf.GGMLQuantizationType.Q8_0),
                                            gguf.GGMLQuantizationType.Q8_0)
                t.copy_(torch.from_numpy(rt))
    ids = [1, 2, 3, 400, 5]
    got = _logits(load_gguf(q8), ids)
    assert torch.allclose(got, _logits(expect, ids), atol=1e-5)
    assert not torch.allclose(got, _logits(model, ids), atol=1e-4)        # quantisation did change them


def test_transformers_reads_our_gguf_to_the_same_logits(tiny):
    from transformers import LlamaForCausalLM
    d, model = tiny
    hf = LlamaForCausalLM.from_pretrained(str(d), gguf_file="f32.gguf", dtype=torch.float32).eval()
    ids = [7, 100, 3, 12, 450, 9, 9]
    with torch.no_grad():
        theirs = hf(torch.tensor([ids])).logits[0]
    assert torch.allclose(theirs, _logits(load_gguf(d / "f32.gguf"), ids), atol=1e-4)


def test_tokenizer_from_the_metadata_round_trips_and_shows_partial_characters(tiny):
    d, _ = tiny
    text = gguf_tokenizer(d / "f32.gguf", CFG.vocab_size)
    assert text.kind == "bytes" and text.start_id == 1
    s = "the other in 你好\n"
    ids = text.encode(s)
    assert text.decode(ids) == s
    shown = [text.display(i) for i in ids]
    assert shown[0] == "the" and " the" not in shown[:1] and "↵" in shown
    assert "‹e4›" in shown                                   # 你 is three bytes, none merged: shown as bytes
    assert text.display(0) == "<|endoftext|>" and text.encode("<|im_start|>") == [1]


def test_bad_gguf_files_are_one_line_errors(tmp_path, tiny):
    d, model = tiny
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(InputError, match="not a readable GGUF"):
        gguf_config(junk)
    w = gguf.GGUFWriter(str(tmp_path / "gpt2.gguf"), "gpt2")
    w.add_block_count(1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(InputError, match="only 'llama'"):
        gguf_config(tmp_path / "gpt2.gguf")
    # a file whose metadata promises more layers than it has tensors for
    rewrite_gguf(d / "f32.gguf", tmp_path / "short.gguf", block_count=3)
    with pytest.raises(InputError, match="lacks weights"):
        load_gguf(tmp_path / "short.gguf")
