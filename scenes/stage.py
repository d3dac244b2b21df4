"""The Stage: the whole cast-iron table as one object the app and the CLI drive (set a run, pick a view, render).

It wires the timeline (model side: traces -> state at time t) to the parts (view side: state -> instances)
and the renderer (instances -> draw calls). Nothing here computes probabilities: every number it shows comes
from a StepTrace, the TubesResult, or the hardware model.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import numpy as np

from models.drafters import DRUM, kind_of
from scenes.bigdrum import BigDrum
from scenes.bridge import MeterBridge
from scenes.cabinet import KVCabinet
from scenes.camera import VIEWS, Camera, project
from scenes.framing import projected_rect
from scenes.labels import emit_callouts, emit_hud, emit_part_labels
from scenes.layout import CABINET_BOX, PARTS, TAPE_DEPTH, TAPE_X, EmitContext, tape_point
from scenes.legibility import clear_of, group_boxes, measure_text, min_text_px, nearest_wins, overlapping_pairs
from scenes.mill import Mill
from scenes.palette import get_palette
from scenes.readhead import CUTAWAY_PIECES, ReadHead
from scenes.renderer import FrameBuilder, Renderer, RenderStats
from scenes.smalldrum import PencilCart, SmallDrum
from scenes.table import CastIronTable
from scenes.tape import PaperTape, TypingHead
from scenes.text_atlas import GlyphAtlas
from scenes.timeline import Timeline, Timing
from scenes.tubes import TestTubes, tube_round_words, wrong_rule_words

# Which part each close-up view is about (its title in the HUD; the exploded view lifts them all).
VIEW_PART = {"bigdrum": "bigdrum", "readhead": "readhead", "cutaway": "readhead", "smalldrum": "smalldrum",
             "tape": "tape", "bridge": "bridge", "mill": "mill", "cabinet": "cabinet", "tubes": "tubes"}
# A close-up lifts its part out and shows it alone on the table, with the parts it works with.
VIEW_SHOWS = {
    "bigdrum": {"table", "bigdrum", "readhead"},
    "readhead": {"table", "bigdrum", "readhead"},
    "cutaway": {"table", "bigdrum", "readhead"},
    "smalldrum": {"table", "smalldrum", "pencil", "tape", "typing"},
    "mill": {"table", "mill", "bigdrum", "readhead"},
    "cabinet": {"table", "cabinet"},
    "tubes": {"table", "tubes"},
}
# Parts that ride along with another part when the table is taken apart: the pencil cart's rail runs along the
# tape (it writes there), so the small drum can be lifted clear of the bridge without dragging the rail along.
LIFT_WITH = {"pencil": "tape", "typing": "tape"}
# What a part is built with and so partly behind by design, not hidden by it (Stage.occlusion): the read head
# sits under the big drum and covers the lower half of its pins from any view that reads the drum.
ASSEMBLED_WITH = {"bigdrum": ("readhead",)}
HIDDEN_BEHIND = 0.5     # a framed part more than half hidden by other parts is reported (beat_report)
RIDERS = {"smalldrum": ("pencil",), "tape": ("typing",)}
# A framed beat (set_focus) draws the parts it names, what rides with them, and what they work with.
FOCUS_WITH = {"bigdrum": ("readhead",), "readhead": ("bigdrum",)}
FOCUS_VIEWS = ("table", "cutaway", "exploded")     # how the table stands while parts are framed


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
    from models.hardware import get_device, get_model, pass_busy
    label = f"{get_device(device).label} · {get_model(model).label}"

    def busy_at(sequences: int, positions: int, context: int) -> float:
        return pass_busy(device, model, max(1, int(sequences)), max(1, int(positions)), max(0, int(context)))

    return busy_at, label


def _same(a, b) -> bool:
    """Two replay keys are equal (a value that cannot say, an array inside a dict, counts as changed)."""
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False


class Stage:
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
        # experiment's round, a step-through stop): [(zh, en)]; None = the pass and its phase.
        self.hud_lines: list[tuple[str, str]] | None = None
        self.hud_lanes = True       # the HUD counts lit lanes (the tour's first chapter, before lanes: no)
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

    def set_focus(self, parts, view: str = "table") -> None:
        """Frame exactly these parts (names of scenes.layout.PARTS): the camera flies (over camera_transition_s
        of the one clock) to the pose that fits their boxes in the frame the HUD leaves free, looking from
        where their writing reads (scenes.framing), and holds it; the table shows them and what they work
        with. `view` is how the table stands meanwhile: 'table', 'cutaway' (the read head cut open) or
        'exploded' (every part lifted out). InputError for an unknown part or view."""
        from corpus.errors import InputError
        parts = tuple(parts)
        unknown = [p for p in parts if p not in PARTS]
        if unknown or not parts:
            raise InputError(f"unknown part(s) {', '.join(unknown) or '(none)'} (choose from {', '.join(PARTS)})")
        if view not in FOCUS_VIEWS:
            raise InputError(f"a framed beat stands the table as {' / '.join(FOCUS_VIEWS)}, not {view!r}")
        self.focus = parts
        self.view = view
        duration = self._lift_to(view)
        self._refit(duration)

    def bridge_in_frame(self) -> bool:
        """Whether the bridge of meters is in the picture: the whole table, the table taken apart, or a beat that
        frames it (a beat framing other parts may draw it at the edge of the frame or not at all)."""
        if self.focus is not None:
            return "bridge" in self.focus or self.view == "exploded"
        shows = VIEW_SHOWS.get(self.view)
        return shows is None or "bridge" in shows

    def shows(self) -> set[str] | None:
        """The parts drawn now (None: all of them)."""
        if self.focus is None:
            return VIEW_SHOWS.get(self.view)
        if self.view == "exploded":
            return None
        shown = {"table", *self.focus}
        for p in self.focus:
            shown.update(RIDERS.get(p, ()))
            shown.update(FOCUS_WITH.get(p, ()))
        return shown

    def part_boxes(self, parts, whole: bool = False) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """World bounds of each part as drawn now with the lift it is heading for (scenes.framing): its own
        instances and words (not those of the parts riding with it, which stand elsewhere: the pencil cart
        writes on the tape); the tape's is its writing window, the read
        head's its teeth, rods and lanes, the bridge's its meters on their beam. `whole`: all of each part as
        drawn, with the parts that ride with it (what must not overlap another part when the table is taken
        apart)."""
        from scenes.framing import builder_bounds, readhead_box, tape_box
        state = self.timeline.state_at()
        right, up = self.camera.basis()
        ec = EmitContext(self.palette, right, up, self.language, self.view, self.run)
        by_name = {p.name: p for p in self.parts}
        out = {}
        for name in parts:
            lift = PARTS[name].lift if name in PARTS else (0.0, 0.0, 0.0)     # the table itself never lifts
            off = np.asarray(lift, dtype=np.float64) * self._explode_to
            if name in ("tape", "readhead") and not whole:
                tr = self.traces[state.step] if 0 <= state.step < len(self.traces) else None
                depth = len(tr.tree.widths) if tr is not None and tr.tree is not None else 0
                lo, hi = (tape_box(state.gamma if not state.extra.get("target_only") else 0,
                                   2 if depth else self._tape_before(state.step), depth) if name == "tape"
                          else readhead_box(self.readhead))
                out[name] = (lo + off, hi + off)
                continue
            fb = FrameBuilder(self.atlas)
            fb.offset = off
            by_name[name].emit(fb, state, ec)
            for rider in ([r for r, host in LIFT_WITH.items() if host == name] if whole else ()):
                by_name[rider].emit(fb, state, ec)
            bounds = builder_bounds(fb)
            if bounds is not None and name == "bridge" and not whole:
                # The meters and the beam they stand on, not its legs: the meters are what a sentence means.
                from scenes.bridge import BEAM_H, BEAM_Y
                lo, hi = bounds
                bounds = (np.array([lo[0], max(lo[1], BEAM_Y - BEAM_H / 2 - 0.05 + off[1]), lo[2]]), hi)
            if bounds is not None:
                out[name] = bounds
        return out

    def _tape_before(self, step: int) -> int:
        """Cells of text before the writing window a sentence about the tape means: three, or in a lookup pass back
        to the earlier occurrence it copies from (as far as the tape's visible stretch goes; the tape glides back
        for one farther), so the class sees both where the text's end occurred before and what followed it."""
        from scenes.layout import TAPE_X, window
        tr = self.traces[step] if 0 <= step < len(self.traces) else None
        span = getattr(tr, "source_span", None)
        if not span:
            return 3
        x0, cell = window(len(tr.guesses))
        room = int((x0 - TAPE_X[0]) / cell)
        return max(3, min(len(tr.context) - span["match"][0], room))

    def hud_rect(self, width: int, height: int) -> tuple[float, float, float, float] | None:
        """(x0, y0, x1, y1) of the largest HUD this run can show in a frame of this size (None: no HUD)."""
        if not self.show_hud:
            return None
        from scenes.labels import hud_extent
        right, up = self.camera.basis()
        ref, min_px = self._text_scale(height, height)
        ec = EmitContext(self.palette, right, up, self.language, self.view, self.run, text_ref=ref, min_px=min_px)
        lanes = max((st.lanes for st in self.timeline.steps), default=0)
        target_only = bool(self.timeline.steps) and all(st.target_only for st in self.timeline.steps)
        gamma = max((len(tr.guesses) for tr in self.traces), default=0)
        # Other drafters say who drafted (and their own phases): the longest of those words count too (per
        # drafter, the pass whose mode line is the longest).
        from scenes.labels import drafter_mode
        drafted: dict = {}
        for tr in self.traces:
            if kind_of(tr.drafter).look != DRUM:         # a drum's pass is said by γ alone
                extra = Timeline._drafter_extra(tr)
                probe = SimpleNamespace(drafter=tr.drafter, extra=extra, gamma=gamma)
                n = len(drafter_mode(probe, ec) or "")
                if n >= drafted.get(tr.drafter, (-1, None))[0]:
                    drafted[tr.drafter] = (n, (tr.drafter, extra))
        drafted = {k: v[1] for k, v in drafted.items()}
        x, y, w, h = hud_extent(self.atlas, height, ec, len(self.traces), self._title(), gamma, lanes, target_only,
                                passes=self.hud_passes(), activity=self.hud_activity(speed=100.0),
                                drafted=list(drafted.values()))
        return (x, y, x + w, y + h)

    def _text_scale(self, out_h: float, height: float) -> tuple[float, float]:
        """(the picture height text is sized for, the smallest em allowed), both in pixels of a frame `height`
        tall drawn for a target `out_h` tall (scenes.legibility): the app sizes the table's text for its window."""
        ref_h = self.text_height or out_h
        return float(ref_h) * height / out_h, min_text_px(ref_h) * height / out_h

    def hud_activity(self, rnd: int | None = None, speed: float | None = None):
        """What the HUD says instead of the pass counter: a mode's own lines (hud_lines), or over the test tubes
        the experiment's round (by default the last, at the clock's speed); None: the pass and its phase."""
        if self.hud_lines is not None:
            return self.hud_lines
        r = self.tubes.result
        if self.hud_passes() or r is None:
            return None
        rnd = r.rounds - 1 if rnd is None else min(int(rnd), r.rounds - 1)
        words = [tube_round_words(r, rnd, self.timeline.speed if speed is None else speed)]
        if r.rule != "exact" and self.view == "table":
            words.append(wrong_rule_words(r.rule))    # the tubes draw it over the racks in their own view only
        return words

    def hud_passes(self) -> bool:
        """The HUD tells the passes of the run, except over the test tubes alone (they run rounds of their own)."""
        return not (self.view == "tubes" or self.focus == ("tubes",))

    def _title(self):
        if self.view == "cutaway":
            return ("读头剖面", "read head, cut away")
        if self.focus is not None:
            if len(self.focus) == 1 and self.view != "exploded":
                return PARTS[self.focus[0]].zh, PARTS[self.focus[0]].en
            return None
        part = VIEW_PART.get(self.view)
        return (PARTS[part].zh, PARTS[part].en) if part else None

    def _refit(self, duration: float) -> None:
        """Fit the camera to the focus parts in the frame the HUD leaves free: below the HUD or right of it,
        whichever shows the parts larger."""
        from scenes.framing import fit_pose, view_direction
        w, h = self._size
        boxes = self.part_boxes(self.focus)
        hud = self.hud_rect(w, h)
        m = 0.03 * h
        if hud is None:
            rects = [(m, m, w - m, h - m)]
        else:
            rects = [(m, hud[3] + m, w - m, h - m), (hud[2] + m, m, w - m, h - m)]
        direction = view_direction(self.focus, cutaway=self.view == "cutaway")
        best = None
        for rect in rects:
            if rect[2] - rect[0] < 0.2 * w or rect[3] - rect[1] < 0.2 * h:
                continue
            pose, _ = fit_pose(list(boxes.values()), direction, rect, w, h)
            dist = float(np.linalg.norm(np.subtract(pose.eye, pose.target)))
            if best is None or dist < best[0]:
                best = (dist, pose, rect)
        if best is None:
            return
        _, pose, rect = best
        self.camera.move_to(pose, duration)
        self.fit = {"boxes": boxes, "hud": hud, "rect": rect, "size": (w, h)}
        self._fit_key = self._focus_key(w, h)

    def frame_for(self, width: int, height: int) -> None:
        """Refit a framed beat when what it was fitted for changed (render() calls this first): a new frame size
        (the first frame, a resize) is fitted at once, a new run or language flies there."""
        if self.focus is None or self._focus_key(width, height) == self._fit_key or self._measuring:
            return                  # (occlusion() draws smaller frames under the camera the beat is fitted with)
        resized = (width, height) != self._size
        self._size = (width, height)
        self._refit(0.0 if (resized or not self._rendered or self._reduced_motion) else self.camera_transition_s)

    def _focus_key(self, w: int, h: int):
        return (self.focus, self.view, w, h, self.language, len(self.traces), self.show_hud, id(self.timeline))

    def label_targets(self, vp, width: int, height: int, hidden, offsets, state) -> dict:
        """{part: ((ax, ay), (x0, y0, x1, y1))} for every part that may be named now: the point on its body its
        leader ends at and its projected box, both in pixels; parts whose point is off the frame are left out."""
        names = tuple(n for n in PARTS if n not in hidden)
        key = (round(self._explode, 3), self._explode_to, self.view, id(self.timeline), state.step, names)
        if self._label_boxes[0] != key:
            self._label_boxes = (key, self.part_boxes(names))
        boxes = self._label_boxes[1]
        out = {}
        for name in names:
            lo, hi = boxes[name]
            off = np.asarray(offsets.get(name, (0, 0, 0)), dtype=np.float64)
            shift = off - np.asarray(PARTS[name].lift, dtype=np.float64) * self._explode_to
            rect = projected_rect(vp, lo + shift, hi + shift, width, height)
            # On the part's body: layout's probe point, lifted as the part is and kept inside the part's own box
            # (the tape's box is its writing window). (A framed beat's `anchors` place the plate, over the part,
            # not the leader's end: the top of a part's box can be air.)
            point = np.clip(np.asarray(PARTS[name].probe, dtype=np.float64) + off, lo + shift, hi + shift)
            x, y, depth = project(vp, point, width, height)
            if rect is None or not (-1 < depth < 1) or not (0 <= x <= width and 0 <= y <= height):
                continue
            out[name] = ((float(x), float(y)), rect)
        return out

    def labels_json(self) -> list[dict]:
        """The last frame's labels (`render --json`, `run --json`): part, plate box [x, y, w, h], the anchor its
        leader ends at and the part's screen box [x0, y0, x1, y1], in pixels; a cut-away piece's also says which
        piece ('piece') and its box is the piece's."""
        parts = [{"part": n, "box": [round(v, 1) for v in r], "anchor": [round(v, 1) for v in a],
                  "part_box": [round(v, 1) for v in b]} for n, r, a, b in self.label_leaders]
        # the cut-away's pieces: the read head's, each with the piece it names and that piece's box
        return parts + [{"part": "readhead", "piece": n, "box": [round(v, 1) for v in r],
                         "anchor": [round(v, 1) for v in a], "part_box": [round(v, 1) for v in b]}
                        for n, r, a, b in self.callouts]

    def part_rects(self, width: int, height: int) -> dict[str, tuple | None]:
        """Each framed part's projected box now, (x0, y0, x1, y1) pixels (None: behind the eye)."""
        from scenes.framing import projected_rect
        vp = self.viewproj(width, height)
        return {p: projected_rect(vp, *self.fit["boxes"][p], width, height) if p in self.fit.get("boxes", {})
                else None for p in (self.focus or ())}

    def _cutaway_callouts(self, fb, vp, width, height, state, ec, offsets, hud) -> list[tuple]:
        """The cut-away names the read head's pieces (teeth, push rods, lane axles, counters) on plates with
        leaders to each, clear of the HUD and the lane numbers; a piece off the frame is not named."""
        off = np.asarray(offsets.get("readhead", (0.0, 0.0, 0.0)), dtype=np.float64)
        pieces = self.readhead.pieces(state)
        items = []
        for key, zh, en in CUTAWAY_PIECES:
            anchor, lo, hi = pieces[key]
            x, y, depth = project(vp, anchor + off, width, height)
            box = projected_rect(vp, lo + off, hi + off, width, height)
            if box is None or not (-1 < depth < 1) or not (0 <= x <= width and 0 <= y <= height):
                continue
            items.append((key, zh, en, (float(x), float(y)), tuple(float(v) for v in box)))
        chips = [(x - 0.5 * sz, y - 0.5 * sz, sz, sz) for _, x, y, sz, _, _ in self.lane_numbers]
        return emit_callouts(fb, items, width, height, ec, keep_out=([hud] if hud else []) + chips)

    # The pieces that ride on a part, named on plates of their own where a frame of most of the table names the
    # parts (chapter 12 says "the small drum and the pencil cart", "the paper tape, the typing head").
    RIDER_NAMES = (("pencil", "smalldrum", "铅笔小车", "pencil cart"), ("typing", "tape", "打字头", "typing head"))

    def _rider_callouts(self, fb, vp, width, height, state, ec, offsets, keep_out) -> list[tuple]:
        from scenes.framing import builder_bounds
        by_name = {p.name: p for p in self.parts}
        items = []
        for name, host, zh, en in self.RIDER_NAMES:
            if host not in self.focus or name in self.hidden:
                continue
            sub = FrameBuilder(self.atlas)
            sub.offset = np.asarray(offsets.get(LIFT_WITH.get(name, name), (0.0, 0.0, 0.0)), dtype=np.float64)
            by_name[name].emit(sub, state, ec)
            bounds = builder_bounds(sub)
            if bounds is None:
                continue
            lo, hi = bounds
            x, y, depth = project(vp, np.array([(lo[0] + hi[0]) / 2, hi[1], (lo[2] + hi[2]) / 2]), width, height)
            box = projected_rect(vp, lo, hi, width, height)
            if box is None or not (-1 < depth < 1) or not (0 <= x <= width and 0 <= y <= height):
                continue
            items.append((name, zh, en, (float(x), float(y)), tuple(float(v) for v in box)))
        return emit_callouts(fb, items, width, height, ec, keep_out=keep_out) if items else []

    def whole_part_rects(self, width: int, height: int, names=tuple(PARTS)) -> dict[str, tuple | None]:
        """Each part's whole projected box now, (x0, y0, x1, y1) pixels, lifted as it is heading for (the
        exploded view keeps these apart); 'table' among `names`: the table itself (what an overview frames)."""
        vp = self.viewproj(width, height)
        return {p: projected_rect(vp, lo, hi, width, height)
                for p, (lo, hi) in self.part_boxes(tuple(names), whole=True).items()}

    def beat_report(self, width: int, height: int, covers=(), occlusion: bool = True) -> dict:
        """What a class sees of the framed parts in a frame of this size now: {'parts', 'in_frame': {part: share
        of its projected box inside the frame and clear of the HUD and `covers` (x0, y0, x1, y1 rectangles:
        the panels over the frame)}, 'in_view': that times the share of its own pixels not hidden behind another
        part, 'occluded': {part: share of its pixels another part hides}, 'covered': [parts more than 1% under
        the HUD or a cover], 'hidden_behind': [parts more than HIDDEN_BEHIND hidden by other parts]}.
        `occlusion` False: boxes only (no GL), as the report was before it drew depth."""
        from scenes.framing import overlap_share, visible_share
        parts = list(self.focus or ())
        rects = self.part_rects(width, height)
        hud = self.hud_rect(width, height)
        over = ([hud] if hud else []) + [tuple(c) for c in covers]
        frame = (0.0, 0.0, float(width), float(height))
        hidden_by = self.occlusion(width, height, parts) if occlusion and parts else {p: 0.0 for p in parts}
        in_frame = {p: visible_share(rects[p], frame, over) for p in parts}
        return {"parts": parts,
                "in_frame": {p: round(in_frame[p], 4) for p in parts},
                "in_view": {p: round(in_frame[p] * (1.0 - hidden_by[p]), 4) for p in parts},
                "occluded": {p: round(hidden_by[p], 4) for p in parts},
                "covered": [p for p in parts if overlap_share(rects[p], over) > 0.01],
                "hidden_behind": [p for p in parts if hidden_by[p] > HIDDEN_BEHIND]}

    OCCLUSION_SCALE = 0.25      # the depth renders for occlusion(): a quarter of the frame's size each way

    def occlusion(self, width: int, height: int, parts) -> dict[str, float]:
        """{part: share of its pixels hidden behind other parts} in a frame of this size now, from depth: the
        whole table is drawn once, then each part alone (with what rides on it), at OCCLUSION_SCALE and without
        labels, HUD or multisampling; a pixel of the part is seen where the whole table's depth there is the
        part's own. A part that covers no pixel counts as hidden."""
        w = max(16, int(width * self.OCCLUSION_SCALE))
        h = max(16, int(height * self.OCCLUSION_SCALE))
        ctx = self.ctx
        fbo = ctx.framebuffer(color_attachments=[ctx.texture((w, h), 4)], depth_attachment=ctx.depth_texture((w, h)))
        saved = (set(self.hidden), self.show_hud, self.show_labels, self.still_layer, self.samples, self.render_scale,
                 self.text_height)
        names = [part.name for part in self.parts]

        # What a render leaves for the frame's readers (legibility, plates, the HUD's words...): the depth frames
        # must not replace the frame's own.
        kept = {k: getattr(self, k) for k in self._FRAME_OUTPUTS if hasattr(self, k)}

        def depth() -> np.ndarray:
            self.render(fbo, w, h)
            raw = fbo.read(viewport=(0, 0, w, h), components=1, attachment=-1, dtype="f4")
            return np.frombuffer(raw, dtype=np.float32).reshape(h, w)

        out = {}
        try:
            self._measuring = True
            self.show_hud, self.show_labels, self.still_layer, self.samples, self.render_scale = \
                False, False, False, 0, 1.0
            self.text_height = saved[6] or height          # the same text sizes as the frame it reports on
            self.hidden = set(saved[0])
            whole = depth()
            for p in parts:
                mates = ASSEMBLED_WITH.get(p, ())
                if mates:           # the table without what the part is built with (it hides it by design)
                    self.hidden = set(saved[0]) | set(mates)
                    scene = depth()
                else:
                    scene = whole
                keep = {p, *RIDERS.get(p, ())}
                self.hidden = set(saved[0]) | (set(names) - keep)
                own = depth()
                mine = own < 1.0
                n = int(mine.sum())
                seen = int((mine & (scene >= own - 1e-4)).sum())
                out[p] = 1.0 - seen / n if n else 1.0
        finally:
            (self.hidden, self.show_hud, self.show_labels, self.still_layer, self.samples, self.render_scale,
             self.text_height) = saved
            for k, v in kept.items():
                setattr(self, k, v)
            self._measuring = False
            fbo.release()
        return out

    _FRAME_OUTPUTS = ("legibility", "label_plates", "label_leaders", "callouts", "label_keep_out", "lane_numbers",
                      "hud_text", "frame_text", "last_stats", "_still_seen", "_label_replay")

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

    # ---------------------------------------------------------------- queries (tests, the app's overlays)
    def viewproj(self, width: int, height: int) -> np.ndarray:
        return self.camera.viewproj(width / max(height, 1))

    def project(self, point, width: int, height: int) -> tuple[float, float]:
        x, y, _ = project(self.viewproj(width, height), point, width, height)
        return x, y

    def readout_rects(self, width: int, height: int) -> list[tuple]:
        """Screen rectangles (x, y, w, h) of the parts' own readouts, which name plates must not cover: each
        tube rack with its numbers above and TV readout below, the bridge's meters with their values, the
        KV cabinet's face (projected world boxes, lifted as the exploded view lifts them)."""
        from scenes.bridge import VALUE_V, meter_point
        from scenes.tubes import N_CHARS, TUBE_H, TUBE_Y0
        vp = self.viewproj(width, height)
        offsets = self.offsets()
        # Where the parts stand in this view, hidden or not: hiding a part for a moment does not move plates.
        shows = self.shows()
        seen = lambda name: shows is None or name in shows  # noqa: E731
        heads = self.timeline.state_at().heads
        key = (vp.tobytes(), width, height, sorted(offsets.items()), shows, heads, id(self.timeline))
        if self._readout_rects is not None and _same(self._readout_rects[0], key):
            return list(self._readout_rects[1])
        boxes = []
        if seen("tubes"):
            z = PARTS["tubes"].probe[2] + 0.4
            for rack in (0, 1):
                x0, x1 = self.tubes.tube_x(rack, 0) - 0.35, self.tubes.tube_x(rack, N_CHARS) + 0.35
                boxes.append(("tubes", (x0, 0.0, z - 0.6), (x1, TUBE_Y0 + TUBE_H + 1.7, z + 1.6)))
        if seen("bridge"):
            pts = np.array([meter_point(i, v) for i in range(4) for v in (0.0, VALUE_V + 0.25)])
            boxes.append(("bridge", tuple(pts.min(0) - 0.3), tuple(pts.max(0) + 0.3)))
        if heads and seen("bigdrum"):
            from scenes.bigdrum import HEAD_R, HEAD_Y
            c = self.bigdrum.centre
            boxes.append(("bigdrum", (c[0] - self.bigdrum.length / 2, HEAD_Y - HEAD_R, c[2]),
                          (c[0] + self.bigdrum.length / 2, HEAD_Y + HEAD_R + 0.6, c[2] + 0.8)))
        if seen("cabinet"):
            (cx0, cx1), (cy0, cy1), (cz0, cz1) = CABINET_BOX
            boxes.append(("cabinet", (cx0, cy0, cz0), (cx1, cy1, cz1)))
        if seen("tape"):
            # The paper's writing strip (the text the class reads), not the board or the spools.
            corners = np.array([tape_point(x, v) for x in TAPE_X for v in (-TAPE_DEPTH / 2, TAPE_DEPTH / 2)])
            boxes.append(("tape", tuple(corners.min(0)), tuple(corners.max(0))))
        rects = []
        for part, lo, hi in boxes:
            off = np.asarray(offsets.get(part, (0.0, 0.0, 0.0)))
            corners = [np.array([a, b, c]) + off for a in (lo[0], hi[0]) for b in (lo[1], hi[1]) for c in (lo[2], hi[2])]
            pts = [project(vp, p, width, height) for p in corners]
            if not all(-1 < d < 1 for _, _, d in pts):
                continue
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            x0, x1 = max(min(xs), 0.0), min(max(xs), width)
            y0, y1 = max(min(ys), 0.0), min(max(ys), height)
            if x1 > x0 and y1 > y0:
                rects.append((x0, y0, x1 - x0, y1 - y0))
        self._readout_rects = (key, rects)
        return list(rects)

    def state(self):
        return self.timeline.state_at()

    def offsets(self) -> dict:
        """Exploded-view lift of every part now."""
        return {name: tuple(self._explode * v for v in info.lift) for name, info in PARTS.items()}

    def tape_cells(self):
        """The tape's visible cells now (characters, marks and where they are), as drawn."""
        return self.tape.cells(self.state(), self.run.prefix, self.run.display)

    # ---------------------------------------------------------------- drawing
    def render(self, fbo, width: int, height: int) -> RenderStats:
        t0 = time.perf_counter()        # only for stats.frame_ms: what is drawn never depends on the wall clock
        ctx = self.ctx
        self.frame_for(width, height)
        vp = self.viewproj(width, height)
        scale = min(max(float(self.render_scale or 1.0), 0.25), 1.0)
        out_w, out_h = width, height
        width, height = max(1, int(round(width * scale))), max(1, int(round(height * scale)))
        scaled = (width, height) != (out_w, out_h)
        right, up = self.camera.basis()
        state = self.timeline.state_at()
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
                         labelled=wide or mill_plate, text_ref=ref, min_px=min_px)
        fb = FrameBuilder(self.atlas)
        offsets = self.offsets()
        keys = {}
        for part in self.parts:
            if drawn(part.name):
                lift = np.asarray(offsets.get(LIFT_WITH.get(part.name, part.name), (0.0, 0.0, 0.0)), dtype=np.float64)
                keys[part.name] = (self._replay_key(part, state, ec, lift), lift)
        # The parts unchanged since the last frame, as the still layer would show them: used when the same
        # parts were unchanged in the last frame too, under the same camera (a moving camera or a part that
        # moves in every other frame would only draw the layer anew each time).
        unchanged = [n for n, (k, _) in keys.items() if n in self._replays and _same(self._replays[n][0], k)]
        still_key = None
        if self.still_layer and not self.samples and fbo is not None:
            still_key = (tuple(self._replays[n][1] for n in unchanged), tuple(unchanged), vp.tobytes(),
                         width, height, self.palette)
        use_still = still_key is not None and self._still_seen is not None and _same(self._still_seen, still_key)
        self._still_seen = still_key
        still = FrameBuilder(self.atlas) if use_still else None
        for part in self.parts:
            if part.name not in keys:
                continue
            key, fb.offset = keys[part.name]
            if part.name not in unchanged:
                mark = fb.mark()
                part.emit(fb, state, ec)
                self._replays[part.name] = (key, fb.since(mark))
            else:                       # its last emission, into the still layer's builder when one is used
                fb.replay(self._replays[part.name][1], still=still)
        fb.offset = np.zeros(3)
        # The parts' own words and numbers, measured before any plate is placed: those too small to read are
        # left out, and the name plates keep off the rest (a plate never covers a readout or the tape).
        _, world_hidden, _, world_boxes, world_items = measure_text(fb.text_items, vp, width, height, min_px,
                                                                    "world")
        hud = None
        if self.show_hud:
            timing = self.timeline.steps[state.step] if state.step >= 0 else None
            hud = emit_hud(fb, state, width, height, ec, len(self.traces), self._title(), timing,
                           passes=self.hud_passes(), activity=self.hud_activity(state.tube_round), lanes=self.hud_lanes,
                           bridge=self.bridge_in_frame())
        # Nothing is read through the HUD: a part's words under it (a rack of tubes behind it in the tape's
        # view) are left out rather than covered.
        world_boxes, world_items = nearest_wins(world_boxes, world_items, world_hidden)
        world_boxes, world_items, world_min = clear_of(hud, world_boxes, world_items, world_hidden)
        self.label_plates = []
        self.lane_numbers = []
        if drawn("readhead"):
            self.lane_numbers = self.readhead.lane_number_spots(vp, width, height, offsets.get("readhead", (0, 0, 0)),
                                                                cut=self.view == "cutaway", text_ref=ref,
                                                                min_px=min_px, keep_out=hud)
            self.readhead.emit_lane_numbers(fb, state, self.lane_numbers, ec)
        self.callouts = []
        if self.view == "cutaway" and self.show_labels and drawn("readhead"):
            self.callouts = self._cutaway_callouts(fb, vp, width, height, state, ec, offsets, hud)
        self.label_keep_out = []
        if wide or mill_plate:
            readouts = {"mill": self.mill.readout_lines(state, ec, compact=wide)}
            if self.focus is not None and len(self.focus) > 3:
                # A frame of most of the table: the busy share alone, so the plate does not cover its neighbours.
                readouts["mill"] = [line for line in readouts["mill"] if line[1] == "main"][:1]
            # Where even the compact readout finds no free spot, the busy figure and the context alone (the
            # panels name the device and the model the mill models).
            shorter = {"mill": self.mill.readout_lines(state, ec, hardware=False)}
            if state.heads:
                # The heads' own words on the rail are too small to read beside the whole drum: the plate names them.
                first, last = state.heads[0], state.heads[-1]
                # Head 1 is no head on the rail: it is the target's own output layer (issue 34: say which it is).
                readouts["bigdrum"] = [(ec.say(f"上面一排是预测头 {first}–{last}", f"the row on top: heads {first}–{last}"),
                                        "sub"),
                                       (ec.say("头 1 是大模型自己的输出层", "head 1: the target's own output layer"),
                                        "sub")]
            names = None
            if kind_of(state.drafter).fed_by_target:
                # EAGLE: the small drum is a layer on the target's features, not a second model (the cable shows it)
                names = {"smalldrum": ("小滚筒 · EAGLE", "small drum · EAGLE")}
                readouts["smalldrum"] = [(ec.say("一层，吃大模型的特征", "one layer fed the target's features"), "sub")]
            self.label_keep_out = self.readout_rects(width, height)
            hidden = self.hidden if wide else set(PARTS) - {"mill"}
            # The parts this view may name, whether the user hid some of them or not: a plate keeps off all of
            # them, so it does not move when a part is hidden.
            not_named = set() if wide else set(PARTS) - {"mill"}
            anchors = None
            if self.focus is not None and self.view != "exploded":
                # A framed beat names its parts on plates over what it shows of them (the tape's writing window,
                # not the far end of its paper) and keeps the HUD's largest extent clear.
                hidden = hidden | (set(PARTS) - set(self.focus))
                not_named = not_named | (set(PARTS) - set(self.focus))
                anchors = {p: ((lo[0] + hi[0]) / 2, hi[1], (lo[2] + hi[2]) / 2)
                           for p, (lo, hi) in self.fit.get("boxes", {}).items() if p != "mill"}
                if "tape" in anchors:       # over the text before the writing window: the bridge stands behind it
                    lo, hi = self.fit["boxes"]["tape"]
                    anchors["tape"] = (lo[0] + 1.0, hi[1], (lo[2] + hi[2]) / 2)
                big_hud = self.hud_rect(width, height)
                if big_hud is not None:
                    hud = (big_hud[0], big_hud[1], big_hud[2] - big_hud[0], big_hud[3] - big_hud[1])
            args = dict(exploded=self._explode > 0.5, readouts=readouts,
                        keep_out=([hud] if hud else []) + self.label_keep_out + [b[1:] for b in world_boxes],
                        anchors=anchors, shorter=shorter, names=names,
                        targets=self.label_targets(vp, width, height, not_named, offsets, state),
                        words=([hud] if hud else []) + [b[1:] for b in world_boxes])
            # The plates and leaders are laid again only when what they are laid from changed (a still camera
            # over a playing run: the same plates each frame).
            key = (vp.tobytes(), width, height, ec.palette, ec.language, ec.text_ref, ec.min_px, self.atlas.generation,
                   sorted(offsets.items()), sorted(hidden), args)
            last = self._label_replay
            if last is not None and _same(last[0], key):
                fb.replay(last[1])
                self.label_plates, self.label_leaders = list(last[2]), list(last[3])
            else:
                mark = fb.mark()
                self.label_leaders = []
                self.label_plates = emit_part_labels(fb, vp, width, height, ec, offsets, hidden,
                                                     leaders_out=self.label_leaders, **args)
                self._label_replay = (key, fb.since(mark), list(self.label_plates), list(self.label_leaders))
        if wide and self.focus is not None and len(self.focus) >= 5:
            keep = ([hud] if hud else []) + [tuple(p[1:]) for p in self.label_plates] + [b[1:] for b in world_boxes]
            self.callouts = self.callouts + self._rider_callouts(fb, vp, width, height, state, ec, offsets, keep)
        self._measure(fb, vp, width, height, min_px, out_h / height, (world_min, world_hidden, world_boxes))
        self.hud_text = list(getattr(fb, "hud_text", []))
        self.frame_text = [(it.text, it.screen) for it in fb.text_items]

        target = fbo if fbo is not None else ctx.screen
        frame_fbo = target
        if scaled:
            if self._scaled is None or self._scaled[0] != (width, height):
                self._release_scaled()
                tex = ctx.texture((width, height), 4)
                tex.filter = (ctx.LINEAR, ctx.LINEAR)
                depth = ctx.depth_renderbuffer((width, height))
                self._scaled = ((width, height), ctx.framebuffer([tex], depth), tex, depth)
            frame_fbo = self._scaled[1]
        draw_to = frame_fbo
        if self.samples:
            if self._msaa is None or self._msaa[0] != (width, height, self.samples):
                self._release_msaa()
                color = ctx.renderbuffer((width, height), 4, samples=self.samples)
                depth = ctx.depth_renderbuffer((width, height), samples=self.samples)
                self._msaa = ((width, height, self.samples), ctx.framebuffer([color], depth), color, depth)
            draw_to = self._msaa[1]
        draw_to.use()
        ctx.viewport = (0, 0, width, height)
        stats = RenderStats(0, 0, 0.0, still=still is not None)
        if still is not None:
            backdrop = self.renderer.begin_still(draw_to, width, height, self.palette, still, still_key, vp,
                                                 self.camera.pose.eye, stats)
        else:
            backdrop = self.renderer.begin(draw_to, width, height, self.palette, multisampled=bool(self.samples))
        draw_to.use()
        ctx.viewport = (0, 0, width, height)
        self.renderer.draw(fb, vp, self.camera.pose.eye, self.palette, width, height, stats, backdrop_done=backdrop)
        if draw_to is not frame_fbo:
            ctx.copy_framebuffer(frame_fbo, draw_to)
        if scaled:
            k = out_h / height
            self.label_plates = [(n, x * k, y * k, w * k, h * k) for n, x, y, w, h in self.label_plates]
            self.label_leaders = [(n, tuple(v * k for v in r), tuple(v * k for v in a), tuple(v * k for v in b))
                                  for n, r, a, b in self.label_leaders]
            self.callouts = [(n, tuple(v * k for v in r), tuple(v * k for v in a), tuple(v * k for v in b))
                             for n, r, a, b in self.callouts]
            self.label_keep_out = [(x * k, y * k, w * k, h * k) for x, y, w, h in self.label_keep_out]
            self.lane_numbers = [(n, *(v * k for v in rest)) for n, *rest in self.lane_numbers]
        if scaled:
            target.use()
            ctx.viewport = (0, 0, out_w, out_h)
            self.renderer.upscale(self._scaled[2], stats)
        target.use()
        if self.sync:
            ctx.finish()
        self._rendered = True
        stats.frame_ms = (time.perf_counter() - t0) * 1000.0
        self.last_stats = stats
        return stats

    def _replay_key(self, part, state, ec, lift) -> tuple:
        """What a part's emission is made from: the SceneState fields it declares (`reads`;
        tests/test_scene_replay.py holds each part to them), the emit context but for the camera (no part faces
        it), its lift and the glyph atlas's places."""
        return (tuple(getattr(state, f) for f in part.reads), ec.palette, ec.language, ec.view, ec.run, ec.labelled,
                ec.text_ref, ec.min_px, tuple(lift.tolist()), self.atlas.generation)

    def _measure(self, fb, vp, width, height, min_px, k, world) -> None:
        """The frame's legibility (scenes.legibility), in the target's pixels: `world` is what measuring the
        parts' own text found (world text smaller than the minimum was left out then); here the plates, the
        HUD and the chips, and every box for the overlap measure."""
        world_min, hidden, world_boxes = world
        screen_min, _, screen_boxes, _, _ = measure_text(fb.text_items, vp, width, height, min_px, "screen")
        sizes = [v for v in (world_min, screen_min) if v is not None]
        scale = lambda b: (b[0], *(v * k for v in b[1:]))  # noqa: E731
        frames = [scale(b) for b in fb.frames]
        boxes = group_boxes(frames, [scale(b) for b in screen_boxes]) + [scale(b) for b in world_boxes]
        self.legibility = {"min_text_px": round(min(sizes) * k, 2) if sizes else None,
                           "hidden": hidden, "overlaps": overlapping_pairs(boxes), "boxes": boxes}

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
