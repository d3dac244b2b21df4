"""Fuzzing checkpoint folders with hypothesis: config.json with any field (rope fields included) replaced by any
JSON value, and shard indexes naming any file. Reading gives the one user error or a config inside the
documented bounds; no file outside the checkpoint folder is ever named; nothing is written."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from corpus.errors import InputError
from models.llm.checks import SIZES
from models.llm.model import LlamaConfig
from models.llm.hf import _checkpoint_files, read_checkpoint_config
from tests.fuzz_helpers import budget, json_values

BASE = LlamaConfig.from_name("tiny").to_hf()
FIELDS = tuple(BASE) + ("rope_scaling", "rope_theta", "tie_word_embeddings")
ROPE_FIELDS = ("rope_type", "rope_theta", "factor", "low_freq_factor", "high_freq_factor",
               "original_max_position_embeddings", "type")
sizes = st.one_of(st.integers(-5, 70_000), st.sampled_from([0, 1, 2, 7, 2 ** 20, 2 ** 40, 1e12, 16.0, 2.5]))


@st.composite
def config(draw):
    d = json.loads(json.dumps(BASE))
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(FIELDS))
        where = draw(st.sampled_from(["top", "rope"]))
        if where == "rope" and isinstance(d.get("rope_parameters"), dict):
            d["rope_parameters"][draw(st.sampled_from(ROPE_FIELDS))] = draw(st.one_of(json_values(), sizes))
        elif draw(st.booleans()):
            d.pop(key, None)
        else:
            d[key] = draw(st.one_of(json_values(FIELDS), sizes))
    return d


@budget(300)
@given(config())
def test_any_config_json_is_one_input_error_or_a_config_in_bounds(d):
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "config.json").write_text(json.dumps(d), encoding="utf-8")
        try:
            cfg = read_checkpoint_config(folder)
        except InputError as exc:
            assert "\n" not in str(exc)
            return
        finally:
            assert os.listdir(folder) == ["config.json"]
    bounds = {"vocab_size": cfg.vocab_size, "hidden_size": cfg.dim, "num_hidden_layers": cfg.n_layers,
              "num_attention_heads": cfg.n_heads, "num_key_value_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim,
              "intermediate_size": cfg.intermediate_size, "max_position_embeddings": cfg.max_position_embeddings}
    for key, value in bounds.items():
        lo, hi, _ = SIZES[key]
        assert isinstance(value, int) and lo <= value <= hi, (key, value)
    assert cfg.n_heads % cfg.n_kv_heads == 0 and cfg.head_dim % 2 == 0
    assert 0 < cfg.rms_norm_eps <= 1 and 1 < cfg.rope_theta <= 1e12 and isinstance(cfg.tie_embeddings, bool)
    if cfg.rope_scaling:
        s = cfg.rope_scaling
        assert 0 < s["factor"] <= 1e4 and 0 < s["low_freq_factor"] < s["high_freq_factor"] <= 1e4
    assert cfg.kv_bytes_per_token(__import__("torch").float32) > 0


names = st.one_of(st.sampled_from(["model.safetensors", "../other/model.safetensors", "/etc/passwd", "..", ".",
                                   "sub/../../x.safetensors", "a/b.safetensors", "", "link.safetensors"]),
                  st.text(max_size=12), json_values())


@budget(150)
@given(st.one_of(st.dictionaries(st.text(max_size=6), names, max_size=4).map(lambda m: {"weight_map": m}),
                 json_values(("weight_map",))))
def test_any_shard_index_names_only_files_inside_the_folder(index):
    with tempfile.TemporaryDirectory() as top:
        folder = Path(top) / "ckpt"
        (folder / "a").mkdir(parents=True)
        (Path(top) / "other").mkdir()
        for f in (folder / "model.safetensors", folder / "a" / "b.safetensors", Path(top) / "other" / "model.safetensors",
                  Path(top) / "x.safetensors"):
            f.write_bytes(b"")
        os.symlink(Path(top) / "x.safetensors", folder / "link.safetensors")
        (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
        before = sorted(str(p) for p in Path(top).rglob("*"))
        try:
            files = _checkpoint_files(folder)
        except InputError as exc:
            assert "\n" not in str(exc)
            files = []
        for f in files:      # named inside the folder; the name may be a link to a file anywhere (the HF cache's)
            assert f.parent.resolve().is_relative_to(folder.resolve()) and f.is_file()
            assert f.resolve().is_relative_to(folder.resolve()) or f.is_symlink()
        assert sorted(str(p) for p in Path(top).rglob("*")) == before
