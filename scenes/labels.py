"""Screen-space words: part names (zh + en) pinned above each part, and the step/phase line at the top.

They are drawn at a fixed pixel size relative to the frame height (about 1/34 of it for Chinese), so
they stay legible from the back of a classroom whatever the camera does.
"""
from __future__ import annotations

from scenes.camera import project
from scenes.layout import PARTS, EmitContext

PHASES = {
    "idle": ("准备", "ready"),
    "draft": ("小鼓猜词", "the draft guesses"),
    "verify": ("大鼓转一圈，一起验证", "one turn of the target checks every guess"),
    "check": ("逐个比较 p/q 与 r", "each guess: p/q against r"),
    "write": ("留下对的，换掉错的", "keep the right ones, replace the wrong one"),
    "scroll": ("纸带前进", "the tape moves on"),
    "done": ("写完了", "finished"),
}


def _plate(fb, x, y, lines, pal, anchor="center") -> None:
    """Text lines [(text, size_px, colour)] on a dark plate; (x, y) the plate's top centre / top-left."""
    widths = [fb.atlas.advance(t) * s for t, s, _ in lines]
    w = max(widths) + 0.9 * lines[0][1]
    h = sum(s * 1.22 for _, s, _ in lines) + 0.45 * lines[0][1]
    x0 = x - w / 2 if anchor == "center" else x
    fb.rect_screen(x0, y, w, h, pal.plate)
    yy = y + 0.22 * lines[0][1]
    for (t, s, col), tw in zip(lines, widths):
        yy += s * 1.0
        fb.text(t, (x0 + (w - tw) / 2 if anchor == "center" else x0 + 0.45 * lines[0][1], yy, 0), (1, 0, 0),
                (0, -1, 0), s, col, screen=True)
        yy += s * 0.22


def emit_part_labels(fb, viewproj, width, height, ec: EmitContext, offsets: dict, hidden: set) -> None:
    pal = ec.palette
    big = height / 34.0
    small = height / 50.0
    for name, info in PARTS.items():
        if name in hidden:
            continue
        off = offsets.get(name, (0, 0, 0))
        a = tuple(info.anchor[i] + off[i] for i in range(3))
        x, y, depth = project(viewproj, a, width, height)
        if not (-1 < depth < 1) or not (0 <= x <= width and 0 <= y <= height):
            continue
        lines = []
        if ec.language in ("zh", "both"):
            lines.append((info.zh, big, pal.label))
        if ec.language in ("en", "both"):
            lines.append((info.en, small if ec.language == "both" else big * 0.8, pal.label_sub))
        _plate(fb, x, y - (big + small) * 1.3, lines, pal)


def emit_hud(fb, state, width, height, ec: EmitContext, n_steps: int, title: tuple[str, str] | None = None) -> None:
    """Top-left: where we are in the run and what is happening now."""
    pal = ec.palette
    big = height / 30.0
    small = height / 46.0
    zh, en = PHASES.get(state.phase, ("", ""))
    lines = []
    if title:
        lines.append((ec.say(*title), big, pal.label))
    if state.step >= 0:
        step = ec.say(f"第 {state.step + 1}/{n_steps} 步", f"step {state.step + 1}/{n_steps}")
        lanes = ec.say(f"亮 {state.lanes_true} 条通道", f"{state.lanes_true} lanes lit") if state.lanes_true else ""
        gamma = f"γ = {state.gamma}"
        lines.append(("  ·  ".join(s for s in (step, gamma, lanes) if s), small, pal.label_sub))
        if ec.language in ("zh", "both"):
            lines.append((zh, big, pal.label))
        if ec.language in ("en", "both"):
            lines.append((en, small if ec.language == "both" else big * 0.8, pal.label_sub))
    if lines:
        _plate(fb, height * 0.025, height * 0.025, lines, pal, anchor="left")
