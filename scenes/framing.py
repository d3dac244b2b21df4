"""Framing: the camera pose that shows exactly the parts a sentence names, and how much of each is in view.

A tour beat names parts (scenes.layout.PARTS). Each part has a box in the world: the bounds of what it draws
(its own instances and words), except where a sentence means less than all of it: the tape's box is the
writing window and the few characters before it (not its fifteen units of paper), the read head's its teeth,
rods and lanes (not the base they stand on), the bridge's its meters on their beam (not its legs).

fit_pose looks at the boxes from one direction, the mean of the parts' own directions (DIRECTIONS: from where
each part's writing faces the room, never from a grazing angle), and finds the target point and distance that
fit the boxes' projected bounds into a screen rectangle (the stage's frame less the HUD), as large as fits.
projected_rect and visible_share measure the result; the tour's `beat` report and its test read them.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from scenes.camera import CameraPose, look_at, projection
from scenes.geometry import build_meshes
from scenes.layout import N_LANES, READ_HEAD_Y, TAPE_DEPTH, rest_x, tape_point, tree_margin, window
from scenes.readhead import lane_z

# From where each part reads best: (azimuth, elevation) in degrees of the direction from the part to the eye;
# azimuth 0 looks from the audience's side (+z), positive from the right (+x). Each is near the normal of the
# part's writing: the tape's board slopes 52° (its normal rises 38°), the meters, tubes, mill and drawers face
# the room standing up; the read head is seen from above so its lit lanes show.
DIRECTIONS: dict[str, tuple[float, float]] = {
    "bigdrum": (0.0, 30.0),
    "readhead": (0.0, 48.0),
    "smalldrum": (-12.0, 30.0),
    "tape": (0.0, 36.0),
    "bridge": (0.0, 24.0),
    "mill": (0.0, 20.0),
    "cabinet": (-12.0, 30.0),
    "tubes": (0.0, 20.0),
}
CUTAWAY_DIRECTION = (70.0, 14.0)       # the read head cut open: from the right, low, where its end plate was, as
# the cut-away view stands: the lanes' counters and numbers in a row under the push rods
# Where a part's writing faces (for the readability check: the view must not graze it).
TEXT_NORMALS: dict[str, tuple[float, float, float]] = {
    "tape": (0.0, math.cos(math.radians(52)), math.sin(math.radians(52))),
    "bridge": (0.0, math.sin(math.radians(16)), math.cos(math.radians(16))),
    "tubes": (0.0, 0.0, 1.0),
    "mill": (0.0, 0.0, 1.0),
    "cabinet": (0.0, 0.0, 1.0),
}
FOV = 36.0


def direction_vector(azimuth: float, elevation: float) -> np.ndarray:
    a, e = math.radians(azimuth), math.radians(elevation)
    return np.array([math.sin(a) * math.cos(e), math.sin(e), math.cos(a) * math.cos(e)])


WIDE_ELEVATION = 40.0   # a frame of most of the table looks down this much at least
# ... and from the right of the front by this much: straight from the front the bridge's meters hide half of the
# small drum behind them (measured with Stage.occlusion: 52% at 0°, 22% at 20°; at no height alone does it clear)
WIDE_AZIMUTH = 20.0


def view_direction(parts, cutaway: bool = False) -> np.ndarray:
    """The unit direction from the parts to the eye: the mean of the parts' own directions (from higher up when
    they are most of the table, so the front parts do not hide the back ones)."""
    if cutaway:
        return direction_vector(*CUTAWAY_DIRECTION)
    v = sum(direction_vector(*DIRECTIONS[p]) for p in parts)
    v = v / np.linalg.norm(v)
    if len(parts) >= 5:
        az = math.degrees(math.atan2(v[0], v[2])) + WIDE_AZIMUTH
        el = max(math.degrees(math.asin(v[1])), WIDE_ELEVATION)
        v = direction_vector(az, el)
    return v


@lru_cache(maxsize=1)
def mesh_bounds() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Local bounds of every mesh the renderer draws (scenes.geometry.build_meshes)."""
    out = {}
    for name, verts in build_meshes().items():
        p = np.asarray(verts, dtype=np.float64).reshape(-1, 6)[:, :3]
        out[name] = (p.min(0), p.max(0))
    return out


