"""`spectable step`: the terminal step-through, each acceptance test of a pass in words (zh or en, from the
string catalog's `cli.step.*` keys), or every pass as JSON.

Imports of the models inside these functions are deliberate: each command loads only what it uses.
"""
from __future__ import annotations

import sys

from app.cli.numbers import whole
from app.cli.options import (add_drafter_args, add_model_args, add_pair_args, add_sampling_args, emit_json,
                             encode_prefix, load_pair, make_drafter, sampler_settings, speculative, top_entries)
from app.i18n import Strings
from models.drafters import COPY, HEADS, TREE, kind_of
from models.trace import medusa_number


def register(sub) -> None:
    """The `step` subcommand (the core commands' register() adds it in its place among them)."""
    st = sub.add_parser("step", help="terminal step-through: each acceptance test in words")
    add_model_args(st, "孔乙")
    add_pair_args(st)
    add_sampling_args(st)
    st.add_argument("--steps", type=whole(1, 10_000), default=1, help="target passes to show (default 1)")
    st.add_argument("--lang", choices=("zh", "en"), default="zh", help="language of the explanation (default zh)")
    st.add_argument("--pause", action="store_true", help="wait for Enter between passes (terminal only)")
    add_drafter_args(st)
    st.set_defaults(func=_cmd_step)


def _trace_json(pair, t) -> dict:
    tests = []
    for i, x in enumerate(t.guesses):
        verdict = "accepted" if t.accepted[i] else ("rejected" if i == t.n_accepted else "untested")
        tests.append({"guess": pair.display(x), "p": float(t.p_rows[i, x]), "q": float(t.q_rows[i, x]),
                      "ratio": float(t.ratios[i]), "r": float(t.r[i]), "verdict": verdict})
    return {"step_index": t.step_index, "context_tail": "".join(pair.display(i) for i in t.context[-20:]),
            "gamma": t.gamma, "guesses": [pair.display(x) for x in t.guesses], "tests": tests,
            "n_accepted": t.n_accepted, "final_token": pair.display(t.final_token), "final_kind": t.final_kind,
            "final_row_top": top_entries(pair, t.final_row, 5), "residual_fallback": bool(t.residual_fallback),
            "tokens_written": [pair.display(x) for x in t.tokens_written], "lanes_lit": t.lanes_lit,
            "draft_backed_off": [bool(b) for b in t.draft_backed_off],
            "target_backed_off": [bool(b) for b in t.target_backed_off], "exact": bool(t.exact)} \
        | _drafter_json(pair, t)


def _drafter_json(pair, t) -> dict:
    """The drafter's part of a step: where lookup copied from, which head guessed, the tree and its checks."""
    out: dict = {"drafter": t.drafter}
    if kind_of(t.drafter).look == COPY:
        span = t.source_span
        out["source_span"] = None if span is None else dict(span) | {
            "matched": "".join(pair.display(i) for i in t.context[span["match"][0]:span["match"][1]]),
            "copied": "".join(pair.display(i) for i in t.context[span["copy"][0]:span["copy"][1]])}
    if t.heads is not None:
        out["heads"] = [medusa_number(h) for h in t.heads]          # as Medusa numbers them (the words say so too)
    if t.tree is not None:
        tr = t.tree
        nodes = [{"id": n.id, "parent": n.parent, "token": pair.display(n.token), "depth": n.depth,
                  "q": float(tr.q_rows[n.q_row][n.token]),
                  "head": None if n.head is None else medusa_number(n.head)} for n in tr.nodes]
        checks = []
        for c in tr.checks:
            node = tr.nodes[c.node]
            checks.append({"node": c.node, "token": pair.display(node.token), "depth": node.depth, "round": c.round,
                           "p": c.p_x, "q": c.q_x, "ratio": c.ratio, "r": c.r,
                           "verdict": "accepted" if c.accepted else "rejected", "fallback": bool(c.fallback),
                           "residual_top": None if c.residual_row is None
                           else top_entries(pair, tr.target_rows[c.residual_row], 3)})
        out["tree"] = {"base": tr.base, "sampling": tr.sampling, "widths": list(tr.widths), "nodes": nodes,
                       "checks": checks, "accepted_path": list(tr.accepted_path), "lanes_lit": tr.lanes_lit}
    return out


