"""Shared fixtures of the torch-backend tests: tiny checkpoints on disk and a CLI runner."""
from __future__ import annotations

import json

import numpy as np
import torch

from models.llm.model import LlamaConfig, build_random
from models.llm.hf import save_checkpoint


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
    from app.cli.llm import main

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


def load_train_pair():
    """The training code of the shipped pair (models/llm/train.py; tools/train_pair.py runs its main)."""
    from models.llm import train
    return train


def char_checkpoint(path, vocab, name="tiny", seed=1, std=0.3, max_pos=256):
    """A random Llama of a named config's shapes with a character vocabulary (tools/train_pair.py's tokenizer)."""
    from dataclasses import replace

    tp = load_train_pair()
    cfg = replace(LlamaConfig.from_name(name), vocab_size=len(vocab), max_position_embeddings=max_pos)
    model = build_random(cfg, seed=seed, std=std)
    save_checkpoint(model, path)
    tp.char_tokenizer(vocab).save(str(path / "tokenizer.json"))
    return model


def gguf_byte_tokens(vocab_size):
    """A small byte-level BPE vocabulary in GGUF's form: 2 control tokens, the 256 byte symbols, a few merges,
    padded with control tokens to vocab_size. Returns (tokens, types, merges)."""
    from models.llm.text import _bytes_to_unicode
    table = _bytes_to_unicode()
    tokens = ["<|endoftext|>", "<|im_start|>"] + [table[b] for b in range(256)]
    types = [3, 3] + [1] * 256
    G = table[ord(" ")]
    merges = [("t", "h"), ("th", "e"), (G, "the"), ("e", "r"), (G, "t"), ("i", "n"), (G, "a"), ("o", "u")]
    for a, b in merges:
        tokens.append(a + b)
        types.append(1)
    while len(tokens) < vocab_size:
        tokens.append(f"<pad_{len(tokens)}>")
        types.append(3)
    return tokens, types, [f"{a} {b}" for a, b in merges]


def write_gguf(path, model, qtype=None, pre="smollm", tokenizer_edit=None):
    """Our model written as llama.cpp writes a Llama GGUF, with the gguf package: llama.* metadata, q/k permuted
    to the interleaved rotary layout, matrices in `qtype` (default F32), a byte-level BPE tokenizer
    (tokenizer_edit(tokens, types, merges, bos) -> the same four, for a file whose tokenizer lies)."""
    import gguf
    import numpy as np

    from models.llm.hf import hf_state_dict
    cfg = model.config
    qtype = qtype or gguf.GGMLQuantizationType.F32
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(cfg.n_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.dim)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.n_heads)
    w.add_head_count_kv(cfg.n_kv_heads)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_dimension_count(cfg.head_dim)
    w.add_vocab_size(cfg.vocab_size)
    tokens, types, merges = gguf_byte_tokens(cfg.vocab_size)
    bos = 1
    if tokenizer_edit is not None:
        tokens, types, merges, bos = tokenizer_edit(tokens, types, merges, bos)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(bos)

    def permute(x, n_head):
        return x.reshape(n_head, 2, x.shape[0] // n_head // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)

    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    parts = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate",
             "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down", "post_attention_layernorm": "ffn_norm"}
    for k, t in hf_state_dict(model).items():
        x = t.float().numpy().copy()
        if k in names:
            name = names[k]
        else:
            i, rest = k.split(".")[2], ".".join(k.split(".")[3:-1])
            name = f"blk.{i}.{parts[rest]}.weight"
        if name.endswith("attn_q.weight"):
            x = permute(x, cfg.n_heads)
        elif name.endswith("attn_k.weight"):
            x = permute(x, cfg.n_kv_heads)
        if x.ndim == 2 and qtype != gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, gguf.quants.quantize(x, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(name, x.astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def rewrite_gguf(src_path, dst_path, edit=lambda key, value: value, block_count=None):
    """A copy of a Llama GGUF with its llama.* metadata passed through edit(key, value) (None drops the key) and,
    if given, another block count: the tensors unchanged. For files whose metadata lies about their contents."""
    import gguf
    src = gguf.GGUFReader(str(src_path))
    w = gguf.GGUFWriter(str(dst_path), "llama")
    for k, f in src.fields.items():
        if k.startswith("llama.") and not (block_count is not None and k == "llama.block_count"):
            v = edit(k, f.contents())
            if v is not None:
                (w.add_uint32 if isinstance(v, int) else w.add_float32)(k, v)
    if block_count is not None:
        w.add_block_count(block_count)
    for t in src.tensors:
        w.add_tensor(t.name, np.array(t.data))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
