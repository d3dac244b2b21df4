"""The timeline: step traces turned into timed events on a fixed-step clock, and the scene's state at any time t.

The clock is separate from the frame clock: `advance(dt)` moves t in whole ticks (1/120 s) and `state_at(t)`
is a pure function of t, so a run renders identically at any frame rate, can be scrubbed backwards and
forwards, and exports to video frame by frame. Each pass is a StepTiming of named time spans (draft, verify,
check, strike, erase, inks, scroll...: scenes.scene_state); state_at asks one small function per part where t
falls in them (scenes.part_motion).

One speculative step, in order (SCIENCE.md sections 3-5):
  draft   the small drum turns γ times, c x the big drum's time each; the pencil writes one guess per turn
  verify  the big drum turns once with γ+1 lanes lit; every KV drawer is pulled and read
  check   the meters fill one by one, left to right, up to the first rejection (p/q against r)
  write   rejected guesses are struck out and erased, the KV entries rolled back; the typing head inks the
          accepted guesses (dot) and the target's own token (diamond)
  scroll  the tape moves on by the number of tokens written

Who drafts changes the draft and check spans (models.drafters; the trace says which):
  lookup  no draft model: the tape glides back to the text's latest earlier occurrence of its last tokens (the match
          and the copied span lit), the pencil cart copies the tokens that followed it; the small drum stays still.
          Nothing to copy: a plain target pass.
  heads   the heads on the big drum propose the γ guesses (one lamp per guess); the small drum stays still
  tree    the draft pencils a whole tree, one depth per stroke (the small drum turns once a depth; a tree of heads:
          the heads light); the big drum computes every node (lanes = nodes + 1); the bridge checks the candidates
          at each position one round at a time (after a rejection the next candidate meets the residual), the kept
          branch is inked, the rest of the tree erased, the kept tokens come down onto the line and are typed
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from models.trace import StepTrace
from models.drafters import COPY, DRUM, HEADS, kind_of
from scenes.layout import TAPE_X, window
from scenes.part_motion import PartMotion
from scenes.scene_state import SceneState, StepTiming

TICK = 1.0 / 120.0


@dataclass(frozen=True)
class Timing:
    """Durations in seconds at speed 1. The draft turn is cost_ratio x big_turn: the drums' speeds are c."""
    big_turn: float = 2.4
    cost_ratio: float = 0.1
    meter: float = 0.6
    hold: float = 0.4
    strike: float = 0.4
    erase: float = 0.6
    ink: float = 0.32
    scroll: float = 0.55
    tube_round: float = 1.6
    look: float = 1.5          # lookup: the tape glides back to the copied text, holds it lit, glides forward
    copy: float = 0.2          # lookup: the pencil copies one token
    head: float = 0.3          # heads: one head's guess is pencilled (the heads cost no separate draft model)


def is_target_only(trace) -> bool:
    """A pass of the target alone (models.sampler.TargetSampler): no guesses, nothing to test."""
    return trace.extra.get("sampler") == "target" or (trace.gamma == 0 and not trace.guesses)


