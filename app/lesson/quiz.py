"""The quiz's questions: the lesson's ideas, and numbers computed now from the models, the run and the
hardware model (never typed in), each tied to a chapter and to the view that shows its answer.

A question is built from a Snapshot (the pair, the run on the table and the lab's values when the quiz
starts), so its numbers stay put while the quiz is taken even if the lab changes; its text is in the
language asked for, and its four options are shuffled by the question's id and the run's seed alone, so
switching language keeps every answer where it was. Wrong options are plausible: each computed one is a
common mistake worked out from the same numbers (p for p/q, q/p upside down, tokens per pass without the
bonus token, the batch without its KV cache...).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

import numpy as np

from app.i18n import Strings
from app.lesson.tour import chapter_index
from app.lesson.measured import fmt_ops_count, fmt_prob
from models.tubes import DEFAULT_PREFIX
from app import derived
from app.session import Session
from models import analytics
from models.sampler import SamplerSettings

LETTERS = "ABCD"
PREFIX = DEFAULT_PREFIX          # the test tubes' prefix (chapter 6), for the questions about one row of p and q


@dataclass(frozen=True)
class ShowMe:
    """Where the answer can be seen: a tour chapter, a step-through stop (pass, test, kind), the tubes under a
    rule, or a mode."""
    mode: str
    chapter: int | None = None
    stop: tuple | None = None
    rule: str | None = None


@dataclass(frozen=True)
class Question:
    id: str
    chapter: int                     # 0-based, as app.lesson.tour.CHAPTERS (the builders name it by slug)
    computed: bool                   # its numbers come from the models / the run / the hardware model now
    prompt: str
    options: tuple[str, ...]         # four, in the order shown (A-D)
    right: int                       # index of the right option
    why: str                         # the explanation shown once answered (or revealed)
    show: ShowMe
    values: dict = field(default_factory=dict)     # the numbers behind it, unformatted (tests read them)


@dataclass(frozen=True)
class Snapshot:
    """What the questions are computed from: frozen when the quiz starts."""
    pair: object
    run: object                      # app.session.Run: the short run on the table (its guesses, its rejections)
    lab: dict                        # the lab's values (prompt, gamma, c, device, model, seed...)
    facts: object = None             # models.analytics.PairFacts: the pair's long run at the lab's γ (its α)


def long_run(pair, lab: dict):
    """The pair's long-run facts at the lab's γ and row shaping (models.analytics.pair_facts, seed 0: the run the
    panels and `spectable alpha` report; cached, about 0.6 s the first time)."""
    st = SamplerSettings(gamma=int(lab["gamma"]), temperature=float(lab["temperature"]), top_k=int(lab["top_k"]),
                         top_p=float(lab["top_p"]), seed=0)
    return analytics.pair_facts(pair, int(lab["gamma"]), st, seed=0)


def snapshot(ctl) -> Snapshot:
    """The lab's run and values now. While the tour has put the lab's values aside (its chapters run their own
    γ, lanes, decoder...), the lab's run is made from the lab's values, not taken from the table."""
    lab = ctl.lab()
    if ctl.lab_values is None:
        pair, run = ctl.session.pair(), ctl.session.ensure()
    else:

        session = Session(replace(ctl.settings, **lab))
        pair, run = session.pair(), session.ensure()
    return Snapshot(pair=pair, run=run, lab=lab, facts=long_run(pair, lab))


# ---- helpers -----------------------------------------------------------------------------------
def _roof(snap: Snapshot, lanes: int, context: int):
    return derived.roofline(snap.lab["device"], snap.lab["model"], lanes, context)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _num(x: float, decimals: int = 2) -> str:
    return f"{x:.{decimals}f}"


def _gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:.2f}"


def _tested(run):
    """Every tested guess of the run: (pass index, test index, trace)."""
    for k, tr in enumerate(run.traces if run else ()):
        for i in range(tr.tested):
            yield k, i, tr


def _pick(right: str, candidates, n: int = 3) -> list[str]:
    """The first n candidates that differ from the right option and from each other, as shown."""
    out: list[str] = []
    for c in candidates:
        if c and c != right and c not in out:
            out.append(c)
        if len(out) == n:
            break
    return out


def _numbers(right: float, wrong, decimals: int = 2) -> tuple[str, list[str], int]:
    """The right value and the wrong ones as options, with as many decimals (2 to 4) as it takes for the right
    one and three wrong ones to read differently: (right, wrong, decimals)."""
    for d in range(decimals, 5):
        r = _num(right, d)
        w = _pick(r, [_num(v, d) for v in wrong])
        if len(w) == 3:
            return r, w, d
    return _num(right, 4), [_num(v, 4) for v in wrong], 4


def _row(pair, text: str):
    ids = pair.encode(text)
    p, _ = pair.target_row(ids)
    q, _ = pair.draft_row(ids)
    return np.asarray(p, float), np.asarray(q, float)


# ---- the questions -----------------------------------------------------------------------------
# Each builder returns a dict: chapter, computed, prompt, right (text), wrong (candidate texts, first three
# distinct ones used), why, show, values; or None when the run offers nothing to ask about.

def q_one_token(t, snap):
    r = _roof(snap, 1, 1)
    f = dict(model=r.model_label, gb=_gb(r.weight_bytes), bw=f"{r.bandwidth_Bps / 1e12:.2f} TB/s",
             ms=f"{r.ms_per_token:.2f}", ops=fmt_ops_count(r.ops_per_step, t.lang),
             arith_ms=f"{r.arithmetic_ms_per_step:.3f}", busy=_pct(r.arithmetic_busy), device=r.device_label)
    return _idea(t, "one_token", "01-one-token", _tour("01-one-token"), f, values=r.as_dict())


def q_b1_tokens(t, snap):
    r1, r64 = _roof(snap, 1, 1), _roof(snap, 64, 0)
    right = r1.tokens_per_s
    arith = r1.flops / r1.ops_per_step              # as if the arithmetic were the limit
    fp32 = r1.bandwidth_Bps / (2 * r1.weight_bytes)  # 32-bit weights: twice the bytes
    fmt = lambda v: t("quiz.tokens_per_s", n=f"{v:,.0f}")  # noqa: E731
    return dict(chapter="01-one-token", computed=True,
                prompt=t("quiz.b1_tokens.q", device=r1.device_label, model=r1.model_label),
                right=fmt(right), wrong=[fmt(arith), fmt(r64.tokens_per_s), fmt(fp32)],
                why=t("quiz.b1_tokens.why", gb=_gb(r1.weight_bytes), bw=f"{r1.bandwidth_Bps / 1e12:.2f} TB/s",
                      right=f"{right:,.0f}", arith=fmt(arith), b64=fmt(r64.tokens_per_s), fp32=fmt(fp32)),
                show=_tour("01-one-token"),
                values={"right": right, "arithmetic_bound": arith, "batch64": r64.tokens_per_s, "fp32": fp32})


def q_batching(t, snap):
    r1, r64 = _roof(snap, 1, 1), _roof(snap, 64, 0)
    f = dict(gb=_gb(r64.weight_bytes), busy64=_pct(r64.arithmetic_busy),
             tps64=f"{r64.tokens_per_s:,.0f}", tps1=f"{r1.tokens_per_s:,.0f}")
    return _idea(t, "batching", "02-batching", _tour("02-batching"), f)


def q_batch_kv(t, snap):
    ctx = 4096
    r = _roof(snap, 64, ctx)
    no_kv, one = _roof(snap, 64, 0).tokens_per_s, _roof(snap, 1, ctx).tokens_per_s
    kv_only = 64 * r.bandwidth_Bps / r.kv_bytes_per_step
    fmt = lambda v: t("quiz.tokens_per_s", n=f"{v:,.0f}")  # noqa: E731
    return dict(chapter="02-batching", computed=True,
                prompt=t("quiz.batch_kv.q", device=r.device_label, context=f"{ctx:,}"),
                right=fmt(r.tokens_per_s), wrong=[fmt(no_kv), fmt(kv_only), fmt(one)],
                why=t("quiz.batch_kv.why", gb=_gb(r.weight_bytes), kv=_gb(r.kv_bytes_per_step),
                      total=_gb(r.bytes_per_step), right=f"{r.tokens_per_s:,.0f}", no_kv=fmt(no_kv),
                      kv_only=fmt(kv_only), one=fmt(one)),
                show=_tour("02-batching"),
                values={"right": r.tokens_per_s, "no_kv": no_kv, "kv_only": kv_only, "one": one})


def q_kv_cache(t, snap):
    ctx = 4096
    r = _roof(snap, 64, ctx)
    f = dict(context=f"{ctx:,}", kv_seq=_gb(r.kv_bytes_per_step / 64), busy=_pct(r.arithmetic_busy))
    return _idea(t, "kv_cache", "02-batching", _tour("02-batching"), f)


def q_check_cost(t, snap):
    g = int(snap.lab["gamma"])
    r1, rs = _roof(snap, 1, 1), _roof(snap, g + 1, 1)
    f = dict(gamma=g, lanes=g + 1, busy1=_pct(r1.arithmetic_busy), busy_spec=_pct(rs.arithmetic_busy),
             device=r1.device_label)
    return _idea(t, "check_cost", "03-guess-first", _tour("03-guess-first"), f)


def q_first_reject(t, snap):
    pair, run = snap.pair, snap.run
    hit = next(((k, i, tr) for k, i, tr in _tested(run) if not tr.accepted[i]), None)
    if hit is None:
        return _idea(t, "first_reject", "04-keep-replace", _tour("04-keep-replace"), {})
    k, i, tr = hit
    q = _idea(t, "first_reject", "04-keep-replace", ShowMe("step", stop=(k, i, "test")), {})
    q["why"] += " " + t("quiz.first_reject.why_run", k=k + 1, guess=pair.display(int(tr.guesses[i])),
                        final=pair.display(int(tr.final_token)), discarded=tr.gamma - i - 1)
    return q


def q_bonus(t, snap):
    g = int(snap.lab["gamma"])
    run = snap.run
    hit = next(((k, tr) for k, tr in enumerate(run.traces if run else ()) if tr.gamma and tr.n_accepted == tr.gamma),
               None)
    show = ShowMe("step", stop=(hit[0], hit[1].gamma, "bonus")) if hit else _tour("04-keep-replace")
    cands = [g, 1, 2 * g, g + 2, max(g - 1, 0)]
    return dict(chapter="04-keep-replace", computed=False, prompt=t("quiz.bonus.q", gamma=g), right=f"{g + 1}",
                wrong=[f"{v}" for v in cands], why=t("quiz.bonus.why", g1=g + 1), show=show,
                values={"right": g + 1})


def _gamble(run, want_less: bool):
    """A tested guess of the run with p < q (want_less) or p >= q: the first whose p and q are large enough to
    read at a glance (both at least 0.02), else the first at all."""
    hits = [(k, i, tr) for k, i, tr in _tested(run) if (tr.ratios[i] < 1.0) == want_less]
    for k, i, tr in hits:
        g = tr.guesses[i]
        if min(tr.p_rows[i][g], tr.q_rows[i][g]) >= 0.02:
            return k, i, tr
    return hits[0] if hits else None


def q_keep_prob(t, snap):
    hit = _gamble(snap.run, True)
    if hit is None:
        return None
    k, i, tr = hit
    g = int(tr.guesses[i])
    p, q = float(tr.p_rows[i][g]), float(tr.q_rows[i][g])
    ratio = p / q
    right, wrong, d = _numbers(ratio, [p, 1 - ratio, q - p, q, 1 - p, p * q])
    return dict(chapter="05-acceptance-rule", computed=True,
                prompt=t("quiz.keep_prob.q", guess=snap.pair.display(g), q=fmt_prob(q), p=fmt_prob(p)),
                right=right, wrong=wrong,
                why=t("quiz.keep_prob.why", p=fmt_prob(p), q=fmt_prob(q), right=right, pp=_num(p, d),
                      inv=_num(1 - ratio, d)),
                show=ShowMe("step", stop=(k, i, "test")), values={"p": p, "q": q, "right": ratio})


def q_keep_sure(t, snap):
    hit = _gamble(snap.run, False)
    if hit is None:
        return None
    k, i, tr = hit
    g = int(tr.guesses[i])
    p, q = float(tr.p_rows[i][g]), float(tr.q_rows[i][g])
    return dict(chapter="05-acceptance-rule", computed=True,
                prompt=t("quiz.keep_prob.q", guess=snap.pair.display(g), q=fmt_prob(q), p=fmt_prob(p)),
                right=t("quiz.always"), wrong=_numbers(1.0, [q / p, p, 1 - q / p, q])[1],
                why=t("quiz.keep_sure.why", ratio=_num(p / q), qp=_numbers(1.0, [q / p, p, 1 - q / p, q])[1][0]),
                show=ShowMe("step", stop=(k, i, "test")), values={"p": p, "q": q, "right": 1.0})


def q_residual_top(t, snap):
    pair = snap.pair
    hit = next(((k, i, tr) for k, i, tr in _tested(snap.run) if not tr.accepted[i]), None)
    if hit is None:
        return None
    k, i, tr = hit
    g = int(tr.guesses[i])
    res = np.maximum(0.0, np.asarray(tr.p_rows[i], float) - np.asarray(tr.q_rows[i], float))
    if res.sum() <= 0:
        return None
    share = res / res.sum()
    order = [int(j) for j in np.argsort(-share, kind="stable")]
    best = order[0]
    top_p = int(np.argmax(tr.p_rows[i]))
    wrong_ids = [j for j in (top_p, g, order[1], order[2], order[3]) if j != best]
    shown = [best] + _pick_ids(wrong_ids, 3)
    sep = "、" if t.lang == "zh" else ", "
    shares = sep.join(f"“{pair.display(j)}” {share[j]:.2f}" for j in shown if j != g)
    context = pair.decode(tr.context[-4:]).replace("\n", "↵")
    return dict(chapter="05-acceptance-rule", computed=True,
                prompt=t("quiz.residual_top.q", context=context, guess=pair.display(g),
                         q=fmt_prob(float(tr.q_rows[i][g])), p=fmt_prob(float(tr.p_rows[i][g]))),
                right=f"“{pair.display(best)}”", wrong=[f"“{pair.display(j)}”" for j in shown[1:]],
                why=t("quiz.residual_top.why", shares=shares, guess=pair.display(g)),
                show=ShowMe("step", stop=(k, i, "test")),
                values={"right_id": best, "option_ids": shown, "shares": {j: float(share[j]) for j in shown}})


def _pick_ids(ids, n):
    out = []
    for j in ids:
        if j not in out:
            out.append(j)
        if len(out) == n:
            break
    return out


def q_same_dist(t, snap):
    return _idea(t, "same_dist", "06-same-as-target", ShowMe("tubes", rule="exact"), {})


def q_wrong_rule(t, snap):
    p, q = _row(snap.pair, PREFIX)
    o = int(np.argmin(p - q))                    # the token the draft over-proposes most
    alpha = float(np.minimum(p, q).sum())
    mn = float(min(p[o], q[o]))
    right = mn + (1 - alpha) * float(p[o])       # models.tubes: resample_from_p -> min(p, q) + (1 - α) p
    tok = snap.pair.display(o)
    return dict(chapter="06-same-as-target", computed=True,
                prompt=t("quiz.wrong_rule.q", tok=tok, q=_num(q[o], 3), p=_num(p[o], 3)),
                right=_num(right, 3), wrong=[_num(p[o], 3), _num(q[o], 3), _num(mn / alpha, 3), _num(mn, 3)],
                why=t("quiz.wrong_rule.why", mn=_num(mn, 3), alpha=_num(alpha, 3), right=_num(right, 3),
                      p=_num(p[o], 3)),
                show=ShowMe("tubes", rule="resample_from_p"),
                values={"token_id": o, "p": float(p[o]), "q": float(q[o]), "alpha": alpha, "right": right})


def q_overlap(t, snap):
    p, q = _row(snap.pair, PREFIX)
    right = float(np.minimum(p, q).sum())
    pq, top, tv = float((p * q).sum()), float(p.max()), 1.0 - right
    return dict(chapter="07-alpha", computed=True, prompt=t("quiz.overlap.q"), right=_num(right, 3),
                wrong=[_num(pq, 3), _num(top, 3), _num(tv, 3)],
                why=t("quiz.overlap.why", right=_num(right, 3), pq=_num(pq, 3), top=_num(top, 3), tv=_num(tv, 3)),
                show=ShowMe("tubes", rule="exact"), values={"right": right, "pq": pq, "top": top, "tv": tv})


def _alpha(snap) -> float:
    """The pair's acceptance rate: from its long run (a short run's count speaks for that run only)."""
    return float((snap.facts or long_run(snap.pair, snap.lab)).alpha)


def q_tokens_per_pass(t, snap):
    a, g = _alpha(snap), int(snap.lab["gamma"])
    right = float(analytics.tokens_per_pass_formula(a, g))
    nobonus, naive, inf = right - a ** g, g * a + 1, 1 / (1 - a)
    return dict(chapter="07-alpha", computed=True, prompt=t("quiz.tokens_per_pass.q", alpha=_num(a, 3), gamma=g),
                right=_num(right), wrong=[_num(nobonus), _num(naive), _num(inf), _num(right - 1)],
                why=t("quiz.tokens_per_pass.why", right=_num(right), nobonus=_num(nobonus), naive=_num(naive),
                      inf=_num(inf)),
                show=_tour("07-alpha"),
                values={"alpha": a, "gamma": g, "right": right, "no_bonus": nobonus, "naive": naive, "unlimited": inf})


def q_speedup_driver(t, snap):
    a, c = _alpha(snap), float(snap.lab["c"])
    best, sp = derived.best_gamma(a, c)
    return _idea(t, "speedup_driver", "08-how-much-faster", _tour("08-how-much-faster"),
                 dict(alpha=_num(a, 3), c=f"{c:g}", best=best, speedup=f"{sp:.2f}×"))


def q_best_gamma(t, snap):
    a, c = _alpha(snap), float(snap.lab["c"])
    best = int(analytics.best_gamma(a, c))
    cands = [10, 1, best + 2, best + 1, best - 1, best + 3]
    wrong = [g for g in dict.fromkeys(cands) if g >= 1 and g != best][:3]
    shown = sorted([best] + wrong)
    sep = "；" if t.lang == "zh" else "; "
    lst = sep.join(f"γ = {g}: {float(analytics.speedup(a, g, c)):.2f}×" for g in shown)
    return dict(chapter="08-how-much-faster", computed=True, prompt=t("quiz.best_gamma.q", alpha=_num(a, 3), c=f"{c:g}"),
                right=f"γ = {best}", wrong=[f"γ = {g}" for g in wrong],
                why=t("quiz.best_gamma.why", list=lst, right=best), show=_tour("08-how-much-faster"),
                values={"alpha": a, "c": c, "right": best, "speedups": {g: float(analytics.speedup(a, g, c))
                                                                        for g in shown}})


def q_idle_spend(t, snap):
    r1, r64 = _roof(snap, 1, 1), _roof(snap, 64, 1)
    return _idea(t, "idle_spend", "09-idle-arithmetic", _tour("09-idle-arithmetic"),
                 dict(busy64=_pct(r64.arithmetic_busy), busy1=_pct(r1.arithmetic_busy)))


def q_self_draft(t, snap):
    return _idea(t, "self_draft", "10-no-second-model", _tour("10-no-second-model"), {})


def q_busy_lanes(t, snap):
    r9, r1, r64 = _roof(snap, 9, 1), _roof(snap, 1, 1), _roof(snap, 64, 1)
    return dict(chapter="11-inside-read-head", computed=True, prompt=t("quiz.busy_lanes.q", device=r9.device_label,
                                                   model=r9.model_label),
                right=_pct(r9.arithmetic_busy),
                # Common mistakes: one lane's share, the batch of 64's, and "every lane lit = full".
                wrong=[_pct(r1.arithmetic_busy), _pct(r64.arithmetic_busy), _pct(1.0)],
                why=t("quiz.busy_lanes.why", device=r9.device_label, opb=f"{r9.device_ops_per_byte:.0f}",
                      right=_pct(r9.arithmetic_busy), one=_pct(r1.arithmetic_busy),
                      b64=_pct(r64.arithmetic_busy), sat=f"{r9.lanes_to_saturate:.0f}"),
                show=_tour("11-inside-read-head"), values={"right": r9.arithmetic_busy,
                                                         "one": r1.arithmetic_busy, "b64": r64.arithmetic_busy})


def q_parts(t, snap):
    """Chapter 12: the table's parts by what they stand for."""
    return _idea(t, "parts", "12-taken-apart", ShowMe("exploded"), {})


