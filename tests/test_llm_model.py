"""Our compact Llama: sizes on the meta device, logits equal to transformers', checkpoint loading and its errors."""
from __future__ import annotations

import json

import pytest
import torch

from corpus.errors import InputError
from models.llm.model import CONFIGS, LlamaConfig, build_random, rope_inv_freq
from models.llm.hf import load_checkpoint, load_model, read_checkpoint_config
from tests.llm_helpers import make_checkpoint, one_thread



_threads = pytest.fixture(autouse=True, scope="module")(one_thread)

def test_published_sizes_counted_on_meta_device():
    big, small = LlamaConfig.from_name("llama-3.1-8b"), LlamaConfig.from_name("llama-3.2-1b")
    assert big.param_count() == 8_030_261_248
    assert small.param_count() == 1_235_814_400
    assert big.weight_bytes(torch.bfloat16) == 2 * 8_030_261_248
    assert big.kv_bytes_per_token(torch.bfloat16) == 131_072
    assert big.kv_bytes_per_token(torch.float32) == 262_144
    # an untied input embedding is not streamed per token; a tied one is (it is the output matrix)
    assert big.weight_bytes_read_per_token(torch.bfloat16) == 2 * (8_030_261_248 - 128_256 * 4096)
    assert small.weight_bytes_read_per_token(torch.bfloat16) == 2 * 1_235_814_400


def test_from_name_returns_independent_copies():
    a = LlamaConfig.from_name("llama-3.2-1b")
    a.rope_scaling["factor"] = 1.0
    assert LlamaConfig.from_name("llama-3.2-1b").rope_scaling["factor"] == 32.0
    with pytest.raises(InputError, match="unknown model"):
        LlamaConfig.from_name("llama-9")


@pytest.mark.parametrize("name", ["llama-3.1-8b", "llama-3.2-1b", "tiny"])
def test_llama3_rope_frequencies_match_transformers(name):
    from transformers import LlamaConfig as HFConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    cfg = LlamaConfig.from_name(name)
    hf = HFConfig(**{k: v for k, v in cfg.to_hf().items() if k not in ("architectures", "model_type")})
    theirs, _ = ROPE_INIT_FUNCTIONS["llama3"](hf, "cpu")
    ours = rope_inv_freq(cfg)
    assert ours.dtype == torch.float32
    assert torch.equal(ours, theirs)


@pytest.mark.parametrize("name,layout,shards", [("tiny", "rope_parameters", 2), ("tiny-draft", "rope_scaling", 1)])
def test_logits_match_transformers_prompt_and_cached_decoding(tmp_path, name, layout, shards):
    from transformers import LlamaForCausalLM

    make_checkpoint(tmp_path, name=name, seed=3, shards=shards, layout=layout)
    ours = load_checkpoint(tmp_path)
    assert ours.config.rope_scaling is not None          # llama3 scaling on, in both layouts
    hf = LlamaForCausalLM.from_pretrained(tmp_path, dtype=torch.float32, attn_implementation="eager").eval()
    ids = torch.randint(0, ours.config.vocab_size, (2, 90), generator=torch.Generator().manual_seed(0))
    ours.setup_caches(2, 128)
    with torch.no_grad():
        ref = hf(ids).logits
        whole = ours(ids, torch.arange(90))
        # cached: a 70-token prompt, then one token at a time through the static cache
        ours.setup_caches(2, 128)
        parts = [ours(ids[:, :70], torch.arange(70))]
        parts += [ours(ids[:, i:i + 1], torch.tensor([i])) for i in range(70, 90)]
        cached = torch.cat(parts, 1)
    scale = ref.abs().max()
    assert scale > 0.5                                  # not trivially small logits
    assert (whole - ref).abs().max() <= 1e-5 * scale
    assert (cached - ref).abs().max() <= 1e-5 * scale


def test_checkpoint_config_layouts_agree(tmp_path):
    make_checkpoint(tmp_path / "a", layout="rope_parameters")
    make_checkpoint(tmp_path / "b", layout="rope_scaling")
    a, b = read_checkpoint_config(tmp_path / "a"), read_checkpoint_config(tmp_path / "b")
    ref = LlamaConfig.from_name("tiny")
    for cfg in (a, b):
        assert (cfg.dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.intermediate_size) == \
            (ref.dim, ref.n_layers, ref.n_heads, ref.n_kv_heads, ref.head_dim, ref.intermediate_size)
        assert cfg.rope_scaling == ref.rope_scaling and cfg.rope_theta == ref.rope_theta
        assert cfg.rms_norm_eps == ref.rms_norm_eps


def test_loaded_weights_equal_saved_and_tied_embeddings_stay_tied(tmp_path):
    model = make_checkpoint(tmp_path, name="tiny-draft", shards=2)
    loaded = load_checkpoint(tmp_path, dtype=torch.bfloat16)
    assert loaded.output.weight is loaded.tok_embeddings.weight
    for (n, p), (_, q) in zip(model.named_parameters(), loaded.named_parameters()):
        assert torch.equal(p.to(torch.bfloat16), q), n
        assert q.dtype == torch.bfloat16


def test_random_weights_come_from_the_seed():
    a, b, c = (build_random(CONFIGS["tiny"], seed=s) for s in (5, 5, 6))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.layers[0].attention.wqkv.weight, c.layers[0].attention.wqkv.weight)
    model, random_weights = load_model(name="tiny", seed=5)
    assert random_weights and torch.equal(model.output.weight, a.output.weight)


def _edit_config(path, **changes):
    d = json.loads((path / "config.json").read_text())
    d.update(changes)
    (path / "config.json").write_text(json.dumps(d))


def test_bad_checkpoints_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_checkpoint(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no config.json"):
        load_checkpoint(tmp_path / "empty")

    ok = tmp_path / "ok"
    make_checkpoint(ok)
    # a config whose sizes disagree with the tensors
    bad = tmp_path / "shape"
    make_checkpoint(bad)
    _edit_config(bad, intermediate_size=96)
    with pytest.raises(InputError, match="has shape"):
        load_checkpoint(bad)
    # more layers in config.json than tensors on disk
    short = tmp_path / "short"
    make_checkpoint(short)
    _edit_config(short, num_hidden_layers=3)
    with pytest.raises(InputError, match="lacks weights"):
        load_checkpoint(short)
    # pickle only: refused, never unpickled
    pkl = tmp_path / "pkl"
    make_checkpoint(pkl)
    (pkl / "model.safetensors").rename(pkl / "pytorch_model.bin")
    with pytest.raises(InputError, match="only safetensors"):
        load_checkpoint(pkl)
    # not a llama, and an unsupported rope type
    other = tmp_path / "other"
    make_checkpoint(other)
    _edit_config(other, model_type="gpt2")
    with pytest.raises(InputError, match="model_type"):
        load_checkpoint(other)
    rope = tmp_path / "rope"
    make_checkpoint(rope)
    _edit_config(rope, rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0})
    with pytest.raises(InputError, match="rope type"):
        load_checkpoint(rope)
    # a corrupt weights file
    junk = tmp_path / "junk"
    make_checkpoint(junk)
    (junk / "model.safetensors").write_bytes(b"not safetensors at all")
    with pytest.raises(InputError, match="safetensors"):
        load_checkpoint(junk)
    assert load_checkpoint(ok).config.n_layers == 2
