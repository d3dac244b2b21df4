"""The cast-iron bench that holds every part: iron top and legs, brass edge fittings, rivets, the floor."""
from __future__ import annotations

import numpy as np

from scenes.geometry import box_matrix, compose, rot_x, scale, translate
from scenes.layout import FLOOR_Y, TABLE_THICK, TABLE_X, TABLE_Z, EmitContext


class CastIronTable:
    name = "table"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ()

    def __init__(self):
        x0, x1 = TABLE_X
        z0, z1 = TABLE_Z
        w, d = x1 - x0, z1 - z0
        self.top = [box_matrix(0, -TABLE_THICK / 2, 0, w, TABLE_THICK, d)]
        self.iron = []
        # Aprons and legs.
        ap = []
        for z in (z0 + 0.35, z1 - 0.35):
            ap.append(box_matrix(0, -TABLE_THICK - 0.35, z, w - 0.9, 0.7, 0.22))
        for x in (x0 + 0.45, x1 - 0.45):
            ap.append(box_matrix(x, -TABLE_THICK - 0.35, 0, 0.22, 0.7, d - 0.9))
        legs = []
        for x in (x0 + 0.55, x1 - 0.55):
            for z in (z0 + 0.55, z1 - 0.55):
                h = -FLOOR_Y - TABLE_THICK
                legs.append(box_matrix(x, FLOOR_Y + h / 2, z, 0.55, h, 0.55))
                legs.append(box_matrix(x, FLOOR_Y + 0.12, z, 0.95, 0.24, 0.95))     # foot
        # A stretcher between the legs, low down, as cast benches have.
        legs.append(box_matrix(0, FLOOR_Y + 1.4, z0 + 0.55, w - 1.1, 0.25, 0.18))
        legs.append(box_matrix(0, FLOOR_Y + 1.4, z1 - 0.55, w - 1.1, 0.25, 0.18))
        self.iron += ap + legs
        # Brass edge band along the front and sides, and corner caps.
        self.brass = [box_matrix(0, -0.12, z1 + 0.02, w + 0.06, 0.14, 0.06),
                      box_matrix(0, -0.12, z0 - 0.02, w + 0.06, 0.14, 0.06),
                      box_matrix(x0 - 0.02, -0.12, 0, 0.06, 0.14, d + 0.06),
                      box_matrix(x1 + 0.02, -0.12, 0, 0.06, 0.14, d + 0.06)]
        for x in (x0, x1):
            for z in (z0, z1):
                self.brass.append(box_matrix(x, -0.2, z, 0.5, 0.44, 0.5))
        # Rivets along the front apron.
        xs = np.linspace(x0 + 1.0, x1 - 1.0, 22)
        c = np.stack([xs, np.full_like(xs, -0.3), np.full_like(xs, z1 + 0.06)], 1)
        rot = rot_x(np.pi / 2)
        self.rivets = np.stack([compose(translate(*p), rot, scale(0.06, 0.05, 0.06)) for p in c])

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        # Drawn after every part standing on it: the top then loses its hidden pixels to the depth test.
        fb.add("box", np.stack(self.top), pal.table_top, late=True)
        fb.add("box", np.stack(self.iron), pal.iron, late=True)
        fb.add("box", np.stack(self.brass), pal.brass, late=True)
        fb.add("cyl_lo", self.rivets, pal.brass)
        fb.shadow(0, FLOOR_Y + 0.01, 0, TABLE_X[1] * 2 + 3, TABLE_Z[1] * 2 + 3, 0.75)
