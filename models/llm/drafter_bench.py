"""Every drafter a network pair can run, measured side by side in one run (`spectable bench --pair neural
--drafter all`): the draft model, lookup, Medusa's heads, EAGLE, and trees from each, with plain decoding, in
interleaved rounds (each round runs them all, in an order that turns from round to round, so a change in the
machine's load falls on every drafter alike).

For each: α (accepted / tested guesses), tokens per pass, the guesses (a tree's nodes) per pass, the seconds a pass
spends proposing and checking (the verify forward of its γ + 1 positions or its tree's nodes + 1, with the rule) as
target turns (over the same round's plain seconds per token), the measured speed-up over plain decoding, and the
lesson's formula fed with the same round's costs: tokens per pass / (draft turns + verify turns). Writes nothing:
the caller keeps the dict (the measurement file's "drafters" section, models.measurements).
"""
from __future__ import annotations

import statistics

import torch

from corpus.errors import InputError
from models.drafters import FEATURES, TreeDrafter
from models.llm.device import aligned
from models.llm.speculative import ModelProposer, PlainDecoder, SpeculativeDecoder, lookup_proposer
from models.llm.tree import TreeDecoder

DRAFTERS = ("chain", "lookup", "heads", "eagle", "tree-chain", "tree-heads", "tree-eagle")
WORDS = {"chain": "the draft model", "lookup": "lookup (copies from the text)", "heads": "Medusa's heads",
         "eagle": "EAGLE", "tree-chain": "tree from the draft model", "tree-heads": "tree from Medusa's heads",
         "tree-eagle": "tree from EAGLE"}


def default_widths(gamma: int) -> list[int]:
    """A tree of two branches γ deep: 2γ nodes, 2γ + 1 lanes (nine at γ = 4, the read head's nine)."""
    return [2] + [1] * (gamma - 1)


def available(pair) -> list[str]:
    """The drafters of DRAFTERS this pair runs: a draft model's (chain, its tree), lookup always, the
    self-drafters' (heads, eagle and their trees) where the pair has them."""
    feats = FEATURES in getattr(pair, "offers", frozenset())
    return [n for n in DRAFTERS if not ((n.endswith("chain") and pair.draft is None)
                                        or (n.split("-")[-1] in ("heads", "eagle") and not feats))]


def parse(spec: str, pair) -> list[str]:
    """--drafter: 'all' (every drafter the pair runs) or a comma-separated list of DRAFTERS."""
    names = available(pair) if spec.strip() == "all" else [s.strip() for s in spec.split(",") if s.strip()]
    bad = [n for n in names if n not in DRAFTERS]
    if bad or not names:
        raise InputError(f"--drafter takes all or a comma-separated list of {', '.join(DRAFTERS)}; not "
                         f"{', '.join(bad) or repr(spec)}")
    missing = [n for n in names if n not in available(pair)]
    if missing:
        raise InputError(f"{pair.name} cannot run {', '.join(missing)} (it runs {', '.join(available(pair))})")
    return names


def decoder(pair, name: str, gamma: int, temperature: float, seed: int, widths: list[int]):
    """A fresh decoder of `name` (SpeculativeDecoder's surface: generate, draft/verify/decode seconds)."""
    t = pair.target
    if name.startswith("tree-"):
        base = name.split("-", 1)[1]
        tree = TreeDrafter(pair.tree_base(base), widths=widths)
        return TreeDecoder(t, tree, gamma=len(widths), temperature=temperature, seed=seed)
    if name == "chain":
        proposer = ModelProposer(pair.draft)
    elif name == "lookup":
        proposer = lookup_proposer(t.config.vocab_size)
    else:
        proposer = pair.feature_drafter("medusa" if name == "heads" else name).make_proposer()
    return SpeculativeDecoder(t, None, gamma=gamma, temperature=temperature, seed=seed, proposer=proposer)