class Timeline(PartMotion):
    """Fixed-step clock over a list of StepTraces. t is seconds of animation; speed may be negative (rewind)."""

    def __init__(self, traces: list[StepTrace] | None = None, *, timing: Timing | None = None, batch_lanes: int = 1,
                 busy_at=None, tube_rounds: int = 0, prefix_len: int | None = None, context: int | None = None):
        """busy_at: (sequences, positions, context length) -> arithmetic busy fraction of a pass: `sequences`
        sequences each computing `positions` tokens at once (γ + 1 while checking, 1 for the target alone) and
        reading its KV cache of `context` tokens once (models.hardware.pass_busy: the KV reads grow with the
        context, so the same lanes are less busy at 4,096 tokens than at 1); context: the context length to
        model, else each step's own (len(trace.context))."""
        self.timing = timing or Timing()
        self.traces = list(traces or [])
        self.batch_lanes = max(1, int(batch_lanes))
        self.busy_at = busy_at or (lambda sequences, positions, context: min(1.0, sequences * positions / 295.0))
        self.context = None if context is None else max(0, int(context))
        self.tube_rounds = int(tube_rounds)
        self.paused = False
        self.speed = 1.0
        self.reduced_motion = False
        self._t = 0.0
        self._acc = 0.0
        self.prefix_len = prefix_len if prefix_len is not None else (len(self.traces[0].context) if self.traces else 0)
        self.steps: list[StepTiming] = []
        self._build()

    # ---------------------------------------------------------------- schedule
    def _build(self) -> None:
        T = self.timing
        t = 0.0
        small = T.cost_ratio * T.big_turn
        mill_segments = []
        for k, tr in enumerate(self.traces):
            g = len(tr.guesses)
            tree = tr.tree
            start = t
            # Who drafts sets the strokes: the chain's small drum turns once a guess (c x a big turn); a tree
            # pencils one depth a stroke; lookup first shows where it copies from; heads pencil their guesses.
            look, view_back, n_strokes, stroke, drum = None, 0.0, g, small, True
            way = kind_of(tr.drafter).look
            if tree is not None:
                n_strokes = len(tree.widths)
                drum = kind_of(tree.base).look == DRUM
                stroke = small if drum else T.head
            elif way == COPY:
                look = (t, t + (T.look if g else 0.5 * T.look))
                t = look[1]
                view_back = self.view_back(tr)
                stroke, drum = T.copy, False
            elif way == HEADS:
                stroke, drum = T.head, False
            strokes = [(t + i * stroke, t + (i + 1) * stroke) for i in range(n_strokes)]
            t += n_strokes * stroke
            draft = (start, t)
            verify = (t, t + T.big_turn)
            t = verify[1]
            tested = len(tree.checks) if tree is not None else (tr.tested if g else 0)
            tests = [(t + i * T.meter, t + (i + 1) * T.meter) for i in range(tested)]
            t += tested * T.meter + (T.hold if g else 0.0)
            check = (verify[1], t)
            rejected = tr.n_accepted < g
            strike = (t, t + (T.strike if rejected and tree is None else 0.0))
            t = strike[1]
            # A tree always erases: every branch but the kept one.
            erase = (t, t + (T.erase if rejected or tree is not None else 0.0))
            t = erase[1]
            n_written = len(tr.tokens_written)
            inks = [(t + i * T.ink, t + (i + 1) * T.ink) for i in range(n_written)]
            t += n_written * T.ink
            write = (check[1], t)
            scroll = (t, t + T.scroll)
            t = scroll[1]
            # The lanes lit are every position computed at once; the γ + 1 of one sequence read its KV cache once.
            positions = max(1, int(tr.lanes_lit))
            lanes = positions * self.batch_lanes
            busy = self.pass_busy(self.batch_lanes, positions, self.pass_context(tr))
            st = StepTiming(k, start, draft, verify, check, write, scroll, strokes, tests, strike, erase, inks,
                            len(tr.context), lanes, busy, is_target_only(tr), tr.drafter, look, view_back, drum,
                            len(tree.widths) if tree is not None else -1)
            self.steps.append(st)
            mill_segments.append((verify[0], verify[1], busy))
        self.steps_end = t
        self._mill = mill_segments
        self._ends = [st.end for st in self.steps]
        self.duration = max(self.steps_end, self.tube_rounds * T.tube_round)

    @staticmethod
    def view_back(trace) -> float:
        """Cells the tape glides back in a lookup pass so the copied text and the occurrence it follows are on
        the tape's visible stretch (0 when they already are)."""
        span = trace.source_span
        if not span:
            return 0.0
        x0, cell = window(len(trace.guesses))
        room = (x0 - TAPE_X[0]) / cell - 1.5           # whole cells visible left of the writing window, less a margin
        need = len(trace.context) - span["match"][0]
        return float(max(0.0, need - room))

    def pass_context(self, trace) -> int:
        """Context length the hardware model reads the KV cache for: the run's setting, else the trace's own."""
        return self.context if self.context is not None else len(trace.context)

    def pass_busy(self, sequences: int, positions: int, context: int) -> float:
        """Arithmetic busy fraction of a pass: `positions` tokens of each of `sequences` sequences, each with
        `context` tokens of KV cache read once."""
        return float(self.busy_at(sequences, positions, context))

    # ---------------------------------------------------------------- clock
    @property
    def t(self) -> float:
        return self._t

    @t.setter
    def t(self, value: float) -> None:
        self.seek(value)

    def seek(self, t: float) -> None:
        """Jump to time t (snapped to the tick grid, clamped to [0, duration])."""
        t = min(max(float(t), 0.0), self.duration)
        self._t = round(t / TICK) * TICK if t < self.duration else self.duration
        self._acc = 0.0

    def advance(self, dt: float) -> None:
        """Feed wall-clock seconds; t moves in whole ticks of speed-scaled time (frame-rate independent)."""
        if self.paused or dt <= 0:
            return
        self._acc += dt * self.speed
        ticks = math.floor(self._acc / TICK) if self._acc >= 0 else -math.floor(-self._acc / TICK)
        if ticks:
            self._acc -= ticks * TICK
            t = self._t + ticks * TICK
            self._t = min(max(t, 0.0), self.duration)

    def step_start(self, k: int) -> float:
        """Time at which step k (0-based) begins; k == number of steps gives the end of the run."""
        if not self.steps:
            return 0.0
        if k >= len(self.steps):
            return self.steps_end
        return self.steps[max(k, 0)].start

    def step_end(self, k: int) -> float:
        return self.steps[k].end

    def step_moment(self, k: int, phase: str = "write") -> float:
        """A telling moment of step k: the end of the named phase (draft/verify/check/write), its middle (mid-*), or
        'look': a lookup pass showing the text it copies from."""
        st = self.steps[k]
        if phase == "look":
            # lookup: the copied text shown (the tape glided back, the span lit); another drafter: mid-draft
            a, b = st.look if st.look is not None else st.draft
            return (a + b) / 2
        if phase.startswith("mid-"):
            a, b = getattr(st, phase[4:])
            return (a + b) / 2
        return getattr(st, phase)[1] - TICK

    @property
    def current_step(self) -> int:
        return self.step_at(self._t)

    def step_at(self, t: float) -> int:
        if not self.steps:
            return -1
        return min(bisect.bisect_right(self._ends, t), len(self.steps) - 1)

    # ---------------------------------------------------------------- state
    def mill_angle(self, t: float) -> float:
        # The integral of the gear speed (2 turns/s at 100% busy) over the passes so far.
        a = 0.0
        for s, e, busy in self._mill:
            if t <= s:
                break
            a += (min(t, e) - s) * busy
        return a * 2 * 2 * math.pi

    def state_at(self, t: float | None = None) -> SceneState:
        t = self._t if t is None else t
        tube_round, tube_progress = self._tubes(t)
        if not self.steps:
            return SceneState(t=t, step=-1, phase="idle", phase_progress=0.0, big_drum_angle=0.0,
                              small_drum_angle=0.0, lanes_lit=0, lanes_true=0, mill_angle=0.0, mill_busy=0.0,
                              tape_view=float(self.prefix_len), tape=[], meters=[], pencil_cell=0.0,
                              pencil_down=0.0, typing_cell=0.0, typing_down=0.0, typing_rest=1.0, kv_tokens=float(self.prefix_len),
                              kv_tentative=0.0, drawer_pull=0.0, gamma=0, tube_round=tube_round,
                              tube_progress=tube_progress)
        k = self.step_at(t)
        st, tr = self.steps[k], self.traces[k]
        phase, prog = self._phase(t, k, st)
        big, small = self._drums(t, k, st)
        lanes_true = st.lanes if st.verify[0] <= t < st.write[1] else 0
        busy = st.busy if st.verify[0] <= t < st.verify[1] else 0.0
        view = self._tape_view(t, st, tr)
        pencil_cell, pencil_down = self._pencil(t, st, len(st.strokes), tr, view)
        typing_cell, typing_down, typing_rest = self._typing(t, st)
        kv, tentative, pull = self._kv(t, st, tr, phase)
        heads, head_lit = self._heads(t, st, tr)
        return SceneState(
            t=t, step=k, phase=phase, phase_progress=prog,
            big_drum_angle=big, small_drum_angle=small,
            lanes_lit=min(9, lanes_true), lanes_true=lanes_true,
            mill_angle=0.0 if self.reduced_motion else self.mill_angle(t), mill_busy=busy,
            tape_view=view, tape=self._tape(t, k, st, tr), meters=self._meters(t, k, st, tr),
            pencil_cell=pencil_cell, pencil_down=pencil_down, typing_cell=typing_cell, typing_down=typing_down,
            typing_rest=typing_rest,
            kv_tokens=kv, kv_tentative=tentative, drawer_pull=pull,
            gamma=st.meters if st.meters >= 0 else len(tr.guesses),
            tube_round=tube_round, tube_progress=tube_progress,
            # The mill's readout: the busy share of the pass on the table (its gears turn only while it computes).
            extra={"pass_busy": st.busy, "target_only": st.target_only,
                   "context": self.pass_context(tr), **self._drafter_extra(tr), **self._copied_from(t, st, tr)},
            drafter=tr.drafter, source=self._source(t, st, tr), heads=heads, head_lit=head_lit,
            tree=self._tree(t, st, tr),
        )

    @staticmethod
    def _drafter_extra(tr) -> dict:
        """What the HUD says about who drafted this pass: a tree's shape and size, what lookup copied."""
        if tr.tree is not None:
            return {"tree_widths": list(tr.tree.widths), "tree_nodes": len(tr.tree.nodes), "tree_base": tr.tree.base}
        if kind_of(tr.drafter).look == COPY:
            span = tr.source_span
            return {"copied": len(tr.guesses),
                    "matched": list(tr.context[span["match"][0]:span["match"][1]]) if span else []}
        return {}

    def _copied_from(self, t: float, st: StepTiming, tr) -> dict:
        """Lookup: where this pass's guesses were copied from, which the tape keeps marked from the pass's start
        until it scrolls on (the light of the look is brighter and briefer: PartMotion._source). {"copied_from":
        {"match": (a, b), "tail": (c, d), "copy": (e, f), "held": 0..1}}: positions in the text of the earlier
        occurrence, the text's last n tokens and the tokens copied; held fades out over the scroll's first part.
        {} for another drafter or nothing to copy."""
        span = tr.source_span
        if st.look is None or not span or t >= st.end:
            return {}
        a, b = st.scroll
        held = 1.0 - self._progress(t, (a, a + 0.4 * (b - a)))
        if held <= 0:
            return {}
        L = len(tr.context)
        return {"copied_from": {"match": tuple(span["match"]), "tail": (L - span["ngram"], L),
                                "copy": tuple(span["copy"]), "held": held}}