def builder_bounds(fb) -> tuple[np.ndarray, np.ndarray] | None:
    """World bounds of everything a FrameBuilder holds (instances and world text; not screen text)."""
    bounds = mesh_bounds()
    pts = []
    for (mesh, _, _), chunks in fb.groups.items():
        lo, hi = bounds[mesh]
        corners = np.array([[x, y, z, 1.0] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        for rows in chunks:
            m = rows[:, :16].astype(np.float64).reshape(-1, 4, 4).transpose(0, 2, 1)   # back from column-major
            pts.append((m @ corners.T).transpose(0, 2, 1).reshape(-1, 4)[:, :3])
    for rows in fb.world_text:
        r = rows.astype(np.float64)
        o, au, av = r[:, 0:3], r[:, 3:6], r[:, 6:9]
        pts += [o, o + au, o + av, o + au + av]
    if not pts:
        return None
    allp = np.concatenate(pts)
    return allp.min(0), allp.max(0)


def tape_box(gamma: int, before: int = 3, tree_depth: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The tape's writing window (γ guess cells and the bonus cell) and `before` cells of text before it; for a
    tree pass drawn in the margin (layout.tree_margin), out to the tree's last column."""
    g = max(int(gamma), 1)
    x0, cell = window(gamma)
    # out to the typing head's rest right of the bonus cell (it is in every picture of the tape, named there)
    xa, xb = x0 - (before + 0.3) * cell, max(x0 + (g + 1.5) * cell, rest_x(gamma) + 0.35)
    margin = tree_margin(gamma, tree_depth) if tree_depth else None
    if margin is not None:
        xb = margin[0] + tree_depth * margin[1] + 0.1
    pts = np.array([tape_point(x, v, lift) for x in (xa, xb) for v in (-TAPE_DEPTH / 2, TAPE_DEPTH / 2)
                    for lift in (0.0, 0.12)])
    return pts.min(0), pts.max(0)


def readhead_box(head) -> tuple[np.ndarray, np.ndarray]:
    """The read head's working part: its teeth, push rods and nine lane shafts (not the base they stand on), so
    a sentence about its lanes frames them large enough to number and to see light."""
    lo = np.array([head.x0 - 0.15, READ_HEAD_Y - 0.35, head.tip_z])
    hi = np.array([head.x1 + 0.7, READ_HEAD_Y + 0.35, lane_z(N_LANES - 1) + 0.4])
    return lo, hi


def box_corners(lo, hi) -> np.ndarray:
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])], float)


def projected_rect(viewproj: np.ndarray, lo, hi, width: int, height: int):
    """(x0, y0, x1, y1) in pixels of a world box's projected corners, or None if a corner is behind the eye."""
    c = np.hstack([box_corners(lo, hi), np.ones((8, 1))]) @ viewproj.T
    if np.any(c[:, 3] <= 1e-6):
        return None
    ndc = c[:, :3] / c[:, 3:4]
    xs = (ndc[:, 0] * 0.5 + 0.5) * width
    ys = (1 - (ndc[:, 1] * 0.5 + 0.5)) * height
    return float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max())


def _area(r) -> float:
    return max(0.0, r[2] - r[0]) * max(0.0, r[3] - r[1])


def _clip(r, c):
    return max(r[0], c[0]), max(r[1], c[1]), min(r[2], c[2]), min(r[3], c[3])


