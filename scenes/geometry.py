"""Meshes and transforms: the few unit shapes every part is built from, and 4x4 matrix helpers.

Every mesh is a flat float32 array of triangles (x, y, z, nx, ny, nz per vertex), built once and drawn
instanced: a part never owns a mesh, it only places copies of these shapes (pins, teeth, beads, drawers).
Matrices are numpy (4, 4) with column vectors (p' = M @ p); they are uploaded transposed (column-major).
"""
from __future__ import annotations

import math

import numpy as np


# ---------------------------------------------------------------- transforms

def translate(x: float, y: float, z: float) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


def scale(sx: float, sy: float | None = None, sz: float | None = None) -> np.ndarray:
    sy = sx if sy is None else sy
    sz = sx if sz is None else sz
    return np.diag([sx, sy, sz, 1.0])


def rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    m = np.eye(4)
    m[1, 1], m[1, 2], m[2, 1], m[2, 2] = c, -s, s, c
    return m


def rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    m = np.eye(4)
    m[0, 0], m[0, 1], m[1, 0], m[1, 1] = c, -s, s, c
    return m


def compose(*ms: np.ndarray) -> np.ndarray:
    """compose(A, B, C) = A @ B @ C: C is applied first."""
    out = np.eye(4)
    for m in ms:
        out = out @ m
    return out


def box_matrix(cx, cy, cz, sx, sy, sz) -> np.ndarray:
    """The unit cube moved to centre (cx, cy, cz) with size (sx, sy, sz)."""
    m = np.diag([sx, sy, sz, 1.0])
    m[:3, 3] = (cx, cy, cz)
    return m