@torch.inference_mode()
def measure_drafters(pair, prompt_ids: list[int], names: list[str], *, gamma: int = 4, tokens: int = 128,
                     temperature: float = 1.0, reps: int = 7, seed: int = 0, widths: list[int] | None = None,
                     progress=None) -> dict:
    """Plain decoding and every drafter of `names`, `reps` rounds of `tokens` tokens each, interleaved."""
    say = progress or (lambda _s: None)
    widths = list(widths or default_widths(gamma))
    if tokens < 2 or reps < 1 or not prompt_ids:
        raise InputError("need tokens >= 2, reps >= 1 and a prompt of at least one token")
    nodes = sum(_level_sizes(widths))
    seq = aligned(len(prompt_ids) + tokens + 2 * (max(gamma, nodes) + 1))
    if seq > pair.window:
        raise InputError(f"prompt + tokens + a pass's positions must fit the models' window of {pair.window}")
    with pair.lock:
        try:
            for m in (pair.target, pair.draft):
                if m is not None:
                    m.setup_caches(1, seq)
            return _rounds(pair, prompt_ids, names, gamma, tokens, temperature, reps, seed, widths, say)
        finally:
            for m in (pair.target, pair.draft):
                if m is not None:
                    m.setup_caches(1, pair.window)
            pair.owner = None


def _level_sizes(widths):
    level, out = 1, []
    for k in widths:
        level *= k
        out.append(level)
    return out


def _rounds(pair, prompt_ids, names, gamma, tokens, temperature, reps, seed, widths, say) -> dict:
    sides = ["plain"] + list(names)
    say(f"warming up {len(sides)} decoders")
    for side in sides:                               # one short run each: graphs bound, caches touched
        _run(pair, side, prompt_ids, min(tokens, 2 * gamma + 2), gamma, temperature, seed, widths)
    per = {s: {"s_per_token": [], "formula": [], "draft": [], "verify": [], "rest": []} for s in sides}
    totals = {s: {"written": 0, "passes": 0, "accepted": 0, "tested": 0, "guesses": 0} for s in names}
    say(f"{reps} rounds of {tokens} tokens: plain and {', '.join(names)}")
    for k in range(reps):
        order = sides[k % len(sides):] + sides[:k % len(sides)]     # the order turns from round to round
        plain_s = None
        runs = {}
        for side in order:
            runs[side] = _run(pair, side, prompt_ids, tokens, gamma, temperature, seed + k, widths)
        plain_s = runs["plain"]["s_per_token"]
        per["plain"]["s_per_token"].append(plain_s)
        for side in names:
            r = runs[side]
            per[side]["s_per_token"].append(r["s_per_token"])
            draft_turns, verify_turns = r["draft_per_pass"] / plain_s, r["verify_per_pass"] / plain_s
            per[side]["draft"].append(draft_turns)
            per[side]["verify"].append(verify_turns)
            per[side]["rest"].append(r["rest_per_pass"] / plain_s)
            per[side]["formula"].append(r["tokens_per_pass"] / (draft_turns + verify_turns))
            for key in totals[side]:
                totals[side][key] += r[key]
    med = statistics.median
    plain = med(per["plain"]["s_per_token"])
    out = {}
    for side in names:
        tot, p = totals[side], per[side]
        speedup = plain / med(p["s_per_token"])
        formula = med(p["formula"])
        out[side] = {
            "alpha": tot["accepted"] / max(tot["tested"], 1),
            "tokens_per_pass": tot["written"] / max(tot["passes"], 1),
            "guesses_per_pass": tot["guesses"] / max(tot["passes"], 1),
            "lanes_per_pass": tot["guesses"] / max(tot["passes"], 1) + 1,
            "tokens_per_s": 1 / med(p["s_per_token"]),
            "draft_turns_per_pass": med(p["draft"]), "verify_turns_per_pass": med(p["verify"]),
            "rest_turns_per_pass": med(p["rest"]),
            "c": med(p["draft"]) / max(tot["guesses"] / max(tot["passes"], 1), 1e-9),
            "speedup": speedup, "speedup_formula": formula, "measured_over_formula": speedup / formula,
            "passes": tot["passes"], "tokens_written": tot["written"]}
    return {"plain_tokens_per_s": 1 / plain, "drafters": out, "order": list(names),
            "settings": {"gamma": gamma, "tokens": tokens, "temperature": temperature, "reps": reps, "seed": seed,
                         "tree_widths": widths, "threads": torch.get_num_threads()},
            "method": (f"{reps} rounds; each round runs plain decoding and every drafter once ({tokens} tokens "
                       f"after the prompt, temperature {temperature}), in an order that turns from round to round; "
                       "median seconds per token over the rounds. α = accepted / tested guesses and tokens per "
                       "pass over all rounds. A pass's costs as target turns: its proposing and its checking (the "
                       "verify forward and the rule) seconds over the same round's plain seconds per token; c = "
                       "the draft turns per guess (a tree: per node); the formula tokens per pass / (draft turns + "
                       "verify turns) per round, its median; what it leaves out is the rest of the pass. Trees: "
                       f"widths {widths}, every node checked in one forward with a tree mask")}


