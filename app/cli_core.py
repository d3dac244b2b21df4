"""Core subcommands: corpus build/info, probs, generate, step, alpha, tubes, roofline (all take --json)."""
from __future__ import annotations

import argparse
import json
import math
import sys

from corpus.errors import InputError


# ---- shared helpers ------------------------------------------------------------------------------
def _emit_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n")


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
    p.add_argument("--temperature", type=float, default=1.0, help="0 = greedy (default 1)")
    p.add_argument("--top-k", dest="top_k", type=int, default=0, help="0 = off")
    p.add_argument("--top-p", dest="top_p", type=float, default=1.0, help="1 = off")


def _add_sampling_args(p, seed_default: int = 1) -> None:
    p.add_argument("--gamma", type=int, default=4, help="guesses per target pass (1..64, default 4)")
    _add_shaping_args(p)
    p.add_argument("--seed", type=int, default=seed_default, help=f"random seed: the same seed, the same run (default {seed_default})")
    p.add_argument("--lenience", type=float, default=1.0, help="< 1: the paper's lenient rule, NOT exact")


def _load_pair(args):
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
    from corpus.build import build_and_save
    t = build_and_save(args.sources, args.out, args.pieces, args.tokens_kind)
    info = _table_info(t.manifest, args.out)
    if args.json:
        _emit_json(info)
    else:
        print(f"wrote {args.out}: {info['N']} tokens, vocabulary {info['V']}, "
              f"{len(info['pieces'])} piece{'' if len(info['pieces']) == 1 else 's'} ({info['tokens']} tokenizer)")
    return 0


def _table_info(manifest: dict, path) -> dict:
    return {"path": str(path), "tokens": manifest.get("tokens"), "N": manifest.get("N"),
            "V": manifest.get("V"), "pieces": manifest.get("pieces", []),
            "normalisation": manifest.get("normalisation"), "command": manifest.get("command"),
            "format": manifest.get("format")}


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
    if args.top < 1:
        raise InputError("--top must be >= 1")
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
    print(f"after 「{args.prefix}」  (target p: trigram{' — backed off to the bigram' if p_bo else ''}; "
          f"draft q: bigram{' — backed off to the unigram floor' if q_bo else ''})")
    order = list(np.argsort(-p, kind="stable")[:args.top])
    for i in np.argsort(-q, kind="stable")[:args.top]:
        if i not in order:
            order.append(i)
    print(f"  {'token':<6} {'p (target)':>11} {'q (draft)':>11} {'min(p,q)':>10}")
    for i in order:
        tag = "  draft under-proposes" if q[i] < p[i] * 0.8 else ("  draft over-proposes" if q[i] > p[i] * 1.25 else "")
        print(f"  {pair.display(i):<6} {p[i]:>11.4f} {q[i]:>11.4f} {min(p[i], q[i]):>10.4f}{tag}")
    print(f"overlap Σ min(p, q) = {overlap:.4f}  (chance one guess passes here)")
    return 0


