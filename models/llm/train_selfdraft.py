"""Train Medusa-1's heads and EAGLE's drafter on the shipped neural target, frozen (models.llm.selfdraft).

    python tools/train_selfdraft.py --corpus ../shared/corpus/nahan --out assets/models/nahan-selfdraft

The text is the target's own training text (models.llm.train.read_book: every piece but 《药》, its last paragraphs
held out for validation), in the target's vocabulary. The target runs once over every window and its features
(the output layer's input) are kept; then

- Medusa: head k (2..K+1) on f_t is trained for x_{t+k}, the k-th token after the position, through the target's
  output layer (cross-entropy, head k weighted 0.8^(k-2) as Medusa weights them);
- EAGLE: from [f_t, embedding of x_{t+1}] its layer predicts f_{t+1}: smooth-L1 on the features plus 0.1 × the
  cross-entropy of its row against the target's own row there (EAGLE's recipe: soft labels), the inputs' features
  jittered by U(±0.1), and a second step run from its own predictions (it drafts from its own, inexact,
  features after the first guess).

The budget is a step count, the seed fixed: the same corpus, torch build and threads give the same weights. The
record gives the held-out top-1 of each head, EAGLE's feature error and top-1, the command, the wall time; the
long-run α of each drafter is measured on the pair by tools/train_selfdraft.py after writing
(models.llm.pair.alpha_generated) and added to the record.
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from corpus.errors import InputError
from models.llm.hf import load_checkpoint
from models.llm.model import rope_tables
from models.llm.selfdraft import EagleDrafter, MedusaHeads, eagle_config, save
from models.llm.train import DEFAULT_CORPUS, ROOT, read_book, split_piece, train_features, train_layers
from models.llm.pair import LlamaPair, alpha_generated
from models.llm.text import from_tokenizer_file
from models.sampler import SamplerSettings

CONTEXT = 256
CHUNK = 96                       # positions of a window a training step reads (the target's features saw it all)
EXTRA_HEADS = 4                  # heads 2..5: γ up to 4 from one pass's features
HEAD_DECAY = 0.8


def windows(ids: torch.Tensor, context: int) -> torch.Tensor:
    """Non-overlapping windows of `context` tokens (the tail that does not fill one is dropped)."""
    n = (len(ids) // context) * context
    return ids[:n].view(-1, context)


@torch.no_grad()
def features_of(target, wins: torch.Tensor, cos, sin, batch: int = 16) -> torch.Tensor:
    return torch.cat([train_features(target, wins[i:i + batch], cos, sin) for i in range(0, len(wins), batch)])


def medusa_loss(heads: MedusaHeads, output, feats: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, list]:
    """Σ_k 0.8^(k-2) · CE(head k's row at t, x_{t+k}), and each head's top-1 accuracy."""
    hf = heads.head_features(feats)                  # (K, B, T, dim)
    total, acc = 0.0, []
    T = ids.shape[1]
    for i in range(hf.shape[0]):
        k = i + 2
        logits = output(hf[i, :, :T - k])
        target = ids[:, k:]
        total = total + HEAD_DECAY ** i * F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
        acc.append(float((logits.argmax(-1) == target).float().mean()))
    return total, acc


def eagle_loss(eagle: EagleDrafter, target, feats: torch.Tensor, ids: torch.Tensor, cos, sin,
               noise: float = 0.0, unroll: int = 2) -> tuple[torch.Tensor, float, float]:
    """(loss, relative feature error, top-1 agreement with the target), EAGLE's recipe: from [f_t, e(x_{t+1})]
    predict f_{t+1}; the loss is smooth-L1 on the features plus 0.1 × the cross-entropy of its row against the
    target's own row there (soft labels: the target's distribution, what the rule compares q with). With
    unroll 2 the layer also runs a second step from its own predictions (as it drafts after the first guess),
    weighted 0.5."""
    T0 = feats.shape[1]
    f_in = feats[:, :-2]
    if noise:
        f_in = f_in + (torch.rand_like(f_in) * 2 - 1) * noise
    total, err, top1 = 0.0, 0.0, 0.0
    for step in range(unroll):
        # step s: inputs at positions t hold [features of t + s, the token at t + s + 1] -> f_{t+s+1}
        T = T0 - 2 - step
        x = eagle.fc(torch.cat([f_in[:, :T], target.tok_embeddings(ids[:, 1 + step:1 + step + T])], -1))
        pred = eagle.norm(train_layers(eagle, x, cos[:T], sin[:T]))
        want = feats[:, 1 + step:1 + step + T]
        with torch.no_grad():
            p = torch.softmax(target.output(want), -1)
        logq = torch.log_softmax(target.output(pred), -1)
        loss = F.smooth_l1_loss(pred, want) + 0.1 * -(p * logq).sum(-1).mean()
        total = total + (0.5 ** step) * loss
        if step == 0:
            err = float((pred - want).detach().norm(dim=-1).mean() / want.norm(dim=-1).mean())
            top1 = float((logq.argmax(-1) == p.argmax(-1)).float().mean())
        f_in = pred[:, :-1] if step + 1 < unroll else f_in
    return total, err, top1


def train(target_dir: Path, corpus: Path, steps: int, seed: int, batch: int, log=print) -> tuple:
    torch.manual_seed(seed)
    target = load_checkpoint(target_dir).eval()
    for p in target.parameters():
        p.requires_grad_(False)
    cfg = target.config
    text = from_tokenizer_file(target_dir / "tokenizer.json", cfg.vocab_size)
    pieces, held = read_book(corpus)
    tr, va = [], []
    for pc in pieces:
        a, b = split_piece(pc.paragraphs)
        tr.append("\n".join(a))
        va.append("\n".join(b))
    train_ids = torch.tensor(text.encode("\n" + "\n".join(tr)))
    val_ids = torch.tensor(text.encode("\n" + "\n".join(va)))
    cos, sin = rope_tables(cfg, CONTEXT)
    t0 = time.time()
    tw, vw = windows(train_ids, CONTEXT), windows(val_ids, CONTEXT // 4)
    cos_v, sin_v = cos[:CONTEXT // 4], sin[:CONTEXT // 4]
    tf, vf = features_of(target, tw, cos, sin), features_of(target, vw, cos_v, sin_v)
    log(f"features: {len(tw)} training windows of {CONTEXT}, {len(vw)} validation windows of {CONTEXT // 4} "
        f"({time.time() - t0:.0f} s); held out entirely: {held.path.name}")
    gen = torch.Generator().manual_seed(seed)
    medusa = MedusaHeads(cfg.dim, EXTRA_HEADS)
    eagle = EagleDrafter(eagle_config(cfg))
    with torch.no_grad():                            # EAGLE's layer starts from the target's last layer
        last = target.layers[-1]
        eagle.layers[0].load_state_dict(last.state_dict())
        eagle.norm.weight.copy_(target.norm.weight)
    opt_m = torch.optim.AdamW(medusa.parameters(), lr=1e-3, weight_decay=0.0)
    opt_e = torch.optim.AdamW([p for n, p in eagle.named_parameters() if not n.startswith(("tok_", "output"))],
                              lr=1e-3, weight_decay=0.0)
    curve = []
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(tw), (batch,), generator=gen)
        start = int(torch.randint(0, CONTEXT - CHUNK + 1, (1,), generator=gen))
        chunk = slice(start, start + CHUNK)           # the drafters see a chunk of each window (the target saw it all)
        lr_scale = min(1.0, step / 20) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        for opt, base in ((opt_m, 2e-3), (opt_e, 1e-3)):
            for g in opt.param_groups:
                g["lr"] = base * lr_scale
        lm, _ = medusa_loss(medusa, target.output, tf[idx, chunk], tw[idx, chunk])
        opt_m.zero_grad()
        lm.backward()
        opt_m.step()
        le, _, _ = eagle_loss(eagle, target, tf[idx, chunk], tw[idx, chunk], cos, sin, noise=0.1)
        opt_e.zero_grad()
        le.backward()
        torch.nn.utils.clip_grad_norm_(eagle.parameters(), 1.0)
        opt_e.step()
        if step % 25 == 0 or step == steps:
            with torch.no_grad():
                _, acc = medusa_loss(medusa, target.output, vf, vw)
                _, err, top1 = eagle_loss(eagle, target, vf, vw, cos_v, sin_v)
            curve.append({"step": step, "medusa_loss": float(lm), "eagle_loss": float(le),
                          "val_medusa_top1": acc, "val_eagle_feature_error": err, "val_eagle_top1_agreement": top1})
            log(f"update {step}: medusa {float(lm):.3f} (held-out top-1 {', '.join(f'{a:.3f}' for a in acc)}), "
                f"eagle {float(le):.3f} (held-out feature error {err:.3f}, top-1 as the target's {top1:.3f}) "
                f"{time.time() - t0:.0f} s")
    with torch.no_grad():
        base_top1 = float((target.output(vf[:, :-1]).argmax(-1) == vw[:, 1:]).float().mean())
    record = {"format": "spectable-selfdraft/1", "target": target_dir.name, "target_dim": cfg.dim,
              "target_vocab": cfg.vocab_size, "medusa_extra_heads": EXTRA_HEADS, "eagle_params":
              sum(p.numel() for n, p in eagle.named_parameters() if not n.startswith(("tok_", "output"))),
              "medusa_params": sum(p.numel() for p in medusa.parameters()), "steps": steps, "batch": batch,
              "seed": seed, "context": CONTEXT, "heldout": held.path.name, "curve": curve,
              "val_target_top1": base_top1, "val_medusa_top1": {str(k + 2): a for k, a in
                                                              enumerate(curve[-1]["val_medusa_top1"])},
              "val_eagle_feature_error": curve[-1]["val_eagle_feature_error"],
              "val_eagle_top1_agreement": curve[-1]["val_eagle_top1_agreement"], "train_seconds": time.time() - t0,
              "torch": torch.__version__, "threads": torch.get_num_threads(),
              "command": f"python tools/train_selfdraft.py --steps {steps} --seed {seed}"}
    return medusa, eagle, record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=Path, default=ROOT / "assets" / "models" / "nahan-target")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "models" / "nahan-selfdraft")
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--alpha-tokens", type=int, default=4000, help="tokens of each long run that measures α")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.steps < 1:
        raise InputError("--steps must be >= 1")
    medusa, eagle, record = train(args.target, args.corpus, args.steps, args.seed, args.batch)
    save(args.out, medusa, eagle, record)
    record["long_run"] = long_run_alphas(args.target, args.out, args.corpus, args.alpha_tokens)
    save(args.out, medusa, eagle, record)
    for name, r in record["long_run"]["drafters"].items():
        print(f"{name:7s} α {r['alpha']:.3f}, {r['tokens_per_pass']:.2f} tokens a pass ({r['tokens']} tokens)")
    print(f"wrote {args.out}")
    return 0


def long_run_alphas(target_dir: Path, folder: Path, corpus: Path, tokens: int, gamma: int = 4) -> dict:
    """α and tokens per pass of the draft model, Medusa's heads and EAGLE on the pair, each a seeded run of about
    `tokens` tokens at temperature 1 from the start of the held-out piece."""
    pair = LlamaPair.load(target_dir, target_dir.parent / "nahan-draft", threads=torch.get_num_threads())
    pair.use_self_drafters(folder)
    _, held = read_book(corpus)
    prefix = pair.encode(held.paragraphs[0][:16], strict=False)
    settings = SamplerSettings(gamma=gamma, temperature=1.0, seed=0)
    out = {}
    for name, drafter in (("chain", None), ("medusa", pair.feature_drafter("medusa")),
                          ("eagle", pair.feature_drafter("eagle"))):
        r = alpha_generated(pair, settings, tokens=tokens, prefix_ids=prefix, drafter=drafter)
        out[name] = {"alpha": r.alpha, "tokens_per_pass": r.tokens / r.passes, "tokens": r.tokens,
                     "passes": r.passes}
    return {"gamma": gamma, "temperature": 1.0, "seed": 0, "prefix": held.path.name + ", its first line",
            "drafters": out}
