"""A checkpoint pair measured live (`spectable bench --pair`, the hardware panel, chapter 8): plain and speculative
decoding interleaved on this device, the formula fed with the same runs' costs, each figure beside the memory
roofline's, this computer's own roofline (models.llm.machine) with what it predicts, and which kernels each
product took. Writes nothing itself: the caller keeps the dict (schema models.measurements.PAIR_SCHEMA)."""
from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

import torch

from corpus.errors import InputError
from corpus.validate import shown_name
from models import analytics
from models.acceptance import MAX_GAMMA
from models.drafters import LEAN_MODEL, kind, kind_of, lean_names
from models.llm import machine
from models.llm.bench import (_decode_fn, _forward_fn, measure_copy_bandwidth, model_summary, speedup_on_paper,
                              time_step)
from models.llm.device import aligned, device_name
from models.llm.formats import streamed_bytes
from models.llm.model import Transformer
from models.llm.speculative import (ModelProposer, PlainDecoder, SpeculativeDecoder, StepRunner, compile_step,
                                    lookup_proposer)
from models.llm.tuning import report_lines
from models.measurements import PAIR_SCHEMA, slow_cause


@torch.no_grad()
def measure_pair(target: Transformer, draft: Transformer | None, prompt_ids: list[int], *, gamma: int = 4,
                 tokens: int = 64, temperature: float = 1.0, reps: int = 7, seed: int = 0, dtype_name: str = "fp32",
                 progress=None, drafter: str = "chain", compile_draft: bool | None = None) -> dict:
    """Plain vs speculative tokens/s of this pair on its device from interleaved runs, and beside the measured
    speed-up the formula's prediction from the same runs' measured costs: c and the verify ratio timed inside the
    speculative runs (the draft's and the target's share of each pass) against the plain runs' time per token,
    and α counted there. Also each forward timed alone (warm caches: faster than inside a run, where the two
    models evict each other's weights) and the memory roofline of the same shapes. drafter: "chain" (the draft
    model) or "lookup" (guesses copied from the text: no draft model). compile_draft (None: on a CPU) runs the
    draft's one-token step as one compiled graph (models.llm.speculative.compile_step), eagerly if that fails,
    and the file says which. Leaves both models' caches set up for
    the run's length: a caller that keeps its own caches sets them up again (measure_llama_pair does)."""
    say = progress or (lambda _s: None)
    device, dtype = target.device, target.act_dtype
    if not 1 <= gamma <= MAX_GAMMA or tokens < 2 or reps < 1 or not prompt_ids:
        raise InputError(f"need 1 <= gamma <= {MAX_GAMMA}, tokens >= 2, reps >= 1 and a prompt of at least one token")
    if drafter not in lean_names():
        raise InputError(f"a checkpoint pair runs the {' or the '.join(lean_names())} drafter, not {drafter!r}")
    uses_draft = kind(drafter).lean == LEAN_MODEL
    if uses_draft and draft is None:
        raise InputError("no draft model: measure the lookup drafter (--drafter lookup), or give a draft")
    P = len(prompt_ids)
    seq = aligned(P + tokens + 2 * (gamma + 1))
    target.setup_caches(1, seq)
    if uses_draft:
        draft.setup_caches(1, seq)
    tok1 = torch.tensor([[prompt_ids[-1]]], device=device)
    pos1 = torch.tensor([P], device=device)
    toks_k = torch.tensor([prompt_ids[-1:] * (gamma + 1)], device=device)
    pos_k = torch.arange(P, P + gamma + 1, device=device)
    notes: list[str] = []
    compiled = None
    if compile_draft is None:
        # on a CPU, unless the draft's passes already run as one graph (models.llm.onnx_step, measured at load)
        compile_draft = device.type == "cpu" and not (uses_draft and draft.graph_rows[0])
    if uses_draft and compile_draft:
        say("compiling the draft model's forward")
        compiled, why = compile_step(draft)
        if why:
            notes.append(why)
    say("copy bandwidth")
    bw = measure_copy_bandwidth(device, 3)
    B = bw["GB_per_s"] * 1e9
    say("target and draft forwards")
    t_target = time_step(StepRunner(_decode_fn(target)), (tok1, pos1), reps, device)
    t_verify = time_step(StepRunner(_forward_fn(target)), (toks_k, pos_k), reps, device)
    t_draft = time_step(StepRunner(_decode_fn(draft)), (tok1, pos1), reps, device) if uses_draft else 0.0
    if compiled is not None:
        t_compiled = time_step(compiled, (tok1, pos1), reps, device)
        if t_compiled < t_draft:
            t_draft = t_compiled
        else:                               # measured slower than the draft's own pass: not used
            notes.append(f"the compiled draft pass ({t_compiled * 1e3:.2f} ms) was slower than its eager pass "
                         f"({t_draft * 1e3:.2f} ms): not used")
            compiled = None

    def proposer():
        if uses_draft:
            return ModelProposer(draft, compiled=compiled)
        return lookup_proposer(target.config.vocab_size)

    def speculative(k: int) -> SpeculativeDecoder:
        return SpeculativeDecoder(target, None, gamma=gamma, temperature=temperature, seed=seed + k,
                                  proposer=proposer())
    say(f"plain and speculative decoding, {tokens} tokens, {reps} runs each")
    runs = {"plain": [], "spec": [], "draft": [], "verify": [], "rest": [], "formula": []}
    spec_written, records, same = 0, [], True
    PlainDecoder(target, temperature=temperature, seed=seed).generate(prompt_ids, min(tokens, 4))   # warm-up
    speculative(0).generate(prompt_ids, 2 * gamma)
    for k in range(reps):
        # alternate the order, so a change in the machine's load does not favour one side
        for side in (("plain", "spec") if k % 2 == 0 else ("spec", "plain")):
            if side == "plain":
                dec = PlainDecoder(target, temperature=temperature, seed=seed + k)
                plain_ids = dec.generate(prompt_ids, tokens)
                runs["plain"].append(dec.decode_seconds / (tokens - 1))
            else:
                sd = speculative(k)
                res = sd.generate(prompt_ids, tokens)
                written = sum(len(r.tokens) for r in res.records)
                guesses = max(sum(r.gamma for r in res.records), 1)
                n_pass = max(len(res.records), 1)
                runs["spec"].append(sd.decode_seconds / written)
                runs["draft"].append(sd.draft_seconds / guesses)
                runs["verify"].append(sd.verify_seconds / n_pass)
                runs["rest"].append((sd.decode_seconds - sd.draft_seconds - sd.verify_seconds) / n_pass)
                run_tpp = written / n_pass
                run_costs = (guesses * sd.draft_seconds / guesses + sd.verify_seconds) / n_pass   # s per pass
                spec_written += written
                records += res.records
        # this round's formula, its costs over this round's plain seconds per token
        runs["formula"].append(run_tpp * runs["plain"][-1] / run_costs)
        if temperature == 0:
            same = same and res.tokens == plain_ids
    med = {k: _median(v) for k, v in runs.items()}
    plain_tps, spec_tps = 1 / med["plain"], 1 / med["spec"]
    tested = sum(min(r.n_accepted + 1, r.gamma) for r in records)
    alpha = sum(r.n_accepted for r in records) / max(tested, 1)
    tpp = spec_written / max(len(records), 1)
    guesses_per_pass = sum(r.gamma for r in records) / max(len(records), 1)
    c = t_draft / t_target
    c_run, v_run = med["draft"] / med["plain"], med["verify"] / med["plain"]
    formula_run = med["formula"]
    pass_s = guesses_per_pass * med["draft"] + med["verify"] + med["rest"]
    tc = target.config
    t_bytes = streamed_bytes(target) + P * tc.kv_bytes_per_token(dtype)
    d_bytes = (streamed_bytes(draft) + P * draft.config.kv_bytes_per_token(dtype)) if uses_draft else 0
    c_paper = d_bytes / t_bytes
    out = {
        "schema": PAIR_SCHEMA,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "device": {"type": device.type, "name": device_name(device), "torch": torch.__version__,
                   "threads": torch.get_num_threads(), "cpu_capability": torch.backends.cpu.get_cpu_capability()},
        "dtype": dtype_name, "drafter": drafter,
        "draft_step": None if not uses_draft else ("compiled" if compiled else "eager"), "notes": notes,
        "models": {"target": model_summary(tc, dtype) | {"streamed_bytes": streamed_bytes(target)},
                   "draft": (model_summary(draft.config, dtype) | {"streamed_bytes": streamed_bytes(draft)})
                   if uses_draft else None},
        "settings": {"gamma": gamma, "tokens": tokens, "temperature": temperature, "reps": reps, "seed": seed,
                     "prompt_tokens": P},
        "copy_bandwidth_GBps": bw["GB_per_s"],
        "target_ms": t_target * 1e3, "draft_ms": t_draft * 1e3, "verify_ms": t_verify * 1e3,
        "verify_ratio": t_verify / t_target, "c": c,
        "alpha": alpha, "tokens_per_pass": tpp, "guesses_per_pass": guesses_per_pass, "passes": len(records),
        "tokens_written": spec_written,
        "plain_tokens_per_s": plain_tps, "speculative_tokens_per_s": spec_tps, "speedup": spec_tps / plain_tps,
        "same_tokens_as_plain": same if temperature == 0 else None,
        "in_run": {
            "plain_ms_per_token": med["plain"] * 1e3, "draft_ms_per_guess": med["draft"] * 1e3,
            "verify_ms_per_pass": med["verify"] * 1e3, "rest_ms_per_pass": med["rest"] * 1e3,
            "c": c_run, "verify_ratio": v_run,
            "share_of_pass": {"draft": guesses_per_pass * med["draft"] / pass_s, "verify": med["verify"] / pass_s,
                              "rest": med["rest"] / pass_s},
            "speedup_formula": formula_run, "measured_over_formula": (spec_tps / plain_tps) / formula_run,
        },
        "on_paper": {
            "target_ms": t_bytes / B * 1e3, "draft_ms": d_bytes / B * 1e3, "c": c_paper, "verify_ratio": 1.0,
            "tokens_per_pass": tokens_per_pass(alpha, gamma),
            "plain_tokens_per_s": B / t_bytes,
            "speedup": speedup_on_paper(alpha, gamma, c_paper, 1.0),
            "speedup_from_measured_costs": formula_run,
            "speedup_from_forwards_alone": speedup_on_paper(alpha, gamma, c, t_verify / t_target),
            "fraction_of_roofline_plain": (t_bytes / B) / med["plain"],
        },
        "method": (f"{device.type}, {dtype_name}, {torch.get_num_threads()} threads, {drafter} drafter: {reps} runs "
                   f"each of plain and speculative decoding ({tokens} tokens after the prompt, temperature "
                   f"{temperature}, decode phase timed, prefill excluded, order alternating, one warm-up run each), "
                   "median seconds per token; α and tokens per pass over all speculative runs. The formula "
                   "tokens per pass / (g·c + v) is fed with each round's own costs: c = the drafter's seconds per "
                   "guess and v = the verify pass's seconds (forward and rule), each over the same round's plain "
                   "seconds per token, g the guesses per pass, then the median over rounds; what it leaves out is "
                   "the rest of the pass (in_run.rest). "
                   f"Forwards alone: one of 1 token and of γ+1 = {gamma + 1} at position {P}, median of {reps}. On "
                   "paper: the memory roofline, bytes a pass reads (the matrices as stored, once; the KV cache so "
                   "far) / the copy bandwidth measured here"),
    }
    if device.type == "cpu":
        try:
            out["device"]["load_average_1min"] = os.getloadavg()[0]
        except OSError:
            pass
        say("this computer's roofline")
        out["machine"] = machine_section(target, draft if uses_draft else None, t_target, t_verify, t_draft, alpha,
                                         gamma, c_run, v_run)
        out["measured"] = {"read_bandwidth_Bps": out["machine"]["read_Bps"], "flops": out["machine"]["flops"]}
        out["kernels"] = {role: report_lines(m.kernel_report) for role, m in (("target", target), ("draft", draft))
                          if m is not None and getattr(m, "kernel_report", None)}
        out["cause"] = slow_cause(out)
    return out


