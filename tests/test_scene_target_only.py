"""Runs of the target alone (TargetSampler, γ = 0) as shown: a true HUD, an idle bridge, a still small drum,
no pencil; the mill driven by roofline() with lanes and context; verdict words and rule names in words."""
import functools

import numpy as np
import pytest

from scenes.bridge import COLUMN_H, COLUMN_V0, IDLE_METERS, PLATE_V, meter_point
from scenes.layout import SMALL_DRUM_CENTRE, SMALL_DRUM_LENGTH, SMALL_DRUM_RADIUS
from tests.scene_helpers import copper, gl_context, make_stage, pair, red, traces

W, H = 640, 360


@functools.lru_cache(maxsize=2)
def target_traces(steps: int = 5, seed: int = 0, prefix: str = "孔乙己"):
    from models.sampler import SamplerSettings, TargetSampler
    p = pair()
    s = TargetSampler(p, SamplerSettings(gamma=4, seed=seed))
    s.reset(p.encode(prefix))
    return tuple(s.step() for _ in range(steps))


def target_stage(batch_lanes=1, **kw):
    from scenes.stage import Stage
    st = Stage(gl_context())
    st.set_run(pair(), list(target_traces()), batch_lanes=batch_lanes, **kw)
    st.camera_transition_s = 0.0
    return st


class Said(list):
    """Every string the next frames write; .screen: those on screen (HUD, name plates), not on the parts."""

    def __init__(self):
        super().__init__()
        self.screen: list[str] = []

    def clear(self):
        super().clear()
        self.screen.clear()


@pytest.fixture
def said(monkeypatch):
    """Every line of text the frames rendered meanwhile laid (a part's replayed lines too)."""
    from scenes.stage import Stage
    words = Said()
    original = Stage.render

    def render(self, *a, **kw):
        stats = original(self, *a, **kw)
        for t, screen in self.frame_text:
            words.append(t)
            if screen:
                words.screen.append(t)
        return stats

    monkeypatch.setattr(Stage, "render", render)
    return words


def test_target_only_traces_are_what_the_stage_expects():
    trs = target_traces()
    assert all(tr.gamma == 0 and tr.extra.get("sampler") == "target" for tr in trs)


def test_hud_says_target_alone_and_no_gamma(shooter, said):
    st = target_stage()
    try:
        for lang in ("zh", "en", "both"):
            st.language = lang
            for phase in ("mid-verify", "write"):
                said.clear()
                st.timeline.seek(st.timeline.step_moment(1, phase))
                shooter.shoot(st)
                hud = " | ".join(said.screen)
                assert "γ" not in hud, (lang, phase, hud)
                assert "checks every guess" not in hud and "一起核对" not in hud and "replace the rejected" not in hud
                if lang != "zh":
                    assert "target alone" in hud, hud
                    if lang == "en":
                        assert "no guesses" in hud, hud            # the mode line
                    if phase == "mid-verify":
                        assert "one turn of the big drum: one token" in hud, hud
                if lang != "en":
                    assert "只用大模型" in hud, hud
                    if phase == "mid-verify":      # one lane lit: one token, no lanes to speak of
                        assert "大滚筒转一圈，写一个词元" in hud and "每条路写" not in hud, hud
    finally:
        st.release()
    st = target_stage(batch_lanes=12)                # twelve texts: one token on each lane
    try:
        st.language = "zh"
        st.timeline.seek(st.timeline.step_moment(1, "mid-verify"))
        said.clear()
        shooter.shoot(st)
        hud = " | ".join(said.screen)
        assert "每条路写一个词元" in hud and "只用大模型，不猜" in hud, hud
    finally:
        st.release()


def test_hud_of_a_speculative_run_still_shows_gamma(shooter, said):
    st = make_stage(seed=0, gamma=4, steps=6, with_tubes=False)
    st.show_hud = True
    try:
        st.timeline.seek(st.timeline.step_moment(1, "mid-verify"))
        shooter.shoot(st)
        assert any("γ = 4" in s for s in said.screen) and not any("target alone" in s for s in said.screen)
    finally:
        st.release()


