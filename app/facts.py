"""Live numbers for narration and panels, each computed from a model, the run's traces or the hardware model.

facts(app) returns formatted strings by name; a narration page writes {alpha} and gets the toy
pair's α as measured on the run now on the table. A number that cannot be computed shows '—'.
"""
from __future__ import annotations

import numpy as np

PREFIX = "慢慢"     # the test-tube prefix of SCIENCE.md chapter 6


class Facts(dict):
    """name -> formatted number. Costly numbers (`lazy`) are computed the first time a page asks for them."""

    def __init__(self):
        super().__init__()
        self.lazy: dict = {}

    def __missing__(self, key):
        fn = self.lazy.pop(key, None)
        if fn is not None:
            try:
                self[key] = fn()
                return self[key]
            except Exception:  # noqa: BLE001 - a model still landing shows '—', not a crash
                pass
        return "—"


def checkpoint(app):
    """The guess a predict-then-reveal page asks about: the first tested guess with q > p (a real gamble)."""
    run = app.session.ensure()
    if not run:
        return None
    for tr in run.traces:
        for i in range(tr.tested):
            if tr.ratios[i] < 1.0:
                return tr, i
    tr = run.traces[0]
    return (tr, 0) if tr.guesses else None     # the target alone (tour chapters 1-2) guesses nothing


def under_over(app):
    """For the prefix 慢慢: the token the draft under-proposes most (p - q largest) and over-proposes most."""
    pair = app.session.pair()
    ids = pair.encode(PREFIX)
    p, _ = pair.target_row(ids)
    q, _ = pair.draft_row(ids)
    d = p - q
    u, o = int(np.argmax(d)), int(np.argmin(d))
    return (pair.display(u), p[u], q[u]), (pair.display(o), p[o], q[o])


def facts(app) -> Facts:
    f = Facts()
    s, ses = app.settings, app.session
    t = app.t

    def put(name, fn):
        try:
            f[name] = fn()
        except Exception:  # noqa: BLE001 - a model still landing shows '—', not a crash
            pass

    put("lanes", lambda: f"{s.lanes}")
    put("gamma", lambda: f"{s.gamma}")
    put("c", lambda: f"{s.c:g}")
    put("context", lambda: f"{s.context:,}")
    put("device", lambda: s.device)
    put("vocab", lambda: f"{ses.pair().V:,}")
    roof = {}
    try:
        roof = ses.roofline()
    except Exception:  # noqa: BLE001
        pass
    if roof:
        put("bytes_per_step", lambda: f"{roof['bytes_per_step'] / 1e9:.2f} GB")
        put("ms_per_token", lambda: f"{roof['ms_per_token']:.2f} ms")
        put("tokens_per_s", lambda: f"{roof['tokens_per_s']:,.0f}")
        put("busy", lambda: f"{100 * roof['arithmetic_busy']:.1f}%")
        put("lanes_to_saturate", lambda: f"{roof['lanes_to_saturate']:.0f}")
    # A speculative pass computes γ + 1 tokens per sequence: that is what the mill shows while it checks.
    put("spec_lanes", lambda: f"{s.lanes * (s.gamma + 1)}")
    put("busy_spec", lambda: f"{100 * ses.roofline(lanes=s.lanes * (s.gamma + 1))['arithmetic_busy']:.1f}%")
    run = ses.ensure()
    if run:
        alpha = run.alpha_generated
        put("alpha", lambda: f"{alpha:.3f}")
        put("tpp_counted", lambda: f"{run.tokens_per_pass_counted:.2f}")
        put("tpp_formula", lambda: f"{ses.tokens_per_pass_formula(alpha)[s.gamma - 1]:.2f}")
        put("best_gamma", lambda: f"{ses.best_gamma(alpha)[0]}")
        put("best_speedup", lambda: f"{ses.best_gamma(alpha)[1]:.2f}×")
        put("speedup_now", lambda: f"{ses.speedups(alpha)[s.gamma - 1]:.2f}×")
        # extra_arithmetic is a ratio to the target alone (1.53 = 53% more)
        put("extra_pct", lambda: f"{100 * (ses.extra_arithmetic(alpha, s.gamma) - 1):.0f}%")
        tr0 = run.traces[0]
        pair = ses.pair()
        put("step_written", lambda: f"{pair.decode(tr0.tokens_written)} ({tr0.n_accepted}+1)")
        put("count_guesses", lambda: "".join(pair.display(g) for g in tr0.guesses))
        put("count_kept", lambda: f"{tr0.n_accepted}")
        put("count_written", lambda: "".join(pair.display(g) for g in tr0.tokens_written))
        cp = checkpoint(app)
        if cp:
            tr, i = cp
            g = tr.guesses[i]
            put("check_guess", lambda: pair.display(g))
            put("check_p", lambda: f"{tr.p_rows[i][g]:.4f}")
            put("check_q", lambda: f"{tr.q_rows[i][g]:.4f}")
            put("check_ratio", lambda: f"{tr.ratios[i]:.3f}")
            put("check_r", lambda: f"{tr.r[i]:.3f}")
            put("check_verdict", lambda: t("verdict.accepted") if tr.accepted[i] else t("verdict.rejected"))
    put("alpha_corpus", lambda: f"{ses.alpha_corpus():.3f}")
    # α over the book at temperature 0 and 1 (chapter 7): 0.4 s each, so only when a page shows them.
    f.lazy["alpha_t0"] = lambda: f"{ses.alpha_corpus_at(0.0):.3f}"
    f.lazy["alpha_t1"] = lambda: f"{ses.alpha_corpus_at(1.0):.3f}"
    f.lazy["t0_disagree"] = lambda: f"{100 * (1 - ses.alpha_corpus_at(0.0)):.0f}%"
    try:
        (uc, up, uq), (oc, op, oq) = under_over(app)
        f["under_char"] = f"{uc}  (p {up:.3f} > q {uq:.3f})"
        f["over_char"] = f"{oc}  (q {oq:.3f} > p {op:.3f})"
        f["under"], f["over"] = uc, oc
    except Exception:  # noqa: BLE001
        pass
    try:
        from app.figures import tube_tv_curves
        res = ses.tubes() if app.fixed_step else ses.tubes_ready()
        tv_l, tv_r = tube_tv_curves(res)
        f["tv_left"] = f"{tv_l[-1]:.4f}"
        f["tv_right"] = f"{tv_r[-1]:.4f}"
    except Exception:  # noqa: BLE001
        pass
    return f


def fill(text: str, f: Facts) -> str:
    """Fill {name} fields of a narration page; unknown names stay visible as '—'."""
    try:
        return text.format_map(f)
    except (ValueError, IndexError):
        return text
