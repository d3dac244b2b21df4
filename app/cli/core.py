"""Core subcommands: corpus build/info, probs, generate, alpha, drafters, tubes, eval, roofline (all take --json);
`step` lives in app.cli.step and is registered here in its place among them.

Imports of the models inside these functions are deliberate: `spectable --help` and each command load only what
they use (a neural pair brings in torch).
"""
from __future__ import annotations

import math
import sys
import unicodedata
from pathlib import Path

import numpy as np

from app.cli import step
from app.cli.numbers import SEED, number, whole
from app.cli.options import (add_drafter_args, add_model_args, add_pair_args, add_sampling_args, add_shaping_args,
                             add_tokens_kind, emit_json, encode_prefix, load_pair, make_drafter, sampler_settings,
                             speculative, top_entries)
from app.cli.progress import Progress
from corpus import jsonio
from corpus.errors import InputError
from models.acceptance import MAX_GAMMA
from models.drafters import kind
from models.tubes import run_tubes


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _width(text: str) -> int:
    """Terminal columns of a token: wide (CJK) characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


# ---- corpus --------------------------------------------------------------------------------------
def _cmd_corpus_build(args) -> int:
    from corpus.build import build_and_save, build_and_save_heads  # lazy: not loaded at `spectable` start
    if args.heads is not None:
        t = build_and_save_heads(args.sources, args.out, args.pieces, args.tokens_kind, args.heads)
    else:
        t = build_and_save(args.sources, args.out, args.pieces, args.tokens_kind)
    info = _table_info(t.manifest, args.out)
    if args.json:
        emit_json(info)
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
    # lazy: not loaded at `spectable` start
    from corpus.build import default_table_path
    from corpus.tables import load_tables
    path = args.table or default_table_path(args.tokens_kind or "char")
    t = load_tables(path)
    info = _table_info(t.manifest, path)
    info["trigram_histories"] = int(len(t.tri_keys))
    info["bigram_pairs"] = int(len(t.bi_counts))
    info["trigram_triples"] = int(len(t.tri_counts))
    if args.json:
        emit_json(info)
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
    from models.sampler import shape_row  # lazy: not loaded at `spectable` start
    pair = load_pair(args)
    ids = encode_prefix(pair, args.prefix)
    from models.sampler import SamplerSettings  # lazy: not loaded at `spectable` start
    s = SamplerSettings(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)
    q_raw, q_bo = pair.draft_row(ids)
    p_raw, p_bo = pair.target_row(ids)
    q = shape_row(q_raw, s.temperature, s.top_k, s.top_p) if s.shapes_rows else q_raw
    p = shape_row(p_raw, s.temperature, s.top_k, s.top_p) if s.shapes_rows else p_raw
    overlap = float(np.minimum(p, q).sum())
    out = {"prefix": args.prefix, "target": top_entries(pair, p, args.top), "draft": top_entries(pair, q, args.top),
           "overlap": overlap, "tv": 1.0 - overlap, "target_backed_off": bool(p_bo),
           "draft_backed_off": bool(q_bo), "V": pair.V, "tokens": pair.tokens}
    if args.json:
        emit_json(out)
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
    pair = load_pair(args)
    ids = encode_prefix(pair, args.prefix)
    drafter = make_drafter(args, pair)
    sampler = speculative(pair, sampler_settings(args), drafter)
    sampler.reset(ids)
    # Counted pass by pass, keeping no trace (each holds its rows): a long run's memory is its text. Not
    # models.analytics.count_run, which needs the traces kept and counts two figures otherwise: a tree's
    # tested guesses are its walk there (here every check), and a pass with no guesses writes no bonus there.
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
        emit_json(out)
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


# ---- alpha ---------------------------------------------------------------------------------------
def _cmd_alpha(args) -> int:
    # lazy: not loaded at `spectable` start
    from models import analytics as an
    from models.sampler import SamplerSettings
    from models.hardware import roofline
    roofline(args.device, args.model, 1, args.context)      # a bad device, model or context fails before the run
    pair = load_pair(args)
    drafter = make_drafter(args, pair)
    s = SamplerSettings(gamma=args.gamma, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                        seed=args.seed)
    drafter.validate(s.gamma)
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
        kept, kept_ci, measure = run.kept_share, run.kept_ci95, run.alpha_measure
        from app.derived import SHORT_COUNTS  # lazy: the parts chapter 7 draws, not loaded at `spectable` start
        parts, part_tokens = run.alpha_parts(SHORT_COUNTS)
        per_position, proposing = kept, 1.0
        ci, units = run.alpha_ci95, run.runs
        by_depth = run.alpha_by_depth
    else:
        from models.drafter_analytics import drafter_generated  # lazy: not loaded at `spectable` start
        # Σ min(p, q) over the corpus is the bigram draft's overlap: it says nothing about other drafters.
        a_corpus, expected = None, float("nan")
        dr = drafter_generated(pair, s, drafter, chars=chars)
        a, tpp, lanes = dr.alpha, dr.tokens_per_pass, dr.lanes_per_pass
        n_tokens, passes, acc, tested, method = dr.tokens, dr.passes, dr.accepted, dr.tested, dr.method
        kept, kept_ci, measure = a, float("nan"), "kept"
        parts, part_tokens = [], 0.0
        per_position, proposing = dr.alpha_per_position, dr.proposing_share
        ci, units = float("nan"), 1
        by_depth = []
    from models.drafter_analytics import speedup_model  # lazy: not loaded at `spectable` start
    model_fig = speedup_model(tpp, lanes, drafter.cost(s.gamma), args.device, args.model, args.context, args.c)
    # The formulas (tokens per pass, speedup vs γ, best γ, extra arithmetic) are the chain's: null for the others.
    table = an.speedup_table(a, args.c, range(1, 9)) if fast_chain else None
    best = an.best_gamma(a, args.c) if fast_chain else None
    # alpha: the pair's α (Σ min(p, q) over the written text where counted, alpha_measure "text"; else the share
    # kept); alpha_generated: the share of guesses kept (accepted / tested), as before
    out = {"alpha_corpus": a_corpus, "alpha": a, "alpha_ci95": ci, "alpha_measure": measure, "alpha_parts": parts,
           "alpha_generated": kept, "alpha_generated_expected": expected,
           "alpha_generated_ci95": kept_ci, "alpha_generated_texts": units,
           "gamma": args.gamma, "c": args.c, "chars": n_tokens, "passes": passes, "seed": args.seed,
           "tokens_per_pass_formula": an.tokens_per_pass_formula(a, args.gamma) if fast_chain else None,
           "tokens_per_pass_counted": tpp, "alpha_by_depth": by_depth,
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
        out["alpha"] = _finite(a)
        out["alpha_ci95"] = _finite(ci)
        out["alpha_generated"] = _finite(kept)
        out["alpha_generated_ci95"] = _finite(kept_ci)
        out["alpha_per_position"] = _finite(per_position)
        emit_json(out)
        return 0
    cm = out["cost_model"]
    if a_corpus is not None:
        print(f"α over the corpus's own positions   {a_corpus:.4f}   (mean Σ min(p, q); held-in text)")
    elif fast_chain:           # a network pair: no corpus average
        print(f"{pair.name}: α on held-out text: spectable eval --pair neural")
    if measure == "text":
        # α as defined, over every position of the text written; the verdicts' count sits a little under it
        print(f"{'α over the written text (' + drafter.name + ')':<36}{a:.4f}   (mean Σ min(p, q) over all {n_tokens:,} "
              f"positions written, seed {args.seed})")
        if math.isfinite(ci):
            print(f"  95% interval: ± {ci:.4f} (the spread over its {units} independent texts)")
        if parts:              # how far a shorter count wanders: the same run cut into parts
            print(f"  its texts in {len(parts)} parts of about {round(part_tokens, -2):,.0f} tokens: α from "
                  f"{min(parts):.4f} to {max(parts):.4f}")
        print(f"{'share of guesses kept':<36}{kept:.4f}   ({acc}/{tested} guesses accepted in {n_tokens} "
              f"tokens; ± {kept_ci:.4f})")
    else:
        print(f"α over generated text ({drafter.name})  {a:.4f}   ({acc}/{tested} guesses accepted in "
              f"{n_tokens} tokens, seed {args.seed})")
        if math.isfinite(ci):
            print(f"  95% interval: ± {ci:.4f} (the spread over its {units} independent texts)")
    if fast_chain:
        print(f"tokens per target pass at γ = {args.gamma}:  formula (1 - α^(γ+1))/(1 - α) = "
              f"{out['tokens_per_pass_formula']:.3f}   counted = {tpp:.3f}")
        if by_depth:        # why the two differ: the first guess of a pass is not as easy as the rest
            print("  share kept by place in a pass (of the guesses reached): "
                  + ", ".join(f"{k + 1}: {r:.3f}" for k, r in enumerate(by_depth))
                  + f"   (1 + Σ products = {1 + sum(math.prod(by_depth[:k + 1]) for k in range(len(by_depth))):.3f})")
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
    # lazy: not loaded at `spectable` start
    from models import drafter_analytics as da
    from models.hardware import roofline
    from models.sampler import SamplerSettings
    if not (args.c >= 0 and math.isfinite(args.c)):
        raise InputError(f"--c must be a finite number >= 0, got {args.c}")
    if not 1 <= args.chars <= 10_000_000:
        raise InputError("--chars must be between 1 and 10000000")
    roofline(args.device, args.model, 1, args.context)      # a bad device, model or context fails before the runs
    pair = load_pair(args)
    s = SamplerSettings(gamma=args.gamma, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                        seed=args.seed)
    if args.out:
        out = Path(args.out)
        if out.parent != Path("") and not out.parent.is_dir():
            raise InputError(f"folder {out.parent} does not exist")
    doc = da.long_runs(pair, s, chars=args.chars,
                       progress=None if args.json else (lambda label: print(f"  {label} …", file=sys.stderr)))
    if args.out:
        from corpus.atomic import write_text_atomic  # lazy: not loaded at `spectable` start
        write_text_atomic(args.out, jsonio.dumps(doc, indent=1) + "\n")
    points = da.with_speedups(doc["points"], args.device, args.model, args.context, args.c)
    if args.json:
        emit_json(dict(doc, points=points, device=args.device, model=args.model, context=args.context, c=args.c,
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
    from models.sampler import SamplerSettings  # lazy: not loaded at `spectable` start
    pair = load_pair(args)
    drafter = make_drafter(args, pair)
    s = SamplerSettings(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)
    if args.rule != "typical" and (args.typical_epsilon is not None or args.typical_delta is not None):
        raise InputError("--typical-epsilon and --typical-delta apply to --rule typical only")
    typ = {k: v for k, v in (("typical_epsilon", args.typical_epsilon), ("typical_delta", args.typical_delta))
           if v is not None}
    res = run_tubes(pair, args.prefix, rounds=args.rounds, draws=args.draws, seed=args.seed, rule=args.rule,
                    settings=s, drafter=drafter, **typ)
    if args.json:
        emit_json(res.to_json(pair))
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
    # lazy: not loaded at `spectable` start
    from models.llm.evaluate import evaluate
    from models.ngram import NGramPair
    from models.sampler import SamplerSettings
    SamplerSettings(gamma=args.gamma, seed=args.seed)            # γ and seed checked before anything loads
    from app import pairs  # lazy: not loaded at `spectable` start
    if pairs.is_neural(args.pair) and args.chars is not None and args.chars > 100_000:
        raise InputError("--chars must be at most 100000 for the neural pair")
    r = evaluate(pairs.is_neural(args.pair), corpus=args.corpus, ngram_pair=NGramPair.load(args.table) if args.table else None,
                 alpha_tokens=args.chars, gamma=args.gamma, seed=args.seed)
    if args.json:
        emit_json(r)
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
    from models.hardware import busy_fraction, roofline  # lazy: not loaded at `spectable` start
    r = roofline(args.device, args.model, args.batch, args.context, args.positions).as_dict()   # printed as is
    if args.lanes is not None:
        r["lanes"] = args.lanes
        r["lanes_busy"] = busy_fraction(args.device, args.model, args.lanes)
    if args.json:
        emit_json(r)
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
    add_model_args(p)
    add_pair_args(p)
    p.add_argument("--top", type=whole(1, 100_000), default=10, help="how many of the most likely tokens to list (default 10)")
    add_shaping_args(p)
    p.set_defaults(func=_cmd_probs)

    g = sub.add_parser("generate", help="speculative decoding (the n-gram pair, or --pair neural), with tape marks")
    add_model_args(g, "孔乙")
    add_pair_args(g)
    g.add_argument("--tokens", type=whole(1, 100_000), default=200,
                   help="how many tokens to write, at least (whole passes; default 200, at most 100000)")
    add_sampling_args(g)
    add_drafter_args(g)
    g.set_defaults(func=_cmd_generate)

    step.register(sub)         # in its place in `spectable --help`: after generate, before alpha

    a = sub.add_parser("alpha", help="acceptance rate α (corpus and generated), tokens per pass, speedup, best γ")
    add_model_args(a, None)
    add_pair_args(a)
    a.add_argument("--c", type=number(0, 1000), default=0.1, help="draft cost / target cost (default 0.1)")
    a.add_argument("--gamma", type=whole(1, MAX_GAMMA), default=4, help="guesses per pass for the formula lines (default 4)")
    a.add_argument("--chars", type=whole(1, 2_000_000), default=None,
                   help="length of the generated run (default 200000, at most 2000000; 20000 with "
                        "temperature/top-k/top-p or a drafter other than chain; 4000 for a neural pair, at most 100000)")
    a.add_argument("--seed", type=SEED, default=0, help="seed of the generated run (default 0)")
    add_shaping_args(a)
    add_drafter_args(a)
    a.add_argument("--device", default="h100-sxm", help="device for speedup_model (default h100-sxm)")
    a.add_argument("--model", default="llama-3.1-8b", help="model shape for speedup_model (default llama-3.1-8b)")
    a.add_argument("--context", type=whole(0, 10_000_000), default=0,
                   help="KV-cache tokens per pass for speedup_model (default 0)")
    a.set_defaults(func=_cmd_alpha)

    dr = sub.add_parser("drafters", help="every drafter's long run: tokens and lanes per pass, speedup on paper")
    add_model_args(dr, None)
    dr.add_argument("--gamma", type=whole(1, MAX_GAMMA), default=4,
                    help="guesses per pass: γ of the chain, lookup and heads, the depth of the trees (default 4)")
    dr.add_argument("--chars", type=whole(1, 50_000), default=20_000,
                    help="tokens per drafter (default 20000, at most 50000)")
    dr.add_argument("--seed", type=SEED, default=0, help="seed of every drafter's run (default 0)")
    add_shaping_args(dr)
    dr.add_argument("--c", type=number(0, 1000), default=0.1, help="draft cost / target cost (default 0.1)")
    dr.add_argument("--device", default="h100-sxm", help="device for speedup_model (default h100-sxm)")
    dr.add_argument("--model", default="llama-3.1-8b", help="model shape for speedup_model (default llama-3.1-8b)")
    dr.add_argument("--context", type=whole(0, 10_000_000), default=0,
                    help="KV-cache tokens per pass for speedup_model (default 0)")
    dr.add_argument("--out", default=None, help="write the counts as a spectable-drafters/1 file (the app reads "
                                                 "corpus/tables/X-drafters.json beside table X.npz)")
    dr.set_defaults(func=_cmd_drafters)

    tb = sub.add_parser("tubes", help="the test-tube experiment: target alone vs speculative, against p")
    add_model_args(tb)
    add_pair_args(tb)
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
    add_shaping_args(tb)
    add_drafter_args(tb)
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