def test_small_drum_still_pencil_up_no_meters_in_the_timeline():
    st = target_stage()
    try:
        tl = st.timeline
        assert all(not st.strokes and not st.tests and st.draft[0] == st.draft[1] for st in tl.steps)
        for t in np.linspace(0, tl.duration, 97):
            s = tl.state_at(float(t))
            assert s.small_drum_angle == 0.0 and s.pencil_down == 0.0 and not s.meters
            assert s.extra.get("target_only") is True
            assert all(c.pencil == 1.0 and c.mark in ("diamond", "") for c in s.tape)   # no pencil guesses
        assert tl.state_at(tl.step_moment(2, "mid-verify")).big_drum_angle > 0     # the big drum does turn
    finally:
        st.release()


def test_small_drum_does_not_move_on_screen(shooter):
    """Pixels: the small drum's close-up is the same all through a target-only step (it turns in a speculative one)."""
    st = target_stage()
    st.show_hud = False
    spec = make_stage(seed=0, gamma=4, steps=6, with_tubes=False)
    try:
        st.set_view("smalldrum")
        spec.set_view("smalldrum")
        # The drum's box on screen (the tape and the typing head below it do move).
        c = np.array(SMALL_DRUM_CENTRE)
        pts = [st.project(c + np.array([sx * SMALL_DRUM_LENGTH / 2, sy * SMALL_DRUM_RADIUS, sz * SMALL_DRUM_RADIUS]), W, H)
               for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
        xs, ys = [int(p[0]) for p in pts], [int(p[1]) for p in pts]
        box = (slice(max(min(ys), 0), min(max(ys), H)), slice(max(min(xs), 0), min(max(xs), W)))
        frames = []
        for phase in ("mid-verify", "mid-write", "write"):
            st.timeline.seek(st.timeline.step_moment(2, phase))
            frames.append(shooter.shoot(st)[box].astype(int))
        for f in frames[1:]:
            assert np.abs(f - frames[0]).max() == 0
        spec.timeline.seek(spec.timeline.steps[2].draft[0] + 0.02)
        f0 = shooter.shoot(spec)[box].astype(int)
        spec.timeline.seek(spec.timeline.step_moment(2, "mid-draft"))
        f1 = shooter.shoot(spec)[box].astype(int)
        assert np.abs(f1 - f0).max() > 40      # control: the speculative draft turns the drum
    finally:
        st.release()
        spec.release()


def test_bridge_stands_idle_no_columns_no_red_lines(shooter, said):
    st = target_stage()
    st.show_hud = False
    try:
        st.set_view("bridge")
        for phase in ("mid-verify", "check", "mid-write", "write"):
            said.clear()
            st.timeline.seek(st.timeline.step_moment(2, phase))
            img = shooter.shoot(st)
            for i in range(IDLE_METERS):
                for f in (0.05, 0.3, 0.6, 0.95):
                    x, y = st.project(meter_point(i, COLUMN_V0 + f * COLUMN_H, 0.06, 0.0, IDLE_METERS), W, H)
                    px = img[int(round(y)), int(round(x))]
                    assert not copper(px) and not red(px), (phase, i, f, px)
            assert not any(w in said for w in ("通过", "被拒", "未检", "accepted", "rejected", "untested"))
            assert any("no tests" in w for w in said)
        # The idle meters stand there: hiding the bridge changes the plates' box.
        pts = [st.project(meter_point(i, v, 0.0, 0.0, IDLE_METERS), W, H)
               for i in (0, IDLE_METERS - 1) for v in PLATE_V]
        xs, ys = [int(p[0]) for p in pts], [int(p[1]) for p in pts]
        box = (slice(max(min(ys), 0), min(max(ys), H)), slice(max(min(xs), 0), min(max(xs), W)))
        shown = img[box].astype(int)
        st.hidden = {"bridge"}
        gone = shooter.shoot(st)[box].astype(int)
        assert (np.abs(shown - gone).max(axis=2) > 30).mean() > 0.1
    finally:
        st.release()


# ------------------------------------------------------------------ the mill follows roofline(lanes, context)
def _roof_busy(lanes, context, device="h100-sxm", model="llama-3.1-8b"):
    from models.hardware import roofline
    return roofline(device, model, lanes, context).arithmetic_busy


@pytest.mark.parametrize("kw, want_ctx", [
    ({"context": 4096, "cost_ratio": 0.1}, 4096),
    ({"context": 1024}, 1024),
    ({"device": "h200", "model": "llama-3.1-8b", "context": 512}, 512),
])
def test_mill_busy_is_roofline_with_lanes_and_context(kw, want_ctx):
    st = target_stage(batch_lanes=64, **kw)
    device = kw.get("device", "h100-sxm")
    try:
        tl = st.timeline
        s = tl.state_at(tl.step_moment(1, "mid-verify"))
        want = _roof_busy(64, want_ctx, device)
        assert s.lanes_true == 64 and s.extra["context"] == want_ctx
        assert s.mill_busy == pytest.approx(want) and s.extra["pass_busy"] == pytest.approx(want)
        assert want < _roof_busy(64, 0, device) * 0.95          # the context does slow the mill
        # Gear speed: 2 turns/s at 100% busy, over the pass.
        v0, v1 = tl.steps[1].verify
        turned = tl.mill_angle(v1) - tl.mill_angle(v0)
        assert turned == pytest.approx((v1 - v0) * want * 4 * np.pi, rel=1e-9)
    finally:
        st.release()


def test_mill_64_lanes_at_4096_reads_the_panel_figure(said, shooter):
    """The number on the mill is the facts panel's: f"{100 * roofline(...).arithmetic_busy:.1f}%" (≈ 7.8%), on
    its base up close and on its name plate over the whole table (in a frame with room for that plate)."""
    from tests.scene_helpers import Shooter
    st = target_stage(batch_lanes=64, context=4096)
    st.show_hud = False
    large = Shooter(1280, 720)
    try:
        panel = f"{100 * _roof_busy(64, 4096):.1f}%"
        st.timeline.seek(st.timeline.step_moment(1, "mid-verify"))
        for view, sh in (("mill", shooter), ("table", large)):
            said.clear()
            st.set_view(view)
            sh.shoot(st)
            assert any(panel in w for w in said), (view, said)
            assert not any("21.7%" in w or "22%" in w for w in said)
            assert any("4,096" in w for w in said)
        assert "mill" in [p[0] for p in st.label_plates]
    finally:
        large.release()
        st.release()


def test_a_checking_pass_is_one_sequence_reading_its_kv_cache_once(said, shooter):
    """A speculative pass computes γ + 1 positions of each sequence; they read that sequence's KV cache once.
    64 sequences × 5 positions at 4,096 tokens: the mill shows pass_busy(64, 5, 4096) ≈ 39% (the hardware
    panel's figure), not the 320 sequences roofline(320, 4096) would make of the lanes (which reads 5× the KV)."""
    from models.hardware import pass_busy
    from scenes.stage import Stage
    st = Stage(gl_context())
    st.set_run(pair(), list(traces(0, 4, 3)), batch_lanes=64, context=4096)
    st.camera_transition_s = 0.0
    st.show_hud = False
    try:
        want = pass_busy("h100-sxm", "llama-3.1-8b", 64, 5, 4096)
        assert want == pytest.approx(5 * _roof_busy(64, 4096))     # five positions, the same bytes read
        assert abs(want - _roof_busy(320, 4096)) > 0.05            # the lanes-as-a-batch figure is different
        tl = st.timeline
        s = tl.state_at(tl.step_moment(0, "mid-verify"))
        assert s.lanes_true == 320 and s.extra["pass_busy"] == pytest.approx(want)
        v0, v1 = tl.steps[0].verify
        assert tl.mill_angle(v1) - tl.mill_angle(v0) == pytest.approx((v1 - v0) * want * 4 * np.pi, rel=1e-9)
        tl.seek(tl.step_moment(0, "mid-verify"))
        st.set_view("mill")
        said.clear()
        shooter.shoot(st)
        assert any(f"{100 * want:.1f}%" in w for w in said), said
    finally:
        st.release()


def test_without_a_context_setting_each_trace_context_is_used():
    st = target_stage(batch_lanes=9)
    try:
        tl = st.timeline
        for k, tr in enumerate(target_traces()):
            assert tl.steps[k].busy == pytest.approx(_roof_busy(9, len(tr.context)))
    finally:
        st.release()


# ------------------------------------------------------------------ the bridge's words follow the language
def test_verdict_words_follow_the_language(shooter, said):
    st = make_stage(seed=3, gamma=4, steps=8, with_tubes=False)
    try:
        st.set_view("bridge")
        trs = traces(3, 4, 8)
        k = next(i for i, tr in enumerate(trs) if 0 < tr.n_accepted < tr.gamma - 1)   # pass, fail and untested
        st.timeline.seek(st.timeline.step_moment(k, "check"))
        imgs = {}
        for lang in ("zh", "en", "both"):
            st.language = lang
            said.clear()
            imgs[lang] = shooter.shoot(st).astype(int)
            zh = {"通过", "被拒", "未检"} & set(said)
            en = {"accepted", "rejected", "untested"} & set(said)
            if lang == "zh":
                assert zh == {"通过", "被拒", "未检"} and not en
            elif lang == "en":
                assert en == {"accepted", "rejected", "untested"} and not zh, said
            else:
                assert zh == {"通过", "被拒", "未检"} and en == {"accepted", "rejected", "untested"}
        # On screen: the word beside meter 0's mark changes with the language.
        x, y = st.project(meter_point(0, 0.0, 0.0, 0.18, 4) + np.array([0, -0.25, 0.21]), W, H)
        y0, y1, x0, x1 = int(y) - 8, int(y) + 8, int(x) - 12, int(x) + 12
        assert np.abs(imgs["zh"][y0:y1, x0:x1] - imgs["en"][y0:y1, x0:x1]).mean() > 5
    finally:
        st.release()


# ------------------------------------------------------------------ wrong rules in words
def test_wrong_rules_are_named_in_words_not_ids():
    from models.tubes import RULES
    from scenes.layout import EmitContext
    from scenes.palette import get_palette
    from scenes.stage import RunInfo
    from scenes.tubes import rule_label, wrong_rule_text
    assert set(RULES) <= {r for r in RULES if rule_label(r) != (r, r)}
    want = {"resample_from_p": ("用 p 重抽", "resample from p"),
            "exact_match_only": ("只留大模型首选", "keep only the target's top token"),
            "draft_only": ("只让小模型写", "draft only, target never writes")}
    for rule, (zh, en) in want.items():
        for lang in ("zh", "en", "both"):
            ec = EmitContext(get_palette("default"), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), lang, "tubes",
                             RunInfo())
            txt = wrong_rule_text(rule, ec)
            assert rule not in txt and "_" not in txt
            assert (zh in txt) == (lang != "en") and (en in txt) == (lang != "zh")
    assert rule_label("no_bonus") == rule_label("draft_only")
    # Medusa's typical acceptance is another method's rule, not a mistake: named as not exact.
    for lang, (word, name) in {"zh": ("不精确", "典型接受"), "en": ("not exact", "typical acceptance")}.items():
        ec = EmitContext(get_palette("default"), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), lang, "tubes",
                         RunInfo())
        txt = wrong_rule_text("typical", ec)
        assert word in txt and name in txt and "typical_" not in txt and "错误" not in txt and "wrong" not in txt


