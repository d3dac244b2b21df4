"""Ours vs transformers on this CPU: the same weights, config and dtype; forward step, plain and assisted generation.

    .venv/bin/python -m benchmarks.bench_llm_peer                       # llama-3.2-1b + mini-draft-128k, bf16
    .venv/bin/python -m benchmarks.bench_llm_peer --target tiny --draft tiny-draft --dtype fp32 --tokens 64

Prints milliseconds for each side and the ratio theirs / ours (> 1: ours is faster). transformers is a test
dependency: imported only here and in tests. Greedy on both sides, so the tokens must agree (checked in fp32;
in bf16 rounding can flip near-ties). transformers' assisted generation is pinned to the same γ every pass
(constant schedule, no early stop on draft confidence) so both sides do the same work.
"""
from __future__ import annotations

import argparse
import os
import time


import torch

from models.llm.model import DTYPES, LlamaConfig, build_random
from models.llm.hf import hf_state_dict
from models.llm.speculative import PlainDecoder, SpeculativeDecoder, decode_one_token


def to_transformers(model, dtype):
    """A LlamaForCausalLM holding the very same tensors as our model (no copy)."""
    from transformers import LlamaConfig as HFConfig, LlamaForCausalLM
    from transformers.models.llm.model.modeling_llama import LlamaRotaryEmbedding

    d = model.config.to_hf()
    d.pop("architectures"), d.pop("model_type")
    cfg = HFConfig(**d, bos_token_id=None, eos_token_id=None, pad_token_id=0)
    cfg._attn_implementation = "sdpa"
    with torch.device("meta"):
        hf = LlamaForCausalLM(cfg).to(dtype)
    hf.load_state_dict(hf_state_dict(model), strict=False, assign=True)
    if cfg.tie_word_embeddings:
        hf.lm_head.weight = hf.model.embed_tokens.weight
    hf.model.rotary_emb = LlamaRotaryEmbedding(config=cfg)    # its buffers were on meta
    return hf.eval()


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def median(xs):
    return sorted(xs)[len(xs) // 2]


@torch.no_grad()
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="llama-3.2-1b")
    ap.add_argument("--draft", default="mini-draft-128k")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"],
                    help="bf16 (default): the faster dtype here with both cores, see README.md, 'dtype on this CPU'")
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--reps", type=int, default=7, help="forward steps timed per side")
    ap.add_argument("--gen-reps", type=int, default=3, help="generations timed per side")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads, both sides (0: default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from transformers import DynamicCache

    dtype = DTYPES[args.dtype]
    tcfg, dcfg = LlamaConfig.from_name(args.target), LlamaConfig.from_name(args.draft)
    target = build_random(tcfg, seed=0, dtype=dtype)
    draft = build_random(dcfg, seed=1, dtype=dtype)
    hf_target, hf_draft = to_transformers(target, dtype), to_transformers(draft, dtype)
    P, N, g = args.prompt_len, args.tokens, args.gamma
    prompt = torch.randint(0, tcfg.vocab_size, (1, P), generator=torch.Generator().manual_seed(0))
    seq = P + N + 2 * (g + 1) + args.reps + 2
    target.setup_caches(1, seq)
    print(f"{args.target} + {args.draft}, {args.dtype}, γ={g}, prompt {P}, {N} tokens, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, load {os.getloadavg()[0]:.1f}; random weights (α not meaningful)")

    # Ours and theirs alternate rep by rep, and which goes first alternates too, so a neighbour's load on
    # this shared machine (and any first-mover penalty) hits both alike.
    def pair(ours_fn, theirs_fn, i):
        if i % 2:
            t = timed(theirs_fn)
            return timed(ours_fn), t
        o = timed(ours_fn)
        return o, timed(theirs_fn)

    # 1. one decode step after the prompt (both caches filled by the prompt), at successive positions
    target.setup_caches(1, seq)
    target(prompt, torch.arange(P))
    cache = DynamicCache()
    hf_target(prompt, past_key_values=cache, use_cache=True)
    tok = prompt[:, -1:]
    steps = [pair(lambda: decode_one_token(target, tok, torch.tensor([P + i])),
                  lambda: hf_target(tok, past_key_values=cache, use_cache=True), i) for i in range(args.reps + 1)]
    ours_step, theirs_step = (median([x[k] for x in steps[1:]]) * 1e3 for k in (0, 1))

    # 2. verify γ+1 positions in one forward, right after the prompt
    toks = prompt[:, :g + 1]
    caches = [DynamicCache() for _ in range(args.reps + 1)]
    for c in caches:
        hf_target(prompt, past_key_values=c, use_cache=True)
    steps = [pair(lambda: target(toks, torch.arange(P, P + g + 1)),
                  lambda: hf_target(toks, past_key_values=caches[i], use_cache=True), i) for i in range(args.reps + 1)]
    ours_verify, theirs_verify = (median([x[k] for x in steps[1:]]) * 1e3 for k in (0, 1))

    # 3. plain greedy generation and 4. speculative (assisted) greedy generation, the same γ every pass
    draft.setup_caches(1, seq)
    plain, spec = PlainDecoder(target), SpeculativeDecoder(target, draft, gamma=g)
    gc = hf_draft.generation_config
    gc.num_assistant_tokens, gc.num_assistant_tokens_schedule, gc.assistant_confidence_threshold = g, "constant", 0.0
    ids = prompt[0].tolist()
    got = {}

    def keep(key, fn):
        return lambda: got.__setitem__(key, fn())
    plain_t = [pair(keep("ours_plain", lambda: plain.generate(ids, N)),
                    keep("theirs_plain", lambda: hf_target.generate(prompt, max_new_tokens=N, min_new_tokens=N,
                                                                    do_sample=False)), i)
               for i in range(args.gen_reps)]
    spec_t = [pair(keep("ours_spec", lambda: spec.generate(ids, N)),
                   keep("theirs_spec", lambda: hf_target.generate(prompt, assistant_model=hf_draft, max_new_tokens=N,
                                                                  min_new_tokens=N, do_sample=False)), i)
              for i in range(args.gen_reps)]
    ours_plain, theirs_plain = (median([x[k] for x in plain_t]) for k in (0, 1))
    ours_spec, theirs_spec = (median([x[k] for x in spec_t]) for k in (0, 1))
    res = got["ours_spec"]
    same_plain = got["theirs_plain"][0, P:].tolist() == got["ours_plain"]
    same_spec = got["theirs_spec"][0, P:].tolist() == res.tokens

    rows = [("forward, 1 token (ms)", ours_step, theirs_step),
            (f"forward, {g + 1} tokens (ms)", ours_verify, theirs_verify),
            (f"plain greedy, {N} tokens (s)", ours_plain, theirs_plain),
            (f"speculative greedy, {N} tokens (s)", ours_spec, theirs_spec)]
    print(f"{'':34s} {'ours':>10s} {'transformers':>13s} {'theirs/ours':>12s}")
    for name, o, t in rows:
        print(f"{name:34s} {o:10.2f} {t:13.2f} {t / o:12.2f}")
    print(f"same tokens as transformers: plain {same_plain}, speculative {same_spec}; "
          f"ours α={res.alpha:.2f}, {res.tokens_per_pass:.2f} tokens/pass")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