def machine_section(target, draft, t_target: float, t_verify: float, t_draft: float, alpha: float, gamma: int,
                    c_run: float, v_run: float) -> dict:
    """This computer's roofline for the target (models.llm.machine) and what it predicts beside what was
    measured: checking γ+1 tokens against one, and the speed-up at each γ (with c as measured alone)."""
    roof = machine.measure(target, t_target)
    k = gamma + 1
    c = t_draft / t_target if draft is not None else 0.0
    speed = machine.predicted_speedups(roof, min(max(alpha, 0.0), 1.0), c)
    best = max(speed, key=speed.get)
    return roof.as_dict() | {
        "rows": k, "predicted_verify_ratio": roof.verify_ratio(k), "measured_verify_ratio": t_verify / t_target,
        "predicted_speedup": {str(g): v for g, v in speed.items()}, "best_gamma": best,
        "best_speedup": speed[best], "draft_pass_ms": t_draft * 1e3,
        "in_run_verify_ratio": v_run, "in_run_c": c_run}


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2] if xs else float("nan")


def tokens_per_pass(alpha: float, gamma: int) -> float:
    return analytics.tokens_per_pass_formula(min(max(alpha, 0.0), 1.0), gamma)


def measure_llama_pair(pair, prompt_ids: list[int], **kw) -> dict:
    """measure_pair on a models.llm.pair.LlamaPair, holding its lock and restoring its caches afterwards."""
    with pair.lock:
        try:
            r = measure_pair(pair.target, pair.draft, prompt_ids, **kw)
        finally:
            for m in (pair.target, pair.draft):
                if m is not None:
                    m.setup_caches(1, pair.window)
            pair.owner = None
    r["pair"] = {"name": pair.name, **{k: _shown_source(v) for k, v in pair.sources.items()},
                 "random_weights": pair.random_weights}
    return r


