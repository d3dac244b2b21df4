"""Subcommands of the torch backend: model-info, llm-generate, bench (each with --json).

Also runnable alone, `python -m app.cli.llm bench ...`, importing nothing of the window or the scenes:
that is how tools/gpu_measure.sh runs the bench on a GPU machine with a fixed software image.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from corpus import jsonio
from app.cli.numbers import SEED, number, whole, whole_list
from app.cli.progress import Progress
from corpus.errors import InputError
from models.acceptance import MAX_GAMMA
from models.drafters import LEAN_COPY, LEAN_MODEL, kind, lean_names
from app.cli import _Parser, run_command


WEIGHT_CHOICES = ["fp32", "bf16", "fp16", "int8", "int4"]


def register(sub) -> None:
    p = sub.add_parser("model-info", help="a Llama config: parameters (counted on the meta device), bytes, KV bytes")
    p.add_argument("name", help="a named config (llama-3.1-8b, llama-3.2-1b, mini-draft-128k, tiny, tiny-draft) "
                                "or a checkpoint directory with config.json")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=cmd_model_info)

    p = sub.add_parser("llm-generate", help="generate with a Llama checkpoint, speculatively when a draft is given")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--checkpoint", metavar="DIR", help="target: Hugging Face checkpoint (config.json + *.safetensors) "
                   "or a .gguf file")
    g.add_argument("--random", metavar="NAME", help="target: a named config with random weights (text is noise)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--draft-checkpoint", metavar="DIR", help="draft checkpoint or .gguf file (same vocabulary)")
    g.add_argument("--draft-random", metavar="NAME", help="draft: a named config with random weights")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--prompt", metavar="TEXT", help="prompt text (needs tokenizer.json beside the target weights, "
                   "or a GGUF file's tokenizer)")
    g.add_argument("--prompt-ids", metavar="1,2,3", type=whole_list(0, 2**31 - 1, 1 << 20),
                   help="prompt as comma-separated token ids")
    p.add_argument("--tokens", type=whole(1, 100_000), required=True, help="new tokens to write (at most 100000)")
    p.add_argument("--gamma", type=whole(1, MAX_GAMMA), default=4, help="draft guesses per pass (default 4)")
    p.add_argument("--temperature", type=number(0, 1000), default=0.0, help="0 = greedy (default); > 0 samples")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the draws (default 0)")
    p.add_argument("--plain", action="store_true", help="plain decoding even when a draft is given")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where to run (default cpu)")
    p.add_argument("--dtype", default="fp32", choices=WEIGHT_CHOICES,
                   help="weight format (default fp32; int8/int4: weight-only, packed, CPU kernels)")
    p.add_argument("--drafter", default=None, choices=lean_names(),
                   help="who guesses: chain = the draft model (default when one is given), lookup = copies from the "
                        "text (no draft model)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=cmd_llm_generate)

    p = sub.add_parser("bench", help="measure the Llama pair on a device; each figure beside its on-paper value")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where to measure (default cpu)")
    p.add_argument("--target", default=None, help="named target config (default llama-3.1-8b: the full "
                   "bench with random weights), or a checkpoint folder / .gguf file (the pair measurement)")
    p.add_argument("--draft", default=None, help="named draft config (default llama-3.2-1b), or a "
                   "checkpoint folder / .gguf file with the target's vocabulary")
    p.add_argument("--pair", choices=["neural"], default=None,
                   help="measure the shipped 《呐喊》 pair (draft/target ms, c, tokens per pass, speedup vs roofline)")
    p.add_argument("--prompt", default=None, help="pair measurement: prompt text (default 孔乙己 for the shipped "
                   "pair; the checkpoint's start token otherwise)")
    p.add_argument("--temperature", type=number(0, 1000), default=None,
                   help="pair measurement: sampling temperature (default 1; 0 = greedy)")
    p.add_argument("--dtype", default=None, choices=WEIGHT_CHOICES,
                   help="weight format: default bf16 for the full bench, fp32 for a checkpoint pair; int8/int4 are "
                        "weight-only, packed (CPU kernels)")
    p.add_argument("--drafter", default="chain",
                   help="pair measurement: chain = the draft model (default), lookup = copies from the text (a "
                        "target alone); all, or a comma-separated list of chain, lookup, heads, eagle, tree-chain, "
                        "tree-heads, tree-eagle: every one measured side by side with plain decoding")
    p.add_argument("--tree-widths", type=whole_list(1, 16, 16), default=None,
                   help="side by side: the trees' children per depth (default 2 then 1s: two branches γ deep)")
    p.add_argument("--gamma", type=whole(1, MAX_GAMMA), default=4, help="draft guesses per pass (default 4)")
    p.add_argument("--batch", type=whole_list(1, 1 << 20, 64), default=[1, 4, 16, 64],
                   help="batch sizes of the sweep, comma-separated")
    p.add_argument("--context", type=whole(1, 1 << 24), default=4096, help="KV context of the batch sweep (tokens)")
    p.add_argument("--tokens", type=whole(2, 100_000), default=128,
                   help="tokens written in the end-to-end runs (default 128, at most 100000)")
    p.add_argument("--checkpoint", metavar="DIR", help="target weights instead of random ones")
    p.add_argument("--draft-checkpoint", metavar="DIR", help="draft weights instead of random ones")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the random weights and draws (default 0)")
    p.add_argument("--prompt-len", type=whole(1, 1 << 20), default=32,
                   help="prompt length; batch-1 figures are taken there")
    p.add_argument("--reps", type=whole(0, 100_000), default=0, help="timed repetitions (0: 50 on CUDA, 5 on CPU)")
    p.add_argument("--compile", default="auto", choices=["auto", "on", "off"], help="torch.compile the block "
                   "(auto: on CUDA); a pair measurement: the draft model's one-token forward (auto: on a CPU)")
    p.add_argument("--graphs", default="auto", choices=["auto", "on", "off"], help="CUDA graphs (auto: on CUDA)")
    p.add_argument("--threads", type=whole(0, 1024), default=0,
                   help="CPU threads (0: a pair measurement measures the count, the full bench takes torch's default)")
    p.add_argument("--out", default=None, metavar="FILE.json", help="where the measurement file is written "
                   "(required for the full bench)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--json", action="store_true", help="print the whole result as one JSON object on stdout")
    p.set_defaults(func=cmd_bench)


def _emit(obj: dict, as_json: bool, lines: list[str]) -> None:
    if as_json:
        print(jsonio.dumps(obj))
    else:
        print("\n".join(lines))


# --- model-info -----------------------------------------------------------------------------------
def model_info(name: str) -> dict:
    # lazy: pulls in safetensors, torch (torch: ~1 s; only the neural path needs it)
    import torch
    from models.llm.model import CONFIGS, DTYPES, LlamaConfig
    from models.llm.hf import read_checkpoint_config

    if name in CONFIGS:
        cfg, source = LlamaConfig.from_name(name), "named config"
    elif Path(name).exists():
        cfg, source = read_checkpoint_config(name), f"{Path(name) / 'config.json'}"
    else:
        raise InputError(f"{name!r} is neither a named config ({', '.join(CONFIGS)}) nor a checkpoint directory")
    params = cfg.param_count()
    item = {k: torch.empty((), dtype=d, device="meta").element_size() for k, d in DTYPES.items()}
    return {"name": cfg.name, "source": source, "config": cfg.as_dict(), "params": params,
            "bytes": {k: params * v for k, v in item.items()},
            "weight_bytes_read_per_token": {k: cfg.weight_bytes_read_per_token(d) for k, d in DTYPES.items()},
            # The difference: an untied input embedding is looked up (one row per token), not streamed.
            "input_embedding_bytes": {k: 0 if cfg.tie_embeddings else cfg.vocab_size * cfg.dim * v
                                      for k, v in item.items()},
            "weight_bytes_note": "bytes = all parameters (the lesson's 'about 16 GB' for Llama 3.1 8B in bf16); "
                                 "weight_bytes_read_per_token = what one decoding pass streams: every matrix once, "
                                 "while an untied input embedding is looked up one row per token, not streamed",
            "kv_bytes_per_token": {k: cfg.kv_bytes_per_token(d) for k, d in DTYPES.items()},
            "tied_embeddings": cfg.tie_embeddings, "counted_on": "meta device (no memory)"}


def cmd_model_info(args) -> int:
    info = model_info(args.name)
    c = info["config"]
    _emit(info, args.json, [
        f"{info['name']} ({info['source']})",
        f"  {c['n_layers']} layers, hidden {c['dim']}, MLP {c['intermediate_size']}, {c['n_heads']} query heads, "
        f"{c['n_kv_heads']} KV heads x {c['head_dim']}, vocab {c['vocab_size']}, "
        f"{'tied' if c['tie_embeddings'] else 'untied'} embeddings",
        f"  parameters {info['params']:,}",
        "  bytes      " + ", ".join(f"{k} {v:,}" for k, v in info["bytes"].items()) + "  (all parameters)",
        "  read/token " + ", ".join(f"{k} {v:,}" for k, v in info["weight_bytes_read_per_token"].items())
        + ("  (every matrix once; the input embedding, "
           f"{info['input_embedding_bytes']['bf16'] / 1e9:.2f} GB in bf16, is looked up one row per token, not streamed)"
           if info["input_embedding_bytes"]["bf16"] else "  (every matrix once)"),
        "  KV / token " + ", ".join(f"{k} {v:,}" for k, v in info["kv_bytes_per_token"].items())])
    return 0


# --- llm-generate ---------------------------------------------------------------------------------
def _tokenizer_for(checkpoint):
    if checkpoint is None:
        return None
    from models.llm.checkpoint import read_config, read_tokenizer, resolve  # lazy: pulls in safetensors, torch
    src = resolve(checkpoint)
    return read_tokenizer(src, read_config(src))      # tokenizer.json, or a GGUF file's metadata


def llm_generate(args) -> dict:

    # lazy: pulls in safetensors, torch (torch: ~1 s; only the neural path needs it)
    import torch
    from models.llm.model import RANDOM_WEIGHTS_NOTE
    from models.llm.hf import load_model
    from models.llm.device import resolve_device, resolve_dtype
    from models.llm.checkpoint import load_weights, read_config, resolve
    from models.llm.speculative import PlainDecoder, SpeculativeDecoder
    from models.llm.formats import check_kernels

    device, dtype = resolve_device(args.device), resolve_dtype(args.dtype)
    check_kernels(args.dtype, device)
    drafter = args.drafter or ("chain" if (args.draft_checkpoint or args.draft_random) else None)
    lean = None if drafter is None else kind(drafter).lean
    if lean == LEAN_MODEL and not (args.draft_checkpoint or args.draft_random):
        raise InputError(f"--drafter {drafter} needs a draft (--draft-checkpoint or --draft-random)")
    if lean == LEAN_COPY and (args.draft_checkpoint or args.draft_random):
        raise InputError(f"--drafter {drafter} copies from the text: give no draft model with it")
    tokenizer = _tokenizer_for(args.checkpoint)
    if args.prompt is not None:
        if tokenizer is None:
            raise InputError("--prompt needs a tokenizer.json beside the target weights; use --prompt-ids")
        prompt = tokenizer.encode(args.prompt)
        if not prompt:
            raise InputError("the prompt encodes to no tokens")
    else:
        prompt = args.prompt_ids
    _check_memory(args, dtype, device, len(prompt))
    def load(spec, name, seed):
        if spec is None:
            return load_model(name=name, dtype=dtype, device=device, seed=seed, fmt=args.dtype)
        src = resolve(spec)            # a Hugging Face folder or a .gguf file
        return load_weights(src, read_config(src), dtype=dtype, device=device, fmt=args.dtype), False
    target, t_random = load(args.checkpoint, args.random, args.seed)
    V = target.config.vocab_size
    bad = [i for i in prompt if not 0 <= i < V]
    if bad:
        raise InputError(f"prompt id {bad[0]} is outside the vocabulary (0..{V - 1})")
    draft, d_random = None, False
    if (args.draft_checkpoint or args.draft_random) and not args.plain:
        draft, d_random = load(args.draft_checkpoint, args.draft_random, args.seed + 1)
        if draft.config.vocab_size != V:
            raise InputError(f"draft vocabulary {draft.config.vocab_size} differs from the target's {V}")
    from models.llm.device import aligned  # lazy: pulls in torch
    seq = aligned(len(prompt) + args.tokens + 2 * (args.gamma + 1))   # aligned rows for attention kernels
    target.setup_caches(1, seq)
    t0 = time.perf_counter()
    progress = Progress("generating", args.tokens, "tokens")
    if draft is None and (lean != LEAN_COPY or args.plain):
        dec = PlainDecoder(target, temperature=args.temperature, seed=args.seed)
        ids = dec.generate(prompt, args.tokens, progress)
        passes, alpha, extra = args.tokens, None, {}
    else:
        proposer = None
        if draft is not None:
            draft.setup_caches(1, seq)
        else:
            from models.llm.speculative import lookup_proposer  # lazy: pulls in torch
            proposer = lookup_proposer(V)
        dec = SpeculativeDecoder(target, draft, gamma=args.gamma, temperature=args.temperature, seed=args.seed,
                                 proposer=proposer)
        res = dec.generate(prompt, args.tokens, progress)
        ids, passes, alpha = res.tokens, res.passes, res.alpha
        extra = {"accepted_per_pass": [r.n_accepted for r in res.records],
                 "residual_fallbacks": sum(r.residual_fallback for r in res.records)}
    progress.done()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    mode = "plain" if alpha is None else "speculative"
    out = {"mode": mode, "drafter": None if alpha is None else (drafter or "chain"), "prompt_ids": prompt, "tokens": ids,
           "passes": passes, "tokens_per_pass": len(ids) / passes, "alpha": alpha,
           "gamma": None if draft is None else args.gamma, "temperature": args.temperature, "seed": args.seed,
           "device": device.type, "dtype": args.dtype, "seconds": seconds, "tokens_per_s": len(ids) / seconds,
           "random_weights": bool(t_random or d_random), "notes": list(getattr(target, "load_notes", [])), **extra}
    if tokenizer is not None:
        out["text"] = tokenizer.decode(ids)
    if t_random or d_random:
        out["note"] = RANDOM_WEIGHTS_NOTE
    return out


def _check_memory(args, dtype, device, prompt_len: int) -> None:
    """Estimate before allocating: both models' weights and caches must fit in what the device has free."""
    # lazy: pulls in safetensors, torch (torch: ~1 s; only the neural path needs it)
    from models.llm.checkpoint import read_config, resolve
    from models.llm.device import check_fits
    from models.llm.model import LlamaConfig
    cfgs = [read_config(resolve(args.checkpoint)) if args.checkpoint else LlamaConfig.from_name(args.random)]
    if (args.draft_checkpoint or args.draft_random) and not args.plain:
        cfgs.append(read_config(resolve(args.draft_checkpoint)) if args.draft_checkpoint
                    else LlamaConfig.from_name(args.draft_random))
    check_fits(cfgs, dtype, device, prompt_len + args.tokens + 2 * (args.gamma + 1), label=args.dtype)


