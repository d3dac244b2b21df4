"""What packing the weights costs in accuracy, measured, not assumed: for each weight format, the largest
|logit − fp32 logit| over every position of a test prompt, and whether greedy decoding writes the same 64 tokens
as fp32 (else where it first differs). On the shipped 《呐喊》 pair (target and draft) and, when given, a GGUF
checkpoint (SmolLM2-135M-Instruct: see benchmarks/bench_peers.py for where it comes from).

    .venv/bin/python -m benchmarks.bench_quant_accuracy [--gguf FILE] [--formats bf16,int8,int4] [--tokens 64]
"""
from __future__ import annotations

import argparse
from pathlib import Path


import torch

from models.llm.checkpoint import load_weights, read_config, read_tokenizer, resolve
from models.llm.speculative import PlainDecoder
from models.llm.formats import compute_dtype

PROMPTS = {"nahan-target": "孔乙己是站着喝酒而穿长衫的唯一的人。他身材很高大；", "nahan-draft": "孔乙己是站着喝酒而穿长衫的唯一的人。",
           "gguf": "<|im_start|>user\nWhat is the capital of France, and why is it famous?<|im_end|>\n"
                   "<|im_start|>assistant\n"}


def load(spec: str, fmt: str):
    src = resolve(spec)
    cfg = read_config(src)
    return load_weights(src, cfg, dtype=compute_dtype(fmt), device="cpu", fmt=fmt), read_tokenizer(src, cfg)


@torch.inference_mode()
def compare(spec: str, prompt: str, formats: list[str], tokens: int) -> None:
    ref, tok = load(spec, "fp32")
    ids = tok.encode(prompt)
    ref.setup_caches(1, len(ids) + tokens + 8)
    ref_logits = ref(torch.tensor([ids]), torch.arange(len(ids))).float()[0]
    ref_text = PlainDecoder(ref).generate(ids, tokens)
    scale = ref_logits.abs().max().item()
    for fmt in formats:
        m, _ = load(spec, fmt)
        m.setup_caches(1, len(ids) + tokens + 8)
        logits = m(torch.tensor([ids]), torch.arange(len(ids))).float()[0]
        text = PlainDecoder(m).generate(ids, tokens)
        diff = (logits - ref_logits).abs().max().item()
        same = next((i for i, (a, b) in enumerate(zip(text, ref_text)) if a != b), None)
        agree = (logits.argmax(-1) == ref_logits.argmax(-1)).float().mean().item()
        print(f"{Path(spec).name:>34} {fmt:>5}  max|Δlogit| {diff:8.4f} (largest logit {scale:5.1f})  "
              f"argmax agrees at {100 * agree:5.1f}% of {len(ids)} positions  greedy {tokens} tokens: "
              + ("equal" if same is None else f"first differs at token {same}"), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", default=None)
    ap.add_argument("--formats", default="bf16,int8,int4")
    ap.add_argument("--tokens", type=int, default=64)
    a = ap.parse_args()
    torch.set_num_threads(1)
    formats = a.formats.split(",")
    for name in ("nahan-target", "nahan-draft"):
        compare(name, PROMPTS[name], formats, a.tokens)
    if a.gguf:
        compare(a.gguf, PROMPTS["gguf"], formats, a.tokens)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