def _shown_source(label):
    """A checkpoint as a measurement file names it: the shipped pair's name or the file/folder's own name, never
    the absolute path of this machine's folders."""
    return None if label is None else shown_name(Path(str(label)).name)      # a name not UTF-8, escaped


def pair_summary_lines(r: dict) -> list[str]:
    p, d, run = r["on_paper"], r["device"], r["in_run"]
    chain = kind_of(r.get("drafter", "chain")).lean == LEAN_MODEL     # a draft model ran: its own figures
    lines = [
        f"{r['pair']['name'] if 'pair' in r else ''} on {d['name']} · {r['dtype']} · {d['threads']} threads · "
        f"{r.get('drafter', 'chain')} drafter · torch {d['torch']}",
        f"target, one pass       {r['target_ms']:8.2f} ms     on paper {p['target_ms']:.3f} ms "
        f"({100 * p['fraction_of_roofline_plain']:.0f}% of the roofline in plain decoding)"]
    if chain:
        lines += [f"draft, one guess       {r['draft_ms']:8.2f} ms     on paper {p['draft_ms']:.3f} ms",
                  f"c = draft / target     {r['c']:8.3f}        on paper {p['c']:.3f}   in the runs {run['c']:.3f}"]
    lines += [
        f"verify γ+1 / verify 1  {r['verify_ratio']:8.2f}        on paper {p['verify_ratio']:.2f}   in the runs "
        f"{run['verify_ratio']:.2f}",
        f"α (measured)           {r['alpha']:8.3f}",
        f"tokens per pass        {r['tokens_per_pass']:8.2f}        formula {p['tokens_per_pass']:.2f}",
        f"plain                  {r['plain_tokens_per_s']:8.1f} tokens/s   on paper {p['plain_tokens_per_s']:.0f}",
        f"speculative γ={r['settings']['gamma']:<2}       {r['speculative_tokens_per_s']:8.1f} tokens/s",
        f"speedup                {r['speedup']:8.2f}×       formula with the runs' costs "
        f"{p['speedup_from_measured_costs']:.2f}× ({100 * run['measured_over_formula']:.0f}% of it); on paper "
        f"{p['speedup']:.2f}×",
        f"a pass                 draft {100 * run['share_of_pass']['draft']:.0f}% · verify "
        f"{100 * run['share_of_pass']['verify']:.0f}% · the rest {100 * run['share_of_pass']['rest']:.0f}%"]
    m = r.get("machine")
    if m:
        k = m["rows"]
        lines += [
            f"this computer          reads {m['read_Bps'] / 1e9:.1f} GB/s (the model's {m['weight_bytes'] / 1e6:.1f} MB), "
            f"multiplies {m['flops'] / 1e9:.1f} GFLOP/s: ridge {m['ridge_ops_per_byte']:.1f} operations a byte "
            f"(H100: 295), {m['lanes_to_saturate']:.1f} lanes before the arithmetic is busy",
            f"fixed cost of a pass   {m['fixed_s'] * 1e3:8.2f} ms     of {m['pass_1_s'] * 1e3:.2f} ms (beyond the matrices' "
            "roofline)",
            f"verify {k} / verify 1     predicted {m['predicted_verify_ratio']:.2f}, measured "
            f"{m['measured_verify_ratio']:.2f} alone, {m['in_run_verify_ratio']:.2f} in the runs",
            "predicted speedup      " + ", ".join(f"γ={g} ×{v:.2f}" for g, v in m["predicted_speedup"].items()
                                                   if int(g) <= 8) + f"; best γ = {m['best_gamma']}"]
        cause = r.get("cause")
        if cause:
            lines.append(f"what holds it back     {cause['kind']}: drafting {cause['draft_turns']:.2f} target turns a "
                         f"pass, checking {cause['verify_extra_turns']:.2f} turns beyond one, a one-position pass "
                         f"{100 * cause['fixed_share']:.0f}% fixed cost")
    for role, ks in (r.get("kernels") or {}).items():
        lines.append(f"{role} products:")
        lines += [f"  {x}" for x in ks]
    lines.append(f"method: {r['method']}")
    return lines