def cmd_llm_generate(args) -> int:
    out = llm_generate(args)
    lines = [out.get("text", " ".join(map(str, out["tokens"])))]
    lines.append(f"[{out['mode']}: {len(out['tokens'])} tokens in {out['passes']} passes "
                 f"({out['tokens_per_pass']:.2f} per pass), {out['tokens_per_s']:.1f} tokens/s"
                 + (f", α {out['alpha']:.2f}" if out["alpha"] is not None else "") + "]")
    if "note" in out:
        lines.append(f"[{out['note']}]")
    _emit(out, args.json, lines)
    return 0


# --- bench ----------------------------------------------------------------------------------------
def _is_named(spec: str) -> bool:
    from models.llm.model import CONFIGS  # lazy: pulls in torch
    return spec in CONFIGS and not Path(spec).exists()


def cmd_bench(args) -> int:
    # lazy: pulls in safetensors, torch (torch: ~1 s; only the neural path needs it)
    import torch
    from models.llm.bench import BenchSettings, run_bench, summary_lines, write_json_atomic

    if args.pair:
        if args.target is not None or args.draft is not None:
            raise InputError("--pair neural measures the shipped pair; give --target/--draft without it")
        return cmd_bench_pair(args)
    args.target = args.target or "llama-3.1-8b"
    if not _is_named(args.target):               # a checkpoint: the pair measurement (a draft only if given)
        return cmd_bench_pair(args)
    args.draft = args.draft or "llama-3.2-1b"
    if not _is_named(args.draft):
        return cmd_bench_pair(args)
    args.dtype = args.dtype or "bf16"
    if args.drafter != "chain" or args.tree_widths is not None:
        raise InputError("--drafter and --tree-widths are for the pair measurement (--pair or checkpoint folders)")
    if args.prompt is not None or args.temperature is not None:
        raise InputError("--prompt and --temperature are for the pair measurement (--pair or checkpoint folders)")
    if args.out is None:
        raise InputError("the full bench writes a measurement file: give --out FILE.json")

    s = BenchSettings(device=args.device, target=args.target, draft=args.draft, dtype=args.dtype, gamma=args.gamma,
                      batches=args.batch, context=args.context, tokens=args.tokens,
                      checkpoint=args.checkpoint, draft_checkpoint=args.draft_checkpoint, seed=args.seed,
                      prompt_len=args.prompt_len, reps=args.reps, compile=args.compile, graphs=args.graphs)
    if args.threads:
        torch.set_num_threads(args.threads)
    out_path = Path(args.out)
    if out_path.is_dir():
        raise InputError(f"--out {args.out!r} is a directory; give a file name")
    from corpus.atomic import remove_stale_temps  # lazy: not loaded at `spectable` start
    remove_stale_temps(out_path.parent, out_path.name)    # temp files an earlier, killed bench left
    try:
        result = run_bench(s, progress=None if args.quiet else _Stages())
    except torch.cuda.OutOfMemoryError as exc:
        raise InputError(f"out of device memory during the bench ({str(exc).splitlines()[0][:120]}); "
                         "use a smaller --batch or --context") from None
    write_json_atomic(out_path, result)
    _emit(result, args.json, summary_lines(result) + [f"written to {out_path}"])
    return 0