def test_tubes_show_the_rule_in_words(shooter, said):
    from models.tubes import run_tubes
    st = make_stage(seed=0, gamma=4, steps=3, with_tubes=False)
    try:
        st.set_run(pair(), list(traces(0, 4, 3)), tubes=run_tubes(pair(), rounds=5, seed=1, rule="draft_only"))
        st.set_view("tubes")
        st.language = "en"
        st.timeline.seek(3 * 1.6)
        shooter.shoot(st)
        # one line, or two where one would be too small to read over both racks (then split after its colon)
        assert "wrong rule: draft only, target never writes" in said or \
            ["wrong rule:", "draft only, target never writes"] == [w for w in said if w.startswith(("wrong", "draft"))]
        assert not any("draft_only" in w for w in said)
    finally:
        st.release()


# ------------------------------------------------------------------ a bonus is not a replacement; nine drawn of 64
def test_write_phase_tells_the_bonus_from_a_replacement(shooter, said):
    st = make_stage(seed=3, gamma=4, steps=12, with_tubes=False)
    st.show_hud = True
    st.camera_transition_s = 0.0
    try:
        trs = traces(3, 4, 12)
        bonus = next(k for k, tr in enumerate(trs) if tr.n_accepted == 4)
        repl = next(k for k, tr in enumerate(trs) if tr.n_accepted < 4)
        for lang, bonus_words, repl_words in (("en", "a bonus token", "replace the rejected"),
                                              ("zh", "多送", "换掉被拒的")):
            st.language = lang
            for k, want, not_want in ((bonus, bonus_words, repl_words), (repl, repl_words, bonus_words)):
                said.clear()
                st.timeline.seek(st.timeline.step_moment(k, "mid-write"))
                shooter.shoot(st)
                hud = " | ".join(said.screen)
                assert want in hud and not_want not in hud, (lang, k, hud)
    finally:
        st.release()


