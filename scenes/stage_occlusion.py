"""What a class sees of a framed beat: beat_report (each framed part's share in the frame, clear of the HUD
and the panels, and not hidden behind other parts) and occlusion, which draws depth frames to measure the
hiding. StageOcclusion is a mixin of scenes.stage.Stage."""
from __future__ import annotations

import numpy as np

from scenes.framing import overlap_share, visible_share
from scenes.views import ASSEMBLED_WITH, HIDDEN_BEHIND, RIDERS


class StageOcclusion:
    """The beat report and the depth measure of what hides what."""

    def beat_report(self, width: int, height: int, covers=(), occlusion: bool = True) -> dict:
        """What a class sees of the framed parts in a frame of this size now: {'parts', 'in_frame': {part: share
        of its projected box inside the frame and clear of the HUD and `covers` (x0, y0, x1, y1 rectangles:
        the panels over the frame)}, 'in_view': that times the share of its own pixels not hidden behind another
        part, 'occluded': {part: share of its pixels another part hides}, 'covered': [parts more than 1% under
        the HUD or a cover], 'hidden_behind': [parts more than HIDDEN_BEHIND hidden by other parts]}.
        `occlusion` False: boxes only (no GL), as the report was before it drew depth."""
        parts = list(self.focus or ())
        rects = self.part_rects(width, height)
        hud = self.hud_rect(width, height)
        over = ([hud] if hud else []) + [tuple(c) for c in covers]
        frame = (0.0, 0.0, float(width), float(height))
        hidden_by = self.occlusion(width, height, parts) if occlusion and parts else {p: 0.0 for p in parts}
        in_frame = {p: visible_share(rects[p], frame, over) for p in parts}
        return {"parts": parts,
                "in_frame": {p: round(in_frame[p], 4) for p in parts},
                "in_view": {p: round(in_frame[p] * (1.0 - hidden_by[p]), 4) for p in parts},
                "occluded": {p: round(hidden_by[p], 4) for p in parts},
                "covered": [p for p in parts if overlap_share(rects[p], over) > 0.01],
                "hidden_behind": [p for p in parts if hidden_by[p] > HIDDEN_BEHIND]}

    OCCLUSION_SCALE = 0.25      # the depth renders for occlusion(): a quarter of the frame's size each way

    def occlusion(self, width: int, height: int, parts) -> dict[str, float]:
        """{part: share of its pixels hidden behind other parts} in a frame of this size now, from depth: the
        whole table is drawn once, then each part alone (with what rides on it), at OCCLUSION_SCALE and without
        labels, HUD or multisampling; a pixel of the part is seen where the whole table's depth there is the
        part's own. A part that covers no pixel counts as hidden."""
        w = max(16, int(width * self.OCCLUSION_SCALE))
        h = max(16, int(height * self.OCCLUSION_SCALE))
        ctx = self.ctx
        fbo = ctx.framebuffer(color_attachments=[ctx.texture((w, h), 4)], depth_attachment=ctx.depth_texture((w, h)))
        saved = (set(self.hidden), self.show_hud, self.show_labels, self.still_layer, self.samples, self.render_scale,
                 self.text_height)
        names = [part.name for part in self.parts]

        # What a render leaves for the frame's readers (legibility, plates, the HUD's words...): the depth frames
        # must not replace the frame's own.
        kept = {k: getattr(self, k) for k in self._FRAME_OUTPUTS if hasattr(self, k)}

        def depth() -> np.ndarray:
            self.render(fbo, w, h)
            raw = fbo.read(viewport=(0, 0, w, h), components=1, attachment=-1, dtype="f4")
            return np.frombuffer(raw, dtype=np.float32).reshape(h, w)

        out = {}
        try:
            self._measuring = True
            self.show_hud, self.show_labels, self.still_layer, self.samples, self.render_scale = \
                False, False, False, 0, 1.0
            self.text_height = saved[6] or height          # the same text sizes as the frame it reports on
            self.hidden = set(saved[0])
            whole = depth()
            for p in parts:
                mates = ASSEMBLED_WITH.get(p, ())
                if mates:           # the table without what the part is built with (it hides it by design)
                    self.hidden = set(saved[0]) | set(mates)
                    scene = depth()
                else:
                    scene = whole
                keep = {p, *RIDERS.get(p, ())}
                self.hidden = set(saved[0]) | (set(names) - keep)
                own = depth()
                mine = own < 1.0
                n = int(mine.sum())
                seen = int((mine & (scene >= own - 1e-4)).sum())
                out[p] = 1.0 - seen / n if n else 1.0
        finally:
            (self.hidden, self.show_hud, self.show_labels, self.still_layer, self.samples, self.render_scale,
             self.text_height) = saved
            for k, v in kept.items():
                setattr(self, k, v)
            self._measuring = False
            fbo.release()
        return out

    _FRAME_OUTPUTS = ("legibility", "label_plates", "label_leaders", "callouts", "label_keep_out", "lane_numbers",
                      "hud_text", "frame_text", "last_stats", "_still_seen", "_label_replay")