# ---- generate ------------------------------------------------------------------------------------
def _cmd_generate(args) -> int:
    from models.sampler import SpeculativeSampler
    if args.tokens < 1:
        raise InputError("--tokens must be >= 1")
    if args.tokens > 1_000_000:
        raise InputError("--tokens must be <= 1000000")
    pair = _load_pair(args)
    ids = _encode_prefix(pair, args.prefix)
    sampler = SpeculativeSampler(pair, _settings(args))
    sampler.reset(ids)
    traces = sampler.run_tokens(args.tokens)
    marks = []     # one mark per written token: '.' accepted guess, '◆' written by the target
    for t in traces:
        marks += ["."] * t.n_accepted + ["◆"]
    written = sampler.written
    n_acc = sum(t.n_accepted for t in traces)
    tested = sum(t.tested for t in traces)
    out = {"prefix": args.prefix, "text": pair.decode(written), "tokens": [pair.vocab[i] for i in written],
           "marks": "".join(marks), "passes": len(traces), "tokens_written": len(written),
           "tokens_per_pass": len(written) / len(traces), "accepted": n_acc, "tested": tested,
           "acceptance_rate": n_acc / tested if tested else None, "bonus": sum(t.final_kind == "bonus" for t in traces),
           "replacements": sum(t.final_kind == "replacement" for t in traces),
           "gamma": args.gamma, "seed": args.seed, "exact": sampler.settings.exact}
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
    print(f"{len(written)} tokens in {len(traces)} target passes: {out['tokens_per_pass']:.2f} tokens per pass "
          f"(γ = {args.gamma}); {n_acc}/{tested} guesses accepted")
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
        "acc": "accepted (r <= p/q)",
        "rej": "REJECTED (r > p/q); later guesses are discarded",
        "untested": "  Test {i}: guess 「{x}」 not tested (follows a rejected guess)",
        "repl": "  Replacement 「{x}」 drawn from the residual norm(max(0, p - q)); its largest entries: {top}",
        "fallback": "  (the residual summed to 0 in floating point, so p = q here; drew from p instead)",
        "bonus": "  All {g} guesses passed: bonus token 「{x}」 drawn from p at position {pos}; its largest entries: {top}",
        "wrote": "  Written this pass: 「{w}」 ({n} token{s})",
        "backoff_p": "  Note: the target has never seen the two-character context at position(s) {pos}: p = q there.",
        "backoff_q": "  Note: the draft has never seen the context at position(s) {pos}: q = the unigram floor there.",
        "inexact": "NOTE: lenience < 1 — NOT the exact rule.",
    },
    "zh": {
        "pass": "第 {k} 轮：小鼓转 {g} 次；大鼓转一次，亮 {l} 条道。",
        "ctx": "已写：…{ctx}",
        "guesses": "猜测（从 q 抽取）：{g}",
        "test": "  检查 {i}：猜「{x}」  p = {p:.4f}  q = {q:.4f}  p/q = {ratio:.4f}  r = {r:.4f}  →  {verdict}",
        "acc_sure": "通过（q ≤ p，必留）",
        "acc": "通过（r ≤ p/q）",
        "rej": "不通过（r > p/q）；后面的猜测全部作废",
        "untested": "  检查 {i}：猜「{x}」未检查（跟在被拒的猜测后面）",
        "repl": "  换上「{x}」，从剩余分布 norm(max(0, p − q)) 抽取；其中最大的几项：{top}",
        "fallback": "  （剩余分布在浮点数里总和为 0，此处 p = q，改从 p 抽取）",
        "bonus": "  {g} 个猜测全部通过：从第 {pos} 个位置的 p 抽取奖励词元「{x}」；其中最大的几项：{top}",
        "wrote": "  本轮写下：「{w}」（{n} 个词元）",
        "backoff_p": "  注意：大模型没见过位置 {pos} 的前两个字，那里 p = q。",
        "backoff_q": "  注意：小模型没见过位置 {pos} 的前一个字，那里 q 用一元底线。",
        "inexact": "注意：lenience < 1，不是精确规则。",
    },
}


def _trace_json(pair, t) -> dict:
    import numpy as np
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
            "target_backed_off": [bool(b) for b in t.target_backed_off], "exact": bool(t.exact)}


def _cmd_step(args) -> int:
    from models.sampler import SpeculativeSampler
    if not 1 <= args.steps <= 10_000:
        raise InputError("--steps must be between 1 and 10000")
    pair = _load_pair(args)
    ids = _encode_prefix(pair, args.prefix)
    sampler = SpeculativeSampler(pair, _settings(args))
    sampler.reset(ids)
    traces = [sampler.step() for _ in range(args.steps)]
    if args.json:
        _emit_json({"prefix": args.prefix, "gamma": args.gamma, "seed": args.seed,
                    "steps": [_trace_json(pair, t) for t in traces], "text": pair.decode(sampler.written)})
        return 0
    w = _WORDS[args.lang]
    fmt_top = lambda row: "  ".join(f"{k} {v:.3f}" for k, v in _top(pair, row, 4).items())  # noqa: E731
    if not sampler.settings.exact:
        print(w["inexact"])
    for t in traces:
        print(w["pass"].format(k=t.step_index + 1, g=t.gamma, l=t.lanes_lit))
        print(w["ctx"].format(ctx="".join(pair.display(i) for i in t.context[-20:])))
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
            print(w["test"].format(i=i + 1, x=pair.display(x), p=p, q=q, ratio=t.ratios[i], r=t.r[i], verdict=verdict))
        if t.final_kind == "replacement":
            print(w["repl"].format(x=pair.display(t.final_token), top=fmt_top(t.final_row)))
            if t.residual_fallback:
                print(w["fallback"])
        else:
            print(w["bonus"].format(g=t.gamma, x=pair.display(t.final_token), pos=t.gamma + 1, top=fmt_top(t.final_row)))
        bp = [str(i + 1) for i, b in enumerate(t.target_backed_off) if b]
        bq = [str(i + 1) for i, b in enumerate(t.draft_backed_off) if b]
        if bp:
            print(w["backoff_p"].format(pos=", ".join(bp)))
        if bq:
            print(w["backoff_q"].format(pos=", ".join(bq)))
        n = len(t.tokens_written)
        print(w["wrote"].format(w="".join(pair.display(x) for x in t.tokens_written), n=n, s="" if n == 1 else "s"))
        if args.pause and sys.stdin.isatty() and t is not traces[-1]:
            input()
    return 0