def q_lane(t, snap):
    return _idea(t, "lane", "11-inside-read-head", _tour("11-inside-read-head"), dict(lanes=int(snap.lab["gamma"]) + 1))


def _tour(slug: str) -> ShowMe:
    """The answer is seen in the tour's chapter `slug` (app.lesson.tour.CHAPTERS: by name, so a chapter inserted before
    it moves no question)."""
    return ShowMe("tour", chapter=chapter_index(slug))


def _idea(t, qid: str, chapter: str, show: ShowMe, fields: dict, values: dict | None = None) -> dict:
    """A question about an idea: its prompt, right answer, three wrong ones and the explanation are words in
    the catalogs (quiz.<id>.q / .a / .w1-.w3 / .why), the explanation's numbers filled from `fields`."""
    return dict(chapter=chapter, computed=False, prompt=t(f"quiz.{qid}.q", **fields), right=t(f"quiz.{qid}.a"),
                wrong=[t(f"quiz.{qid}.w{k}") for k in (1, 2, 3)], why=t(f"quiz.{qid}.why", **fields), show=show,
                values=dict(values or {}))


BUILDERS = (
    ("one_token", q_one_token), ("b1_tokens", q_b1_tokens), ("batching", q_batching), ("batch_kv", q_batch_kv),
    ("kv_cache", q_kv_cache), ("check_cost", q_check_cost), ("first_reject", q_first_reject), ("bonus", q_bonus),
    ("keep_prob", q_keep_prob), ("keep_sure", q_keep_sure), ("residual_top", q_residual_top),
    ("same_dist", q_same_dist), ("wrong_rule", q_wrong_rule), ("overlap", q_overlap),
    ("tokens_per_pass", q_tokens_per_pass), ("speedup_driver", q_speedup_driver), ("best_gamma", q_best_gamma),
    ("idle_spend", q_idle_spend), ("self_draft", q_self_draft), ("busy_lanes", q_busy_lanes), ("lane", q_lane),
    ("parts", q_parts),
)