def _cmd_step(args) -> int:
    pair = load_pair(args)
    ids = encode_prefix(pair, args.prefix)
    drafter = make_drafter(args, pair)
    sampler = speculative(pair, sampler_settings(args), drafter)
    sampler.reset(ids)
    traces = [sampler.step() for _ in range(args.steps)]
    if args.json:
        emit_json({"prefix": args.prefix, "gamma": args.gamma, "seed": args.seed,
                    "steps": [_trace_json(pair, t) for t in traces], "text": pair.decode(sampler.written)}
                   | drafter.describe())
        return 0
    words = Strings(args.lang)
    fmt_top = lambda row, n=4: "  ".join(f"{k} {v:.3f}" for k, v in top_entries(pair, row, n).items())  # noqa: E731
    if not sampler.settings.exact:
        print(words("cli.step.inexact"))
    for t in traces:
        look = kind_of(t.drafter).look
        if look == TREE:
            _print_tree_step(pair, t, words, fmt_top, args)
            continue
        if look == COPY:
            print(words("cli.step.pass_lookup", k=t.step_index + 1, g=t.gamma, l=t.lanes_lit))
        elif look == HEADS or kind_of(t.drafter).fed_by_target:
            y = pair.display(t.context[-1]) if t.context else "↵"
            print(words("cli.step.pass_heads" if look == HEADS else "cli.step.pass_eagle", k=t.step_index + 1,
                        h=t.gamma, y=y, g=t.gamma, l=t.lanes_lit))
        else:
            print(words("cli.step.pass", k=t.step_index + 1, g=t.gamma, l=t.lanes_lit))
        print(words("cli.step.ctx", ctx="".join(pair.display(i) for i in t.context[-20:])))
        if look == COPY:
            span = t.source_span
            if span is None:
                print(words("cli.step.lookup_none"))
            else:
                text = lambda a, b: "".join(pair.display(i) for i in t.context[a:b])  # noqa: E731
                print(words("cli.step.lookup_span", copy=text(*span["copy"]), c0=span["copy"][0],
                            c1=span["copy"][1] - 1, match=text(*span["match"]), a=span["match"][0],
                            b=span["match"][1] - 1, n=span["ngram"]))
        if t.guesses:
            print(words("cli.step.guesses", g=" ".join(f"「{pair.display(x)}」" for x in t.guesses)))
        for i, x in enumerate(t.guesses):
            if i >= t.tested:
                print(words("cli.step.untested", i=i + 1, x=pair.display(x)))
                continue
            p, q = float(t.p_rows[i, x]), float(t.q_rows[i, x])
            if t.accepted[i]:
                verdict = words("cli.step.acc_sure") if q <= p else words("cli.step.acc")
            else:
                verdict = words("cli.step.rej")
            print(words("cli.step.test", i=i + 1, x=pair.display(x), p=p, q=q, ratio=t.ratios[i], r=t.r[i],
                        verdict=verdict)
                  + (words("cli.step.head_of", h=medusa_number(t.heads[i])) if t.heads else ""))
        if t.final_kind == "replacement":
            print(words("cli.step.repl", x=pair.display(t.final_token), top=fmt_top(t.final_row)))
            if t.residual_fallback:
                print(words("cli.step.fallback"))
        elif not t.guesses:
            print(words("cli.step.plain", x=pair.display(t.final_token), top=fmt_top(t.final_row)))
        else:
            print(words("cli.step.bonus", g=t.gamma, x=pair.display(t.final_token), pos=t.gamma + 1,
                        top=fmt_top(t.final_row)))
        bp = [str(i + 1) for i, b in enumerate(t.target_backed_off) if b]
        bq = [str(i + 1) for i, b in enumerate(t.draft_backed_off) if b]
        if bp:
            print(words("cli.step.backoff_p", pos=", ".join(bp)))
        if bq:
            print(words("cli.step.backoff_heads" if look == HEADS else "cli.step.backoff_q", pos=", ".join(bq)))
        n = len(t.tokens_written)
        print(words("cli.step.wrote_1" if n == 1 else "cli.step.wrote",
                w="".join(pair.display(x) for x in t.tokens_written), n=n))
        if args.pause and sys.stdin.isatty() and t is not traces[-1]:
            input()
    return 0


def _print_tree_step(pair, t, words, fmt_top, args) -> None:
    """One tree pass in words: the tree, then every check in the order the bridge ran them."""
    tr = t.tree
    print(words("cli.step.pass_tree", k=t.step_index + 1, n=len(tr.nodes), w=",".join(map(str, tr.widths)),
                base=tr.base, sampling=tr.sampling, l=tr.lanes_lit))
    print(words("cli.step.ctx", ctx="".join(pair.display(i) for i in t.context[-20:])))

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
        verdict = words("cli.step.tree_kept") if c.accepted else \
            words("cli.step.tree_rej", top=fmt_top(tr.target_rows[c.residual_row], 3))
        print(words("cli.step.tree_check", d=node.depth, j=c.round, x=pair.display(node.token),
                    path=path(node.parent), p=c.p_x, q=c.q_x, ratio=c.ratio, r=c.r, verdict=verdict))
    if t.final_kind == "replacement":
        depth = tr.nodes[tr.checks[-1].node].depth
        print(words("cli.step.tree_repl", d=depth, x=pair.display(t.final_token), top=fmt_top(t.final_row)))
    else:
        print(words("cli.step.tree_bonus", x=pair.display(t.final_token), top=fmt_top(t.final_row)))
    n = len(t.tokens_written)
    print(words("cli.step.wrote_1" if n == 1 else "cli.step.wrote",
                w="".join(pair.display(x) for x in t.tokens_written), n=n))
    if args.pause and sys.stdin.isatty():
        input()
