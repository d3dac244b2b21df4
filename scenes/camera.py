"""The camera: one preset per view of the table, smooth moves between them, and world-to-pixel projection.

World units: the table top is the plane y = 0, x runs left to right along the front edge, z towards the
audience. A preset is (eye, target, vertical field of view); tests use `project` to know where a part
should appear on screen. A camera target is a name in VIEWS: adding one is adding a pose here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from corpus.errors import InputError


@dataclass(frozen=True)
class CameraPose:
    eye: tuple
    target: tuple
    fov_deg: float = 34.0


# Where each view looks from. The part positions these frame live in scenes/layout.py.
VIEWS: dict[str, CameraPose] = {
    "table": CameraPose((0.4, 13.6, 19.0), (0.4, 0.9, 0.2), 36.0),
    "bigdrum": CameraPose((-1.2, 5.6, 5.6), (-1.6, 2.0, -2.4), 40.0),
    "readhead": CameraPose((-1.4, 6.6, 3.6), (-1.5, 1.6, -1.2), 40.0),
    "cutaway": CameraPose((4.7, 3.0, 1.2), (-0.8, 1.95, -0.75), 36.0),
    "smalldrum": CameraPose((5.4, 4.4, 7.8), (7.0, 1.0, 2.7), 40.0),
    "tape": CameraPose((3.2, 6.2, 13.4), (3.2, 1.8, 3.6), 38.0),     # the writing window and a tree's margin
    "bridge": CameraPose((5.0, 6.0, 12.2), (5.0, 2.6, 3.3), 34.0),
    "mill": CameraPose((3.0, 2.9, 3.6), (2.9, 1.3, -1.9), 38.0),
    "cabinet": CameraPose((4.2, 7.6, 3.6), (6.1, 2.2, -2.6), 40.0),
    # Close enough that the numbers over the tubes read at 720p; the racks right of the HUD.
    "tubes": CameraPose((-7.4, 5.8, 10.8), (-7.1, 3.3, 0.3), 36.0),   # both racks whole, room over them
    "exploded": CameraPose((0.6, 17.0, 22.5), (0.4, 2.4, 0.0), 38.0),
}


def look_at(eye, target, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    eye, target, up = (np.asarray(v, dtype=np.float64) for v in (eye, target, up))
    f = target - eye
    f /= np.linalg.norm(f)
    s = np.cross(f, up)
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def perspective(fov_deg: float, aspect: float, near: float = 0.3, far: float = 120.0) -> np.ndarray:
    f = 1.0 / math.tan(math.radians(fov_deg) / 2)
    m = np.zeros((4, 4))
    m[0, 0] = f / aspect
    m[1, 1] = f
    m[2, 2] = (far + near) / (near - far)
    m[2, 3] = 2 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def projection(pose: CameraPose, aspect: float) -> np.ndarray:
    """The pose's projection. Keeps the horizontal extent on very tall windows: the vertical fov widens when
    aspect < 16:9."""
    fov = pose.fov_deg
    if aspect < 16 / 9:
        t = math.tan(math.radians(fov) / 2) * (16 / 9) / aspect
        fov = math.degrees(2 * math.atan(t))
    return perspective(fov, aspect)


def _smooth(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3 - 2 * x)


class Camera:
    """Holds the current pose; `move_to` starts a transition that `advance(dt)` moves on. The camera keeps no
    clock of its own: it moves only when the one clock that drives the table (Stage.advance) says time passed,
    so scripted frames are the same on any machine and under any load."""

    def __init__(self, view: str = "table"):
        self.view = view
        self.pose = VIEWS[view]
        self._from = self.pose
        self._to = self.pose
        self._elapsed = 0.0
        self._duration = 0.0
        self.aspect = 16 / 9
        self._viewproj = None       # (pose, aspect) and its matrix

    @staticmethod
    def check(view: str) -> str:
        if view not in VIEWS:
            raise InputError(f"unknown view {view!r} (choose from {', '.join(VIEWS)})")
        return view

    def move_to(self, view, duration: float) -> None:
        """Fly to a named view, or to a pose (a framing of parts: scenes.framing), over `duration` seconds."""
        if isinstance(view, CameraPose):
            self.view, to = "framed", view
        else:
            self.check(view)
            self.view, to = view, VIEWS[view]
        self._from = self.pose
        self._to = to
        self._elapsed = 0.0
        self._duration = max(duration, 0.0)
        if self._duration == 0.0:
            self.pose = self._to

    def advance(self, dt: float) -> None:
        """Move dt seconds further along the current transition (smoothstep-eased)."""
        if self.pose == self._to:
            return
        self._elapsed += max(dt, 0.0)
        k = 1.0 if self._duration <= 0 else _smooth(self._elapsed / self._duration)
        a, b = self._from, self._to
        lerp = lambda p, q: tuple(float(x + (y - x) * k) for x, y in zip(p, q))  # noqa: E731
        self.pose = b if k >= 1.0 else CameraPose(lerp(a.eye, b.eye), lerp(a.target, b.target),
                                                   a.fov_deg + (b.fov_deg - a.fov_deg) * k)

    @property
    def moving(self) -> bool:
        return self.pose != self._to

    def view_matrix(self) -> np.ndarray:
        return look_at(self.pose.eye, self.pose.target)

    def proj_matrix(self, aspect: float) -> np.ndarray:
        return projection(self.pose, aspect)

    def viewproj(self, aspect: float) -> np.ndarray:
        """The projection times the view (read-only: kept for the next call with the same pose and aspect; a
        frame asks for it several times)."""
        self.aspect = aspect
        key = (self.pose, aspect)
        cached = self._viewproj
        if cached is None or cached[0] != key:
            m = self.proj_matrix(aspect) @ self.view_matrix()
            m.flags.writeable = False
            cached = self._viewproj = (key, m)
        return cached[1]

    def basis(self) -> tuple[np.ndarray, np.ndarray]:
        """Camera right and up vectors in world space (for labels that face the audience)."""
        v = self.view_matrix()
        return v[0, :3].copy(), v[1, :3].copy()


def project(viewproj: np.ndarray, point, width: int, height: int) -> tuple[float, float, float]:
    """World point -> (x, y) pixel (origin top-left) and NDC depth."""
    p = viewproj @ np.array([point[0], point[1], point[2], 1.0])
    ndc = p[:3] / p[3]
    return (ndc[0] * 0.5 + 0.5) * width, (1 - (ndc[1] * 0.5 + 0.5)) * height, ndc[2]
