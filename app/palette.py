"""UI colours in one place; every entry switches with the projector profile (high contrast, larger strokes)."""
from __future__ import annotations

from imgui_bundle import imgui

# RGBA 0..1. 'projector': near-black on warm white washes out on projectors, so it uses white text on
# true black with saturated accents and thicker borders.
PALETTES = {
    "default": {
        "clear": (0.11, 0.11, 0.12, 1.0),
        "panel": (0.13, 0.13, 0.15, 0.92),
        "text": (0.93, 0.92, 0.88, 1.0),
        "muted": (0.65, 0.64, 0.60, 1.0),
        "accent": (0.80, 0.52, 0.25, 1.0),     # copper: accepted guesses, p/q columns
        "reject": (0.86, 0.26, 0.22, 1.0),     # red: the r line, replacements
        "target": (0.35, 0.62, 0.90, 1.0),     # p
        "draft": (0.55, 0.78, 0.45, 1.0),      # q
        "ok": (0.45, 0.80, 0.45, 1.0),
        "button": (0.28, 0.25, 0.22, 1.0),
        "button_hover": (0.45, 0.35, 0.25, 1.0),
        "header": (0.36, 0.28, 0.20, 1.0),
        "border": (0.40, 0.38, 0.35, 1.0),
        "border_size": 1.0,
        "mpl_bg": "#1d1d20", "mpl_fg": "#ecebe0",
    },
    "projector": {
        "clear": (0.0, 0.0, 0.0, 1.0),
        "panel": (0.0, 0.0, 0.0, 0.95),
        "text": (1.0, 1.0, 1.0, 1.0),
        "muted": (0.85, 0.85, 0.85, 1.0),
        "accent": (1.0, 0.62, 0.15, 1.0),
        "reject": (1.0, 0.25, 0.25, 1.0),
        "target": (0.40, 0.75, 1.0, 1.0),
        "draft": (0.50, 1.0, 0.45, 1.0),
        "ok": (0.40, 1.0, 0.40, 1.0),
        "button": (0.20, 0.20, 0.20, 1.0),
        "button_hover": (0.55, 0.38, 0.10, 1.0),
        "header": (0.45, 0.30, 0.05, 1.0),
        "border": (1.0, 1.0, 1.0, 1.0),
        "border_size": 2.0,
        "mpl_bg": "#000000", "mpl_fg": "#ffffff",
    },
}


def colors(name: str) -> dict:
    return PALETTES.get(name, PALETTES["default"])


def apply_style(name: str) -> None:
    """Push the palette into ImGui's style (called when the palette changes)."""
    c = colors(name)
    style = imgui.get_style()
    C = imgui.Col_
    set_ = style.set_color_
    set_(C.text, imgui.ImVec4(*c["text"]))
    set_(C.text_disabled, imgui.ImVec4(*c["muted"]))
    set_(C.window_bg, imgui.ImVec4(*c["panel"]))
    set_(C.child_bg, imgui.ImVec4(0, 0, 0, 0))
    set_(C.popup_bg, imgui.ImVec4(*c["panel"]))
    set_(C.border, imgui.ImVec4(*c["border"]))
    for k in (C.button, C.frame_bg, C.tab, C.slider_grab):
        set_(k, imgui.ImVec4(*c["button"]))
    for k in (C.button_hovered, C.frame_bg_hovered, C.tab_hovered, C.header_hovered):
        set_(k, imgui.ImVec4(*c["button_hover"]))
    for k in (C.button_active, C.frame_bg_active, C.header, C.header_active, C.tab_selected,
              C.title_bg_active, C.slider_grab_active, C.check_mark):
        set_(k, imgui.ImVec4(*c["accent"]) if k in (C.check_mark, C.slider_grab_active) else imgui.ImVec4(*c["header"]))
    set_(C.title_bg, imgui.ImVec4(*c["panel"]))
    set_(C.plot_histogram, imgui.ImVec4(*c["accent"]))
    set_(C.plot_lines, imgui.ImVec4(*c["accent"]))
    style.window_border_size = c["border_size"]
    style.frame_border_size = c["border_size"] - 1.0
    style.window_rounding = 4.0
    style.frame_rounding = 3.0


def u32(rgba) -> int:
    return imgui.get_color_u32(imgui.ImVec4(*rgba))
