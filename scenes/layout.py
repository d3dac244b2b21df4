"""Where every part stands on the table (world units), what it is called (zh, en), and how a part draws.

SCIENCE.md section 12: back left the big drum and read head, front right the small drum and pencil cart,
front the paper tape under the bridge of meters, middle the mill, back right the KV cabinet, left end the
test tubes. Cameras (scenes/camera.py) and tests (projecting anchors) read these numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# Table top: the plane y = 0.
TABLE_X = (-10.4, 10.4)
TABLE_Z = (-5.3, 5.3)
TABLE_THICK = 0.45
FLOOR_Y = -7.0

# Big drum (target): axis along x.
BIG_DRUM_CENTRE = (-1.6, 2.1, -2.75)
BIG_DRUM_RADIUS = 1.25
BIG_DRUM_LENGTH = 3.8
BIG_DRUM_COLS = 20            # pin columns = read head teeth
BIG_DRUM_ROWS = 72

# Read head in front of the big drum: teeth -> push rods along z; nine lane shafts along x.
READ_HEAD_Y = 2.1
READ_HEAD_LANE_Z0 = -0.75
READ_HEAD_LANE_DZ = 0.17
N_LANES = 9

# Small drum (draft): about a tenth of the pins.
SMALL_DRUM_CENTRE = (8.4, 1.05, 1.6)
SMALL_DRUM_RADIUS = 0.55
SMALL_DRUM_LENGTH = 1.5

# Paper tape on a sloped board along the front; the writing window starts at TAPE_WINDOW_X.
TAPE_SLOPE = math.radians(52)           # from horizontal, rising away from the audience
TAPE_CENTRE = (2.7, 0.62, 4.35)          # centre of the board's surface
TAPE_X = (-4.6, 10.0)
TAPE_DEPTH = 1.45
CELL = 1.0
TAPE_WINDOW_X = 3.5                     # x of the left edge of the current step's first guess cell
GLYPH = 0.8

# Bridge of meters: behind the tape, one meter per guess, aligned with the guess cells.
BRIDGE_Z = 3.25
BRIDGE_BASE_Y = 0.55
METER_HEIGHT = 1.7

# Mill (arithmetic units), KV cabinet, test tubes.
MILL_CENTRE = (2.6, 1.2, -1.9)
CABINET_BOX = ((4.5, 7.7), (0.0, 3.95), (-4.6, -2.5))      # x, y, z ranges
TUBES_CENTRE = (-7.1, 0.0, 0.3)


def tape_up() -> np.ndarray:
    """Unit vector along the board, up the slope (a character's up)."""
    return np.array([0.0, math.sin(TAPE_SLOPE), -math.cos(TAPE_SLOPE)])


def tape_normal() -> np.ndarray:
    return np.array([0.0, math.cos(TAPE_SLOPE), math.sin(TAPE_SLOPE)])


def tape_point(x: float, v: float, lift: float = 0.0) -> np.ndarray:
    """A point on the tape: x along the table, v along the slope from the tape's centre line."""
    c = np.array(TAPE_CENTRE, dtype=np.float64)
    return np.array([x, c[1], c[2]]) + tape_up() * v + tape_normal() * lift


def window(gamma: int) -> tuple[float, float]:
    """(x of the writing window's left edge, cell width) for γ guesses: long runs of guesses move the window
    left and, past what the tape can hold, narrow the cells, so the γ meters and the bonus cell stay on it."""
    cell = min(CELL, 11.0 / (gamma + 1.5))
    return min(TAPE_WINDOW_X, TAPE_X[1] - 0.3 - (gamma + 1.3) * cell), cell


def rest_x(gamma: int) -> float:
    """x of the typing head's rest: just right of the writing window's last cell (the bonus token's)."""
    wx, cell = window(gamma)
    return wx + (max(int(gamma), 0) + 1) * cell + 0.32


def tree_margin(gamma: int, depth: int) -> tuple[float, float] | None:
    """(x of its first column's left edge, column width) of a guess tree drawn in the margin right of the pass's
    cells, where its candidates can be large and stay on the paper after the pass is decided (struck, ringed)
    while the kept branch is typed on the line; None when the tape has no room for a column a glyph wide (a deep
    tree is drawn over the writing window instead, smaller)."""
    x0, cell = window(gamma)
    start = x0 + (depth + 1) * cell + 0.25
    width = min(1.3, (TAPE_X[1] - 0.25 - start) / max(int(depth), 1))
    return (start, width) if width >= 1.0 else None


def cell_x(cell: float, gamma: int = 4) -> float:
    """Centre x of a tape cell counted from the writing window (cell 0 = the first guess of this step)."""
    x0, w = window(gamma)
    return x0 + (cell + 0.5) * w


@dataclass
class PartInfo:
    name: str
    zh: str
    en: str
    anchor: tuple          # world point the label sits above (and tests project)
    lift: tuple            # exploded-view offset
    probe: tuple = ()      # world point on the part's body (tests look for it there)
    exploded_anchor: tuple = ()   # where the label goes when the table is taken apart (before the lift)


PARTS: dict[str, PartInfo] = {
    "bigdrum": PartInfo("bigdrum", "大滚筒 · 大模型", "big drum · target", (-1.6, 3.9, -2.75), (-1.0, 4.6, -1.6),
                        (-1.6, 2.1 + 1.25, -2.75)),
    "readhead": PartInfo("readhead", "读头 · 九条路", "read head · nine lanes", (-1.6, 1.0, 1.3),
                         (-0.6, 3.2, 0.6), (-1.6, 2.1, -0.2)),
    "smalldrum": PartInfo("smalldrum", "小滚筒 · 小模型", "small drum · draft", (10.2, 3.3, 0.6), (3.4, 3.2, 0.4),
                          (8.4, 1.6, 1.6), (8.4, 2.3, 1.6)),
    "tape": PartInfo("tape", "纸带", "paper tape · Chinese text", (-5.7, 0.5, 4.4), (0.0, 0.3, 2.8),
                     (0.0, 0.62, 4.35)),
    # (its leader ends on the beam between the first two meters: on a meter it crossed the column and r it names)
    "bridge": PartInfo("bridge", "桥", "bridge of meters", (2.1, 1.1, 3.0), (0.0, 1.7, 1.9),
                       (4.5, 2.2, 3.25)),
    "mill": PartInfo("mill", "小磨坊 · 算术", "arithmetic mill", (2.9, 3.75, -1.9), (0.0, 3.8, 0.0), (2.2, 1.35, -1.75)),
    "cabinet": PartInfo("cabinet", "柜子 · 缓存", "KV cabinet", (6.1, 4.6, -3.55), (1.9, 3.6, -1.0), (6.1, 2.0, -2.5)),
    "tubes": PartInfo("tubes", "试管", "test tubes", (-7.1, 0.0, 2.4), (-2.2, 3.0, 0.6), (-8.5, 2.0, -0.1),
                      (-7.1, 0.0, 2.9)),     # under the racks: the space above them holds their readouts
}


@dataclass
class EmitContext:
    """What a part needs to draw itself this frame, besides the timeline state."""
    palette: object
    cam_right: np.ndarray
    cam_up: np.ndarray
    language: str = "both"              # zh | en | both
    view: str = "table"
    run: object = None                  # scenes.stage.RunInfo: the run's display, prefix, lanes, hardware label
    # True when the screen labels carry the parts' readouts (wide views): a part then leaves out in-world
    # readouts that would be too small or hidden behind nearer parts there.
    labelled: bool = False
    # True where the mill is framed alone: its readout stands on a sign beside it (scenes.mill), not its base.
    mill_sign: bool = False
    # Text sizes: the picture height text is sized for, and the smallest em height allowed (both in this
    # frame's pixels; scenes.legibility). 0: the frame's own height and no minimum.
    text_ref: float = 0.0
    min_px: float = 0.0

    def say(self, zh: str, en: str) -> str:
        if self.language == "zh":
            return zh
        if self.language == "en":
            return en
        return f"{zh}  {en}"
