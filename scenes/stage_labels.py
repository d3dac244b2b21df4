"""The words the Stage lays over the picture: the parts' name plates with their leaders (kept off the HUD, the
parts' readouts and their own words), the read head's lane numbers, the cut-away's callouts and the riders'
plates; and what they are laid from (label_targets, readout_rects). StageLabels is a mixin of
scenes.stage.Stage."""
from __future__ import annotations

import numpy as np

from models.drafters import kind_of
from scenes.bigdrum import HEAD_R, HEAD_Y
from scenes.bridge import VALUE_V, meter_point
from scenes.camera import project
from scenes.frame import FrameBuilder, same_key
from scenes.framing import builder_bounds, projected_rect
from scenes.labels import emit_callouts, emit_part_labels, label_sizes, leader_foot
from scenes.layout import CABINET_BOX, PARTS, TAPE_DEPTH, TAPE_X, tape_point
from scenes.mill import hardware_parts
from scenes.readhead import CUTAWAY_PIECES
from scenes.tubes import N_CHARS, TUBE_H, TUBE_Y0
from scenes.views import LIFT_WITH


TAPE_PIECES = 4       # the tape's writing strip is kept clear as this many boxes along it (readout_rects)


class StageLabels:
    """Plates, leaders, lane numbers and callouts, laid each frame (or replayed when nothing they read changed)."""

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

    def readout_rects(self, width: int, height: int) -> list[tuple]:
        """Screen rectangles (x, y, w, h) of the parts' own readouts, which name plates must not cover: each
        tube rack with its numbers above and TV readout below, the bridge's meters with their values, the
        KV cabinet's face (projected world boxes, lifted as the exploded view lifts them)."""
        vp = self.viewproj(width, height)
        offsets = self.offsets()
        # Where the parts stand in this view, hidden or not: hiding a part for a moment does not move plates.
        shows = self.shows()
        seen = lambda name: shows is None or name in shows  # noqa: E731
        heads = self.timeline.state_at().heads
        key = (vp.tobytes(), width, height, sorted(offsets.items()), shows, heads, id(self.timeline))
        if self._readout_rects is not None and same_key(self._readout_rects[0], key):
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
            c = self.bigdrum.centre
            boxes.append(("bigdrum", (c[0] - self.bigdrum.length / 2, HEAD_Y - HEAD_R, c[2]),
                          (c[0] + self.bigdrum.length / 2, HEAD_Y + HEAD_R + 0.6, c[2] + 0.8)))
        if seen("cabinet"):
            (cx0, cx1), (cy0, cy1), (cz0, cz1) = CABINET_BOX
            boxes.append(("cabinet", (cx0, cy0, cz0), (cx1, cy1, cz1)))
        if seen("tape"):
            # The paper's writing strip (the text the class reads), not the board or the spools: in pieces along
            # it, so that a strip seen slanting keeps plates off the paper, not off the whole box around it.
            ends = np.linspace(TAPE_X[0], TAPE_X[1], TAPE_PIECES + 1)
            for a, b in zip(ends, ends[1:]):
                corners = np.array([tape_point(x, v) for x in (a, b) for v in (-TAPE_DEPTH / 2, TAPE_DEPTH / 2)])
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

    # ---------------------------------------------------------------- laid each frame (Stage.render)
    # f: the frame being laid (scenes.stage.FramePlan); hud: the HUD's rectangle (x, y, w, h) or None.
    def _lay_lane_numbers(self, f, hud) -> None:
        """The read head's lane numbers on chips, clear of the HUD (lane_numbers: where they went): where the read
        head is looked at (no focus, or a focus that names it); beside a page about the mill they stood on its gear."""
        self.lane_numbers = []
        looked_at = self.focus is None or "readhead" in self.focus or self.view == "cutaway"
        # a beat about the read head among a few parts numbers its lanes however close (not a frame of the table)
        about = self.focus is not None and "readhead" in self.focus and len(self.focus) <= 3
        if f.drawn("readhead") and looked_at:
            readouts = self.readout_rects(f.width, f.height) if about else []
            self.lane_numbers = self.readhead.lane_number_spots(f.vp, f.width, f.height,
                                                                f.offsets.get("readhead", (0, 0, 0)),
                                                                cut=self.view == "cutaway", text_ref=f.ref,
                                                                min_px=f.min_px, keep_out=hud, named=about,
                                                                below=readouts)
            if any(_meets(r, x, y, sz) for r in readouts for _, x, y, sz, _, _ in self.lane_numbers):
                self.lane_numbers = []      # a column fanned out over the tape's writing or a meter: none
            self.readhead.emit_lane_numbers(f.fb, f.state, self.lane_numbers, f.ec)

    def _lay_cutaway_callouts(self, f, hud) -> None:
        """The cut-away names the read head's pieces (teeth, push rods, lane axles, counters) on plates with
        leaders to each, clear of the HUD and the lane numbers; a piece off the frame is not named."""
        self.callouts = []
        if not (self.view == "cutaway" and self.show_labels and f.drawn("readhead")):
            return
        vp, width, height = f.vp, f.width, f.height
        off = np.asarray(f.offsets.get("readhead", (0.0, 0.0, 0.0)), dtype=np.float64)
        pieces = self.readhead.pieces(f.state)
        items = []
        for key, zh, en in CUTAWAY_PIECES:
            anchor, lo, hi = pieces[key]
            x, y, depth = project(vp, anchor + off, width, height)
            box = projected_rect(vp, lo + off, hi + off, width, height)
            if box is None or not (-1 < depth < 1) or not (0 <= x <= width and 0 <= y <= height):
                continue
            items.append((key, zh, en, (float(x), float(y)), tuple(float(v) for v in box)))
        chips = [(x - 0.5 * sz, y - 0.5 * sz, sz, sz) for _, x, y, sz, _, _ in self.lane_numbers]
        self.callouts = emit_callouts(f.fb, items, width, height, f.ec, keep_out=([hud] if hud else []) + chips)

    def _lay_plates(self, f, hud, world_boxes):
        """The parts' name plates and leaders where the frame names parts (f.wide), or the mill's readout plate
        alone, kept off the HUD, the parts' readouts (label_keep_out) and their own words (`world_boxes`).
        Returns the HUD rectangle they kept clear of: a framed beat keeps the HUD's largest extent clear."""
        self.label_plates = []
        self.label_keep_out = []
        self._part_rects = []
        self._riders = self._rider_items(f) if self._names_riders(f) else []
        if not (f.wide or f.mill_plate):
            if self._riders:        # the riders' plates keep off the parts' readouts (the tape's paper) all the same
                self.label_keep_out = self.readout_rects(f.width, f.height)
            return hud
        readouts, shorter, names = self._plate_readouts(f)
        self.label_keep_out = self.readout_rects(f.width, f.height)
        hidden = self.hidden if f.wide else set(PARTS) - {"mill"}
        # The parts this view may name, whether the user hid some of them or not: a plate keeps off all of
        # them, so it does not move when a part is hidden.
        not_named = set() if f.wide else set(PARTS) - {"mill"}
        anchors = None
        if self.focus is not None and self.view != "exploded":
            hidden, not_named, anchors, hud = self._framed_plates(f, hidden, not_named, hud)
        # The riders are named after the plates (_lay_rider_callouts): no plate covers them, or a rider's own plate
        # found no leader to it (the small drum's plate over the typing head in the table taken apart).
        riders = [(b[0], b[1], b[2] - b[0], b[3] - b[1]) for *_, b in self._riders]
        chips = [(x - 0.5 * sz, y - 0.5 * sz, sz, sz) for _, x, y, sz, _, _ in self.lane_numbers]   # laid before
        args = dict(exploded=self._explode > 0.5, readouts=readouts,
                    keep_out=([hud] if hud else []) + self.label_keep_out + [b[1:] for b in world_boxes] + riders
                    + chips,
                    anchors=anchors, shorter=shorter, names=names,
                    targets=self.label_targets(f.vp, f.width, f.height, not_named, f.offsets, f.state),
                    words=([hud] if hud else []) + [b[1:] for b in world_boxes])
        self._emit_plates(f, hidden, args)
        self._part_rects = [(b[0], b[1], b[2] - b[0], b[3] - b[1]) for _, b in args["targets"].values()]
        return hud

    def _plate_readouts(self, f) -> tuple[dict, dict, dict | None]:
        """(readouts, shorter readouts, names) the plates carry besides the parts' names: the mill's busy
        share, the heads' row on the big drum, the bridge's key (p/q and r), EAGLE's small drum."""
        state, ec = f.state, f.ec
        readouts = {"mill": self.mill.readout_lines(state, ec, compact=f.wide)}
        if self.focus is not None and len(self.focus) > 3:
            # A frame of most of the table: the busy share alone, so the plate does not cover its neighbours.
            # and, under it, the device it is reckoned for (a bare "1.7 %" read as this table's own measurement)
            device = hardware_parts(state, ec)[:1]
            readouts["mill"] = [line for line in readouts["mill"] if line[1] == "main"][:1] + \
                [(ec.say(f"{d} · 纸面", f"{d} · on paper"), "sub") for d in device]
        # Where even the compact readout finds no free spot, the busy figure and the context alone (the
        # panels name the device and the model the mill models).
        shorter = {"mill": self.mill.readout_lines(state, ec, hardware=False)}
        if state.heads:
            # The heads' own words on the rail are too small to read beside the whole drum: the plate names them.
            first, last = state.heads[0], state.heads[-1]
            # The next token is no head's: the target's own output layer guesses it (the exhibit's numbering).
            readouts["bigdrum"] = [(ec.say(f"上面一排是预测头 {first}–{last}", f"the row on top: heads {first}–{last}"),
                                    "sub"),
                                   (ec.say("下一个词元由大模型自己的输出层猜", "the next token: the target's own output layer"),
                                    "sub")]
            if self.focus is None or len(self.focus) > 1:
                # Beside other parts the drum is small: one line, so the plate does not cover the drum it names.
                readouts["bigdrum"] = readouts["bigdrum"][:1]
        reading = any(m is not None and m.fill > 0 for m in state.meters)
        if self.focus is not None and "bridge" in self.focus and len(self.focus) <= 3 and reading:
            # The meters' numbers are p/q and r: the exhibit's key ("铜色的柱高 p/q，满格是 1，红线是 r") on the plate,
            # while a meter shows a column (empty meters with a key would name what is not there).
            readouts["bridge"] = [(ec.say("柱高 p/q，满格是 1，红线是 r", "column: p/q, full at 1; red line: r"), "sub")]
        names = None
        if kind_of(state.drafter).fed_by_target:
            # EAGLE: the small drum is a layer on the target's features, not a second model (the cable shows it)
            names = {"smalldrum": ("小滚筒 · EAGLE", "small drum · EAGLE")}
            readouts["smalldrum"] = [(ec.say("一层，吃大模型的特征", "one layer fed the target's features"), "sub")]
        return readouts, shorter, names

    def _framed_plates(self, f, hidden, not_named, hud):
        """A framed beat names its parts on plates over what it shows of them (the tape's writing window, not the
        far end of its paper) and keeps the HUD's largest extent clear: (hidden, not_named, anchors, hud)."""
        hidden = hidden | (set(PARTS) - set(self.focus))
        not_named = not_named | (set(PARTS) - set(self.focus))
        anchors = {p: ((lo[0] + hi[0]) / 2, hi[1], (lo[2] + hi[2]) / 2)
                   for p, (lo, hi) in self.fit.get("boxes", {}).items() if p != "mill"}
        if "tape" in anchors:       # over the text before the writing window: the bridge stands behind it
            lo, hi = self.fit["boxes"]["tape"]
            anchors["tape"] = (lo[0] + 1.0, hi[1], (lo[2] + hi[2]) / 2)
        big_hud = self.hud_rect(f.width, f.height)
        if big_hud is not None:
            hud = (big_hud[0], big_hud[1], big_hud[2] - big_hud[0], big_hud[3] - big_hud[1])
        return hidden, not_named, anchors, hud

    def _emit_plates(self, f, hidden, args) -> None:
        """Lay the plates and leaders (scenes.labels.emit_part_labels), or replay the last ones when what they
        are laid from is unchanged (a still camera over a playing run: the same plates each frame)."""
        ec = f.ec
        key = (f.vp.tobytes(), f.width, f.height, ec.palette, ec.language, ec.text_ref, ec.min_px,
               self.atlas.generation, sorted(f.offsets.items()), sorted(hidden), args)
        last = self._label_replay
        if last is not None and same_key(last[0], key):
            f.fb.replay(last[1])
            self.label_plates, self.label_leaders = list(last[2]), list(last[3])
        else:
            mark = f.fb.mark()
            self.label_leaders = []
            self.label_plates = emit_part_labels(f.fb, f.vp, f.width, f.height, ec, f.offsets, hidden,
                                                 leaders_out=self.label_leaders, **args)
            self._label_replay = (key, f.fb.since(mark), list(self.label_plates), list(self.label_leaders))

    # The pieces that ride on a part, named on plates of their own where a frame of most of the table names the
    # parts (chapter 12 says "the small drum and the pencil cart", "the paper tape, the typing head").
    RIDER_NAMES = (("pencil", "smalldrum", "铅笔小车", "pencil cart"), ("typing", "tape", "打字头", "typing head"))

    def _names_riders(self, f) -> bool:
        """A frame of most of the table names the riders too (RIDER_NAMES), a frame of the tape the typing head
        (the part's name is "the paper tape and the typing head": a frame of the tape alone names no part on a
        plate, so the head would be the one thing the look line names and nothing points at), and a frame of the
        small drum over the tape the pencil cart (it is what writes the guesses there)."""
        return self.show_labels and self.focus is not None and \
            any(self._rider_named(name) for name, *_ in self.RIDER_NAMES)

    def _rider_named(self, name: str) -> bool:
        """Whether this frame names the rider `name` (see _names_riders)."""
        focus = set(self.focus or ())
        if name in self.hidden or not focus:
            return False
        if len(focus) >= 5:
            return True
        return "tape" in focus and (name == "typing" or "smalldrum" in focus)

    def _lay_rider_callouts(self, f, hud, world_boxes) -> None:
        """The riders' plates (_names_riders), clear of the HUD, the plates, the parts named on them (a rider's
        plate over the big drum read as naming it), their readouts (the tape's paper the riders ride on) and
        own words."""
        if not self._names_riders(f):
            return
        # (a clear gap of half a name's height from the parts' plates and each other: two plates a few pixels
        # apart read as one plate of two lines)
        gap = 0.5 * label_sizes(f.ec, f.height)[0]
        keep = ([hud] if hud else []) + [(x - gap, y - gap, w + 2 * gap, h + 2 * gap)
                                         for _, x, y, w, h in self.label_plates]
        keep += self.label_keep_out + [b[1:] for b in world_boxes] + self._part_rects
        # nor over the bridge's meters or the mill (the pencil cart rides just in front of them)
        for part in ("bridge", "mill"):
            box = self.fit.get("boxes", {}).get(part)
            if box is None:
                continue
            off = np.asarray(f.offsets.get(part, (0.0, 0.0, 0.0)), dtype=np.float64)
            rect = projected_rect(f.vp, box[0] + off, box[1] + off, f.width, f.height)
            if rect is not None:
                keep.append((rect[0], rect[1], rect[2] - rect[0], rect[3] - rect[1]))
        self.callouts = self.callouts + self._rider_callouts(f, keep, gap)

    def _rider_items(self, f) -> list[tuple]:
        """[(rider, zh, en, its anchor (x, y), its box (x0, y0, x1, y1))] in pixels, for the riders this frame
        names (RIDER_NAMES) that are in it."""
        vp, width, height = f.vp, f.width, f.height
        by_name = {p.name: p for p in self.parts}
        items = []
        for name, host, zh, en in self.RIDER_NAMES:
            if host not in self.focus or not self._rider_named(name):
                continue
            sub = FrameBuilder(self.atlas)
            sub.offset = np.asarray(f.offsets.get(LIFT_WITH.get(name, name), (0.0, 0.0, 0.0)), dtype=np.float64)
            by_name[name].emit(sub, f.state, f.ec)
            bounds = builder_bounds(sub)
            if bounds is None:
                continue
            lo, hi = bounds
            # the rider's own point where it has one (the pencil's rail runs on to the small drum)
            point = by_name[name].anchor(f.state, self.view) + sub.offset if hasattr(by_name[name], "anchor") else \
                np.array([(lo[0] + hi[0]) / 2, hi[1], (lo[2] + hi[2]) / 2])
            x, y, depth = project(vp, point, width, height)
            box = projected_rect(vp, lo, hi, width, height)
            if box is None or not (-1 < depth < 1) or not (0 <= x <= width and 0 <= y <= height):
                continue
            items.append((name, zh, en, (float(x), float(y)), tuple(float(v) for v in box)))
        return items

    def _rider_callouts(self, f, keep_out, gap: float) -> list[tuple]:
        """The riders' plates with their leaders: `gap` apart, no leader over a part's plate and no rider's plate
        over a part's leader."""
        items = self._riders
        if not items:
            return []
        leaders = [(leader_foot(a, r), a) for _, r, a, _ in self.label_leaders]
        return emit_callouts(f.fb, items, f.width, f.height, f.ec, keep_out=keep_out, gap=gap,
                             plates_before=[p[1:] for p in self.label_plates], leaders_before=leaders)


def _meets(rect, x: float, y: float, size: float) -> bool:
    """The screen rectangle (x, y, w, h) overlaps the chip of a lane number of `size` centred at (x, y)."""
    rx, ry, rw, rh = rect
    h = 0.5 * size
    return x + h > rx and x - h < rx + rw and y + h > ry and y - h < ry + rh
