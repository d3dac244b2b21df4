"""A framed beat: the Stage frames the parts a sentence names (set_focus), fits the camera to their boxes in
the frame the HUD leaves free (scenes.framing) and refits when the frame changes; with it, which parts are drawn
now, where each part stands (its world box) and its projected rectangle. StageFocus is a mixin of
scenes.stage.Stage."""
from __future__ import annotations

import numpy as np

from corpus.errors import InputError
from scenes.bridge import BEAM_H, BEAM_Y
from scenes.camera import look_at, projection
from scenes.framing import builder_bounds, fit_pose, projected_rect, readhead_box, tape_box, view_direction
from scenes.frame import FrameBuilder
from scenes.layout import PARTS, TAPE_X, EmitContext, window
from scenes.views import FOCUS_VIEWS, FOCUS_WITH, LIFT_WITH, RIDERS, VIEW_SHOWS


class StageFocus:
    """Framing parts: set_focus, the fit and what it reads (part_boxes, part_rects, shows)."""

    def set_focus(self, parts, view: str = "table") -> None:
        """Frame exactly these parts (names of scenes.layout.PARTS): the camera flies (over camera_transition_s
        of the one clock) to the pose that fits their boxes in the frame the HUD leaves free, looking from
        where their writing reads (scenes.framing), and holds it; the table shows them and what they work
        with. `view` is how the table stands meanwhile: 'table', 'cutaway' (the read head cut open) or
        'exploded' (every part lifted out). InputError for an unknown part or view."""
        parts = tuple(parts)
        unknown = [p for p in parts if p not in PARTS]
        if unknown or not parts:
            raise InputError(f"unknown part(s) {', '.join(unknown) or '(none)'} (choose from {', '.join(PARTS)})")
        if view not in FOCUS_VIEWS:
            raise InputError(f"a framed beat stands the table as {' / '.join(FOCUS_VIEWS)}, not {view!r}")
        self.focus = parts
        self.view = view
        duration = self._lift_to(view)
        self._refit(duration)

    def bridge_in_frame(self) -> bool:
        """Whether the bridge of meters is in the picture: the whole table, the table taken apart, or a beat that
        frames it (a beat framing other parts may draw it at the edge of the frame or not at all)."""
        return self.part_in_frame("bridge")

    @property
    def mill_framed_alone(self) -> bool:
        """A beat frames the mill alone (its readout then stands on a sign beside it: scenes.mill)."""
        return self.focus == ("mill",) and self.view != "exploded"

    def part_in_frame(self, part: str) -> bool:
        """Whether `part` is surely in the picture (as bridge_in_frame: a beat's focus names it, or the view shows
        it)."""
        if self.focus is not None:
            return part in self.focus or self.view == "exploded"
        shows = VIEW_SHOWS.get(self.view)
        return shows is None or part in shows

    def shows(self) -> set[str] | None:
        """The parts drawn now (None: all of them)."""
        if self.focus is None:
            return VIEW_SHOWS.get(self.view)
        if self.view == "exploded":
            return None
        shown = {"table", *self.focus}
        for p in self.focus:
            shown.update(RIDERS.get(p, ()))
            shown.update(FOCUS_WITH.get(p, ()))
        return shown

    def part_boxes(self, parts, whole: bool = False) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """World bounds of each part as drawn now with the lift it is heading for (scenes.framing): its own
        instances and words (not those of the parts riding with it, which stand elsewhere: the pencil cart
        writes on the tape); the tape's is its writing window, the read
        head's its teeth, rods and lanes, the bridge's its meters on their beam. `whole`: all of each part as
        drawn, with the parts that ride with it (what must not overlap another part when the table is taken
        apart)."""
        state = self.timeline.state_at()
        right, up = self.camera.basis()
        ec = EmitContext(self.palette, right, up, self.language, self.view, self.run, mill_sign=self.mill_framed_alone)
        by_name = {p.name: p for p in self.parts}
        out = {}
        for name in parts:
            lift = PARTS[name].lift if name in PARTS else (0.0, 0.0, 0.0)     # the table itself never lifts
            off = np.asarray(lift, dtype=np.float64) * self._explode_to
            if name in ("tape", "readhead") and not whole:
                tr = self.traces[state.step] if 0 <= state.step < len(self.traces) else None
                depth = len(tr.tree.widths) if tr is not None and tr.tree is not None else 0
                lo, hi = (tape_box(state.gamma if not state.extra.get("target_only") else 0,
                                   2 if depth else self._tape_before(state.step, state.phase == "done"), depth)
                          if name == "tape"
                          else readhead_box(self.readhead))
                out[name] = (lo + off, hi + off)
                continue
            fb = FrameBuilder(self.atlas)
            fb.offset = off
            by_name[name].emit(fb, state, ec)
            for rider in ([r for r, host in LIFT_WITH.items() if host == name] if whole else ()):
                by_name[rider].emit(fb, state, ec)
            bounds = builder_bounds(fb)
            if bounds is not None and name == "bridge" and not whole:
                # The meters and the beam they stand on, not its legs: the meters are what a sentence means.
                lo, hi = bounds
                bounds = (np.array([lo[0], max(lo[1], BEAM_Y - BEAM_H / 2 - 0.05 + off[1]), lo[2]]), hi)
            if bounds is not None:
                out[name] = bounds
        return out

    def _tape_before(self, step: int, done: bool = False) -> int:
        """Cells of text before the writing window a sentence about the tape means: three, or in a lookup pass back
        to the earlier occurrence it copies from (as far as the tape's visible stretch goes; the tape glides back
        for one farther), so the class sees both where the text's end occurred before and what followed it; the
        run written (`done`), all the tape shows of it (three cells were the run's last few tokens and its marks)."""
        tr = self.traces[step] if 0 <= step < len(self.traces) else None
        if done and tr is not None:
            x0, cell = window(len(tr.guesses))
            return max(3, int((x0 - TAPE_X[0]) / cell) - 1)
        span = getattr(tr, "source_span", None)
        if not span:
            return 3
        x0, cell = window(len(tr.guesses))
        room = int((x0 - TAPE_X[0]) / cell)
        return max(3, min(len(tr.context) - span["match"][0], room))

    def _refit(self, duration: float) -> None:
        """Fit the camera to the focus parts in the frame the HUD leaves free: below the HUD or right of it,
        whichever shows the parts larger, or, with the table taken apart, the whole frame where no part (with its
        riders) meets the HUD."""
        w, h = self._size
        boxes = self.part_boxes(self.focus)
        hud = self.hud_rect(w, h)
        m = 0.03 * h
        full = (m, m, w - m, h - m)
        rects = [full] if hud is None else [(m, hud[3] + m, w - m, h - m), (hud[2] + m, m, w - m, h - m)]
        if hud is not None and self.view == "exploded":
            rects.append(full)      # parts lifted apart leave gaps: the HUD's corner may be one of them
        direction = view_direction(self.focus, cutaway=self.view == "cutaway")
        best = None
        for rect in rects:
            if rect[2] - rect[0] < 0.2 * w or rect[3] - rect[1] < 0.2 * h:
                continue
            pose, _ = fit_pose(list(boxes.values()), direction, rect, w, h)
            if rect is full and hud is not None and self._meets_hud(pose, hud, w, h):
                continue
            dist = float(np.linalg.norm(np.subtract(pose.eye, pose.target)))
            if best is None or dist < best[0]:
                best = (dist, pose, rect)
        if best is None:
            return
        _, pose, rect = best
        self.camera.move_to(pose, duration)
        self.fit = {"boxes": boxes, "hud": hud, "rect": rect, "size": (w, h)}
        self._fit_key = self._focus_key(w, h)

    def _meets_hud(self, pose, hud, w: int, h: int) -> bool:
        """Whether any framed part, whole (with its riders), would meet the HUD's rectangle seen from `pose`."""
        vp = projection(pose, w / max(h, 1)) @ look_at(pose.eye, pose.target)
        for lo, hi in self.part_boxes(self.focus, whole=True).values():
            r = projected_rect(vp, lo, hi, w, h)
            if r is None or (r[0] < hud[2] and r[2] > hud[0] and r[1] < hud[3] and r[3] > hud[1]):
                return True
        return False

    def frame_for(self, width: int, height: int) -> None:
        """Refit a framed beat when what it was fitted for changed (render() calls this first): a new frame size
        (the first frame, a resize) is fitted at once, a new run or language flies there."""
        if self.focus is None or self._focus_key(width, height) == self._fit_key or self._measuring:
            return                  # (occlusion() draws smaller frames under the camera the beat is fitted with)
        resized = (width, height) != self._size
        self._size = (width, height)
        self._refit(0.0 if (resized or not self._rendered or self._reduced_motion) else self.camera_transition_s)

    def _focus_key(self, w: int, h: int):
        return (self.focus, self.view, w, h, self.language, len(self.traces), self.show_hud, id(self.timeline))

    def part_rects(self, width: int, height: int) -> dict[str, tuple | None]:
        """Each framed part's projected box now, (x0, y0, x1, y1) pixels (None: behind the eye)."""
        vp = self.viewproj(width, height)
        return {p: projected_rect(vp, *self.fit["boxes"][p], width, height) if p in self.fit.get("boxes", {})
                else None for p in (self.focus or ())}

    def whole_part_rects(self, width: int, height: int, names=tuple(PARTS)) -> dict[str, tuple | None]:
        """Each part's whole projected box now, (x0, y0, x1, y1) pixels, lifted as it is heading for (the
        exploded view keeps these apart); 'table' among `names`: the table itself (what an overview frames)."""
        vp = self.viewproj(width, height)
        return {p: projected_rect(vp, lo, hi, width, height)
                for p, (lo, hi) in self.part_boxes(tuple(names), whole=True).items()}