def boxes(centres: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Vectorised box_matrix: (N, 3) centres and (N, 3) or (3,) sizes -> (N, 4, 4)."""
    centres = np.asarray(centres, dtype=np.float64).reshape(-1, 3)
    sizes = np.broadcast_to(np.asarray(sizes, dtype=np.float64), centres.shape)
    n = len(centres)
    m = np.zeros((n, 4, 4))
    m[:, 0, 0], m[:, 1, 1], m[:, 2, 2] = sizes[:, 0], sizes[:, 1], sizes[:, 2]
    m[:, :3, 3] = centres
    m[:, 3, 3] = 1.0
    return m


# ---------------------------------------------------------------- meshes

def _tris(verts: list, normals: list) -> np.ndarray:
    v = np.asarray(verts, dtype=np.float32).reshape(-1, 3)
    n = np.asarray(normals, dtype=np.float32).reshape(-1, 3)
    return np.hstack([v, n]).astype(np.float32)


def box_mesh() -> np.ndarray:
    """Unit cube centred at the origin: 12 triangles."""
    faces = [
        ((1, 0, 0), [(0.5, -0.5, -0.5), (0.5, 0.5, -0.5), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5)]),
        ((-1, 0, 0), [(-0.5, -0.5, 0.5), (-0.5, 0.5, 0.5), (-0.5, 0.5, -0.5), (-0.5, -0.5, -0.5)]),
        ((0, 1, 0), [(-0.5, 0.5, -0.5), (-0.5, 0.5, 0.5), (0.5, 0.5, 0.5), (0.5, 0.5, -0.5)]),
        ((0, -1, 0), [(-0.5, -0.5, 0.5), (-0.5, -0.5, -0.5), (0.5, -0.5, -0.5), (0.5, -0.5, 0.5)]),
        ((0, 0, 1), [(-0.5, -0.5, 0.5), (0.5, -0.5, 0.5), (0.5, 0.5, 0.5), (-0.5, 0.5, 0.5)]),
        ((0, 0, -1), [(0.5, -0.5, -0.5), (-0.5, -0.5, -0.5), (-0.5, 0.5, -0.5), (0.5, 0.5, -0.5)]),
    ]
    verts, normals = [], []
    for n, (a, b, c, d) in faces:
        for p in (a, b, c, a, c, d):
            verts.append(p)
            normals.append(n)
    return _tris(verts, normals)


def cylinder_mesh(segments: int = 24, caps: bool = True, smooth: bool = True) -> np.ndarray:
    """Cylinder of radius 1 around the y axis from y = -0.5 to 0.5; 2*segments (+2*segments for caps) triangles."""
    verts, normals = [], []
    angles = [2 * math.pi * i / segments for i in range(segments + 1)]
    for i in range(segments):
        a0, a1 = angles[i], angles[i + 1]
        p0 = (math.cos(a0), math.sin(a0))
        p1 = (math.cos(a1), math.sin(a1))
        if smooth:
            n0 = (p0[0], 0, p0[1])
            n1 = (p1[0], 0, p1[1])
        else:
            am = (a0 + a1) / 2
            n0 = n1 = (math.cos(am), 0, math.sin(am))
        b0, b1 = (p0[0], -0.5, p0[1]), (p1[0], -0.5, p1[1])
        t0, t1 = (p0[0], 0.5, p0[1]), (p1[0], 0.5, p1[1])
        verts += [b0, t1, b1, b0, t0, t1]
        normals += [n0, n1, n1, n0, n0, n1]
        if caps:
            verts += [(0, 0.5, 0), t1, t0]
            normals += [(0, 1, 0)] * 3
            verts += [(0, -0.5, 0), b0, b1]
            normals += [(0, -1, 0)] * 3
    return _tris(verts, normals)


def prism_mesh(sides: int = 6) -> np.ndarray:
    """A flat-sided prism of radius 1 around y (-0.5..0.5) with a top cap and no bottom (it stands on a
    surface): 2*sides + (sides - 2) triangles. The pins use it: thousands of copies, so every triangle counts."""
    verts, normals = [], []
    pts = [(math.cos(2 * math.pi * i / sides), math.sin(2 * math.pi * i / sides)) for i in range(sides)]
    for i in range(sides):
        (x0, z0), (x1, z1) = pts[i], pts[(i + 1) % sides]
        am = 2 * math.pi * (i + 0.5) / sides
        n = (math.cos(am), 0.0, math.sin(am))
        b0, b1, t0, t1 = (x0, -0.5, z0), (x1, -0.5, z1), (x0, 0.5, z0), (x1, 0.5, z1)
        verts += [b0, t1, b1, b0, t0, t1]
        normals += [n] * 6
    for i in range(1, sides - 1):
        verts += [(pts[0][0], 0.5, pts[0][1]), (pts[i + 1][0], 0.5, pts[i + 1][1]), (pts[i][0], 0.5, pts[i][1])]
        normals += [(0, 1, 0)] * 3
    return _tris(verts, normals)


def gear_mesh(teeth: int = 16, inner: float = 0.78, tooth_depth: float = 0.2, bore: float = 0.18) -> np.ndarray:
    """A spur gear of outer radius 1 in the xy plane, 1 thick along z (-0.5..0.5), with spokes cut as a bore ring."""
    verts, normals = [], []
    # Outline: per tooth 4 points (root, rise, top, fall).
    pts = []
    for i in range(teeth):
        a = 2 * math.pi * i / teeth
        w = 2 * math.pi / teeth
        for frac, r in ((0.0, inner), (0.18, inner), (0.32, 1.0), (0.68, 1.0), (0.82, inner)):
            pts.append((a + frac * w, r))
    outline = [(r * math.cos(a), r * math.sin(a)) for a, r in pts]
    n = len(outline)
    # Faces: a fan from the bore ring to the outline on both sides (bore ring at radius `bore`).
    for side, z in ((1, 0.5), (-1, -0.5)):
        for i in range(n):
            p0, p1 = outline[i], outline[(i + 1) % n]
            a0 = math.atan2(p0[1], p0[0])
            a1 = math.atan2(p1[1], p1[0])
            q0 = (bore * math.cos(a0), bore * math.sin(a0))
            q1 = (bore * math.cos(a1), bore * math.sin(a1))
            quad = [(q0[0], q0[1], z), (p0[0], p0[1], z), (p1[0], p1[1], z), (q1[0], q1[1], z)]
            tri = [quad[0], quad[1], quad[2], quad[0], quad[2], quad[3]]
            if side < 0:
                tri = [tri[0], tri[2], tri[1], tri[3], tri[5], tri[4]]
            verts += tri
            normals += [(0, 0, side)] * 6
    # Outer walls.
    for i in range(n):
        p0, p1 = outline[i], outline[(i + 1) % n]
        dx, dy = p1[0] - p0[0], p1[1] - p0[1]
        ln = math.hypot(dx, dy) or 1.0
        nrm = (dy / ln, -dx / ln, 0)
        a, b = (p0[0], p0[1], -0.5), (p1[0], p1[1], -0.5)
        c, d = (p1[0], p1[1], 0.5), (p0[0], p0[1], 0.5)
        verts += [a, c, b, a, d, c]
        normals += [nrm] * 6
    return _tris(verts, normals)


def sphere_mesh(subdiv: int = 1) -> np.ndarray:
    """Icosphere of radius 1 (subdiv 1: 80 triangles), smooth normals."""
    t = (1 + 5 ** 0.5) / 2
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
         (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    v = [np.array(p, dtype=np.float64) / np.linalg.norm(p) for p in v]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
         (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11),
         (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    tris = [(v[a], v[b], v[c]) for a, b, c in f]
    for _ in range(subdiv):
        nxt = []
        for a, b, c in tris:
            ab = (a + b) / np.linalg.norm(a + b)
            bc = (b + c) / np.linalg.norm(b + c)
            ca = (c + a) / np.linalg.norm(c + a)
            nxt += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        tris = nxt
    verts = [p for tri in tris for p in tri]
    return _tris(verts, verts)


def quad_mesh() -> np.ndarray:
    """Unit square in the xz plane facing +y (for shadows and flat plates): 2 triangles."""
    a, b, c, d = (-0.5, 0, -0.5), (-0.5, 0, 0.5), (0.5, 0, 0.5), (0.5, 0, -0.5)
    return _tris([a, b, c, a, c, d], [(0, 1, 0)] * 6)


def build_meshes() -> dict[str, np.ndarray]:
    """Every shape the table uses, by name."""
    return {
        "box": box_mesh(),
        "cyl": cylinder_mesh(32),           # drums, tubes' feet, bearings
        "cyl_lo": cylinder_mesh(10),        # rods, shafts, rivets: many copies, few triangles
        "tube": cylinder_mesh(24, caps=False),
        "gear": gear_mesh(16),
        "gear_big": gear_mesh(28, inner=0.86, tooth_depth=0.14),
        "bead": sphere_mesh(1),
        "pin": prism_mesh(6),               # the weights: 16 triangles each
    }