def visible_share(rect, frame, covers=()) -> float:
    """Share of `rect`'s area inside `frame` and under none of `covers` (rectangles x0, y0, x1, y1)."""
    if rect is None:
        return 0.0
    total = _area(rect)
    if total <= 0:
        return 0.0
    inside = _clip(rect, frame)
    seen = _area(inside)
    if seen <= 0:
        return 0.0
    # Covers may overlap each other: count the covered area on a coarse grid over the visible part.
    n = 48
    xs = np.linspace(inside[0], inside[2], n, endpoint=False) + (inside[2] - inside[0]) / (2 * n)
    ys = np.linspace(inside[1], inside[3], n, endpoint=False) + (inside[3] - inside[1]) / (2 * n)
    gx, gy = np.meshgrid(xs, ys)
    hidden = np.zeros_like(gx, dtype=bool)
    for c in covers:
        hidden |= (gx >= c[0]) & (gx < c[2]) & (gy >= c[1]) & (gy < c[3])
    return float(seen * (1.0 - hidden.mean()) / total)


def overlap_share(rect, covers) -> float:
    """Share of `rect`'s area under any of `covers`."""
    if rect is None or _area(rect) <= 0:
        return 0.0
    return 1.0 - visible_share(rect, (-1e9, -1e9, 1e9, 1e9), covers)


def fit_pose(boxes, direction, rect, width: int, height: int, fov: float = FOV, fill: float = 0.92,
             iterations: int = 60) -> tuple[CameraPose, float]:
    """The pose looking along -direction that fits every box's projected bounds into `rect` (x0, y0, x1, y1
    pixels of a width x height frame), centred and filling `fill` of it in the tighter dimension.
    Returns (pose, scale): scale is the union's projected size over the rectangle's (1 = fits exactly)."""
    pts = np.concatenate([box_corners(lo, hi) for lo, hi in boxes])
    lo, hi = pts.min(0), pts.max(0)
    target = (lo + hi) / 2
    d = np.asarray(direction, dtype=np.float64)
    d = d / np.linalg.norm(d)
    radius = float(np.linalg.norm(hi - lo)) / 2 + 1e-3
    dist = radius / math.tan(math.radians(fov) / 2) * 1.2
    aspect = width / max(height, 1)
    rw, rh = rect[2] - rect[0], rect[3] - rect[1]
    rcx, rcy = (rect[0] + rect[2]) / 2, (rect[1] + rect[3]) / 2
    s = 1.0
    for _ in range(iterations):
        eye = target + d * dist
        pose = CameraPose(tuple(eye), tuple(target), fov)
        view = look_at(pose.eye, pose.target)
        vp = projection(pose, aspect) @ view
        c = np.hstack([pts, np.ones((len(pts), 1))]) @ vp.T
        if np.any(c[:, 3] <= 0.35):          # a corner near or behind the eye: back off
            dist *= 1.5
            continue
        ndc = c[:, :2] / c[:, 3:4]
        xs, ys = (ndc[:, 0] * 0.5 + 0.5) * width, (1 - (ndc[:, 1] * 0.5 + 0.5)) * height
        bw, bh = xs.max() - xs.min(), ys.max() - ys.min()
        s = max(bw / max(rw, 1e-6), bh / max(rh, 1e-6))
        dx, dy = rcx - (xs.min() + xs.max()) / 2, rcy - (ys.min() + ys.max()) / 2
        # Pixels to world units at the target's depth: the frame's height spans 2·dist·tan(fov_y / 2).
        fov_y = 2 * math.atan(1.0 / projection(pose, aspect)[1, 1])
        per_px = 2 * dist * math.tan(fov_y / 2) / height
        right, up = view[0, :3], view[1, :3]
        target = target - right * dx * per_px + up * dy * per_px
        if abs(s - fill) < 0.004 and abs(dx) < 0.5 and abs(dy) < 0.5:
            break
        dist *= (s / fill) ** 0.8
    eye = target + d * dist
    return CameraPose(tuple(float(v) for v in eye), tuple(float(v) for v in target), fov), s