def test_sixty_four_sequences_say_that_nine_are_drawn(shooter, said):
    st = target_stage(batch_lanes=64, context=4096)
    st.show_hud = True
    try:
        st.timeline.seek(st.timeline.step_moment(1, "mid-verify"))
        for lang, hud_words, cabinet_words in (("en", "64 lanes lit (9 drawn)", "64 sequences · 9 drawers drawn"),
                                               ("zh", "亮 64 条路（台上画 9 条）", "64 段话 · 画出 9 个抽屉")):
            st.language = lang
            st.set_view("cabinet")
            said.clear()
            shooter.shoot(st)
            assert any(hud_words in w for w in said.screen), said.screen
            assert cabinet_words in said, said
    finally:
        st.release()
    st = target_stage(batch_lanes=9)
    st.show_hud = True
    try:
        st.language = "en"
        st.timeline.seek(st.timeline.step_moment(1, "mid-verify"))
        said.clear()
        shooter.shoot(st)
        assert not any("drawn" in w for w in said)                   # nine of nine: nothing to say
    finally:
        st.release()


def test_the_check_line_names_the_bridge_only_when_it_is_in_the_frame(shooter, said):
    """The HUD's check phase says "each guess: p/q against r" (the meters' words) only where the bridge is in the
    picture; a beat framing the drums and the mill says the target checks the guesses, and sends no one to a part
    they cannot see (chapter 3 used to)."""
    st = make_stage(seed=3, gamma=4, steps=4, with_tubes=False)
    st.show_hud = True
    st.camera_transition_s = 0.0
    try:
        for lang, meter_words, plain in (("en", "p/q against r", "checks the guesses"), ("zh", "p/q 和 r", "核对猜测")):
            st.language = lang
            for parts, named in ((("bigdrum", "mill"), False), (("bridge", "tape"), True)):
                st.set_focus(parts)
                st.timeline.seek(st.timeline.step_moment(0, "mid-check"))
                said.clear()
                shooter.shoot(st)
                hud = " | ".join(said.screen)
                assert (meter_words in hud) == named and (plain in hud) != named, (lang, parts, hud)
    finally:
        st.release()
