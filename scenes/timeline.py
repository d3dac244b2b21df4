"""The timeline: step traces turned into timed events on a fixed-step clock, and the scene's state at any time t.

The clock is separate from the frame clock: `advance(dt)` moves t in whole ticks (1/120 s) and `state_at(t)`
is a pure function of t, so a run renders identically at any frame rate, can be scrubbed backwards and
forwards, and exports to video frame by frame. Each pass is a StepTiming of named time spans (draft, verify,
check, strike, erase, inks, scroll...); state_at asks one small function per part where t falls in them.

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
from dataclasses import dataclass, field

from models.trace import StepTrace
from models.drafters import COPY, DRUM, HEADS, kind_of
from scenes.layout import TAPE_X, tree_margin, window

TICK = 1.0 / 120.0
TAPE_HISTORY = 40      # tokens behind the writing window kept in the state (more than the tape shows)


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


@dataclass
class StepTiming:
    """One target pass's named time spans (start, end) in seconds of animation, in the order they happen."""
    index: int
    start: float
    draft: tuple[float, float]
    verify: tuple[float, float]
    check: tuple[float, float]
    write: tuple[float, float]
    scroll: tuple[float, float]
    strokes: list[tuple[float, float]]
    tests: list[tuple[float, float]]
    strike: tuple[float, float]
    erase: tuple[float, float]
    inks: list[tuple[float, float]]
    position: int          # tape position of the first guess (length of the text before the step)
    lanes: int             # tokens computed in the pass (x batch lanes)
    busy: float = 0.0      # arithmetic busy fraction of the pass (hardware model: lanes and context length)
    target_only: bool = False   # the target alone wrote this step (γ = 0: no draft, no tests)
    drafter: str = "chain"      # who proposed (models.drafters)
    look: tuple[float, float] | None = None   # lookup: the tape shows the copied text (inside the draft span)
    view_back: float = 0.0      # lookup: how many cells the tape glides back to show it
    drum_turns: bool = True     # the strokes turn the small drum (a draft model runs: chain, tree from chain)
    meters: int = -1            # meters on the bridge (a tree: one per depth); -1: one per guess

    @property
    def end(self) -> float:
        return self.scroll[1]


@dataclass
class TapeCell:
    position: int          # index in the whole text (prefix included)
    token: int
    pencil: float          # 0..1 how much of the pencil guess is drawn
    ink: float             # 0..1 inked by the typing head
    struck: float          # 0..1 strike-out line drawn
    erased: float          # 0..1 faded away (rejected guesses, erasable because pencil)
    mark: str = ""         # "" | "dot" (accepted guess) | "diamond" (token the target wrote)
    step: int = -1


@dataclass
class MeterState:
    index: int
    ratio: float           # p/q of the guess (acceptance_ratio)
    r: float               # the uniform it was tested against
    p: float
    q: float
    fill: float            # 0..1 of the column's rise animation
    verdict: str           # "" (not yet) | "pass" | "fail" | "untested"
    rounds: int = 1        # candidates tried at this position (a tree: its parent's children)
    results: tuple = ()    # verdicts of the rounds finished here so far ("pass" | "fail"), in order


@dataclass
class TreeNodeState:
    """One node of a guess tree now (scenes.tape lays it out: its depth's column, its leaves' rows)."""
    id: int
    parent: int            # -1: the context
    depth: int             # 1 = the first position after the context
    token: int
    pencil: float          # 0..1 pencilled in
    checking: float        # 1 while the bridge tests it
    verdict: str           # "" | "pass" | "fail" (its test has ended)
    struck: float          # 0..1 red strike of a rejected candidate
    ink: float             # 0..1 inked (a candidate kept: on the accepted path)
    erased: float          # 0..1 faded out (everything but the kept branch, once the pass is decided)
    down: float            # 0..1 the kept branch coming down onto the line, to be typed
    round: int = 0         # the round its test is in (0: not tested yet); 2 and up met the residual