# ---- alpha ---------------------------------------------------------------------------------------
def _cmd_alpha(args) -> int:
    from models import analytics as an
    from models.sampler import SamplerSettings
    if not (args.c >= 0 and math.isfinite(args.c)):
        raise InputError(f"--c must be a finite number >= 0, got {args.c}")
    pair = _load_pair(args)
    s = SamplerSettings(gamma=args.gamma, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                        seed=args.seed)
    chars = args.chars
    if chars is None:
        # Shaped rows need the SpeculativeSampler itself (~7,000 tokens/s): a shorter default run.
        chars = 20_000 if s.shapes_rows else 200_000
    if not 1 <= chars <= 10_000_000:
        raise InputError("--chars must be between 1 and 10000000")
    a_corpus = an.alpha_corpus(pair, s)
    run = an.alpha_generated(pair, s, chars=chars)
    a = run.alpha
    table = an.speedup_table(a, args.c, range(1, 9))
    best = an.best_gamma(a, args.c)
    out = {"alpha_corpus": a_corpus, "alpha_generated": a, "alpha_generated_expected": run.alpha_expected,
           "gamma": args.gamma, "c": args.c, "chars": run.tokens, "passes": run.passes, "seed": args.seed,
           "tokens_per_pass_formula": an.tokens_per_pass_formula(a, args.gamma),
           "tokens_per_pass_counted": run.tokens_per_pass,
           "speedup": {str(g): v for g, v in table.items()}, "best_gamma": best,
           "best_speedup": an.speedup(a, best, args.c), "method": run.method,
           "extra_arithmetic": an.extra_arithmetic(a, args.gamma)}
    if args.json:
        out["alpha_generated_expected"] = _finite(run.alpha_expected)
        _emit_json(out)
        return 0
    print(f"α over the corpus's own positions   {a_corpus:.4f}   (mean Σ min(p, q); held-in text)")
    print(f"α over generated text               {a:.4f}   ({run.accepted}/{run.tested} guesses accepted in "
          f"{run.tokens} tokens, seed {args.seed})")
    print(f"tokens per target pass at γ = {args.gamma}:  formula (1 - α^(γ+1))/(1 - α) = "
          f"{out['tokens_per_pass_formula']:.3f}   counted = {run.tokens_per_pass:.3f}")
    print(f"speedup with c = {args.c}:  (1 - α^(γ+1)) / ((1 - α)(γc + 1))")
    for g, v in table.items():
        print(f"  γ = {g}:  {v:.3f}×{'   <- best' if g == best else ''}")
    if best > 8:
        print(f"  best γ = {best}: {out['best_speedup']:.3f}×")
    print(f"target arithmetic at γ = {args.gamma}: {out['extra_arithmetic']:.2f}× the target alone "
          f"(it spends idle arithmetic to save reads)")
    return 0


# ---- tubes ---------------------------------------------------------------------------------------
def _cmd_tubes(args) -> int:
    from models.sampler import SamplerSettings
    from models.tubes import run_tubes
    pair = _load_pair(args)
    s = SamplerSettings(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)
    res = run_tubes(pair, args.prefix, rounds=args.rounds, draws=args.draws, seed=args.seed, rule=args.rule,
                    settings=s)
    if args.json:
        _emit_json(res.to_json(pair))
        return 0
    n = res.rounds * res.draws
    print(f"after 「{args.prefix}」: {res.rounds} rounds × {res.draws} draws per tube; rule: {res.rule}"
          + ("" if res.rule == "exact" else "  (a WRONG rule)"))
    print(f"  {'token':<6} {'p':>7} {'q':>7} {'left':>8} {'right':>8} {'copper':>7} {'red':>6}")
    lc, rc, ac, rp = res.left_counts, res.right_counts, res.right_accepted, res.right_replaced
    for i in res.top_ids(10):
        print(f"  {pair.display(i):<6} {res.target_p[i]:>7.4f} {res.draft_q[i]:>7.4f} {lc[i] / n:>8.4f} "
              f"{rc[i] / n:>8.4f} {int(ac[i]):>7} {int(rp[i]):>6}")
    print(f"TV distance to p:  left {res.tv_left:.4f}   right {res.tv_right:.4f}")
    print(f"chi-square p-value vs p:  left {res.chi2_p_left:.3g}   right {res.chi2_p_right:.3g}")
    print("left = target alone; right = speculative (copper = accepted guesses, red = replacements)")
    return 0