def _run(pair, side, prompt_ids, tokens, gamma, temperature, seed, widths) -> dict:
    if side == "plain":
        dec = PlainDecoder(pair.target, temperature=temperature, seed=seed)
        dec.generate(prompt_ids, tokens)
        return {"s_per_token": dec.decode_seconds / (tokens - 1)}
    dec = decoder(pair, side, gamma, temperature, seed, widths)
    res = dec.generate(prompt_ids, tokens)
    recs = res.records
    n = max(len(recs), 1)
    written = sum(len(r.tokens) for r in recs)
    return {"s_per_token": dec.decode_seconds / max(written, 1), "written": written, "passes": len(recs),
            "accepted": sum(r.n_accepted for r in recs),
            "tested": sum(r.n_accepted + (r.final_kind == "replacement") for r in recs),
            "guesses": sum(r.gamma for r in recs), "tokens_per_pass": written / n,
            "draft_per_pass": dec.draft_seconds / n, "verify_per_pass": dec.verify_seconds / n,
            "rest_per_pass": (dec.decode_seconds - dec.draft_seconds - dec.verify_seconds) / n}


def summary_lines(r: dict) -> list[str]:
    """The side-by-side table `spectable bench` prints."""
    s = r["settings"]
    lines = [f"every drafter side by side: {s['reps']} rounds of {s['tokens']} tokens, γ = {s['gamma']}, trees "
             f"{','.join(map(str, s['tree_widths']))}, temperature {s['temperature']}, {s['threads']} thread"
             f"{'s' if s['threads'] > 1 else ''}; plain {r['plain_tokens_per_s']:.0f} tokens/s",
             f"{'drafter':28s} {'α':>6s} {'tok/pass':>8s} {'lanes':>6s} {'draft':>6s} {'verify':>6s} {'c':>6s} "
             f"{'tokens/s':>8s} {'speedup':>8s} {'formula':>8s}"]
    for name in r["order"]:
        d = r["drafters"][name]
        lines.append(f"{WORDS.get(name, name):28s} {d['alpha']:6.3f} {d['tokens_per_pass']:8.2f} "
                     f"{d['lanes_per_pass']:6.1f} {d['draft_turns_per_pass']:6.2f} {d['verify_turns_per_pass']:6.2f} "
                     f"{d['c']:6.3f} {d['tokens_per_s']:8.0f} {d['speedup']:7.2f}× {d['speedup_formula']:7.2f}×")
    lines.append("draft, verify: a pass's proposing and checking, in turns of the target's plain pass; c = draft "
                 "turns per guess (a tree's: per node)")
    return lines
