"""The Stage: the whole cast-iron table as one object the app and the CLI drive (set a run, pick a view, render).

It wires the timeline (model side: traces -> state at time t) to the parts (view side: state -> instances)
and the renderer (instances -> draw calls). Nothing here computes probabilities: every number it shows comes
from a StepTrace, the TubesResult, or the hardware model.

The Stage is made of mixins, one concern each: framing a beat (scenes.stage_focus), what a class sees of it
(scenes.stage_occlusion), the HUD (scenes.stage_hud) and the words laid over the picture (scenes.stage_labels);
which parts each view shows is scenes.views. Here: the run, the view, the clock and render().
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from scenes.bigdrum import BigDrum
from scenes.bridge import MeterBridge
from scenes.cabinet import KVCabinet
from scenes.camera import VIEWS, Camera, project
from scenes.frame import FrameBuilder, same_key
from scenes.layout import PARTS, EmitContext
from scenes.legibility import clear_of, frame_legibility, measure_text, nearest_wins
from scenes.mill import Mill
from scenes.palette import get_palette
from scenes.readhead import ReadHead
from scenes.renderer import Renderer, RenderStats
from scenes.scene_state import SceneState
from scenes.smalldrum import PencilCart, SmallDrum
from scenes.stage_focus import StageFocus
from scenes.stage_hud import StageHud
from scenes.stage_labels import StageLabels
from scenes.stage_occlusion import StageOcclusion
from scenes.table import CastIronTable
from scenes.tape import PaperTape, TypingHead
from scenes.text_atlas import GlyphAtlas
from scenes.timeline import Timeline, Timing
from scenes.tubes import TestTubes
from scenes.views import EXPLODED_HUD, LIFT_WITH
from models.hardware import get_device, get_model, pass_busy


@dataclass(frozen=True)
class RunInfo:
    """What the parts read about the run on the table besides the timeline's state (scenes.layout.EmitContext.run).

    display: token id -> the glyph drawn; prefix: the text before the first pass; batch_lanes: sequences
    written at once (drawers and lanes); kv_capacity: entries a drawer is drawn to hold; hardware_label: the
    device and model the mill models; context: the context length the mill's KV reads model (None: each pass's
    own)."""
    display: Callable[[int], str] = str
    prefix: tuple[int, ...] = ()
    batch_lanes: int = 1
    kv_capacity: int = 64
    hardware_label: str = ""
    context: int | None = None
    pair: object = None


def _hardware(device: str, model: str):
    """((sequences, positions, context) -> busy fraction, label) from models.hardware: the mill shows
    pass_busy(device, model, sequences, positions, context), the figure the app's panels show: the γ + 1
    positions a pass checks belong to one sequence and read its KV cache once, and the KV reads of a long
    context slow the gears down. InputError now for an unknown device or model."""
    label = f"{get_device(device).label} · {get_model(model).label}"

    def busy_at(sequences: int, positions: int, context: int) -> float:
        return pass_busy(device, model, max(1, int(sequences)), max(1, int(positions)), max(0, int(context)))

    return busy_at, label


@dataclass
class FramePlan:
    """What one render() settles before it lays anything, read by every step that follows: the view-projection,
    the size drawn at (width x height, render_scale of the target's out_w x out_h), the state drawn, the emit
    context and the FrameBuilder being filled, the parts' lifts (offsets) and which parts are drawn and named."""
    vp: np.ndarray
    width: int
    height: int
    out_w: int
    out_h: int
    state: SceneState
    ec: EmitContext
    fb: FrameBuilder
    offsets: dict
    drawn: Callable[[str], bool]    # the part is drawn in this frame (not hidden, shown by the view)
    wide: bool                      # the frame names the parts on plates (the whole table, a frame of several)
    mill_plate: bool                # the mill's readout rides on a screen plate
    ref: float                      # the picture height text is sized for, in the pixels drawn
    min_px: float                   # the smallest em drawn, in the pixels drawn

    @property
    def scaled(self) -> bool:
        """Drawn at a reduced internal scale, then stretched over the target."""
        return (self.width, self.height) != (self.out_w, self.out_h)


class Stage(StageFocus, StageOcclusion, StageHud, StageLabels):
    """The table. set_run(...) then render(fbo, w, h) each frame; timeline is the clock the app advances."""

    def __init__(self, ctx, palette: str = "default"):
        self.ctx = ctx
        self.palette = get_palette(palette)
        self.renderer = Renderer(ctx)
        self.atlas = GlyphAtlas(ctx)
        self.atlas.ensure("0123456789.%>/·:γ= 第步轮条路亮次每目标独写投机解码其他通过退回未检KVrp")
        self.camera = Camera("table")
        self.view = "table"
        self.language = "both"          # zh | en | both
        self.show_labels = True
        self.show_hud = True
        self.samples = 0                # MSAA samples for render(); 0 = none (cheapest on llvmpipe)
        # Internal render scale (0.25-1): the scene is drawn at width x height x scale and stretched to the
        # target, filtered. On software GL (llvmpipe) the frame's cost follows its pixels, so 0.75 costs
        # roughly 60% of a full-size frame; text softens a little. The app may lower it on slow GL.
        self.render_scale = 1.0
        self.camera_transition_s = 0.7
        # render() waits for the GL to finish so frame_ms is the whole frame; a window loop may set False
        # to let llvmpipe rasterise while Python builds the UI (frame_ms then counts only the submission).
        self.sync = True
        self.hidden: set[str] = set()   # parts not drawn (teaching, tests)
        self.label_plates: list[tuple] = []   # last frame's part-name plates: (part, x, y, w, h), target pixels
        # last frame's labels as a class reads them: (part, plate (x, y, w, h), anchor (x, y) on the part where its
        # leader ends, the part's screen box (x0, y0, x1, y1)), target pixels
        self.label_leaders: list[tuple] = []
        self._label_boxes = (None, {})
        self.label_keep_out: list[tuple] = []  # last frame's readout rectangles the plates kept clear of
        self.callouts: list[tuple] = []       # last frame's cut-away plates: (piece, (x, y, w, h), anchor, box)
        self.lane_numbers: list[tuple] = []   # last frame's lane numbers: (lane, x, y, size_px, end_x, end_y), pixels
        # Text is sized for a picture this many pixels tall (None: the render target's height). The app sets
        # the window's height: the table gets only part of the window, and its labels must read as the
        # panels' text does (scenes.legibility).
        self.text_height: float | None = None
        self._measuring = False     # occlusion() is drawing its depth frames: keep the camera as it stands
        # Last frame's legibility: smallest text drawn (px), lines left out as too small, overlapping boxes.
        self.legibility: dict = {"min_text_px": None, "hidden": [], "overlaps": [], "boxes": []}
        # What the HUD's first lines say instead of the pass counter (a mode's own activity: the tube
        # experiment's round, a step-through stop): [(zh, en)]; None = the pass and its phase (hud_lines).
        self._hud_lines: list[tuple[str, str]] | None = None
        self.hud_lanes = True       # the HUD counts lit lanes (the tour's first chapter, before lanes: no)
        # The lesson's numbers kept back for the class to predict (fact names: busy, busy_spec, tv_left, tv_right):
        # the table's own readouts of them (the mill's busy share, the tubes' TV) say '?' as the panel does.
        self.kept_back: frozenset[str] = frozenset()
        self.hud_text: list[str] = []         # the lines the HUD showed in the last frame
        # every line of text the last frame laid, laid anew or replayed: (text, on screen?)
        self.frame_text: list[tuple[str, bool]] = []
        self._reduced_motion = False
        self._rendered = False
        self._explode = 0.0
        self._explode_from = 0.0
        self._explode_to = 0.0
        self._explode_elapsed = 0.0
        self._explode_duration = 0.0
        self._msaa = None
        self._scaled = None
        self.table = CastIronTable()
        self.bigdrum = BigDrum()
        self.readhead = ReadHead(self.bigdrum)
        self.smalldrum = SmallDrum(self.bigdrum.n_pins)
        self.pencil = PencilCart()
        self.tape = PaperTape()
        self.typing = TypingHead()
        self.bridge = MeterBridge()
        self.mill = Mill()
        self.cabinet = KVCabinet()
        self.tubes = TestTubes()
        # Front to back-ish, the table last: nearer surfaces fill the depth buffer first, so the big table
        # top behind them is rejected before shading.
        self.parts = [self.tape, self.typing, self.bridge, self.pencil, self.smalldrum, self.tubes, self.readhead,
                      self.mill, self.bigdrum, self.cabinet, self.table]
        self.run = RunInfo()
        # Each part's last emission and what it was emitted from (_replay_key): a part whose inputs are unchanged
        # (most of the table in most frames) is replayed, not laid again.
        self._replays: dict[str, tuple] = {}
        self._still_seen = None         # the last frame's still-layer key (render: a layer is used when it repeats)
        self._label_replay = None       # the last name plates: (what they were laid from, emission, plates, leaders)
        self._readout_rects = None      # (what they were measured from, the rectangles): readout_rects
        self._riders: list[tuple] = []  # this frame's riders to name (StageLabels._rider_items)
        self._part_rects: list[tuple] = []  # this frame's named parts' boxes (x, y, w, h): the riders' plates keep off
        # Draw what did not change once, into a layer each frame starts from (Renderer.begin_still); off: every
        # frame draws everything (the two give the same picture: tests/test_scene_replay.py).
        self.still_layer = True
        self.traces: list = []
        self.timeline = Timeline([])
        # A framed beat: the parts a sentence names (set_focus), the camera fitted to them in the frame left free
        # by the HUD. `fit` holds what the fit used: the parts' world boxes, the HUD's rectangle, the free one.
        self.focus: tuple[str, ...] | None = None
        self.fit: dict = {}
        self._fit_key = None
        self._size = (1280, 720)        # the frame size a fit assumes until render() tells the real one

    # ---------------------------------------------------------------- configuration
    def set_run(self, pair, traces, *, tubes=None, device: str = "h100-sxm", model: str = "llama-3.1-8b",
                batch_lanes: int = 1, context: int | None = None, cost_ratio: float = 0.1) -> None:
        """Show a run: its step traces (in order), optionally a TubesResult, the device and model the mill
        models, the number of sequences batched (lanes and drawers), the context length the mill's KV reads
        model (None: each pass's own context) and the draft's cost ratio c (the small drum's speed)."""
        traces = list(traces or [])
        batch_lanes = max(1, int(batch_lanes))
        prefix = tuple(traces[0].context) if traces else ()
        end_len = len(traces[-1].context) + len(traces[-1].tokens_written) if traces else 0
        busy_at, hw_label = _hardware(device, model)
        context = None if context is None else max(0, int(context))
        self.run = RunInfo(display=pair.display if pair is not None else str, prefix=prefix,
                           batch_lanes=batch_lanes, kv_capacity=max(16, int(end_len * 1.15) + 4),
                           hardware_label=hw_label, context=context, pair=pair)
        self.traces = traces
        self.tubes.set_result(tubes)
        self._replays.clear()           # the parts' own inputs (the tubes' result) may have changed
        old = self.timeline
        self.timeline = Timeline(traces, timing=Timing(cost_ratio=float(cost_ratio)), batch_lanes=batch_lanes,
                                 busy_at=busy_at, context=context,
                                 tube_rounds=tubes.rounds if tubes is not None else 0, prefix_len=len(prefix))
        self.timeline.paused, self.timeline.speed = old.paused, old.speed
        self.timeline.reduced_motion = self._reduced_motion
        if pair is not None:
            tokens = {t for tr in traces for t in set(tr.guesses) | {tr.final_token}}
            tokens |= {nd.token for tr in traces if tr.tree is not None for nd in tr.tree.nodes}
            self.atlas.ensure("".join(pair.display(t) for t in tokens))

    def set_view(self, name: str) -> None:
        """Move the camera to a view (and lift or lower the parts for the exploded one) over
        camera_transition_s of the clock that advance(dt) drives; at once before the first frame."""
        Camera.check(name)
        self.focus, self.fit, self._fit_key = None, {}, None
        self.camera.move_to(name, self._lift_to(name))
        self.view = name

    def _lift_to(self, view: str) -> float:
        """Start lifting the parts out (exploded) or setting them down; returns the move's duration."""
        duration = 0.0 if (self._reduced_motion or not self._rendered) else self.camera_transition_s
        self._explode_from = self._explode
        self._explode_to = 1.0 if view == "exploded" else 0.0
        self._explode_elapsed = 0.0
        self._explode_duration = duration
        if duration == 0.0:
            self._explode = self._explode_to
        return duration

    def advance(self, dt: float, play: bool = True) -> None:
        """The one clock of everything that moves: the timeline (when `play`), the camera's flight and the
        exploded view's lift all move dt seconds on. Nothing reads the wall clock, so the same sequence of
        dt gives the same frames on any machine."""
        if play:
            self.timeline.advance(dt)
        self.camera.advance(dt)
        if self._explode != self._explode_to:
            self._explode_elapsed += max(dt, 0.0)
            k = 1.0 if self._explode_duration <= 0 else min(1.0, self._explode_elapsed / self._explode_duration)
            k = k * k * (3 - 2 * k)
            self._explode = self._explode_from + (self._explode_to - self._explode_from) * k

    def set_palette(self, name: str) -> None:
        self.palette = get_palette(name)

    @property
    def reduced_motion(self) -> bool:
        return self._reduced_motion

    @reduced_motion.setter
    def reduced_motion(self, value: bool) -> None:
        self._reduced_motion = bool(value)
        self.timeline.reduced_motion = self._reduced_motion

    @property
    def hud_lines(self) -> list[tuple[str, str]] | None:
        """What the HUD says instead of the pass and its phase: the lines a mode set, else over a framed beat of
        the table taken apart what that beat shows (views.EXPLODED_HUD: the parts lifted apart, not a pass the
        class cannot follow on parts that small), else None."""
        if self._hud_lines is not None:
            return self._hud_lines
        if self.focus is not None and self.view == "exploded":
            return list(EXPLODED_HUD)
        return None

    @hud_lines.setter
    def hud_lines(self, lines: list[tuple[str, str]] | None) -> None:
        self._hud_lines = None if lines is None else list(lines)

    # ---------------------------------------------------------------- queries (tests, the app's overlays)
    def viewproj(self, width: int, height: int) -> np.ndarray:
        return self.camera.viewproj(width / max(height, 1))

    def project(self, point, width: int, height: int) -> tuple[float, float]:
        x, y, _ = project(self.viewproj(width, height), point, width, height)
        return x, y

    def state(self):
        """The table's state now, as drawn (with the numbers a lesson keeps back while it asks for them)."""
        state = self.timeline.state_at()
        if self.kept_back:
            state.extra = {**state.extra, "kept_back": self.kept_back}
        return state

    def offsets(self) -> dict:
        """Exploded-view lift of every part now."""
        return {name: tuple(self._explode * v for v in info.lift) for name, info in PARTS.items()}

    def tape_cells(self):
        """The tape's visible cells now (characters, marks and where they are), as drawn."""
        return self.tape.cells(self.state(), self.run.prefix, self.run.display)

    # ---------------------------------------------------------------- drawing
    def render(self, fbo, width: int, height: int) -> RenderStats:
        """Draw the table as it stands now into `fbo` (None: the screen), width x height pixels: the parts (those
        unchanged replayed), the words over them, then the picture. The frame's words and measures are left on
        the stage for its readers (label_plates, callouts, lane_numbers, legibility, hud_text, frame_text)."""
        t0 = time.perf_counter()        # only for stats.frame_ms: what is drawn never depends on the wall clock
        self.frame_for(width, height)
        f = self._plan_frame(width, height)
        still, still_key = self._emit_parts(f, fbo)
        self._lay_words(f)
        stats = self._draw_frame(fbo, f, still, still_key)
        if f.scaled:
            self._scale_outputs(f.out_h / f.height)
        self._rendered = True
        stats.frame_ms = (time.perf_counter() - t0) * 1000.0
        self.last_stats = stats
        return stats

    def _plan_frame(self, width: int, height: int) -> FramePlan:
        """Settle the frame: the camera's view-projection, the size drawn at (render_scale), the state, which
        parts are drawn and which are named on plates, the text sizes and the emit context."""
        vp = self.viewproj(width, height)
        scale = min(max(float(self.render_scale or 1.0), 0.25), 1.0)
        out_w, out_h = width, height
        width, height = max(1, int(round(width * scale))), max(1, int(round(height * scale)))
        right, up = self.camera.basis()
        state = self.state()
        framed_many = self.focus is not None and len(self.focus) > 1 and self.view != "exploded"
        wide = self.show_labels and ((self.focus is None and self.view in ("table", "exploded"))
                                     or framed_many or (self.focus is not None and self.view == "exploded"))
        shows = self.shows()
        drawn = lambda name: name not in self.hidden and (shows is None or name in shows)  # noqa: E731
        # The mill's readout rides on a screen plate wherever the mill is seen from afar or from in front of
        # the bridge (which hides its base); only its own close-up (or a beat framing it alone) reads the base.
        mill_alone = self.view == "mill" or (self.focus == ("mill",) and self.view != "exploded")
        mill_plate = self.show_labels and not mill_alone and drawn("mill")
        ref, min_px = self._text_scale(out_h, height)        # text sizes in this frame's pixels
        ec = EmitContext(self.palette, right, up, self.language, self.view, self.run,
                         labelled=wide or mill_plate, text_ref=ref, min_px=min_px, mill_sign=self.mill_framed_alone)
        return FramePlan(vp, width, height, out_w, out_h, state, ec, FrameBuilder(self.atlas), self.offsets(), drawn,
                         wide, mill_plate, ref, min_px)

    def _emit_parts(self, f: FramePlan, fbo):
        """Every drawn part's instances and words into f.fb: laid anew where what it reads changed, else its last
        emission replayed (into the still layer's builder when one is used: a single-sampled frame into `fbo`,
        not the screen, whose unchanged parts were unchanged in the last frame too). Returns (the still layer's
        FrameBuilder or None, its key)."""
        fb = f.fb
        keys = {}
        for part in self.parts:
            if f.drawn(part.name):
                lift = np.asarray(f.offsets.get(LIFT_WITH.get(part.name, part.name), (0.0, 0.0, 0.0)),
                                  dtype=np.float64)
                keys[part.name] = (self._replay_key(part, f.state, f.ec, lift), lift)
        # The parts unchanged since the last frame, as the still layer would show them: used when the same
        # parts were unchanged in the last frame too, under the same camera (a moving camera or a part that
        # moves in every other frame would only draw the layer anew each time).
        unchanged = [n for n, (k, _) in keys.items() if n in self._replays and same_key(self._replays[n][0], k)]
        still_key = None
        if self.still_layer and not self.samples and fbo is not None:
            still_key = (tuple(self._replays[n][1] for n in unchanged), tuple(unchanged), f.vp.tobytes(),
                         f.width, f.height, self.palette)
        use_still = still_key is not None and self._still_seen is not None and same_key(self._still_seen, still_key)
        self._still_seen = still_key
        still = FrameBuilder(self.atlas) if use_still else None
        for part in self.parts:
            if part.name not in keys:
                continue
            key, fb.offset = keys[part.name]
            if part.name not in unchanged:
                mark = fb.mark()
                part.emit(fb, f.state, f.ec)
                self._replays[part.name] = (key, fb.since(mark))
            else:                       # its last emission, into the still layer's builder when one is used
                fb.replay(self._replays[part.name][1], still=still)
        fb.offset = np.zeros(3)
        return still, still_key

    def _lay_words(self, f: FramePlan) -> None:
        """The words over the parts, each kept clear of those laid before it: the HUD, the lane numbers, the
        cut-away's callouts, the name plates and the riders' plates; then the frame's legibility and its text."""
        # The parts' own words and numbers, measured before any plate is placed: those too small to read are
        # left out, and the name plates keep off the rest (a plate never covers a readout or the tape).
        _, world_hidden, _, world_boxes, world_items = measure_text(f.fb.text_items, f.vp, f.width, f.height,
                                                                    f.min_px, "world")
        hud = self._lay_hud(f)
        # Nothing is read through the HUD: a part's words under it (a rack of tubes behind it in the tape's
        # view) are left out rather than covered.
        world_boxes, world_items = nearest_wins(world_boxes, world_items, world_hidden)
        world_boxes, world_items, world_min = clear_of(hud, world_boxes, world_items, world_hidden)
        self._lay_lane_numbers(f, hud)
        self._lay_cutaway_callouts(f, hud)
        hud = self._lay_plates(f, hud, world_boxes)
        self._lay_rider_callouts(f, hud, world_boxes)
        self.legibility = frame_legibility(f.fb, f.vp, f.width, f.height, f.min_px, f.out_h / f.height,
                                           (world_min, world_hidden, world_boxes))
        self.hud_text = list(getattr(f.fb, "hud_text", []))
        self.frame_text = [(it.text, it.screen) for it in f.fb.text_items]

    def _draw_frame(self, fbo, f: FramePlan, still, still_key) -> RenderStats:
        """Draw f.fb into `fbo` (None: the screen): from the still layer or the backdrop, into the multisampled
        target when samples are asked for, and at a reduced scale then stretched over the target."""
        ctx = self.ctx
        width, height = f.width, f.height
        target = fbo if fbo is not None else ctx.screen
        frame_fbo = self._scaled_target(width, height) if f.scaled else target
        draw_to = self._msaa_target(width, height) if self.samples else frame_fbo
        draw_to.use()
        ctx.viewport = (0, 0, width, height)
        stats = RenderStats(0, 0, 0.0, still=still is not None)
        if still is not None:
            backdrop = self.renderer.begin_still(draw_to, width, height, self.palette, still, still_key, f.vp,
                                                 self.camera.pose.eye, stats)
        else:
            backdrop = self.renderer.begin(draw_to, width, height, self.palette, multisampled=bool(self.samples))
        draw_to.use()
        ctx.viewport = (0, 0, width, height)
        self.renderer.draw(f.fb, f.vp, self.camera.pose.eye, self.palette, width, height, stats,
                           backdrop_done=backdrop)
        if draw_to is not frame_fbo:
            ctx.copy_framebuffer(frame_fbo, draw_to)
        if f.scaled:
            target.use()
            ctx.viewport = (0, 0, f.out_w, f.out_h)
            self.renderer.upscale(self._scaled[2], stats)
        target.use()
        if self.sync:
            ctx.finish()
        return stats

    def _scaled_target(self, width: int, height: int):
        """The framebuffer a reduced-scale frame is drawn into (a filtered texture, stretched by upscale)."""
        ctx = self.ctx
        if self._scaled is None or self._scaled[0] != (width, height):
            self._release_scaled()
            tex = ctx.texture((width, height), 4)
            tex.filter = (ctx.LINEAR, ctx.LINEAR)
            depth = ctx.depth_renderbuffer((width, height))
            self._scaled = ((width, height), ctx.framebuffer([tex], depth), tex, depth)
        return self._scaled[1]

    def _msaa_target(self, width: int, height: int):
        """The multisampled framebuffer a frame is drawn into when `samples` is set (then copied, resolved)."""
        ctx = self.ctx
        if self._msaa is None or self._msaa[0] != (width, height, self.samples):
            self._release_msaa()
            color = ctx.renderbuffer((width, height), 4, samples=self.samples)
            depth = ctx.depth_renderbuffer((width, height), samples=self.samples)
            self._msaa = ((width, height, self.samples), ctx.framebuffer([color], depth), color, depth)
        return self._msaa[1]

    def _scale_outputs(self, k: float) -> None:
        """The frame's plates, leaders, callouts, keep-outs and lane numbers in the target's pixels (k: target
        pixels per pixel drawn)."""
        self.label_plates = [(n, x * k, y * k, w * k, h * k) for n, x, y, w, h in self.label_plates]
        self.label_leaders = [(n, tuple(v * k for v in r), tuple(v * k for v in a), tuple(v * k for v in b))
                              for n, r, a, b in self.label_leaders]
        self.callouts = [(n, tuple(v * k for v in r), tuple(v * k for v in a), tuple(v * k for v in b))
                         for n, r, a, b in self.callouts]
        self.label_keep_out = [(x * k, y * k, w * k, h * k) for x, y, w, h in self.label_keep_out]
        self.lane_numbers = [(n, *(v * k for v in rest)) for n, *rest in self.lane_numbers]

    def _replay_key(self, part, state, ec, lift) -> tuple:
        """What a part's emission is made from: the SceneState fields it declares (`reads`;
        tests/test_scene_replay.py holds each part to them), the emit context but for the camera (no part faces
        it), its lift and the glyph atlas's places."""
        return (tuple(getattr(state, f) for f in part.reads), ec.palette, ec.language, ec.view, ec.run, ec.labelled,
                ec.mill_sign, ec.text_ref, ec.min_px, tuple(lift.tolist()), self.atlas.generation)

    @property
    def animating(self) -> bool:
        """True while a camera move or explode transition is running (render even when the clock is paused)."""
        return self.camera.moving or self._explode != self._explode_to

    def _release_msaa(self) -> None:
        if self._msaa is not None:
            for obj in self._msaa[1:]:
                obj.release()
            self._msaa = None

    def _release_scaled(self) -> None:
        if self._scaled is not None:
            for obj in self._scaled[1:]:
                obj.release()
            self._scaled = None

    def release(self) -> None:
        self._release_msaa()
        self._release_scaled()
        self.atlas.release()
        self.renderer.release()


__all__ = ["Stage", "RunInfo", "RenderStats", "VIEWS"]
