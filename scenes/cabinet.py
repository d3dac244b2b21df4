"""The KV cabinet: one drawer per sequence holding its KV cache; every step pulls and reads every drawer.

Each drawer fills as the context grows (one card per stored token); during a pass the new entries go in
as pale cards, and the rejected guesses' entries are rolled back (SCIENCE.md section 2). The cards are
instanced boxes; past CARDS_MAX a card stands for several tokens and the drawer's number says how many.
"""
from __future__ import annotations

import math

import numpy as np

from scenes.geometry import box_matrix, boxes
from scenes.layout import CABINET_BOX, N_LANES, EmitContext

CARDS_MAX = 40


class KVCabinet:
    name = "cabinet"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('drawer_pull', 'kv_tokens', 'kv_tentative')

    def __init__(self):
        (self.x0, self.x1), (self.y0, self.y1), (self.z0, self.z1) = CABINET_BOX
        self.slots = N_LANES
        self.slot_h = (self.y1 - self.y0 - 0.3) / self.slots

    def drawer_front(self, i: int, pull: float) -> tuple[float, float, float]:
        """Centre of drawer i's front face (i = 0 at the top)."""
        y = self.y1 - 0.15 - (i + 0.5) * self.slot_h
        return ((self.x0 + self.x1) / 2, y, self.z1 + 0.05 + pull * 1.3)

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        drawers = max(1, min(self.slots, ec.run.batch_lanes))
        xm, w = (self.x0 + self.x1) / 2, self.x1 - self.x0
        ym, h = (self.y0 + self.y1) / 2, self.y1 - self.y0
        zm, d = (self.z0 + self.z1) / 2, self.z1 - self.z0
        body = [box_matrix(xm, ym, self.z0 + 0.05, w, h, 0.1),
                box_matrix(self.x0 + 0.05, ym, zm, 0.1, h, d), box_matrix(self.x1 - 0.05, ym, zm, 0.1, h, d),
                box_matrix(xm, self.y1 - 0.05, zm, w, 0.1, d), box_matrix(xm, self.y0 + 0.1, zm, w, 0.2, d)]
        fb.add("box", np.stack(body), pal.wood)
        fb.add("box", box_matrix(xm, self.y1 + 0.04, zm, w + 0.15, 0.08, d + 0.15), pal.brass)
        fb.shadow(xm, 0.012, zm + 0.2, w + 0.9, d + 1.0, 0.6)
        capacity = max(16.0, float(ec.run.kv_capacity))
        fronts, handles, gauges, cards_ok, cards_new, blanks, trays = [], [], [], [], [], [], []
        fw = w - 0.3
        for i in range(self.slots):
            active = i < drawers
            pull = state.drawer_pull if active else 0.0
            cx, cy, cz = self.drawer_front(i, pull)
            if not active:
                blanks.append(box_matrix(cx, cy, self.z1 - 0.02, fw, self.slot_h - 0.06, 0.06))
                continue
            fronts.append(box_matrix(cx, cy, cz, fw, self.slot_h - 0.05, 0.1))
            handles.append(box_matrix(cx + fw * 0.42, cy, cz + 0.09, 0.42, 0.07, 0.08))
            # Gauge on the front: how full this sequence's cache is.
            fill = min(1.0, (state.kv_tokens + state.kv_tentative) / capacity)
            gw = (fw * 0.5) * fill
            gx0 = cx - fw * 0.45
            if gw > 0:
                gauges.append(box_matrix(gx0 + gw / 2, cy, cz + 0.06, gw, self.slot_h * 0.28, 0.04))
            # Cards inside, seen when the drawer is out.
            if pull > 0.05:
                trays.append(box_matrix(cx, cy - self.slot_h * 0.32, cz - 0.65, fw, 0.05, 1.2))
                tok = state.kv_tokens + max(state.kv_tentative, 0.0)
                per = max(1.0, math.ceil(tok / CARDS_MAX))
                n_ok = int(state.kv_tokens // per)
                n_all = int(math.ceil(tok / per))
                depth = 1.0
                gap = min(0.09, depth / max(n_all, 1))      # a few cards spread out, many pack tight
                zs = cz - 0.12 - (np.arange(n_all) + 0.5) * gap
                # Index cards standing in the tray, taller than the drawer front so they show when it is out.
                card_h = self.slot_h * 1.1
                c = np.stack([np.full(n_all, cx - 0.2), np.full(n_all, cy - self.slot_h * 0.3 + card_h / 2), zs], 1)
                if n_ok:
                    cards_ok.append(boxes(c[:n_ok], (fw * 0.55, card_h, 0.014)))
                if n_all > n_ok:
                    cards_new.append(boxes(c[n_ok:], (fw * 0.55, card_h, 0.014)))
        if trays:
            fb.add("box", np.stack(trays), pal.iron)
        if blanks:
            fb.add("box", np.stack(blanks), pal.wood)
        if fronts:
            fb.add("box", np.stack(fronts), pal.oak)
            fb.add("box", np.stack(handles), pal.brass)
        if gauges:
            fb.add("box", np.stack(gauges), pal.copper, emissive=0.15)
        if cards_ok:
            fb.add("box", np.concatenate(cards_ok), pal.brass)
        if cards_new:
            fb.add("box", np.concatenate(cards_new), pal.paper)
        # Entry count on the top drawer's front.
        cx, cy, cz = self.drawer_front(0, state.drawer_pull)
        n = int(round(state.kv_tokens + state.kv_tentative))
        fb.text(f"KV {n}", (cx + fw * 0.08, cy, cz + 0.07), (1, 0, 0), (0, 1, 0), 0.26, pal.label,
                anchor="left", valign="middle")
        # More sequences than drawers: the figures count them all, the cabinet draws nine (say so on it).
        batch = int(ec.run.batch_lanes)
        if batch > self.slots:
            note = ec.say(f"{batch} 段话 · 画出 {self.slots} 个抽屉", f"{batch} sequences · {self.slots} drawers drawn")
            fb.text(note, (xm, self.y1 + 0.3, self.z1 + 0.1), (1, 0, 0), (0, 1, 0), 0.3, pal.label,
                    anchor="center", valign="middle")
