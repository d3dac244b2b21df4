"""The arithmetic mill: gears that turn as fast as the arithmetic units are busy.

Gear speed = busy fraction from the hardware model (models.hardware.pass_busy(device, model, sequences,
positions, context), the figure the app's panels show; a checking pass computes γ + 1 positions of each
sequence, which read its KV cache once): with one lane lit the gears barely move;
nine lanes at H100's ratio keep them about 3% busy; about 295 lanes would be needed for the arithmetic to
keep up with the reading (SCIENCE.md sections 1, 2 and 11). A long context adds KV-cache reads to every
pass, so the same lanes are less busy: 64 lanes at 4,096 tokens ≈ 7.8%, not the ≈ 22% of the weights alone.
"""
from __future__ import annotations

import numpy as np

from models.hardware import busy_text
from scenes.geometry import box_matrix, compose, rot_z, scale, translate
from scenes.layout import MILL_CENTRE, EmitContext

# The sign beside the mill framed alone: its lines' em heights and the height its plate stands at.
SIGN_MAIN, SIGN_SUB, SIGN_FOOT = 0.46, 0.36, 0.3
# (dx, dy, radius, mesh): the first gear drives the others.
GEARS = ((-0.55, 0.25, 0.95, "gear_big"), (0.85, -0.15, 0.55, "gear"), (1.32, 0.56, 0.36, "gear"))


class Mill:
    name = "mill"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('mill_angle', 'extra')

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        cx, cy, cz = MILL_CENTRE
        a = state.mill_angle
        mats = {"gear_big": [], "gear": []}
        for i, (dx, dy, r, mesh) in enumerate(GEARS):
            ang = gear_angle(a, i)
            mats[mesh].append(compose(translate(cx + dx, cy + dy, cz), rot_z(ang), scale(r, r, 0.18)))
        for mesh, ms in mats.items():
            fb.add(mesh, np.stack(ms), pal.brass if mesh == "gear_big" else pal.copper)
        fb.add("box", np.stack([compose(translate(cx + dx, cy + dy, cz - 0.25), scale(0.14, 0.14, 0.4))
                                for dx, dy, _, _ in GEARS]), pal.steel)
        # Back plate and base.
        fb.add("box", np.stack([box_matrix(cx + 0.35, cy * 0.75, cz - 0.35, 3.4, cy * 1.5 + 0.9, 0.16),
                                box_matrix(cx + 0.35, 0.25, cz - 0.1, 3.6, 0.5, 0.9)]), pal.iron)
        fb.shadow(cx + 0.35, 0.012, cz - 0.1, 4.2, 1.6, 0.5)
        # Readout: arithmetic busy now. In the wide views the bridge stands in front of the mill's base, so
        # there the readout rides on the mill's screen label instead (readout_lines, scenes/labels.py).
        if ec.labelled:
            return
        right, up = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
        if ec.mill_sign:
            self._sign(fb, state, ec, right, up)
            return
        fb.text(ec.say(*busy_words(state, checking=False)), (cx + 0.35, 0.3, cz + 0.36), right, up, 0.3,
                pal.label, anchor="center", valign="middle")
        hw = " · ".join(hardware_parts(state, ec))
        if hw:
            fb.text(hw, (cx + 0.35, 0.08, cz + 0.36), right, up, 0.14, pal.label_sub, anchor="center",
                    valign="middle")

    def _sign(self, fb, state, ec: EmitContext, right, up) -> None:
        """The readout on an iron sign standing right of the mill, large enough to read where the mill is framed
        alone (its base's words are too small there at 720p): how busy the arithmetic is, on which device."""
        pal = ec.palette
        cx, _, cz = MILL_CENTRE
        lines = [(ec.say(*busy_words(state, checking=False)), SIGN_MAIN, pal.label)]
        lines += [(part, SIGN_SUB, pal.label_sub) for part in hardware_parts(state, ec)]
        w = max(fb.atlas.layout_arrays(t)[2] * size for t, size, _ in lines) + 0.5
        h = sum(1.25 * size for _, size, _ in lines) + 0.3
        x0 = cx + 2.45
        fb.add("box", np.stack([box_matrix(x0 + w / 2, SIGN_FOOT + h / 2, cz, w, h, 0.12),
                                box_matrix(x0 + 0.3, SIGN_FOOT / 2, cz, 0.14, SIGN_FOOT, 0.14),
                                box_matrix(x0 + w - 0.3, SIGN_FOOT / 2, cz, 0.14, SIGN_FOOT, 0.14)]), pal.iron)
        y = SIGN_FOOT + h - 0.15
        for text, size, color in lines:
            y -= 1.25 * size
            fb.text(text, (x0 + w / 2, y + 0.3 * size, cz + 0.07), right, up, size, color, anchor="center")

    def readout_lines(self, state, ec: EmitContext, compact: bool = False,
                      hardware: bool = True) -> list[tuple[str, str]]:
        """The readout for the mill's screen label: [(text, 'main' | 'sub')]; compact (the wide views, where
        every plate competes for room): the device and the model share one line."""
        zh, en = busy_words(state)
        lines = []
        if ec.language in ("zh", "both"):
            lines.append((zh, "main"))
        if ec.language in ("en", "both"):
            lines.append((("arithmetic " if ec.language == "both" else "") + en,
                          "sub" if ec.language == "both" else "main"))
        # The device and the model on lines of their own: a narrow plate leaves the cabinet beside it visible.
        parts = hardware_parts(state, ec)
        if not hardware:
            parts = parts[2:]            # the context alone (after device and model): the busy figure moves most with it
        if compact and len(parts) > 2:
            parts = [" · ".join(parts[:-1]), parts[-1]]
        lines += [(part, "sub") for part in parts]
        return lines


def hardware_parts(state, ec: EmitContext) -> list[str]:
    """What the busy figure models: the device, the model and the context length of the KV reads."""
    parts = [p for p in ec.run.hardware_label.split(" · ") if p]
    ctx = state.extra.get("context")
    if parts and ctx is not None:
        # the context in tokens: a bare "上下文 1" read as jargon
        zh, en = f"上下文 {ctx:,} 个词元", f"context {ctx:,} token{'' if ctx == 1 else 's'}"
        parts.append(ec.say(zh, en) if ec.language != "both" else f"{zh} · {en}")
    return parts


def busy_words(state, checking: bool = True) -> tuple[str, str]:
    """(zh, en) of the arithmetic busy fraction of the current pass (from the hardware model); '?' while the
    lesson keeps it back (Stage.kept_back). checking: a speculative pass's figure says it is the check's (on the
    plates, read beside the HUD's phase; the base's own words, in the mill's close-up, stay short: wider, the mill
    met the cabinet in the exploded view)."""
    busy = state.extra["pass_busy"] if "pass_busy" in state.extra else state.mill_busy
    # As the app's facts panel prints it (models.hardware.busy_text).
    kept = {"busy", "busy_spec"} & state.extra.get("kept_back", frozenset())
    txt = "?" if kept else busy_text(busy)
    if not checking or state.extra.get("target_only", True):
        return "算术忙 " + txt, "busy " + txt
    # A speculative pass's figure is its check's: said so, or beside "the draft guesses" it read as the draft's
    return "核对时算术忙 " + txt, "busy checking " + txt


def gear_angle(mill_angle: float, index: int) -> float:
    """Meshing gears share their rim speed: the angle scales by r0 / r and the sense alternates."""
    r0 = GEARS[0][2]
    return (-1) ** index * mill_angle * r0 / GEARS[index][2] + 0.1 * index
