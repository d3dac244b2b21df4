"""Checkpoints: config.json validated before anything is sized or allocated, only float weights loaded (no
silent cast), NaN/inf weights refused, and no file read from outside the checkpoint folder."""
from __future__ import annotations

import json
import os

import pytest
import torch
from safetensors.torch import load_file, save_file

from corpus.errors import InputError
from models.llm.hf import load_checkpoint, read_checkpoint_config
from tests.llm_helpers import make_checkpoint, one_thread, run_cli

_threads = pytest.fixture(autouse=True, scope="module")(one_thread)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """One tiny saved checkpoint; tests copy it before changing it."""
    path = tmp_path_factory.mktemp("ckpt") / "tiny"
    make_checkpoint(path)
    return path


def _copy(ckpt, tmp_path, name="c"):
    import shutil
    dst = tmp_path / name
    shutil.copytree(ckpt, dst)
    return dst


def _config(path, **changes):
    d = json.loads((path / "config.json").read_text())
    for k, v in changes.items():
        if v is ...:
            d.pop(k, None)
        else:
            d[k] = v
    (path / "config.json").write_text(json.dumps(d))


def _rope(**changes):
    rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
    rope.update(changes)
    return rope


CONFIGS = {
    "negative vocabulary": ({"vocab_size": -5}, "vocab_size = -5 is out of range"),
    "vocabulary of 2**40": ({"vocab_size": 2 ** 40}, "vocab_size = 1099511627776 is out of range"),
    "1e12 layers": ({"num_hidden_layers": 1e12}, "num_hidden_layers = 1000000000000.0 is out of range"),
    "1.5 layers": ({"num_hidden_layers": 1.5}, "num_hidden_layers = 1.5 is not a whole number"),
    "layers as text": ({"num_hidden_layers": "2"}, "num_hidden_layers must be a whole number, not text"),
    "no hidden size": ({"hidden_size": ...}, "lacks 'hidden_size'"),
    "rope_theta as text": ({"rope_parameters": _rope(rope_theta="big")}, "rope_theta must be a number, not text"),
    "rope_theta a list": ({"rope_parameters": _rope(rope_theta=[1, 2])}, "rope_theta must be a number, not a list"),
    "rope_parameters a list": ({"rope_parameters": [1, 2]}, "rope_parameters must be an object"),
    "rope_scaling a string": ({"rope_parameters": ..., "rope_scaling": "llama3"}, "rope_scaling must be an object"),
    "llama3 factor x": ({"rope_parameters": _rope(factor="x")}, "rope factor must be a number, not text"),
    "llama3 factor Infinity": ({"rope_parameters": _rope(factor=float("inf"))}, "rope factor = inf is not a finite"),
    "low >= high freq factor": ({"rope_parameters": _rope(low_freq_factor=4.0)}, "must be below high_freq_factor"),
    "original context 1e30": ({"rope_parameters": _rope(original_max_position_embeddings=1e30)}, "out of range"),
    "rope_type a list": ({"rope_parameters": _rope(rope_type=["llama3"])}, "rope_type must be text"),
    "rms_norm_eps 0": ({"rms_norm_eps": 0}, "rms_norm_eps = 0 is out of range"),
    "rms_norm_eps NaN": ({"rms_norm_eps": float("nan")}, "rms_norm_eps = nan is not a finite number"),
    "tie_word_embeddings 'false'": ({"tie_word_embeddings": "false"}, "tie_word_embeddings must be true or false"),
    "odd head_dim": ({"head_dim": 15}, "head_dim 15"),
    "more KV heads than heads": ({"num_key_value_heads": 8}, "must be a multiple of num_key_value_heads"),
    "head_dim 0 by division": ({"head_dim": ..., "hidden_size": 3, "num_attention_heads": 4}, "head_dim 0"),
    "positions 2**30": ({"max_position_embeddings": 2 ** 30}, "max_position_embeddings"),
}


@pytest.mark.parametrize("case", list(CONFIGS))
def test_a_bad_config_json_is_one_input_error_before_any_allocation(ckpt, tmp_path, case):
    path = _copy(ckpt, tmp_path)
    changes, message = CONFIGS[case]
    _config(path, **changes)
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace("*", r"\*")) as err:
        read_checkpoint_config(path)
    assert str(path / "config.json") in str(err.value) and "\n" not in str(err.value)