# ---- roofline ------------------------------------------------------------------------------------
def _cmd_roofline(args) -> int:
    from models.hardware import busy_fraction, roofline
    r = roofline(args.device, args.model, args.batch, args.context)
    if args.lanes is not None:
        if args.lanes < 1:
            raise InputError("--lanes must be at least 1")
        r["lanes"] = args.lanes
        r["lanes_busy"] = busy_fraction(args.device, args.model, args.lanes)
    if args.json:
        _emit_json(r)
        return 0
    print(f"{r['model_label']} on {r['device_label']}, batch {r['batch']}, context {r['context']} (on paper)")
    print(f"  weights {r['weight_bytes'] / 1e9:.2f} GB + KV cache {r['kv_bytes_per_step'] / 1e9:.2f} GB "
          f"({r['kv_bytes_per_token']:,} B/token) = {r['bytes_per_step'] / 1e9:.2f} GB read per step")
    print(f"  {r['ms_per_token']:.2f} ms per step -> {r['tokens_per_s']:,.0f} tokens/s "
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
    p.add_argument("--top", type=int, default=10, help="how many of the most likely tokens to list (default 10)")
    _add_shaping_args(p)
    p.set_defaults(func=_cmd_probs)

    g = sub.add_parser("generate", help="speculative decoding on the n-gram pair, with tape marks")
    _add_model_args(g, "孔乙")
    g.add_argument("--tokens", type=int, default=200,
                   help="how many tokens to write, at least (whole passes; default 200)")
    _add_sampling_args(g)
    g.set_defaults(func=_cmd_generate)

    st = sub.add_parser("step", help="terminal step-through: each acceptance test in words")
    _add_model_args(st, "孔乙")
    _add_sampling_args(st)
    st.add_argument("--steps", type=int, default=1, help="target passes to show (default 1)")
    st.add_argument("--lang", choices=("zh", "en"), default="zh", help="language of the explanation (default zh)")
    st.add_argument("--pause", action="store_true", help="wait for Enter between passes (terminal only)")
    st.set_defaults(func=_cmd_step)

    a = sub.add_parser("alpha", help="acceptance rate α (corpus and generated), tokens per pass, speedup, best γ")
    _add_model_args(a, None)
    a.add_argument("--c", type=float, default=0.1, help="draft cost / target cost (default 0.1)")
    a.add_argument("--gamma", type=int, default=4, help="guesses per pass for the formula lines (default 4)")
    a.add_argument("--chars", type=int, default=None,
                   help="length of the generated run (default 200000; 20000 with temperature/top-k/top-p)")
    a.add_argument("--seed", type=int, default=0, help="seed of the generated run (default 0)")
    _add_shaping_args(a)
    a.set_defaults(func=_cmd_alpha)

    tb = sub.add_parser("tubes", help="the test-tube experiment: target alone vs speculative, against p")
    _add_model_args(tb)
    tb.add_argument("--rounds", type=int, default=200, help="rounds of the experiment (default 200)")
    tb.add_argument("--draws", type=int, default=50, help="draws per tube each round (default 50)")
    tb.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    tb.add_argument("--rule", choices=("exact", "resample_from_p", "exact_match_only", "draft_only"), default="exact",
                    help="draft_only: the target never writes a token (wrong); the three non-exact rules are biased")
    _add_shaping_args(tb)
    tb.set_defaults(func=_cmd_tubes)

    rf = sub.add_parser("roofline", help="on-paper decoding figures for a device and a model")
    rf.add_argument("--device", default="h100-sxm",
                    help="a data-sheet device (h100-sxm, h200, a100-80gb) or a measured one (default h100-sxm)")
    rf.add_argument("--model", default="llama-3.1-8b", help="llama-3.1-8b or llama-3.2-1b (default llama-3.1-8b)")
    rf.add_argument("--batch", type=int, default=1, help="sequences written at once (default 1)")
    rf.add_argument("--context", type=int, default=0,
                    help="tokens of KV cache each sequence reads per step (default 0: the weights alone)")
    rf.add_argument("--lanes", type=int, default=None, help="also: arithmetic busy with this many lanes lit")
    rf.add_argument("--json", action="store_true", help="print one JSON object")
    rf.set_defaults(func=_cmd_roofline)
