"""Shared fixtures of the torch-backend tests: tiny checkpoints on disk and a CLI runner."""
from __future__ import annotations

import json

import torch

from models.llama import LlamaConfig, build_random, save_checkpoint


def make_checkpoint(path, name="tiny", seed=1, shards=1, layout="rope_parameters", std=0.1, tokenizer=False):
    """A random tiny model saved as a transformers checkpoint; returns our in-memory model."""
    model = build_random(LlamaConfig.from_name(name), seed=seed, std=std)
    save_checkpoint(model, path, shards=shards)
    if layout == "rope_scaling":  # the older layout: rope_theta at top level + rope_scaling
        cfg_file = path / "config.json"
        d = json.loads(cfg_file.read_text())
        rope = d.pop("rope_parameters")
        d["rope_theta"] = rope.pop("rope_theta")
        d["rope_scaling"] = rope if rope["rope_type"] != "default" else None
        cfg_file.write_text(json.dumps(d))
    if tokenizer:
        write_word_tokenizer(path / "tokenizer.json", model.config.vocab_size)
    return model


def write_word_tokenizer(path, vocab_size):
    """A word-level tokenizer.json whose words are w0..w{V-1} (so any id decodes)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(vocab_size)}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tok.save(str(path))


def run_cli(argv, capsys):
    """Run the backend's subcommands as the CLI does; returns (exit code, stdout, stderr)."""
    from app.cli_llm import main

    rc = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def fresh_cache_copy(model, ids, seq):
    """K caches of a fresh prefill of ids: what a correct incremental cache must hold."""
    model.setup_caches(1, seq)
    with torch.no_grad():
        model(torch.tensor([ids]), torch.arange(len(ids)))
    return [layer.attention.kv_cache.k_cache[:, :, :len(ids)].clone() for layer in model.layers]


def one_thread():
    """Tiny models on a shared 2-core machine: one intra-op thread avoids OpenMP threads waiting on each other
    (a tiny forward took 16 ms on 2 busy threads, 0.8 ms on one). Restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
