"""The timeline's records: one pass's named time spans (StepTiming, what the schedule is built of) and the
scene's state at a time t (SceneState, with its tape cells, meters and guess tree), what every part draws from
(scenes.timeline builds both)."""
from __future__ import annotations

from dataclasses import dataclass, field


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
    typing_cell: float                 # the cell the typing head strikes (cells from the window start)
    typing_down: float                 # 0..1 pressing the paper
    typing_rest: float                 # 0..1 of the way from that cell to its rest right of the window
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
