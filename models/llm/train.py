"""Train the 《呐喊》 neural pair: a character-level Llama draft (~0.7M parameters) and target (~6M), with our own
Llama code (models/llm/model.py: RMSNorm, RoPE, grouped-query attention, SwiGLU), on the whole book except one
held-out story, 03 《药》, which none of the n-gram toy's five stories (02 05 07 08 14) is either.

    python tools/train_pair.py --corpus ../shared/corpus/nahan --out assets/models     (this module's main)

Text is read and normalised by corpus/normalise.py (the n-gram tables' normalisation): title line dropped,
paragraphs joined by '\\n' (a token), pieces joined by '\\n'. The preface 00 《自序》 is trained on: it is Lu Xun's
prose of the same book and period, and the data is small (66k characters), so every piece counts.
Validation: the last paragraphs (≥ 5 %) of every training piece, never trained on; the checkpoint written is the
one with the lowest validation loss seen at an evaluation (early stopping on validation, never on 《药》).

The budget is a step count, never wall time, so a run reproduces: the same seed, corpus, torch build and thread
count give bit-identical weights. Writes, per model, a Hugging Face Llama folder (config.json,
model.safetensors, tokenizer.json, tokenizer_config.json, training.json) atomically: into a temporary folder
beside it, then renamed over the old one.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]        # the checkout

import torch
import torch.nn.functional as F

from corpus.errors import InputError
from corpus.normalise import NORMALISATION, read_piece, resolve_sources
from models.llm.model import LlamaConfig, Transformer, apply_rope, rms_norm, rope_tables
from models.llm.hf import hf_state_dict

UNK = "<unk>"
HELDOUT = "03"                  # 《药》
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "nahan"

# Shapes. head_dim 32, grouped-query attention (2 query heads per KV head), SwiGLU width ≈ 8/3 · dim, tied
# embeddings, rope theta 10,000 without scaling, context 256 (a paragraph or two of the book).
CONTEXT = 256
DRAFT = LlamaConfig(name="nahan-draft", vocab_size=0, dim=128, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=32,
                    intermediate_size=352, rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
                    tie_embeddings=True, max_position_embeddings=CONTEXT)
TARGET = LlamaConfig(name="nahan-target", vocab_size=0, dim=288, n_layers=6, n_heads=9, n_kv_heads=3, head_dim=32,
                     intermediate_size=768, rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
                     tie_embeddings=True, max_position_embeddings=CONTEXT)
TINY = LlamaConfig(name="tiny-char", vocab_size=0, dim=32, n_layers=1, n_heads=2, n_kv_heads=1, head_dim=16,
                   intermediate_size=64, rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
                   tie_embeddings=True, max_position_embeddings=64)


@dataclass
class Recipe:
    steps: int
    batch: int = 16
    context: int = CONTEXT
    lr: float = 2e-3
    warmup: int = 30
    weight_decay: float = 0.1
    dropout: float = 0.1
    unk_rate: float = 0.005     # inputs replaced by <unk>, so the unknown-character input has a trained embedding
    eval_every: int = 25
    storage: str = "fp32"       # fp32 | bf16 (the safetensors dtype)


# 16 x 256 = 4,096 characters a step: the draft sees the training text ~27 times, the target ~17 times (the
# best validation step is what ships). The target is bf16 on disk: 6M parameters in fp32 would pass 20 MB.
# 6M parameters on 62k characters overfit: with dropout 0.2 and 400 steps its validation loss stopped at 4.83
# (step 175, train 4.1) while the 0.7M draft reached 4.72; with 0.45 it learned too slowly (5.49 at step 150).
# So: dropout 0.3, a lower rate and a shorter schedule, annealed before it overfits.
RECIPES = {"draft": Recipe(steps=400, storage="fp32", dropout=0.1),
           "target": Recipe(steps=260, storage="bf16", dropout=0.3, lr=1.5e-3, warmup=20)}


# --- data -----------------------------------------------------------------------------------------
def read_book(corpus: Path, heldout: str = HELDOUT):
    """(training pieces, held-out piece): every *.txt of the folder in name order, normalised."""
    files = resolve_sources([corpus])
    held = [f for f in files if f.stem.split("-", 1)[0] == heldout or f.stem == heldout]
    if len(held) != 1:
        raise InputError(f"no single piece {heldout!r} to hold out in {corpus}")
    pieces = [read_piece(f) for f in files if f != held[0]]
    return pieces, read_piece(held[0])


def split_piece(paragraphs: list[str], share: float = 0.05) -> tuple[list[str], list[str]]:
    """The last paragraphs holding at least `share` of the piece's characters go to validation."""
    total = sum(len(p) for p in paragraphs)
    k, tail = len(paragraphs), 0
    while k > 1 and tail < share * total:
        k -= 1
        tail += len(paragraphs[k])
    return paragraphs[:k], paragraphs[k:]