def order(qid: str, seed: int) -> list[int]:
    """Where the right answer (0) and the three wrong ones (1-3) go: by the question and the run's seed only, so
    a language switch never moves an answer. The right answer's letter turns with the question's place in the
    quiz (A, B, C, D, A, ... from a letter the seed picks), so each letter is right about as often; the wrong
    ones are shuffled into the other three."""
    index = next(i for i, (q, _) in enumerate(BUILDERS) if q == qid)
    right = (index + seed) % 4
    others = [k for k in range(4) if k != right]
    random.Random(f"{qid}:{seed}").shuffle(others)
    return [right, *others]


def build(snap: Snapshot, lang: str) -> list[Question]:
    """The quiz for this snapshot in `lang`, in chapter order (questions the run has nothing for are left out:
    a run with no rejection has no 'which token replaces it')."""
    t = Strings(lang)
    out = []
    for qid, make in BUILDERS:
        spec = make(t, snap)
        if spec is None:
            continue
        wrong = _pick(spec["right"], spec["wrong"])
        if len(wrong) < 3:
            continue
        texts = [spec["right"], *wrong]
        slots = order(qid, int(snap.lab.get("seed", 0)))
        options = [""] * 4
        for src, dst in enumerate(slots):
            options[dst] = texts[src]
        out.append(Question(qid, chapter_index(spec["chapter"]), spec["computed"], spec["prompt"], tuple(options), slots[0],
                            spec["why"], spec["show"], spec["values"]))
    return out