@dataclass
class TreeState:
    widths: list[int]
    nodes: list[TreeNodeState]
    lanes: int             # nodes + 1: what the target computes in the pass
    margin: bool = False   # drawn in the margin right of the pass's cells (layout.tree_margin)


@dataclass
class SceneState:
    t: float
    step: int                          # current step index (-1 before the first, n_steps after the last)
    phase: str                         # idle | draft | verify | check | write | scroll | done
    phase_progress: float
    big_drum_angle: float
    small_drum_angle: float
    lanes_lit: int                     # lanes lit now (capped to the nine shafts by the read head)
    lanes_true: int                    # tokens computed at once (may exceed nine when batching)
    mill_angle: float
    mill_busy: float                   # arithmetic busy fraction now
    tape_view: float                   # tape position under the writing window (scrolls)
    tape: list[TapeCell]
    meters: list[MeterState]
    pencil_cell: float                 # pencil cart position (cells from the window start)
    pencil_down: float                 # 0..1 pressing the paper
    typing_cell: float
    typing_down: float
    kv_tokens: float                   # entries in each drawer
    kv_tentative: float                # entries added by this pass, not yet confirmed
    drawer_pull: float                 # 0..1 drawers out
    gamma: int
    tube_round: int
    tube_progress: float
    extra: dict = field(default_factory=dict)
    drafter: str = "chain"             # who proposed this pass's guesses
    source: dict | None = None         # lookup: {"match": (a, b), "tail": (c, d), "copy": (e, f), "lit": 0..1,
                                       # "back": 0..1}: positions in the text of the earlier occurrence, the text's
                                       # last n tokens and the tokens copied (lit while the pencil cart copies them);
                                       # how far the tape has glided back to show them
    heads: list[int] | None = None     # heads shown on the big drum (2..γ+1) ...
    head_lit: list[float] | None = None  # ... and how bright each one's lamp is (lit while it proposes)
    tree: TreeState | None = None      # a tree pass: every node and how far it is through its life


def is_target_only(trace) -> bool:
    """A pass of the target alone (models.sampler.TargetSampler): no guesses, nothing to test."""
    return trace.extra.get("sampler") == "target" or (trace.gamma == 0 and not trace.guesses)


def _ramp(t: float, a: float, b: float) -> float:
    if b <= a:
        return 1.0 if t >= a else 0.0
    return min(max((t - a) / (b - a), 0.0), 1.0)


def _smooth(x: float) -> float:
    return x * x * (3 - 2 * x)