def build_vocab(text: str) -> list[str]:
    """<unk> first, then every character of the training text in code-point order ('\\n' included)."""
    return [UNK] + sorted(set(text))


def char_tokenizer(vocab: list[str]):
    """A tokenizers.Tokenizer: one token per character (any character, newline too), unknown -> <unk>;
    decoding concatenates the pieces."""
    # lazy: tokenizers only when a tokenizer file is read
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    tok = Tokenizer(models.WordLevel({c: i for i, c in enumerate(vocab)}, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return tok


# --- the training forward: the same parameters and functions as the inference path, no KV cache ------------
def train_forward(model: Transformer, idx: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                  dropout: float = 0.0) -> torch.Tensor:
    """idx (B, T) -> logits (B, T, V). The arithmetic of llama.block_forward (tests check the logits equal
    model(idx, positions)), with causal attention over the window instead of a cache, and dropout on the
    embedding and each residual branch when training."""
    drop = (lambda t: F.dropout(t, dropout, training=True)) if dropout > 0 else (lambda t: t)
    return model.output(model.norm(train_layers(model, drop(model.tok_embeddings(idx)), cos, sin, dropout)))


def train_features(model: Transformer, idx: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """idx (B, T) -> the features (B, T, dim) the output layer reads (what the self-drafters learn from)."""
    return model.norm(train_layers(model, model.tok_embeddings(idx), cos, sin))


def train_layers(model: Transformer, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                 dropout: float = 0.0) -> torch.Tensor:
    """The layers over a window of inputs x (B, T, dim), causal attention, no cache."""
    cfg = model.config
    B, T, _ = x.shape
    H, KV, hd = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    drop = (lambda t: F.dropout(t, dropout, training=True)) if dropout > 0 else (lambda t: t)
    for layer in model.layers:
        a, f = layer.attention, layer.feed_forward
        h = rms_norm(x, layer.attention_norm.weight, cfg.rms_norm_eps)
        q, k, v = F.linear(h, a.wqkv.weight).split([H * hd, KV * hd, KV * hd], dim=-1)
        q = apply_rope(q.view(B, T, H, hd), cos, sin).transpose(1, 2)
        k = apply_rope(k.view(B, T, KV, hd), cos, sin).transpose(1, 2)
        v = v.view(B, T, KV, hd).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + drop(F.linear(y.transpose(1, 2).reshape(B, T, H * hd), a.wo.weight))
        gate, up = F.linear(rms_norm(x, layer.ffn_norm.weight, cfg.rms_norm_eps), f.w13.weight).chunk(2, dim=-1)
        x = x + drop(F.linear(F.silu(gate) * up, f.w2.weight))
    return x


def init_weights(model: Transformer, gen: torch.Generator) -> None:
    """N(0, 0.02); the two projections back into the residual stream scaled by 1/sqrt(2 · layers); norms 1."""
    std = 0.02
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name.endswith(("wo.weight", "w2.weight")):
                p.normal_(0.0, std / math.sqrt(2 * model.config.n_layers), generator=gen)
            else:
                p.normal_(0.0, std, generator=gen)


def lr_at(step: int, r: Recipe) -> float:
    """Linear warm-up, then cosine decay to a tenth."""
    if step < r.warmup:
        return r.lr * (step + 1) / r.warmup
    t = (step - r.warmup) / max(1, r.steps - r.warmup)
    return r.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


@torch.no_grad()
def mean_loss(model: Transformer, ids: torch.Tensor, context: int, cos, sin) -> float:
    """Mean next-character cross-entropy (nats) over a token stream, in consecutive windows of `context`."""
    model.eval()
    total, n = 0.0, 0
    for s in range(0, len(ids) - 1, context):
        x = ids[s:s + context + 1]
        if len(x) < 2:
            break
        logits = train_forward(model, x[None, :-1], cos[:len(x) - 1], sin[:len(x) - 1])
        total += F.cross_entropy(logits[0].float(), x[1:], reduction="sum").item()
        n += len(x) - 1
    return total / n


def train_one(cfg: LlamaConfig, r: Recipe, train_ids: torch.Tensor, val_ids: torch.Tensor, unk_id: int,
              seed: int, log) -> tuple[Transformer, list[dict], dict]:
    """AdamW on random windows of the training stream; returns the best-validation model and the curve."""
    gen = torch.Generator().manual_seed(seed)
    with torch.device("meta"):
        model = Transformer(cfg)
    model = model.to_empty(device="cpu")
    model.output.weight = model.tok_embeddings.weight
    init_weights(model, gen)
    cos, sin = rope_tables(cfg, r.context)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": r.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=r.lr, betas=(0.9, 0.95), eps=1e-8)
    curve, best = [], {"val_loss": float("inf"), "step": 0, "state": None}
    n = len(train_ids) - r.context - 1
    t0 = time.perf_counter()
    running = []
    for step in range(r.steps):
        model.train()
        starts = torch.randint(0, n, (r.batch,), generator=gen)
        win = torch.stack([train_ids[s:s + r.context + 1] for s in starts.tolist()])
        x, y = win[:, :-1].clone(), win[:, 1:]
        if r.unk_rate > 0:
            x[torch.rand(x.shape, generator=gen) < r.unk_rate] = unk_id
        for g in opt.param_groups:
            g["lr"] = lr_at(step, r)
        torch.manual_seed(seed * 100_003 + step)           # dropout masks: a function of (seed, step)
        logits = train_forward(model, x, cos, sin, r.dropout)
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size).float(), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running.append(loss.item())
        last = step + 1 == r.steps
        if (step + 1) % r.eval_every == 0 or last:
            val = mean_loss(model, val_ids, r.context, cos, sin)
            point = {"step": step + 1, "train_loss": sum(running) / len(running), "val_loss": val,
                     "lr": lr_at(step, r), "seconds": time.perf_counter() - t0}
            running = []
            curve.append(point)
            mark = ""
            if val < best["val_loss"]:
                best = {"val_loss": val, "step": step + 1,
                        "state": {k: v.detach().clone() for k, v in model.state_dict().items()}}
                mark = "  *best"
            log(f"  {cfg.name:<13} update {step + 1:>5}/{r.steps}  train {point['train_loss']:.4f}  "
                f"val {val:.4f}  (ppl {math.exp(val):7.1f})  lr {point['lr']:.2e}  {point['seconds']:6.0f} s{mark}")
    model.load_state_dict(best["state"])
    model.output.weight = model.tok_embeddings.weight
    model.eval()
    return model, curve, {"step": best["step"], "val_loss": best["val_loss"],
                          "seconds": time.perf_counter() - t0}


# --- writing a checkpoint folder atomically ---------------------------------------------------------
def write_checkpoint(model: Transformer, vocab: list[str], out: Path, storage: str, manifest: dict) -> Path:
    """config.json + model.safetensors (+ tokenizer files, training.json) into a temporary folder beside
    `out`, then swapped in with renames: a crash leaves the old folder or the new one, never half of one."""
    from safetensors.torch import save_file  # lazy: safetensors only when such a file is read or written
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[storage]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        sd = {k: v.detach().to(dtype).contiguous() for k, v in hf_state_dict(model).items()}
        save_file(sd, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        cfg = model.config.to_hf()
        cfg.update({"dtype": {"fp32": "float32", "bf16": "bfloat16"}[storage], "bos_token_id": None,
                    "eos_token_id": None, "pad_token_id": None})
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
        char_tokenizer(vocab).save(str(tmp / "tokenizer.json"))
        (tmp / "tokenizer_config.json").write_text(json.dumps(
            {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": UNK, "model_max_length": CONTEXT,
             "clean_up_tokenization_spaces": False}, indent=2) + "\n", encoding="utf-8")
        (tmp / "training.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
        os.chmod(tmp, 0o755)
        old = out.with_name(f".{out.name}.old")
        if old.exists():
            shutil.rmtree(old)
        if out.exists():
            os.replace(out, old)
        os.replace(tmp, out)
        if old.exists():
            shutil.rmtree(old)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="folder of the 15 texts (UTF-8, title line)")
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "models", help="writes OUT/nahan-draft, nahan-target")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: bitwise reproducible for a fixed count, and on a shared 2-core "
                         "machine two threads ran 2-4x slower than one, waiting on each other)")
    ap.add_argument("--draft-steps", type=int, default=None)
    ap.add_argument("--target-steps", type=int, default=None)
    ap.add_argument("--only", choices=("draft", "target"), default=None, help="train one of the two")
    ap.add_argument("--tiny", action="store_true", help="a tiny config for tests (a few updates, seconds)")
    args = ap.parse_args(argv)
    try:
        return _run(args)
    except InputError as exc:
        print(f"train_pair: error: {exc}", file=sys.stderr)
        return 2


def _run(args) -> int:
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    try:
        return _train_all(args)
    finally:            # called in-process by the tests: leave torch as it was
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def _train_all(args) -> int:
    log = lambda s: print(s, flush=True)  # noqa: E731
    pieces, held = read_book(args.corpus)
    train_pars, val_pars, info = [], [], []
    for pc in pieces:
        tr, va = split_piece(pc.paragraphs)
        train_pars.append("\n".join(tr))
        val_pars.append("\n".join(va))
        info.append({"file": pc.path.name, "title": pc.title, "sha256": pc.sha256,
                     "train_chars": len(train_pars[-1]), "validation_chars": len(val_pars[-1])})
    # Pieces joined by '\n' as the tables join them; a leading '\n' so the start of a text is seen after one.
    train_text = "\n" + "\n".join(train_pars)
    val_text = "\n" + "\n".join(val_pars)
    vocab = build_vocab("".join(pc.text for pc in pieces) + "\n")
    index = {c: i for i, c in enumerate(vocab)}
    unk = index[UNK]
    train_ids = torch.tensor([index[c] for c in train_text])
    val_ids = torch.tensor([index[c] for c in val_text])
    if args.tiny:
        val_ids = val_ids[:512]           # the tests' few steps: a shorter validation keeps them quick
    log(f"corpus {args.corpus}: {len(pieces)} training pieces, {len(train_ids):,} training + {len(val_ids):,} "
        f"validation characters, vocabulary {len(vocab):,} (<unk> included); held out: {held.path.name} "
        f"《{held.title}》 ({len(held.text):,} characters)")
    which = ["draft", "target"] if args.only is None else [args.only]
    started = time.time()
    for kind in which:
        base = {"draft": DRAFT, "target": TARGET}[kind]
        recipe = RECIPES[kind]
        if args.tiny:
            base = replace(TINY, name=f"tiny-char-{kind}")
            recipe = replace(recipe, steps=4, batch=2, context=32, eval_every=2, warmup=2)
        steps = {"draft": args.draft_steps, "target": args.target_steps}[kind]
        if steps is not None:
            if steps < 1:
                raise InputError(f"--{kind}-steps must be >= 1")
            recipe = replace(recipe, steps=steps, eval_every=min(recipe.eval_every, steps))
        cfg = replace(base, vocab_size=len(vocab), max_position_embeddings=recipe.context)
        params = cfg.param_count()
        log(f"{kind}: {cfg.name}, {params:,} parameters ({cfg.n_layers} layers, dim {cfg.dim}, {cfg.n_heads} query / "
            f"{cfg.n_kv_heads} KV heads x {cfg.head_dim}, SwiGLU {cfg.intermediate_size}); {recipe.steps} updates of "
            f"{recipe.batch} x {recipe.context} characters, seed {args.seed}, {args.threads} threads")
        load0 = os.getloadavg()[0]
        seed = args.seed * 2 + (0 if kind == "draft" else 1)
        model, curve, best = train_one(cfg, recipe, train_ids, val_ids, unk, seed, log)
        load1 = os.getloadavg()[0]
        # The figures of what ships: the validation loss after rounding to the storage dtype.
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[recipe.storage]
        shipped = Transformer(cfg)
        shipped.load_state_dict({k: v.to(dtype).float() for k, v in model.state_dict().items()})
        shipped.output.weight = shipped.tok_embeddings.weight
        cos, sin = rope_tables(cfg, recipe.context)
        val_shipped = mean_loss(shipped, val_ids, recipe.context, cos, sin)
        manifest = {
            "format": "spectable-neural-pair/1", "model": cfg.name, "role": kind, "params": params,
            "tokens": "char", "unknown_token": UNK, "normalisation": NORMALISATION,
            "pieces": info, "heldout": {"file": held.path.name, "title": held.title, "sha256": held.sha256,
                                        "chars": len(held.text)},
            "validation": "the last paragraphs (>= 5 % of the characters) of every training piece, never trained on",
            "recipe": recipe.__dict__, "seed": seed, "threads": args.threads, "torch": torch.__version__,
            "storage_dtype": recipe.storage, "best_step": best["step"], "best_val_loss_fp32": best["val_loss"],
            "val_loss_shipped": val_shipped, "curve": curve, "train_seconds": best["seconds"],
            "load_average_1min": {"start": load0, "end": load1},
            "command": "python tools/train_pair.py" + ("" if steps is None else f" --{kind}-steps {steps}"),
        }
        out = write_checkpoint(model, vocab, args.out / (f"nahan-{kind}" if not args.tiny else cfg.name),
                               recipe.storage, manifest)
        size = (out / "model.safetensors").stat().st_size
        log(f"{kind}: best validation loss {best['val_loss']:.4f} at update {best['step']} "
            f"(shipped {recipe.storage}: {val_shipped:.4f}, ppl {math.exp(val_shipped):.1f}); "
            f"{best['seconds']:.0f} s; load average {load0:.1f} -> {load1:.1f}; wrote {out} "
            f"(model.safetensors {size / 1e6:.2f} MB)")
    log(f"done in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
