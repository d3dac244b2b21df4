"""Settings, key scripts, string catalogs and tour narration: the small parts of the program."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from app.i18n import Strings, catalog
from app.settings import AppSettings, load_settings, save_settings
from app.lesson.tour import CHAPTERS, TourState, narration


def test_settings_round_trip_atomically(tmp_path):
    path = tmp_path / "cfg" / "settings.json"
    s = AppSettings(language="en", gamma=7, palette="projector", ui_scale=1.4)
    save_settings(s, path)
    loaded, msg = load_settings(path)
    assert msg is None and loaded == s
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]   # no temp files left behind


def test_out_of_range_settings_are_clamped(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"gamma": 99, "ui_scale": 9, "mode": "nonsense", "unknown_key": 1}))
    s, msg = load_settings(path)
    assert msg is None and s.gamma == 12 and s.ui_scale == 2.5 and s.mode == "tour"


def test_catalogs_have_the_same_keys_and_fields():
    zh, en = catalog("zh"), catalog("en")
    assert zh.keys() == en.keys()
    field = re.compile(r"\{(\w+)\}")
    for k in zh:
        assert set(field.findall(zh[k])) == set(field.findall(en[k])), k


def test_every_key_the_code_uses_is_in_the_catalogs():
    from pathlib import Path
    used = set()
    for path in (Path(__file__).resolve().parent.parent / "app").rglob("*.py"):
        used |= set(re.findall(r"""\bt\(\s*["']([a-z_]+(?:\.[a-z_]+)+)["']""", path.read_text(encoding="utf-8")))
    assert len(used) > 50
    missing = sorted(k for k in used if k not in catalog("zh"))
    assert not missing


def test_strings_fall_back_and_fill_fields():
    t = Strings("en")
    assert t("msg.exported", path="x.png").endswith("x.png")
    assert t("no.such.key") == "no.such.key"


def test_twelve_chapters_with_narration_in_both_languages():
    assert len(CHAPTERS) == 12
    for ch in CHAPTERS:
        data = narration(ch.slug)
        assert data.title["zh"] and data.title["en"]
        assert data.pages
        for page in data.pages:
            assert page["zh"].strip() and page["en"].strip()
            fields_zh = set(re.findall(r"\{(\w+)\}", page["zh"]))
            assert fields_zh == set(re.findall(r"\{(\w+)\}", page["en"])), ch.slug


def test_narration_fields_are_live_facts():
    """Every {field} a chapter's narration writes is a number facts() computes for that chapter's settings (no
    typed-in model numbers): asked for by name, it is there and is not the '—' of a number that failed."""
    from app.lesson.facts import facts
    ctl = _controller()
    ctl.set_mode("tour")
    for i, ch in enumerate(CHAPTERS):
        ctl.tour.goto(i)
        ctl.panel.apply_chapter()
        for k, page in enumerate(narration(ch.slug).pages):
            ctl.tour.page = k                 # a page may set its own settings (chapter 10: who drafts)
            ctl.panel.apply_page()
            f = facts(ctl)
            for text in (page["zh"], (page.action.text.get("zh", "") if page.action else "")):
                for name in re.findall(r"\{(\w+)\}", text):
                    assert name in f or name in f.lazy, (ch.slug, name)
                    assert f[name] != "—", (ch.slug, name)
    assert f["vocab"] == f"{ctl.session.pair().V:,}" and f["lanes"] == f"{ctl.settings.lanes}"


def test_narration_is_drawable_with_the_shipped_font():
    from scenes.fonts import missing_characters
    text = json.dumps([repr(narration(c.slug)) for c in CHAPTERS], ensure_ascii=False)
    text += json.dumps(catalog("zh"), ensure_ascii=False) + json.dumps(catalog("en"), ensure_ascii=False)
    assert not missing_characters(text)


def test_tour_state_walks_text_then_action():
    st = TourState(0)
    seen = []
    while True:
        r = st.next()
        seen.append(r)
        if r == "end":
            break
    assert seen.count("chapter") == 11
    assert seen.count("act") == sum(1 for c in CHAPTERS for p in narration(c.slug).pages if p.action)
    while st.prev() != "start":
        pass
    assert (st.chapter, st.page, st.acted) == (0, 0, False)


def test_key_script_parsing(tmp_path):
    from app.keys import parse_script
    from corpus.errors import InputError
    p = tmp_path / "k.txt"
    p.write_text("# comment\nPageDown\nwait 3\n?\nspace  # next\n.\n")
    assert parse_script(p) == ["page down", 3, "?", "space", "."]
    p.write_text("wait 999999999999\n")
    assert parse_script(p) == [999999999999]          # harmless: a scripted run ends at --frames anyway
    for bad, needle in (("flibber", "unknown key"), ("wait", "wait"), ("wait x", "wait"), ("wait -1", "wait"),
                        ("wait 1 2", "wait"), ("wait ²", "wait")):
        p.write_text(f"space\n{bad}\n", encoding="utf-8")
        with pytest.raises(InputError, match=f"line 2: .*{needle}") as info:
            parse_script(p)
        assert "\n" not in str(info.value)


def test_clicker_keys_are_bound_only_to_next_and_previous():
    from app.keys import ACTIONS
    owners = {name: a for a, names in ACTIONS.items() for name in names}
    assert owners["page down"] == "next" and owners["page up"] == "prev"
    assert sum("page down" in n or "page up" in n for n in ACTIONS.values()) == 2


def test_old_rule_name_in_a_settings_file_is_mapped(tmp_path):
    """'no_bonus' was the old (misleading) name of draft_only: an old settings file still loads it."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"tube_rule": "no_bonus"}))
    s, msg = load_settings(path)
    assert msg is None and s.tube_rule == "draft_only" and s.skip_bonus is False
    path.write_text(json.dumps({"tube_rule": "skip_bonus"}))      # not a rule: skipping the bonus is exact
    assert load_settings(path)[0].tube_rule == "exact"


def test_tokens_per_pass_with_and_without_the_bonus():
    from models.analytics import tokens_per_pass_formula

    from app.derived import tokens_per_pass_bonus
    for alpha in (0.0, 0.3, 0.64, 1.0):
        with_b, without_b = tokens_per_pass_bonus(alpha, 4)
        assert with_b == pytest.approx(tokens_per_pass_formula(alpha, 4))
        assert without_b == pytest.approx(with_b - alpha ** 4)
    assert tokens_per_pass_bonus(1.0, 4) == pytest.approx((5.0, 4.0))   # all kept: γ + 1 vs γ tokens
    assert tokens_per_pass_bonus(0.0, 4) == pytest.approx((1.0, 1.0))   # nothing kept: the bonus never came


def _controller(**settings):
    """The real controller, with no window (no table: the driver's calls are no-ops), scripted, never saving."""
    from app.controller import Controller
    return Controller(AppSettings(**{"language": "en", **settings}), persist=False, scripted=True).start()


def test_alpha_chapter_draws_the_overlap_before_the_long_run():
    """Chapter 7 draws α as a picture before it gives the long run's number: p and q after 慢慢 (the running
    example), their overlap shaded, and the shading adds up to Σ min(p, q) of the models' own rows; the page (or its
    reveal) says that sum. The long-run α comes on a later page."""
    import numpy as np

    from app import figures, plots
    from app.lesson.facts import facts, fill
    ctl = _controller(mode="lab")
    f = facts(ctl)
    pair = ctl.session.pair()
    ids = pair.encode("慢慢")
    p, q = pair.target_row(ids)[0], pair.draft_row(ids)[0]
    total = float(np.minimum(p, q).sum())
    assert f["overlap"] == f"{total:.3f}"
    pages = narration("07-alpha").pages
    first_overlap = next(k for k, pg in enumerate(pages) if pg.plot == "overlap")
    first_alpha = next(k for k, pg in enumerate(pages) if "{alpha}" in pg["en"])
    # the sum is said on the page, or in its reveal (the page asks first)
    page = pages[first_overlap]
    said = fill(page["en"], f) + (fill(page.action.text["en"], f) if page.action is not None else "")
    assert first_overlap < first_alpha and f["overlap"] in said
    labels, pp, qq, rest, tot = figures.overlap_rows(pair, "慢慢")
    assert tot == pytest.approx(total) and np.minimum(pp, qq).sum() + rest == pytest.approx(total)
    fig = figures.make(ctl, "overlap", (640, 400), 16)
    plots.figure_rgba(fig)
    heights = sorted(r.get_height() for r in fig.axes[0].patches if r.get_fill())    # the shaded overlap bars
    plots.close(fig)
    assert sum(heights) + rest == pytest.approx(total)
    # The n-gram quirks (backed-off positions, α at temperature 0 on the counted pair) are no longer pages of their own.
    assert not any("{backed_off_pct}" in pg["en"] or "{alpha_t0}" in pg["en"] for pg in pages)


def test_alpha_chapter_draws_short_counts_and_the_first_guess_apart():
    """Chapter 7's later pictures: the shorter counts it names (the long run's parts) are the dots it draws, beside
    the long run; the gap
    between the formula and the count is drawn place by place in a pass, and the page names the first guess's share,
    the bar the plot draws first."""
    from app import derived, figures, plots
    from app.lesson.facts import facts, fill
    ctl = _controller(mode="lab")
    f = facts(ctl)
    pages = narration("07-alpha").pages
    counts = next(pg for pg in pages if pg.plot == "alpha_counts")
    depth = next(pg for pg in pages if pg.plot == "alpha_depth")
    pf = ctl.long_run(wait=True)
    shorts, each = pf.alpha_parts(derived.SHORT_COUNTS)
    assert len(shorts) == derived.SHORT_COUNTS and len(set(shorts)) > 1          # the parts wander
    # the parts are the long run cut up: together they are its α, over its tokens
    assert sum(p[1] for p in pf.text_parts) == pf.tokens and each * len(shorts) == pytest.approx(pf.tokens)
    assert sum(p[0] for p in pf.text_parts) / pf.tokens == pytest.approx(pf.alpha)
    assert min(shorts) < pf.alpha < max(shorts)
    said = fill(counts["en"], f)
    assert f"{min(shorts):.3f}" in said and f"{max(shorts):.3f}" in said and f["alpha"] in said
    fig = figures.make(ctl, "alpha_counts", (640, 400), 16)
    plots.figure_rgba(fig)
    dots = [(ln.get_xdata()[0], ln.get_ydata()[0]) for ln in fig.axes[0].lines if len(ln.get_xdata()) == 1]
    names = " ".join(tx.get_text() for tx in fig.axes[0].get_yticklabels())
    plots.close(fig)
    assert f"{int(round(each, -2)):,} each" in names and f["short_tokens"] in said       # whole tokens, as said
    assert sorted(round(x, 3) for x, y in dots if y >= 1) == sorted(round(a, 3) for a in shorts)     # the upper row
    long_alpha = round(ctl.long_run(wait=True).alpha, 3)
    assert any(round(x, 3) == long_alpha and y == 0 for x, y in dots)                          # the long run below
    pf = ctl.long_run(wait=True)
    rates = pf.alpha_by_depth
    assert len(rates) == pf.gamma and rates[0] < min(rates[1:])
    # 1 + Σ_k Π_(j≤k) rate_j is the tokens a pass counted (both over the completed passes)
    assert 1 + sum(np.prod(rates[:k + 1]) for k in range(len(rates))) == pytest.approx(pf.tokens_per_pass_counted)
    reveal = fill(depth.action.text["en"], f)
    assert f"{rates[0]:.3f}" in reveal and "plot" in depth.keep_back
    fig = figures.make(ctl, "alpha_depth", (640, 400), 16)
    plots.figure_rgba(fig)
    heights = [r.get_height() for r in fig.axes[0].patches]
    plots.close(fig)
    assert heights == pytest.approx(rates)


def test_chapter_7_draws_the_published_alphas_it_names_beside_the_pairs():
    """The page quoting Leviathan et al.'s α (0.5 to 0.9, and 0.2 for a bigram draft) draws them on one line with the
    pair's α, the figure its sentence gives."""
    from app import figures, plots
    from app.alpha_plots import PUBLISHED_ALPHA_BAND, PUBLISHED_BIGRAM_ALPHA
    from app.lesson.facts import facts, fill
    ctl = _controller(mode="lab")
    page = next(pg for pg in narration("07-alpha").pages if "Leviathan" in pg["en"])
    said = fill(page["en"], facts(ctl))
    assert page.plot == "alpha_scale" and "0.5 and 0.9" in said and "0.2" in said
    fig = figures.make(ctl, "alpha_scale", (640, 400), 16)
    plots.figure_rgba(fig)
    ax = fig.axes[0]
    dots = sorted(round(float(ln.get_xdata()[0]), 3) for ln in ax.lines if len(ln.get_xdata()) == 1)
    band = [p for p in ax.patches if p.get_width() > 0.1]
    plots.close(fig)
    alpha = ctl.long_run(wait=True).alpha
    assert dots == sorted([PUBLISHED_BIGRAM_ALPHA, round(alpha, 3)])
    assert f"{alpha:.3f}" in said
    assert len(band) == 1 and band[0].get_x() == pytest.approx(PUBLISHED_ALPHA_BAND[0]) \
        and band[0].get_x() + band[0].get_width() == pytest.approx(PUBLISHED_ALPHA_BAND[1])


def test_busy_under_one_percent_keeps_two_decimals_on_the_mill_and_the_panel():
    """One token a pass keeps an H100 0.34 % busy: the panel and the mill print 0.34 % (a page multiplies it by
    120), 1.7 % with one decimal; a speculative pass's figure on the mill says it is the check's."""
    from types import SimpleNamespace

    from models.hardware import busy_text
    from scenes.mill import busy_words
    assert busy_text(0.0034) == "0.34%" and busy_text(0.0172) == "1.7%" and busy_text(0.217) == "21.7%"
    alone = SimpleNamespace(extra={"pass_busy": 0.0034, "target_only": True}, mill_busy=0.0034, step=0)
    checking = SimpleNamespace(extra={"pass_busy": 0.0172, "target_only": False}, mill_busy=0.0172, step=0)
    assert busy_words(alone) == ("算术忙 0.34%", "busy 0.34%")
    assert busy_words(checking)[0] == "核对时算术忙 1.7%" and busy_words(checking)[1].endswith(" 1.7%")


def test_the_measured_drafters_table_shows_only_the_drafters_met():
    """The side-by-side table on a self-drafter's page keeps to the drafters the lesson has introduced: on the heads'
    page no EAGLE row (the EAGLE page asks about it), and no word about trees without a tree's row."""
    from app.i18n import Strings
    from app.lesson import measured
    entry = measured.shipped_pair_measurement()
    if entry is None:
        pytest.skip("no shipped measurement of the neural pair")
    t = Strings("en")
    everything = measured.side_by_side_view(entry["data"], t)
    heads = measured.side_by_side_view(entry["data"], t, {"chain", "heads"})
    later = measured.side_by_side_view(entry["data"], t, {"chain", "heads", "tree", "eagle"})
    names = lambda v: [r[0] for r in v["rows"]]  # noqa: E731
    assert len(names(heads)) == 2 and not heads["trees"]
    assert not any("EAGLE" in n for n in names(heads)) and any("EAGLE" in n for n in names(later))
    assert later["trees"] and len(names(everything)) > len(names(later))      # lookup not met in the lesson


def test_extra_arithmetic_fact_is_the_extra_not_the_ratio():
    """extra_arithmetic is a ratio to the target alone (2.0 = 100% more): the fact shows the extra, at the pair's
    long-run α (not the short run's)."""
    from models import analytics

    from app.lesson.facts import facts
    ctl = _controller(mode="lab")
    f = facts(ctl)
    pf = analytics.pair_facts(ctl.session.pair(), 4)
    ratio = analytics.extra_arithmetic(pf.alpha, 4)
    assert ratio > 1 and f["extra_pct"] == f"{100 * (ratio - 1):.0f}%"
    assert f["alpha"] == f"{pf.alpha:.3f}" and f["tpp_counted"] == f"{pf.tokens_per_pass_counted:.2f}"


def test_chinese_wraps_between_characters_and_keeps_numbers_whole():
    from app.ui import wrap_lines
    measure = len                                        # one unit per character
    text = "我们的玩具模型正好相反：全书上温度 0 时 α = 0.415，温度 1 时 α = 0.581。"
    lines = wrap_lines(text, 12, measure)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert all(len(line) <= 12 for line in lines)
    assert all(len(line) >= 12 - len("α = 0.415") for line in lines[:-1])      # no short ragged lines
    assert not any(line.startswith(("，", "。")) for line in lines)
    joined = "\n".join(lines)
    assert "α = 0.415" in joined and "α = 0.581" in joined      # a number is never split, nor cut from its name
    assert wrap_lines("one two three", 7, measure) == ["one two", "three"]
    assert wrap_lines("写 α = 0.618 吧", 6, measure) == ["写", "α = 0.618", "吧"]
    assert wrap_lines("（甲乙）", 3, measure) == ["（甲", "乙）"]     # brackets stay with what they hold


def test_count_checkpoint_answer_is_hidden_until_revealed():
    """Chapter 4 asks how many guesses the target keeps: 'first pass wrote' is the answer, so the live-numbers
    panel shows it only after the reveal."""
    ch = next(i for i, c in enumerate(CHAPTERS) if c.slug.startswith("04"))
    ctl = _controller(mode="tour", chapter=ch)
    st, panel = ctl.tour, ctl.panel
    k = next(i for i, p in enumerate(st.pages()) if p.action is not None and p.action.kind == "count")
    assert "step_written" in CHAPTERS[ch].facts
    assert "step_written" in panel.unrevealed(shown=False)          # page 0: before the question
    st.page = k
    assert "step_written" in panel.unrevealed(shown=False)          # asked, not yet revealed
    assert panel.unrevealed(shown=True) == set()                    # revealed
    st.page = k + 1
    assert panel.unrevealed(shown=False) == set()


def _other_value(name, value):
    """A legal value of setting `name` other than `value`."""
    from app.settings import FIELDS
    spec = FIELDS[name]
    if spec.kind is bool:
        return not value
    if spec.legal():
        return next(v for v in spec.legal() if v != value)
    if spec.kind is str:
        return "孔乙己" if value != "孔乙己" else "慢慢"
    return spec.kind(spec.hi if value != spec.hi else spec.lo)


def test_a_plot_is_drawn_from_its_declared_inputs_only():
    """Panels redraw a plot only when an input figures.PLOT_INPUTS names for it changed (or the language, the
    palette): so every other setting, changed all at once, must leave its picture exactly as it was. A plot that
    starts reading a setting not declared fails here (naming the setting) instead of going stale on screen."""
    from app import figures, plots
    from app.settings import FIELDS
    ctl = _controller()

    def picture(name):
        fig = figures.make(ctl, name, (320, 200), 10.0)
        try:
            return plots.figure_rgba(fig)
        finally:
            plots.close(fig)

    def changes_picture(name, values, before):
        saved = {k: getattr(ctl.settings, k) for k in values}
        ctl.update(**values)
        try:
            return not np.array_equal(picture(name), before)
        finally:
            ctl.update(**saved)

    import numpy as np
    for name, inputs in figures.PLOT_INPUTS.items():
        fixed = set(inputs) | {"language", "palette"}
        if "run" in inputs:
            fixed |= {k for k, f in FIELDS.items() if f.run}       # the run's version covers them
        others = {k: _other_value(k, getattr(ctl.settings, k)) for k in FIELDS if k not in fixed}
        before, key = picture(name), figures.inputs_key(ctl, name)
        if changes_picture(name, others, before):
            culprits = [k for k, v in others.items() if changes_picture(name, {k: v}, before)]
            pytest.fail(f"plot {name} changes with {culprits}, which figures.PLOT_INPUTS does not name")
        assert figures.inputs_key(ctl, name) == key
        last = [d for d in inputs if d in FIELDS][-1]          # a setting ("run", "computer" are not)
        old = getattr(ctl.settings, last)
        ctl.update(**{last: _other_value(last, old)})
        assert figures.inputs_key(ctl, name) != key              # a declared input does change the key
        ctl.update(**{last: old})


def test_a_dragged_slider_redraws_its_plot_every_few_frames_and_at_once_when_let_go(monkeypatch):
    """PlotTextures: a change redraws the plot on the next frame; while the mouse holds a slider, at most every
    DRAG_REDRAW_FRAMES frames; the frame the slider is let go, at once. A change of a setting the plot is not
    drawn from (lanes, for the speedup plot) redraws nothing."""
    from types import SimpleNamespace

    import numpy as np

    from app import figures, plots, ui
    ctl = _controller()
    now = {"frame": 0, "held": False}
    drawn = []
    monkeypatch.setattr(figures, "make", lambda c, name, *a, **kw: drawn.append((now["frame"], c.settings.c)) or object())
    monkeypatch.setattr(plots, "figure_rgba", lambda fig: np.zeros((40, 64, 4), np.uint8))
    monkeypatch.setattr(plots, "text_report", lambda fig: {})
    monkeypatch.setattr(plots, "close", lambda fig: None)
    monkeypatch.setattr(ui, "axes_info", lambda fig: {})
    for name, fn in {"get_frame_count": lambda: now["frame"], "is_any_item_active": lambda: now["held"],
                     "is_mouse_down": lambda button: now["held"], "image": lambda *a: None,
                     "get_content_region_avail": lambda: SimpleNamespace(x=320.0, y=900.0),
                     "get_style": lambda: SimpleNamespace(item_spacing=SimpleNamespace(y=4.0)),
                     "get_cursor_screen_pos": lambda: (0.0, 0.0), "ImTextureRef": lambda tex_id: tex_id}.items():
        monkeypatch.setattr(ui.imgui, name, fn)
    textures = ui.PlotTextures(ctl)
    scr = SimpleNamespace(renderer=SimpleNamespace(register_rgba=lambda rgba, tex_id=None: tex_id or 2,
                                                    uv1=lambda tex_id, w, h: (1.0, 1.0)), h=1080,
                          em=lambda: 20.0, log=SimpleNamespace(plots={}))

    def frame(held, **change):
        now["frame"] += 1
        now["held"] = held
        if change:
            ctl.update(**change)
        textures.image(scr, "speedup", 320.0)

    frame(False)
    frame(False, c=0.2)
    frame(False, lanes=64)                    # not an input of the speedup plot
    assert [c for _, c in drawn] == [0.1, 0.2]
    start = now["frame"]
    for i in range(1, 13):                    # dragging c, a new value every frame
        frame(True, c=round(0.2 + 0.01 * i, 4))
    frame(False)                              # let go
    last = drawn[1][0]                        # counted from the last redraw; then the frame it is let go
    assert [f for f, _ in drawn[2:]] == [last + ui.DRAG_REDRAW_FRAMES, last + 2 * ui.DRAG_REDRAW_FRAMES, start + 13]
    assert drawn[-1][1] == ctl.settings.c == 0.32


def test_facts_name_the_long_run_and_this_run_apart():
    """The pair's α is the long run's; the short run on the table is reported as its own count ("9 / 21")."""
    from models import analytics, hardware

    from app.lesson.facts import facts
    ctl = _controller(mode="lab", lanes=64, context=4096)
    f = facts(ctl)
    run = ctl.session.ensure()
    count = analytics.count_run(run.traces)
    pf = analytics.pair_facts(ctl.session.pair(), 4)
    assert f["run_count"] == f"{count.accepted} / {count.tested}" and f["run_passes"] == f"{len(run.traces)}"
    assert f["alpha"] == f"{pf.alpha:.3f}" and f["long_tokens"] == f"{pf.tokens:,}"
    assert f["alpha"] != f"{count.accepted / count.tested:.3f}"
    assert f["best_gamma"] == f"{pf.best(0.1)[0]}" and f["best_speedup"] == f"{pf.best(0.1)[1]:.2f}×"
    # A check's γ + 1 positions are one sequence's: 64 sequences × 5 positions at 4,096 tokens read what 64 × 1 read
    # and do five times the arithmetic (attention's included).
    one = hardware.pass_busy('h100-sxm', 'llama-3.1-8b', 64, 1, 4096)
    assert f["busy_spec"] == f"{100 * hardware.pass_busy('h100-sxm', 'llama-3.1-8b', 64, 5, 4096):.1f}%" \
        == f"{100 * 5 * one:.1f}%"
    assert f["busy"] == f"{100 * one:.1f}%" and f["busy_weights"] == "21.7%" and f["tps_weights"] == "13,350"
    assert f["lev_extra"] == "53%" and f["lev_faster"] == "96%"
    tr = run.traces[1]
    story = f["story_2"]
    assert ("bonus" in story) == (tr.final_kind == "bonus") and ("replacement" in story) == (tr.final_kind != "bonus")


def test_hardware_panel_says_why_a_pass_reads_less_than_all_weights():
    from app.lesson.measured import measurement_view
    entry = {"file": "gpu.json", "data": {
        "device": {"type": "cuda", "name": "NVIDIA H200"}, "dtype": "bf16",
        "models": {"target": {"name": "llama-3.1-8b", "weight_bytes": 16_060_522_496,
                              "weight_bytes_read_per_token": 15_009_849_344}},
        "figures": {"decode_batch1": {"ms_per_token": 4.0, "on_paper_ms": 3.13}}}}
    view = measurement_view(entry, Strings("en"), "h200", "llama-3.1-8b")
    note = next(n for n in view["notes"] if "embedding" in n)
    assert "15.01 GB" in note and "1.05 GB" in note and "16.06 GB" in note
    tied = json.loads(json.dumps(entry))
    tied["data"]["models"]["target"]["weight_bytes_read_per_token"] = 16_060_522_496
    assert not any("embedding" in n for n in measurement_view(tied, Strings("en"), "h200", "llama-3.1-8b")["notes"])


def test_hardware_toy_rows_and_the_skip_bonus_note_use_the_long_run():
    """The pair's α and tokens per pass in the hardware panel and the tubes' skip-bonus note are the long run's
    (pair_facts), not what the short run on the table happened to count."""
    from models import analytics

    from app.derived import tokens_per_pass_bonus
    ctl = _controller(mode="hardware")
    pf = analytics.pair_facts(ctl.session.pair(), 4, ctl.session.sampler_settings(), seed=0)
    rows = dict(ctl.modes["hardware"].toy_rows())
    assert rows[ctl.t("fact.alpha")] == f"{pf.alpha:.3f}"
    assert rows[ctl.t("fact.tpp_counted")] == f"{pf.tokens_per_pass_counted:.2f}"
    assert rows[ctl.t("fact.tpp_formula")] == f"{pf.tokens_per_pass_formula:.2f}"
    count = analytics.count_run(ctl.session.ensure().traces)
    assert f"{count.accepted / count.tested:.3f}" != f"{pf.alpha:.3f}"     # the short run would read otherwise
    note = ctl.modes["tubes"].skip_bonus_note()
    with_b, without_b = tokens_per_pass_bonus(pf.alpha, 4)
    assert f"α = {pf.alpha:.3f}" in note and f"{with_b:.2f}" in note and f"{without_b:.2f}" in note
    ctl.update(skip_bonus=True)
    shown = ctl.modes["tubes"].facts_shown()
    assert (shown["alpha"], shown["tpp_with_bonus"], shown["tpp_without_bonus"]) == (
        f"{pf.alpha:.3f}", f"{with_b:.2f}", f"{without_b:.2f}")
    assert ctl.modes["hardware"].facts_shown()["alpha"] == f"{pf.alpha:.3f}"


def test_chapters_that_describe_an_event_play_a_real_pass_where_it_happens():
    """Ch. 4 plays a pass that keeps guesses and replaces one, then one that keeps all γ and adds the bonus; ch. 5
    asks about a real gamble (q > p) in its second pass, one that is rejected (its residual is drawn next). The seed is searched on the real sampler from the lab's
    seed; the run is the session's ordinary run (nothing made up), and leaving the tour gives the lab its seed back."""
    from models.sampler import SamplerSettings, SpeculativeSampler

    from app.lesson.facts import checkpoint
    ctl = _controller(mode="lab", seed=5)
    ctl.set_mode("tour")
    pair = ctl.session.pair()
    for slug, events in (("04-keep-replace", ("kept_and_replaced", "all_kept_bonus")),
                         ("05-acceptance-rule", ("kept_and_replaced", "gamble_rejected"))):
        ch = next(i for i, c in enumerate(CHAPTERS) if c.slug == slug)
        assert CHAPTERS[ch].events == events
        ctl.tour.goto(ch)
        ctl.panel.apply_chapter()
        seed = ctl.settings.seed
        assert seed >= 5
        run = ctl.session.ensure()
        sm = SpeculativeSampler(pair, SamplerSettings(gamma=4, seed=seed))
        sm.reset(pair.encode(ctl.settings.prompt))
        assert [sm.step().tokens_written for _ in range(2)] == [tr.tokens_written for tr in run.traces[:2]]
        one, two = run.traces[0], run.traces[1]
        assert 0 < one.n_accepted < 4 and one.final_kind == "replacement"       # dots and a replacement diamond
        if slug.startswith("04"):
            assert two.n_accepted == 4 and two.final_kind == "bonus"          # four dots and the bonus diamond
        else:
            tr, i = checkpoint(ctl)
            assert tr.step_index == 1 and tr.ratios[i] < 1.0 and tr.q_rows[i][tr.guesses[i]] > tr.p_rows[i][tr.guesses[i]]
            assert not tr.accepted[i]          # the coin went against it: the last page draws its residual
    ctl.set_mode("lab")
    assert ctl.settings.seed == 5


def test_the_count_reveal_names_a_replacement_or_the_bonus():
    """"The target writes one more" is a bonus only when all γ were kept: the reveal says which it was."""
    from app.lesson.facts import count_reveal
    from models.sampler import SamplerSettings, SpeculativeSampler
    for lang in ("en", "zh"):
        ctl = _controller(mode="lab", language=lang)
        pair = ctl.session.pair()
        kinds = set()
        for seed in range(40):
            sm = SpeculativeSampler(pair, SamplerSettings(gamma=4, seed=seed))
            sm.reset(pair.encode("慢慢"))
            tr = sm.step()
            text = count_reveal(ctl, tr)
            bonus_word, repl_word = ("bonus", "replacement") if lang == "en" else ("多送", "换上")
            assert (bonus_word in text) == (tr.final_kind == "bonus") and (repl_word in text) != (bonus_word in text)
            assert pair.display(tr.final_token) in text
            assert (f"{tr.n_accepted}" in text) if tr.n_accepted else ("none" in text or "一个也没" in text)
            kinds.add((tr.final_kind, tr.n_accepted == 0))
        assert {("bonus", False), ("replacement", False), ("replacement", True)} <= kinds


def test_facts_report_every_number_the_beat_shows():
    """`facts` (spectable run --json) names every number a beat shows with the string on screen: each field of
    the page's text (and of the action's words once it has run) is there, and its value is in the filled text;
    the panel's numbers are there as the panel shows them ('?' while a checkpoint keeps them back)."""
    import string

    from app.lesson.facts import fill
    for lang in ("zh", "en"):
        ctl = _controller(mode="tour", language=lang, chapter=0)
        while True:
            st, panel = ctl.tour, ctl.panel
            shown = panel.facts_shown()
            f = ctl.facts()
            page = st.page_data()
            texts = [page[lang]] + ([page.action.text[lang]] if st.acted and page.action and page.action.text else [])
            for text in texts:
                filled = fill(text, f)
                for _, name, _, _ in string.Formatter().parse(text):
                    if name:
                        assert name in shown and shown[name] in filled, (lang, st.chapter, st.page, name)
            hidden = panel.unrevealed(panel.revealed())
            for name in panel.panel_facts():          # the chapter's, or the neural pair's on its pages
                assert shown[name] == ("?" if name in hidden else f[name]), (lang, st.chapter, name)
                assert shown[name] not in ("—", "…"), (lang, st.chapter, name)
            before = (st.chapter, st.page, st.acted)
            ctl.do("next")
            if (st.chapter, st.page, st.acted) == before:
                break


@pytest.mark.parametrize("hole", [None, (5, 5, 8, 8), (-5, -5, 3, 20), (2, 2, 30, 4), (50, 50, 60, 60)])
def test_an_overlay_covering_a_plot_keeps_clear_of_its_legend(hole):
    """The tubes' mask of the rounds not yet shown is the axes' box less the legend's: it covers every pixel of
    the box outside the legend and none inside it."""
    from app.ui import rect_minus
    rect = (0.0, 0.0, 20.0, 10.0)
    parts = rect_minus(rect, hole)
    for px in np.arange(0.5, 20, 1.0):
        for py in np.arange(0.5, 10, 1.0):
            inside_hole = hole is not None and hole[0] <= px < hole[2] and hole[1] <= py < hole[3]
            covering = sum(r[0] <= px < r[2] and r[1] <= py < r[3] for r in parts)
            assert covering == (0 if inside_hole else 1), (px, py)


def test_chapter_5_draws_the_rule_with_every_test_the_run_made():
    """The rule's page says the chance a guess is kept is min(1, p/q) and points at the plot: the plot draws that
    line and every test of the run on the table at (p/q, r), the kept ones under it and the rejected over it."""
    from app import figures, plots
    from app.rule_plots import KEEP_XMAX, run_tests
    ctl = _controller(mode="lab", steps=12)
    page = narration("05-acceptance-rule").pages[0]
    assert page.plot == "keep_chance" and "min(1, p/q)" in page["en"] and "min(1, p/q)" in page["zh"]
    run = ctl.session.ensure()
    tests = run_tests(run.traces)
    assert len(tests) == sum(tr.tested for tr in run.traces) > 10
    assert {k for _, _, k in tests} == {True, False}
    assert all(k == (r <= v) for v, r, k in tests)          # the rule itself, read off the traces
    fig = figures.make(ctl, "keep_chance", (640, 400), 16)
    plots.figure_rgba(fig)
    ax = fig.axes[0]
    marks = {ln.get_marker(): np.column_stack([ln.get_xdata(), ln.get_ydata()]) for ln in ax.lines
             if ln.get_linestyle() in ("None", "none", "")}
    line = next(ln for ln in ax.lines if ln.get_linestyle() == "-")
    plots.close(fig)
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    assert np.allclose(y, np.minimum(1.0, x)) and x.max() == KEEP_XMAX
    kept, out = marks["o"], marks["x"]
    assert len(kept) + len(out) == len(tests)
    assert np.all(kept[:, 1] <= np.minimum(1.0, kept[:, 0]) + 1e-12)
    assert np.all(out[:, 1] > np.minimum(1.0, out[:, 0]))


def test_a_probability_shown_beside_its_ratio_agrees_with_it():
    """p and q under 0.01 keep three significant digits: the page's p/q (0.432) is their quotient as shown
    (0.0014 / 0.0032 read as 0.4375); larger ones four decimals; zero stays 0.0000, never 0e+00."""
    from app.lesson.measured import fmt_prob
    p, q = 0.001388874055010939, 0.003216339916867438
    shown = float(fmt_prob(p)) / float(fmt_prob(q))
    assert f"{shown:.3f}" == f"{p / q:.3f}" == "0.432"
    assert fmt_prob(0.3231) == "0.3231" and fmt_prob(0.0) == "0.0000" and fmt_prob(0.00512) == "0.00512"


def test_the_crossover_is_the_first_batch_whose_caches_outweigh_the_weights():
    """Chapter 2's "from how many sequences" is the first whole batch whose caches read more than the weights
    (239 sequences of 512 tokens still read less: 240), not the crossing rounded."""
    from app.controller import Controller
    from app.settings import AppSettings
    from models import hardware
    ctl = Controller(AppSettings(language="en", mode="tour"), persist=False, scripted=True)
    try:
        ctl.start()
        f = ctl.facts()
        short, context = int(f["kv_short"].replace(",", "")), ctl.settings.context
        roof = hardware.roofline(hardware.DEVICES[ctl.settings.device], hardware.MODELS[ctl.settings.model], 1, 0)
        for ctx, key in ((context, "kv_crossover"), (short, "kv_crossover_short")):
            n = int(f[key].replace(",", ""))
            assert n * ctx * roof.kv_bytes_per_token > roof.weight_bytes >= (n - 1) * ctx * roof.kv_bytes_per_token
    finally:
        ctl.close()


def test_a_legend_under_the_axes_stays_inside_the_figure():
    """A legend laid under the axes wider than a narrow panel's figure (chapter 10's English arithmetic plot at
    720p: "…(~3.9 lanes fill it; arithmetic only)") is broken onto more lines, not cut at the figure's edges."""
    from app import arithmetic_plots, plots
    from app.i18n import Strings
    from app.palette import PALETTES
    t = Strings("en")
    pal = PALETTES["default"]
    multiples = [(t("plot.arith_one"), 1.0), (t("plot.arith_check", k=5), 5.0), (t("plot.arith_lookahead"), 120.0)]
    fig = arithmetic_plots.arithmetic_multiples_plot(
        t, pal, multiples, 1 / 295, t("plot.arith_gpu", model="Llama 3.1 8B", device="NVIDIA H100 SXM"), 3.9,
        t("plot.arith_cpu", device="AMD EPYC", lanes="3.9"), size_px=(496, 330), text_px=16.0)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        assert legends
        for leg in legends:
            box = leg.get_window_extent(renderer)
            assert box.x0 >= -0.5 and box.x1 <= fig.bbox.width + 0.5, (box, fig.bbox.width)
    finally:
        plots.close(fig)