class Timeline:
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
        from scenes.layout import TAPE_X, window
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
    def _progress(self, t: float, span: tuple[float, float]) -> float:
        """How far t is through a time span, 0..1 (reduced motion: it jumps from 0 to 1 halfway)."""
        x = _ramp(t, *span)
        if self.reduced_motion:
            return 1.0 if x >= 0.5 else 0.0
        return x

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
                              pencil_down=0.0, typing_cell=-1.0, typing_down=0.0, kv_tokens=float(self.prefix_len),
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
        typing_cell, typing_down = self._typing(t, st)
        kv, tentative, pull = self._kv(t, st, tr, phase)
        heads, head_lit = self._heads(t, st, tr)
        return SceneState(
            t=t, step=k, phase=phase, phase_progress=prog,
            big_drum_angle=big, small_drum_angle=small,
            lanes_lit=min(9, lanes_true), lanes_true=lanes_true,
            mill_angle=0.0 if self.reduced_motion else self.mill_angle(t), mill_busy=busy,
            tape_view=view, tape=self._tape(t, k, st, tr), meters=self._meters(t, k, st, tr),
            pencil_cell=pencil_cell, pencil_down=pencil_down, typing_cell=typing_cell, typing_down=typing_down,
            kv_tokens=kv, kv_tentative=tentative, drawer_pull=pull,
            gamma=st.meters if st.meters >= 0 else len(tr.guesses),
            tube_round=tube_round, tube_progress=tube_progress,
            # The mill's readout: the busy share of the pass on the table (its gears turn only while it computes).
            extra={"pass_busy": st.busy, "target_only": st.target_only,
                   "context": self.pass_context(tr), **self._drafter_extra(tr)},
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

    # One function per part: where t falls in the pass's named spans.
    def _tubes(self, t: float) -> tuple[int, float]:
        """Test tubes: the round being dropped and how far its beads have fallen."""
        T = self.timing
        if not self.tube_rounds:
            return 0, 0
        tube_round = min(int(t / T.tube_round), self.tube_rounds - 1)
        tube_progress = min(1.0, (t - tube_round * T.tube_round) / (0.8 * T.tube_round))
        return tube_round, 1.0 if self.reduced_motion else tube_progress

    def _phase(self, t: float, k: int, st: StepTiming) -> tuple[str, float]:
        if t >= self.steps_end:
            return "done", 1.0
        for name in ("draft", "verify", "check", "write", "scroll"):
            a, b = getattr(st, name)
            if t < b or (name == "scroll" and t <= b and k < len(self.steps) - 1):
                return name, _ramp(t, a, b)
        return "done", 1.0

    def _drums(self, t: float, k: int, st: StepTiming) -> tuple[float, float]:
        """(big, small) drum angles: whole turns completed so far plus the current partial turn."""
        if self.reduced_motion:
            return 0.0, 0.0
        # The small drum turns only where a draft model runs (chain; a tree from the chain: once a depth).
        small_turns = sum(len(s.strokes) for s in self.steps[:k] if s.drum_turns) + \
            (sum(_ramp(t, *s) for s in st.strokes) if st.drum_turns else 0.0)
        big_turns = k + _ramp(t, *st.verify)
        return 2 * math.pi * big_turns, 2 * math.pi * small_turns

    def _tape(self, t: float, k: int, st: StepTiming, tr) -> list[TapeCell]:
        """Earlier passes' tokens inked; this pass's guesses in pencil, then struck / erased / inked. A tree's
        candidates are in `tree` until the pass is decided; then its kept branch and final token are typed."""
        n = tr.n_accepted
        tape: list[TapeCell] = []
        # Only the steps whose tokens can still be on the visible stretch of tape (long runs stay cheap); a lookup
        # pass also needs the text it copies from, however far back.
        lo = st.position - TAPE_HISTORY
        if tr.source_span:
            lo = min(lo, tr.source_span["match"][0] - TAPE_HISTORY // 2)
        first = k
        while first > 0 and self.steps[first - 1].position > lo:
            first -= 1
        first = max(first - 1, 0)
        for s_idx in range(first, k):
            tr_s, st_s = self.traces[s_idx], self.steps[s_idx]
            for i, tok in enumerate(tr_s.tokens_written):
                mark = "dot" if i < tr_s.n_accepted else "diamond"
                tape.append(TapeCell(st_s.position + i, tok, 1.0, 1.0, 0.0, 0.0, mark, s_idx))
        if tr.tree is not None:
            if t < st.erase[1]:
                return tape
            # The kept branch came down onto the line already inked; the typing head marks each and adds the last.
            for i, tok in enumerate(tr.tokens_written):
                typed = self._progress(t, st.inks[i])
                ink = 1.0 if i < n else typed
                tape.append(TapeCell(st.position + i, tok, 1.0, ink, 0.0, 0.0,
                                     ("dot" if i < n else "diamond") if typed > 0 else "", k))
            return tape
        for i, tok in enumerate(tr.guesses):
            pencil = self._progress(t, st.strokes[i])
            ink = self._progress(t, st.inks[i]) if i < n else 0.0
            struck = self._progress(t, st.strike) if i >= n else 0.0
            erased = self._progress(t, st.erase) if i >= n else 0.0
            tape.append(TapeCell(st.position + i, tok, pencil, ink, struck, erased, "dot" if ink > 0 else "", k))
        fin = self._progress(t, st.inks[n])
        if fin > 0:
            tape.append(TapeCell(st.position + n, tr.final_token, 1.0, fin, 0.0, 0.0, "diamond", k))
        return tape

    def _tape_view(self, t: float, st: StepTiming, tr) -> float:
        """Tape position under the writing window: it scrolls on by the tokens the pass wrote (a lookup pass first
        glides back to the text it copies from, and forward again)."""
        view = st.position + (len(tr.tokens_written) * _smooth(self._progress(t, st.scroll)))
        if st.look is not None and st.view_back > 0:
            a, b = st.look
            glide = 0.3 * (b - a)
            back = _smooth(self._progress(t, (a, a + glide))) - _smooth(self._progress(t, (b - glide, b)))
            view -= st.view_back * back
        return view

    def _source(self, t: float, st: StepTiming, tr) -> dict | None:
        """Lookup: the earlier occurrence, the text's last n tokens and the copied span, lit from when the tape
        has glided back until the big drum's turn is under way."""
        span = tr.source_span
        if st.look is None or not span:
            return None
        a, b = st.look
        lit = self._progress(t, (a + 0.3 * (b - a), a + 0.4 * (b - a))) * \
            (1.0 - self._progress(t, (st.verify[0], st.verify[0] + 0.4 * (st.verify[1] - st.verify[0]))))
        if lit <= 0:
            return None
        L = len(tr.context)
        glide = 0.3 * (b - a)
        back = _smooth(self._progress(t, (a, a + glide))) - _smooth(self._progress(t, (b - glide, b)))
        return {"match": tuple(span["match"]), "tail": (L - span["ngram"], L), "copy": tuple(span["copy"]),
                "lit": lit, "back": back if st.view_back > 0 else 0.0}

    def _heads(self, t: float, st: StepTiming, tr):
        """The heads on the big drum (heads 2..γ+1, a tree of heads: 2..depth+1) and their lamps: bright while a
        head's guesses are pencilled, dim once it has proposed, dark after the big drum's turn."""
        tree = tr.tree
        if tree is not None and kind_of(tree.base).look == HEADS:
            heads = [d + 1 for d in range(1, len(tree.widths) + 1)]
        elif tr.heads:
            heads = list(tr.heads)
        else:
            return None, None
        lit = []
        for i in range(len(heads)):
            a, b = st.strokes[i] if i < len(st.strokes) else (st.draft[1], st.draft[1])
            if a <= t < b:
                lit.append(1.0)
            elif b <= t < st.verify[1]:
                lit.append(0.35)
            else:
                lit.append(0.0)
        return heads, lit

    def _tree(self, t: float, st: StepTiming, tr) -> TreeState | None:
        """Every node of a tree pass: pencilled a depth a stroke, tested in the bridge's order, struck (rejected)
        or inked (kept), then the kept branch comes down onto the line. A tree in the margin (layout.tree_margin)
        stays there as the pass's record until the tape scrolls on: the struck candidates, the ringed ones that
        met the residual, the kept branch inked, the untested faded; a tree over the writing window is erased
        but for the kept branch, which the line then holds."""
        tree = tr.tree
        if tree is None:
            return None
        margin = tree_margin(len(tree.widths), len(tree.widths)) is not None
        scroll_half = (st.scroll[0], st.scroll[0] + 0.4 * (st.scroll[1] - st.scroll[0]))   # gone as it moves
        if t >= (scroll_half[1] if margin else st.erase[1]):
            return None
        by_node = {c.node: i for i, c in enumerate(tree.checks)}
        erase = self._progress(t, st.erase)
        leave = self._progress(t, scroll_half) if margin else 0.0
        kept = set(tree.accepted_path)
        nodes = []
        for nd in tree.nodes:
            pencil = self._progress(t, st.strokes[nd.depth - 1])
            checking, verdict, struck, ink, rnd = 0.0, "", 0.0, 0.0, 0
            j = by_node.get(nd.id)
            if j is not None:
                a, b = st.tests[j]
                checking = 1.0 if a <= t < b else 0.0
                rnd = tree.checks[j].round if t >= a else 0
                if t >= b - 1e-9:
                    ok = tree.checks[j].accepted
                    verdict = "pass" if ok else "fail"
                    after = self._progress(t, (b, b + 0.3))
                    ink, struck = (after, 0.0) if ok else (0.0, after)
            on_branch = nd.id in kept
            if margin:      # the record stays: only the candidates never tested fade (to a ghost), then all go
                gone = max(leave, 0.0 if (on_branch or j is not None) else 0.65 * erase)
            else:
                gone = 0.0 if on_branch else erase
            nodes.append(TreeNodeState(nd.id, nd.parent, nd.depth, nd.token, pencil, checking, verdict, struck, ink,
                                       gone, erase if on_branch else 0.0, rnd))
        return TreeState(list(tree.widths), nodes, tree.lanes_lit, margin)

    def _meters(self, t: float, k: int, st: StepTiming, tr) -> list[MeterState]:
        """One meter per guess: its column rises over its test span; the verdict shows at the span's end."""
        if tr.tree is not None:
            return self._tree_meters(t, k, st, tr)
        meters = []
        for i in range(len(tr.guesses)):
            x = tr.guesses[i]
            p = float(tr.p_rows[i, x])
            q = float(tr.q_rows[i, x])
            if i < len(st.tests):
                fill = self._progress(t, st.tests[i])
                verdict = ("pass" if tr.accepted[i] else "fail") if t >= st.tests[i][1] - 1e-9 else ""
            else:
                fill = 0.0
                # Untested from the moment the first rejection is found (the last test run).
                verdict = "untested" if t >= (st.tests[-1][1] if st.tests else st.check[0]) else ""
            if t >= st.scroll[0] + self.timing.scroll * 0.5 and k < len(self.steps) - 1 or t < st.verify[1]:
                fill, verdict = 0.0, ""
            meters.append(MeterState(i, float(tr.ratios[i]), float(tr.r[i]), p, q, fill, verdict))
        return meters

    def _tree_meters(self, t: float, k: int, st: StepTiming, tr) -> list[MeterState]:
        """A tree: one meter per position (depth). It shows the candidate being tested there now, against the
        running target (p, then the residual after each rejection); `results` keeps the rounds already decided."""
        tree = tr.tree
        depth_of = {nd.id: nd.depth for nd in tree.nodes}
        path = tree.accepted_path
        last_end = st.tests[-1][1] if st.tests else st.check[0]
        meters = []
        for i, width in enumerate(tree.widths):
            js = [j for j, c in enumerate(tree.checks) if depth_of[c.node] == i + 1]
            parent = -1 if i == 0 else (path[i - 1] if i - 1 < len(path) else None)
            rounds = len(tree.children(parent)) if parent is not None else width
            started = [j for j in js if t >= st.tests[j][0]]
            if not started:
                verdict = "untested" if t >= last_end else ""
                meters.append(MeterState(i, 0.0, 0.0, 0.0, 0.0, 0.0, verdict, rounds, ()))
                continue
            j = started[-1]
            c = tree.checks[j]
            a, b = st.tests[j]
            fill = self._progress(t, (a, b))
            results = tuple("pass" if tree.checks[x].accepted else "fail" for x in js if t >= st.tests[x][1] - 1e-9)
            verdict = ("pass" if c.accepted else "fail") if t >= b - 1e-9 else ""
            if t >= st.scroll[0] + self.timing.scroll * 0.5 and k < len(self.steps) - 1 or t < st.verify[1]:
                fill, verdict, results = 0.0, "", ()
            meters.append(MeterState(i, float(c.ratio), float(c.r), float(c.p_x), float(c.q_x), fill, verdict,
                                     rounds, results))
        return meters

    def _pencil(self, t: float, st: StepTiming, g: int, tr=None, view: float | None = None) -> tuple[float, float]:
        """(cell, pressure) of the pencil cart: one stroke per guess (a tree: per depth), then parked to the right.
        A lookup pass first rides over the text it copies (pencil up), then writes the copies in the window."""
        pencil_cell, pencil_down = 0.0, 0.0
        read_cell = None
        depth = len(tr.tree.widths) if tr is not None and tr.tree is not None else 0
        margin = tree_margin(depth, depth) if depth else None
        x0, cell = window(depth)
        if st.look is not None and tr is not None and tr.source_span:
            a, b = st.look
            c0, c1 = tr.source_span["copy"]
            pos = view if view is not None else float(st.position)
            # cells are counted from the writing window at the tape's position now
            read_cell = c0 + _ramp(t, a + 0.35 * (b - a), b - 0.3 * (b - a)) * max(c1 - c0 - 1, 0) - pos
            if t >= a:
                pencil_cell = read_cell
        for i, span in enumerate(st.strokes):
            if t >= span[0]:
                x = _ramp(t, *span)
                if i == 0 and read_cell is not None:
                    # from the copied text to the first cell, then down onto it
                    pencil_cell = read_cell + (0.0 - read_cell) * _smooth(min(1.0, 2 * x)) + max(0.0, x - 0.5) * 1.6
                    pencil_down = math.sin(math.pi * max(0.0, 2 * x - 1))
                    continue
                pencil_cell = i + x * 0.8
                if margin is not None:      # a tree in the margin: its depth's column, right of the cells
                    pencil_cell = (margin[0] + (i + 0.1 + 0.8 * x) * margin[1] - x0) / cell - 0.5
                pencil_down = math.sin(math.pi * x)
        if t >= st.draft[1]:
            # Parked to the right, clear of the cells (and a margin tree) the class is reading.
            park = g - 0.2 + 2.2 * _ramp(t, st.draft[1], st.draft[1] + 0.5)
            if margin is not None:
                last = (margin[0] + (depth - 0.1) * margin[1] - x0) / cell - 0.5
                park = last + ((TAPE_X[1] + 0.2 - x0) / cell - 0.5 - last) * _ramp(t, st.draft[1], st.draft[1] + 0.5)
            pencil_cell = park
            pencil_down = 0.0
        return pencil_cell, pencil_down

    def _typing(self, t: float, st: StepTiming) -> tuple[float, float]:
        """(cell, pressure) of the typing head: one strike per written token, then lifted away."""
        typing_cell, typing_down = -1.0, 0.0
        for i, span in enumerate(st.inks):
            if t >= span[0]:
                typing_cell = float(i)
                typing_down = math.sin(math.pi * _ramp(t, *span))
        if st.inks and t >= st.inks[-1][1]:
            typing_cell, typing_down = -1.0, 0.0
        return typing_cell, typing_down

    def _kv(self, t: float, st: StepTiming, tr, phase: str) -> tuple[float, float, float]:
        """(entries, tentative entries, drawer pull) of the KV cabinet: γ tentative entries read in during
        the pass, the rejected ones rolled back while the drawers are out again."""
        g, n = len(tr.guesses), tr.n_accepted
        if tr.tree is not None:
            g = len(tr.tree.nodes)          # every node's keys and values are written in the pass, then rolled back
        pull = math.sin(math.pi * self._progress(t, st.verify)) if st.verify[0] <= t < st.verify[1] else 0.0
        if n < g and st.erase[0] <= t < st.erase[1]:
            pull = math.sin(math.pi * self._progress(t, st.erase))
        tentative = g * self._progress(t, (st.verify[0], st.verify[0] + 0.6 * self.timing.big_turn))
        if st.erase[0] <= t:
            tentative -= (g - n) * self._progress(t, st.erase) if n < g else 0.0
        if t >= st.inks[-1][1]:
            tentative += 1
        kv = float(st.position)
        if phase == "done" or (t >= st.scroll[1]):
            kv, tentative = float(st.position + len(tr.tokens_written)), 0.0
        return kv, tentative, pull