class _Stages:
    """A bench's stages as they start, numbered, with the seconds so far, on stderr (stdout stays for the figures
    and --json)."""

    def __init__(self):
        self.k, self.t0 = 0, time.perf_counter()

    def __call__(self, what: str) -> None:
        self.k += 1
        print(f"bench [{self.k}] {what} ({time.perf_counter() - self.t0:.0f} s)", file=sys.stderr, flush=True)


def cmd_bench_pair(args) -> int:
    """A checkpoint pair (the shipped one, or --target/--draft folders or .gguf files) measured live."""
    # lazy: pulls in safetensors, torch (torch: ~1 s; only the neural path needs it)
    import torch
    from models.llm.pair_bench import measure_llama_pair, pair_summary_lines
    from models.llm.device import resolve_device
    from models.llm.pair import LlamaPair

    if args.checkpoint or args.draft_checkpoint:
        raise InputError("--checkpoint/--draft-checkpoint are for the full bench; the pair measurement takes "
                         "checkpoint folders in --target and --draft")
    if args.out and Path(args.out).is_dir():           # refused before minutes of measuring, not after
        raise InputError(f"--out {args.out!r} is a directory; give a file name")
    temperature = 1.0 if args.temperature is None else args.temperature
    if args.threads:
        torch.set_num_threads(args.threads)
    args.dtype = args.dtype or "fp32"
    device = resolve_device(args.device)
    target, draft = ("nahan-target", "nahan-draft") if args.pair else (args.target, args.draft)
    if args.drafter not in lean_names():
        return _bench_drafters(args, target, draft, temperature, device)
    if kind(args.drafter).lean == LEAN_COPY:
        draft = None if not args.pair else draft          # the shipped pair's target alone, guessing by copying
    elif draft is None:
        raise InputError("a pair measurement with the chain drafter needs --draft; or --drafter lookup for a "
                         "target alone")
    pair = LlamaPair.load(target, draft, dtype_name=args.dtype, device=device, threads=args.threads or None)
    prompt = args.prompt if args.prompt is not None else ("孔乙己" if args.pair else "")
    ids = pair.encode(prompt) if prompt else pair._model_ids([])
    if len(ids) + args.tokens + 2 * (args.gamma + 1) > pair.window:
        raise InputError(f"prompt + --tokens must fit the models' window of {pair.window} tokens")
    r = measure_llama_pair(pair, ids, gamma=args.gamma, tokens=args.tokens, temperature=temperature,
                           reps=args.reps or 5, seed=args.seed, dtype_name=args.dtype, drafter=args.drafter,
                           compile_draft={"auto": None, "on": True, "off": False}[args.compile],
                           progress=None if args.quiet else _Stages())
    r["settings"]["prompt"] = prompt
    lines = pair_summary_lines(r)
    return _write_and_emit(args, r, lines)


