"""The Stage's HUD: what its lines say (the title, the pass counter or a mode's own activity), the largest
rectangle it can take (hud_rect, kept free by a framed beat), the sizes text is drawn at, and laying it in a
frame. StageHud is a mixin of scenes.stage.Stage."""
from __future__ import annotations

from types import SimpleNamespace

from models.drafters import DRUM, kind_of
from scenes.labels import drafter_mode, emit_hud, hud_extent
from scenes.layout import PARTS, EmitContext
from scenes.legibility import min_text_px
from scenes.mill import busy_words
from scenes.timeline import Timeline
from scenes.tubes import tube_round_words, wrong_rule_words
from scenes.views import VIEW_PART


class StageHud:
    """The HUD's words and room."""

    def hud_rect(self, width: int, height: int) -> tuple[float, float, float, float] | None:
        """(x0, y0, x1, y1) of the largest HUD this run can show in a frame of this size (None: no HUD)."""
        if not self.show_hud:
            return None
        right, up = self.camera.basis()
        ref, min_px = self._text_scale(height, height)
        ec = EmitContext(self.palette, right, up, self.language, self.view, self.run, text_ref=ref, min_px=min_px)
        lanes = max((st.lanes for st in self.timeline.steps), default=0)
        target_only = bool(self.timeline.steps) and all(st.target_only for st in self.timeline.steps)
        gamma = max((len(tr.guesses) for tr in self.traces), default=0)
        # Other drafters say who drafted (and their own phases): the longest of those words count too (per
        # drafter, the pass whose mode line is the longest).
        drafted: dict = {}
        for tr in self.traces:
            if kind_of(tr.drafter).look != DRUM:         # a drum's pass is said by γ alone
                extra = Timeline._drafter_extra(tr)
                probe = SimpleNamespace(drafter=tr.drafter, extra=extra, gamma=gamma)
                n = len(drafter_mode(probe, ec) or "")
                if n >= drafted.get(tr.drafter, (-1, None))[0]:
                    drafted[tr.drafter] = (n, (tr.drafter, extra))
        drafted = {k: v[1] for k, v in drafted.items()}
        x, y, w, h = hud_extent(self.atlas, height, ec, len(self.traces), self._title(), gamma, lanes, target_only,
                                passes=self.hud_passes(), activity=self.hud_activity(speed=100.0),
                                drafted=list(drafted.values()))
        return (x, y, x + w, y + h)

    def _text_scale(self, out_h: float, height: float) -> tuple[float, float]:
        """(the picture height text is sized for, the smallest em allowed), both in pixels of a frame `height`
        tall drawn for a target `out_h` tall (scenes.legibility): the app sizes the table's text for its window."""
        ref_h = self.text_height or out_h
        return float(ref_h) * height / out_h, min_text_px(ref_h) * height / out_h

    def hud_activity(self, rnd: int | None = None, speed: float | None = None):
        """What the HUD says instead of the pass counter: a mode's own lines (hud_lines), or over the test tubes
        the experiment's round (by default the last, at the clock's speed); None: the pass and its phase."""
        if self.hud_lines is not None:
            return self.hud_lines
        r = self.tubes.result
        if self.hud_passes() or r is None:
            return None
        rnd = r.rounds - 1 if rnd is None else min(int(rnd), r.rounds - 1)
        words = [tube_round_words(r, rnd, self.timeline.speed if speed is None else speed)]
        if r.rule != "exact" and self.view == "table":
            words.append(wrong_rule_words(r.rule))    # the tubes draw it over the racks in their own view only
        return words

    def hud_passes(self) -> bool:
        """The HUD tells the passes of the run, except over the test tubes alone (they run rounds of their own)."""
        return not (self.view == "tubes" or self.focus == ("tubes",))

    def _title(self):
        if self.view == "cutaway":
            # The mill stands outside the cut: its busy share rides on the title (the narration quotes it here).
            zh, en = busy_words(self.state()) if self.timeline.steps else ("", "")
            return ("读头剖面" + (f" · 小磨坊{zh}" if zh else ""), "read head, cut away" + (f" · mill {en}" if en else ""))
        if self.focus is not None:
            if len(self.focus) == 1 and self.view != "exploded":
                part = PARTS[self.focus[0]]
                heads = self.state().heads if self.focus == ("bigdrum",) and self.timeline.steps else None
                if heads:      # the row on the drum has no plate of its own in a close-up: the title names it
                    return (f"{part.zh}（上面一排：预测头 {heads[0]}–{heads[-1]}）",
                            f"{part.en} (the row on top: heads {heads[0]}–{heads[-1]})")
                return part.zh, part.en
            return self._pair_title()
        part = VIEW_PART.get(self.view)
        return (PARTS[part].zh, PARTS[part].en) if part else None

    def _pair_title(self):
        """A network pair's run names its pair over a framed beat of several parts: beside a table counted on the
        n-gram pair, or one measured elsewhere, the class should know whose text the tape writes."""
        if getattr(self.run.pair, "kind", "") == "neural":
            return "台上：神经网络那对", "on the table: the neural pair"
        return None

    def _lay_hud(self, f):
        """Lay the HUD in the frame being laid (f: scenes.stage.FramePlan); returns its rectangle (x, y, w, h), or
        None when the HUD is off."""
        if not self.show_hud:
            return None
        state = f.state
        timing = self.timeline.steps[state.step] if state.step >= 0 else None
        return emit_hud(f.fb, state, f.width, f.height, f.ec, len(self.traces), self._title(), timing,
                        passes=self.hud_passes(), activity=self.hud_activity(state.tube_round), lanes=self.hud_lanes,
                        bridge=self.bridge_in_frame(), tape=self.part_in_frame("tape"),
                        held=self.timeline.paused)