def test_model_info_of_a_1e12_layer_config_is_exit_2_at_once(ckpt, tmp_path, capsys):
    path = _copy(ckpt, tmp_path)
    _config(path, num_hidden_layers=1e12)
    with pytest.raises(InputError):          # first, so a regression fails here instead of eating memory below
        read_checkpoint_config(path)
    rc, out, err = run_cli(["model-info", path], capsys)
    assert rc == 2 and out == "" and "num_hidden_layers" in err and err.count("\n") == 1


@pytest.mark.parametrize("content, message", [
    ("[" * 200_000 + "]" * 200_000, "nested more than 64 levels"),
    ("{\"vocab_size\": 1", "not valid JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_an_unreadable_config_json_is_one_input_error(ckpt, tmp_path, content, message):
    path = _copy(ckpt, tmp_path)
    (path / "config.json").write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputError, match=message):
        read_checkpoint_config(path)


# ---- tensors ------------------------------------------------------------------------------------------
def _rewrite_tensor(path, key, fn):
    f = path / "model.safetensors"
    sd = load_file(str(f))
    sd[key] = fn(sd[key])
    save_file(sd, str(f), metadata={"format": "pt"})


@pytest.mark.parametrize("dtype, word", [(torch.int8, "I8"), (torch.bool, "BOOL"), (torch.float64, "F64"),
                                         (torch.int32, "I32")])
def test_weights_that_are_not_float32_16_or_bf16_are_refused_not_cast(ckpt, tmp_path, dtype, word):
    path = _copy(ckpt, tmp_path)
    _rewrite_tensor(path, "model.layers.0.mlp.down_proj.weight", lambda t: t.to(dtype))
    with pytest.raises(InputError, match=f"down_proj.weight is {word}; only float32, float16 and bfloat16"):
        load_checkpoint(path)


def test_bf16_and_fp16_weights_load(ckpt, tmp_path):
    path = _copy(ckpt, tmp_path)
    _rewrite_tensor(path, "model.layers.0.mlp.down_proj.weight", lambda t: t.to(torch.bfloat16))
    _rewrite_tensor(path, "model.norm.weight", lambda t: t.to(torch.float16))
    assert load_checkpoint(path).config.n_layers == 2


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_nan_or_inf_weights_are_refused(ckpt, tmp_path, value, capsys):
    path = _copy(ckpt, tmp_path)

    def poison(t):
        t = t.clone()
        t[0, 0] = value
        return t
    _rewrite_tensor(path, "model.layers.1.self_attn.k_proj.weight", poison)
    with pytest.raises(InputError, match="k_proj.weight holds NaN or infinite values"):
        load_checkpoint(path)
    rc, out, err = run_cli(["llm-generate", "--checkpoint", path, "--prompt-ids", "1,2", "--tokens", 3], capsys)
    assert rc == 2 and "holds NaN" in err and err.count("\n") == 1


def test_a_weight_too_large_for_fp16_is_refused_in_fp16_only(ckpt, tmp_path):
    path = _copy(ckpt, tmp_path)
    _rewrite_tensor(path, "model.norm.weight", lambda t: t * 0 + 1e6)
    with pytest.raises(InputError, match="too large for torch.float16"):
        load_checkpoint(path, dtype=torch.float16)
    assert load_checkpoint(path, dtype=torch.float32).norm.weight[0] == 1e6


# ---- files named by a checkpoint stay inside its folder ------------------------------------------------
def _sharded(tmp_path):
    path = tmp_path / "sharded"
    make_checkpoint(path, shards=2)
    return path


def _index_points(path, target: str):
    index = path / "model.safetensors.index.json"
    d = json.loads(index.read_text())
    first = sorted(set(d["weight_map"].values()))[0]
    d["weight_map"] = {k: (target if v == first else v) for k, v in d["weight_map"].items()}
    index.write_text(json.dumps(d))
    return first


def test_an_index_entry_outside_the_folder_is_refused(tmp_path):
    path = _sharded(tmp_path)
    (tmp_path / "other").mkdir()
    first = _index_points(path, "../other/model.safetensors")
    os.replace(path / first, tmp_path / "other" / "model.safetensors")    # the file really is there
    with pytest.raises(InputError, match=r"names '\.\./other/model\.safetensors', outside the checkpoint folder"):
        load_checkpoint(path)
    _index_points(path, str(tmp_path / "other" / "model.safetensors"))      # an absolute path
    with pytest.raises(InputError, match="outside the checkpoint folder"):
        load_checkpoint(path)


def _hub_snapshot(tmp_path, shards=2):
    """The Hugging Face cache's layout: hub/models--x/snapshots/<rev>/<file> -> ../../blobs/<sha256>."""
    made = tmp_path / "made"
    make_checkpoint(made, shards=shards)
    repo = tmp_path / "hub" / "models--org--tiny"
    snap = repo / "snapshots" / ("0" * 40)
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    for i, f in enumerate(sorted(made.iterdir())):
        blob = repo / "blobs" / f"{i:064x}"
        os.replace(f, blob)
        os.symlink(os.path.relpath(blob, snap), snap / f.name)             # relative, as huggingface_hub writes them
    return snap


@pytest.mark.parametrize("shards", [1, 2])
def test_a_hugging_face_cache_snapshot_loads(tmp_path, shards):
    snap = _hub_snapshot(tmp_path, shards)
    assert all((snap / n).is_symlink() for n in ("config.json", "model.safetensors.index.json" if shards > 1
                                                 else "model.safetensors"))
    assert read_checkpoint_config(snap).n_layers == 2
    model = load_checkpoint(snap)
    fresh = load_checkpoint(_hub_snapshot(tmp_path / "again", shards))      # the same weights through fresh links
    assert torch.equal(model.norm.weight, fresh.norm.weight)


def test_links_that_leave_the_folder_otherwise_are_refused(tmp_path):
    path = _sharded(tmp_path)
    index = json.loads((path / "model.safetensors.index.json").read_text())
    first = sorted(set(index["weight_map"].values()))[0]
    # a link to a folder (not a file) outside
    (tmp_path / "outside").mkdir()
    os.replace(path / first, tmp_path / "outside" / first)
    os.symlink(tmp_path / "outside", path / first)
    with pytest.raises(InputError, match="which is not a regular file"):
        load_checkpoint(path)
    # a name whose folder on the way links out: sub/ -> ../outside
    os.remove(path / first)
    os.symlink(tmp_path / "outside", path / "sub")
    _index_points(path, f"sub/{first}")
    with pytest.raises(InputError, match="a folder linked from outside the checkpoint folder"):
        load_checkpoint(path)
    # a dangling link is refused, never read
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    os.symlink(tmp_path / "nowhere.safetensors", path / first)
    with pytest.raises(InputError, match="nowhere.safetensors, which is not a regular file"):
        load_checkpoint(path)


@pytest.mark.parametrize("index, message", [
    ({"weight_map": ["a"]}, "weight_map must be an object"),
    ({"weight_map": {"x": 3}}, "must be a file name"),
    ({"weight_map": {}}, "weight_map is empty"),
    ([1], "must be an object"),
])
def test_a_malformed_index_is_one_input_error(tmp_path, index, message):
    path = _sharded(tmp_path)
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(InputError, match=message):
        load_checkpoint(path)


def test_a_hidden_temp_file_is_no_shard(ckpt, tmp_path):
    path = _copy(ckpt, tmp_path)
    (path / ".model.safetensors.k1ll3d.tmp.safetensors").write_bytes(b"half a file")   # a killed writer's
    assert load_checkpoint(path).config.n_layers == 2


@pytest.mark.parametrize("shards", [1, 2])
def test_save_checkpoint_on_a_full_disk_leaves_the_old_checkpoint_whole_and_no_temp(tmp_path, monkeypatch, shards):
    """save_checkpoint writes atomically: a write that dies half way (the last shard) leaves every old file as it
    was (the shards written before it included) and no temp file, and the old checkpoint still loads."""
    import errno

    import safetensors.torch

    from models.llm.model import LlamaConfig, build_random
    from models.llm.hf import save_checkpoint
    path = tmp_path / "c"
    make_checkpoint(path, shards=shards)
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    real_save, calls = safetensors.torch.save_file, []

    def dies_half_way(tensors, filename, metadata=None):
        calls.append(filename)
        if len(calls) == shards:                  # the last shard: half a file, then the disk is full
            with open(filename, "wb") as fh:
                fh.write(b"half a shard")
            raise OSError(errno.ENOSPC, "No space left on device")
        real_save(tensors, filename, metadata=metadata)
    monkeypatch.setattr(safetensors.torch, "save_file", dies_half_way)
    other = build_random(LlamaConfig.from_name("tiny"), seed=7)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(other, path, shards=shards)
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before
    assert load_checkpoint(path).config.n_layers == 2