def _bench_drafters(args, target, draft, temperature, device) -> int:
    """Every drafter of --drafter side by side (models.llm.drafter_bench), after the pair's own measurement with
    its draft model (or lookup): the file holds both."""
    # lazy: pulls in safetensors, torch (torch: ~1 s; only the neural path needs it)
    from models.llm import drafter_bench
    from models.llm.pair import LlamaPair
    from models.llm.pair_bench import measure_llama_pair, pair_summary_lines
    pair = LlamaPair.load(target, draft, dtype_name=args.dtype, device=device, threads=args.threads or None)
    names = drafter_bench.parse(args.drafter, pair)
    prompt = args.prompt if args.prompt is not None else ("孔乙己" if args.pair else "")
    ids = pair.encode(prompt) if prompt else pair._model_ids([])
    progress = None if args.quiet else _Stages()
    first = "chain" if pair.draft is not None else "lookup"
    r = measure_llama_pair(pair, ids, gamma=args.gamma, tokens=args.tokens, temperature=temperature,
                           reps=args.reps or 5, seed=args.seed, dtype_name=args.dtype, drafter=first,
                           compile_draft={"auto": None, "on": True, "off": False}[args.compile], progress=progress)
    r["settings"]["prompt"] = prompt
    r["side_by_side"] = drafter_bench.measure_drafters(pair, ids, names, gamma=args.gamma, tokens=args.tokens,
                                                       temperature=temperature, reps=args.reps or 5, seed=args.seed,
                                                       widths=args.tree_widths, progress=progress)
    lines = pair_summary_lines(r) + [""] + drafter_bench.summary_lines(r["side_by_side"])
    return _write_and_emit(args, r, lines)


# --- standalone entry (no window, no scenes imported) -----------------------------------------------
def main(argv: list[str] | None = None) -> int:

    def make_parser():
        parser = _Parser(prog="spectable", description="The torch backend's subcommands.")
        register(parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser))
        return parser
    return run_command(make_parser, sys.argv[1:] if argv is None else list(argv))


if __name__ == "__main__":
    raise SystemExit(main())


def _write_and_emit(args, r: dict, lines: list[str]) -> int:
    """A pair measurement written to --out (atomically; a directory refused) and printed or given as JSON."""
    # lazy: pulls in torch (torch: ~1 s; only the neural path needs it)
    from models.llm.bench import write_json_atomic
    if args.out:
        write_json_atomic(args.out, r)
        lines.append(f"written to {args.out}")
    _emit(r, args.json, lines)
    return 0
