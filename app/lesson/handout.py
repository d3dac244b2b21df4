"""The printable one-page student handout: the idea, the rule, why the text is unchanged, the table's numbers
(computed now from the models and the hardware model), the words, and four of the quiz's questions to
answer on paper. An A4 page at 150 dpi, drawn with the shipped font, written as PNG and as PDF.

docs/TEACHING.md carries the same page as Markdown; this is the program's own copy, in either language,
with the numbers of the table it is printed from.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from corpus.atomic import write_bytes_atomic
from app import derived
from app.lesson import quiz
from app.i18n import Strings
from app.lesson.measured import fmt_threads, shipped_pair_measurement
from app.lesson.tour import CHAPTERS, chapter_index
from models import analytics, hardware

A4_PX = (1240, 1754)         # 210 x 297 mm at 150 dpi
DPI = 150
MARGIN = 90
INK, MUTED, ACCENT, RULE = (17, 17, 17), (90, 90, 90), (150, 75, 0), (200, 200, 200)
SIZES = {"title": 44, "head": 29, "body": 23, "small": 20}
QUESTIONS = ("keep_prob", "residual_top", "tokens_per_pass", "best_gamma")


def _batch_context() -> int:
    """Chapter 2's context (its params): the handout's batch with its KV cache is the chapter's."""
    return int(CHAPTERS[chapter_index("02-batching")].params["context"])


BATCH_CONTEXT = _batch_context()


def facts(snap) -> dict:
    """The handout's numbers, from the models, the run and the hardware model (the lab's device and model)."""

    lab = snap.lab
    pf = snap.facts or quiz.long_run(snap.pair, lab)      # the pair's long run (the CLI's snapshot has none yet)
    alpha = float(pf.alpha)
    g, c = int(lab["gamma"]), float(lab["c"])
    best, best_sp = derived.best_gamma(alpha, c)
    r1 = derived.roofline(lab["device"], lab["model"], 1, 1)
    r64 = derived.roofline(lab["device"], lab["model"], 64, 0)    # the weights alone, as the tour says
    # ... and with each sequence's own KV cache at chapter 2's context: the chapter's punchline
    r64kv = derived.roofline(lab["device"], lab["model"], 64, BATCH_CONTEXT)
    p, q = quiz._row(snap.pair, quiz.PREFIX)
    # α is the long run's (the quiz's snapshot counts it: models.analytics.pair_facts), never the table's few passes
    return {"alpha": f"{alpha:.3f}", "long_tokens": f"{pf.tokens:,}", "gamma": g, "c": f"{c:g}",
            "tpp": f"{float(analytics.tokens_per_pass_formula(alpha, g)):.2f}",
            "best": best, "best_speedup": f"{best_sp:.2f}×", "device": r1.device_label, "model": r1.model_label,
            "gb": f"{r1.weight_bytes / 1e9:.2f}", "ms": f"{r1.ms_per_token:.2f}",
            "tps1": f"{r1.tokens_per_s:,.0f}", "busy1": hardware.busy_text(r1.arithmetic_busy),
            "tps64": f"{r64.tokens_per_s:,.0f}", "busy64": hardware.busy_text(r64.arithmetic_busy),
            "context": f"{BATCH_CONTEXT:,}", "kv_gb": f"{r64kv.kv_bytes_per_step / 1e9:.1f} GB",
            "tps64kv": f"{r64kv.tokens_per_s:,.0f}",
            "overlap": f"{float(np.minimum(p, q).sum()):.3f}"}


def measured_pair(t) -> str | None:
    """The shipped neural pair's speed measured on a real CPU, from its measurement file (the same file and figures
    as the hardware panel and ch. 8), with where, when and from which file; None when no such file ships."""
    e = shipped_pair_measurement()
    if e is None:
        return None
    d = e["data"]
    run = d.get("in_run") or {}
    try:
        return t("handout.measured", file=e.get("file", "?"), device=d["device"]["name"], date=str(d["date"])[:10],
                 threads=fmt_threads(d["device"]["threads"], t), plain=f"{d['plain_tokens_per_s']:.0f}",
                 spec=f"{d['speculative_tokens_per_s']:.0f}", speedup=f"×{d['speedup']:.2f}",
                 formula=f"×{run['speedup_formula']:.2f}" if run.get("speedup_formula") else "—")
    except (KeyError, TypeError, ValueError):        # validated on load; an older schema lacks some figures
        return None


def blocks(snap, lang: str) -> list[tuple[str, str]]:
    """The page as (style, text) blocks, top to bottom."""
    t = Strings(lang)
    f = facts(snap)
    out = [("title", t("handout.title")), ("small", t("handout.subtitle")), ("body", t("handout.name")),
           ("head", t("handout.idea_head")), ("body", t("handout.idea")),
           ("head", t("handout.rule_head")), ("body", t("handout.rule")),
           ("head", t("handout.same_head")), ("body", t("handout.same")),
           ("head", t("handout.numbers_head")), ("body", t("handout.numbers", **f))]
    measured = measured_pair(t)
    if measured:
        out.append(("small", measured))
    out += [("head", t("handout.words_head")), ("body", t("handout.words")), ("head", t("handout.try_head"))]
    qs = {q.id: q for q in quiz.build(snap, lang)}
    n = 0
    for qid in QUESTIONS:
        q = qs.get(qid)
        if q is None:
            continue
        n += 1
        out.append(("body", f"{n}. {q.prompt}"))
        out.append(("small", "    " + "    ".join(f"{quiz.LETTERS[k]}  {o}" for k, o in enumerate(q.options))))
    out.append(("small", t("handout.answers")))
    return out


def render(snap, lang: str, font_path) -> Image.Image:
    """The page as an RGB image (A4 at 150 dpi)."""
    from app.ui import wrap_lines  # lazy: pulls in imgui_bundle
    img = Image.new("RGB", A4_PX, (255, 255, 255))
    draw = ImageDraw.Draw(img)
    fonts = {k: ImageFont.truetype(str(font_path), v) for k, v in SIZES.items()}
    width = A4_PX[0] - 2 * MARGIN
    y = MARGIN
    for style, text in blocks(snap, lang):
        font = fonts[style]
        if style == "head":
            y += 14
        colour = ACCENT if style in ("title", "head") else (MUTED if style == "small" else INK)
        for line in wrap_lines(text, width, lambda s: draw.textlength(s, font=font)):
            draw.text((MARGIN, y), line, font=font, fill=colour)
            y += int(font.size * 1.38)
        if style == "head":
            draw.line((MARGIN, y - 4, MARGIN + width, y - 4), fill=RULE, width=1)
        y += 6
    if y > A4_PX[1] - MARGIN // 2:
        raise ValueError(f"the handout runs over one page ({y} px of {A4_PX[1]})")
    return img


def write(ctl, folder: Path, stem: str) -> list[Path]:
    """The handout for the controller's run and language: <stem>.png and <stem>.pdf in `folder`."""
    return save(render(quiz.snapshot(ctl), ctl.settings.language, ctl.font_file), folder, stem)


def save(img: Image.Image, folder: Path, stem: str) -> list[Path]:
    """<stem>.png and <stem>.pdf in `folder`, each written atomically."""
    out = []
    for ext, fmt in (("png", "PNG"), ("pdf", "PDF")):
        buf = io.BytesIO()
        img.save(buf, format=fmt, resolution=DPI)
        out.append(write_bytes_atomic(Path(folder) / f"{stem}.{ext}", buf.getvalue()))
    return out
