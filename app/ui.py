"""Shared pieces of the UI: layout rectangles, the mode bar, status line, help overlay, plot textures, tables.

Layout is proportional to the framebuffer so the same lesson reads at 1280x720 and on a 1920x1080
projector: the table fills the window, the mode's panel takes the right 40%, the tour's narration the
lower left.
"""
from __future__ import annotations

from dataclasses import dataclass

from imgui_bundle import imgui

from app.palette import u32
from app.settings import MODES

FLAGS = (imgui.WindowFlags_.no_title_bar | imgui.WindowFlags_.no_resize | imgui.WindowFlags_.no_move
         | imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_saved_settings)


@dataclass
class Screen:
    """What drawing needs from the window this frame: the framebuffer size, the text size and the ImGui
    renderer (for plot textures). The window fills it in each frame; panels get this, never the window."""
    ctl: object
    w: int = 1280
    h: int = 720
    font_size: float = 18.0
    renderer: object = None

    @property
    def colors(self) -> dict:
        return self.ctl.colors

    @property
    def t(self):
        return self.ctl.t


def screen_for(ctl, w: int, h: int, renderer=None) -> Screen:
    """The Screen of a w x h framebuffer: text size follows its height (HiDPI, projectors) times the UI scale."""
    base = max(14.0, min(48.0, h / 40.0))
    return Screen(ctl, int(w), int(h), round(base * ctl.settings.ui_scale), renderer)


def ui_rects(scr: Screen) -> list[tuple[float, float, float, float]]:
    """The rectangles (x0, y0, x1, y1) the mode's UI covers: the mode bar, the status line, the panel and, in
    the tour and the lab, the lower-left box."""
    rects = [(0.0, 0.0, scr.w, bar_h(scr)), (0.0, scr.h - status_h(scr), scr.w, scr.h)]
    for x, y, w, h in (panel_rect(scr), narration_rect(scr)):
        rects.append((x, y, x + w, y + h))
    return rects


def bar_h(scr: Screen) -> float:
    return scr.font_size * 2.0


def status_h(scr) -> float:
    return scr.font_size * 1.7


def panel_frac(scr) -> float:
    """Share of the width the mode's panel takes (a tour page with no plot leaves more to the table)."""
    return getattr(scr.ctl.panel, "panel_frac", 0.40)


def panel_rect(scr):
    """Right-hand panel: (x, y, w, h)."""
    x = scr.w * (1.0 - panel_frac(scr))
    y = bar_h(scr)
    return x, y, scr.w - x, scr.h - y - status_h(scr)


def narration_rect(scr):
    """Lower-left narration box of the tour."""
    h = scr.h * 0.30
    return 0.0, scr.h - status_h(scr) - h, scr.w * (1.0 - panel_frac(scr)), h


def begin_panel(name: str, rect, bg_alpha: float | None = None) -> bool:
    x, y, w, h = rect
    imgui.set_next_window_pos((x, y))
    imgui.set_next_window_size((w, h))
    if bg_alpha is not None:
        imgui.set_next_window_bg_alpha(bg_alpha)
    return imgui.begin(name, None, FLAGS)[0]


def top_bar(scr) -> None:
    ctl = scr.ctl
    t, s = ctl.t, ctl.settings
    begin_panel("##bar", (0, 0, scr.w, bar_h(scr)))
    for i, mode in enumerate(MODES):
        if i:
            imgui.same_line()
        active = mode == ctl.mode
        if active:
            imgui.push_style_color(imgui.Col_.button, imgui.ImVec4(*scr.colors["accent"]))
            imgui.push_style_color(imgui.Col_.text, imgui.ImVec4(0, 0, 0, 1))
        if imgui.button(f"{i + 1} {t('mode.' + mode)}"):
            ctl.set_mode(mode)
        if active:
            imgui.pop_style_color(2)
    right = [("EN" if s.language == "zh" else "中文", "language"), (t("bar.projector"), "palette"),
             ("A-", "scale_down"), ("A+", "scale_up"), ("?", "help")]
    widths = sum(imgui.calc_text_size(lbl).x + imgui.get_style().frame_padding.x * 2 + imgui.get_style().item_spacing.x
                 for lbl, _ in right)
    imgui.same_line(max(imgui.get_cursor_pos_x(), scr.w - widths - 12))
    for i, (label, action) in enumerate(right):
        if i:
            imgui.same_line()
        if action == "palette" and s.palette == "projector":
            imgui.push_style_color(imgui.Col_.button, imgui.ImVec4(*scr.colors["header"]))
            clicked = imgui.button(label)
            imgui.pop_style_color()
        else:
            clicked = imgui.button(label)
        if clicked:
            ctl.do(action)
    imgui.end()


def status_line(scr) -> None:
    ctl = scr.ctl
    t = ctl.t
    h = status_h(scr)
    begin_panel("##status", (0, scr.h - h, scr.w, h))
    recent = ctl.recent_messages()
    hint = t("status.keys")
    if ctl.paused:
        hint = t("status.paused") + "   " + hint
    if ctl.driver.stage is None and ctl.driver.stage_error:
        hint = t("status.no_stage") + "   " + hint
    imgui.text_colored(imgui.ImVec4(*scr.colors["muted"]), recent[-1] if recent else hint)
    imgui.end()


HELP_ROWS = (
    ("PageDown / Space / →", "help.next"), ("PageUp / ←", "help.prev"), ("B / .", "help.blank"),
    ("F11", "help.fullscreen"), ("L", "help.language"), ("H / ?", "help.help"), ("P", "help.pause"),
    ("F9", "help.palette"), ("+ / -", "help.scale"), ("M", "help.motion"), ("X", "help.cutaway"),
    ("1 – 6", "help.modes"), ("F12", "help.screenshot"), ("E", "help.plots"), ("C", "help.log"),
    ("G", "help.gif"), ("Esc", "help.close"), ("Ctrl+Q", "help.quit"),
)


def help_overlay(scr) -> None:
    t = scr.t
    w, h = scr.w * 0.5, scr.h * 0.8
    begin_panel("##help", ((scr.w - w) / 2, (scr.h - h) / 2, w, h), bg_alpha=1.0)
    imgui.push_font(None, scr.font_size * 1.3)
    imgui.text_colored(imgui.ImVec4(*scr.colors["accent"]), t("help.title"))
    imgui.pop_font()
    imgui.separator()
    if imgui.begin_table("keys", 2, imgui.TableFlags_.row_bg):
        imgui.table_setup_column("k", imgui.TableColumnFlags_.width_fixed, w * 0.33)
        for key, label in HELP_ROWS:
            imgui.table_next_row()
            imgui.table_next_column()
            imgui.text_colored(imgui.ImVec4(*scr.colors["accent"]), key)
            imgui.table_next_column()
            imgui.text(t(label))
        imgui.end_table()
    imgui.end()


def progress_overlay(scr, job) -> None:
    w, h = scr.w * 0.4, scr.font_size * 4
    begin_panel("##progress", ((scr.w - w) / 2, scr.h * 0.45, w, h), bg_alpha=0.97)
    imgui.text(scr.t("msg.rendering_gif", fps=job.fps))
    imgui.progress_bar(job.progress, (-1, 0), f"{int(job.progress * 100)}%")
    imgui.end()


def heading(scr, text: str, scale: float = 1.25) -> None:
    imgui.push_font(None, scr.font_size * scale)
    imgui.text_colored(imgui.ImVec4(*scr.colors["accent"]), text)
    imgui.pop_font()


def facts_table(scr, rows) -> None:
    """rows: [(label, value)] two columns, values right next to their names."""
    if not rows:
        return
    if imgui.begin_table("facts", 2, imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_h):
        for label, value in rows:
            imgui.table_next_row()
            imgui.table_next_column()
            imgui.text_wrapped(label)
            imgui.table_next_column()
            imgui.text(value)
        imgui.end_table()


def bars(scr, items, width: float, height: float, highlight: int | None = None, color=None, max_value=None) -> None:
    """Horizontal labelled bars: items = [(label, value, token_id)]; the highlighted one drawn in red."""
    dl = imgui.get_window_draw_list()
    x0, y0 = imgui.get_cursor_screen_pos()
    n = max(1, len(items))
    row = height / n
    label_w = scr.font_size * 2.6
    vmax = max_value or max([v for _, v, _ in items] + [1e-12])
    col = u32(color or scr.colors["accent"])
    red = u32(scr.colors["reject"])
    txt = u32(scr.colors["text"])
    for i, (label, value, tid) in enumerate(items):
        y = y0 + i * row
        dl.add_text((x0, y + (row - scr.font_size) / 2), txt, label)
        bw = (width - label_w - scr.font_size * 4.5) * value / vmax
        dl.add_rect_filled((x0 + label_w, y + row * 0.15), (x0 + label_w + bw, y + row * 0.85),
                           red if tid == highlight else col)
        dl.add_text((x0 + label_w + bw + 6, y + (row - scr.font_size) / 2), txt, f"{value:.4f}")
    imgui.dummy((width, height))


class PlotTextures:
    """Matplotlib figures as textures, rebuilt only when what they show changes (the run, a setting, the size)."""

    def __init__(self, ctl):
        self.ctl = ctl
        self.cache: dict[str, tuple] = {}

    def image(self, scr, name: str, width: float, aspect: float | None = None) -> None:
        """Draw plot `name` `width` pixels wide; `aspect` (w/h) re-lays the figure out for a wide box."""
        from app import figures, plots
        ctl = self.ctl
        full_key = (aspect, ctl.session.version, ctl.revision, int(width))
        entry = self.cache.get(name)
        if name == "tubes" and ctl.tubes() is None:
            imgui.text_colored(imgui.ImVec4(*scr.colors["muted"]), ctl.t("tubes.computing"))
            return
        if name == "drafters" and ctl.drafter_figures() is None:
            imgui.text_colored(imgui.ImVec4(*scr.colors["muted"]), ctl.t("plot.drafters_computing"))
            return
        if name in figures.LONG_RUN_PLOTS and ctl.long_run() is None:
            imgui.text_colored(imgui.ImVec4(*scr.colors["muted"]), ctl.t("plot.computing_long"))
            return
        if entry is None or entry[0] != full_key:
            try:
                dpi_w = max(320, int(width))
                fig = figures.make(ctl, name)
                if aspect:
                    inches = max(5.0, dpi_w / 110.0)   # the same text size in pixels, whatever the box
                    fig.set_size_inches(inches, inches / aspect)
                    fig.tight_layout()
                fig.set_dpi(dpi_w / fig.get_figwidth())
                rgba = plots.figure_rgba(fig)
                plots.close(fig)
            except Exception as exc:  # noqa: BLE001 - a model still landing must not kill the panel
                imgui.text_wrapped(f"{name}: {type(exc).__name__}: {exc}")
                return
            tex_id = scr.renderer.register_rgba(rgba, entry[1] if entry else None)
            entry = (full_key, tex_id, rgba.shape[1], rgba.shape[0])
            self.cache[name] = entry
        _, tex_id, w, h = entry
        # Never taller than the space left: a plot cut off at the panel's edge is no use on a projector.
        avail_h = imgui.get_content_region_avail().y
        full_h = width * h / w
        # Shrink to fit when it nearly fits; when it cannot (a large UI scale), full width and let the panel scroll.
        shown_w = width if avail_h < 0.6 * full_h else min(width, avail_h * w / h)
        imgui.image(imgui.ImTextureRef(tex_id), (shown_w, shown_w * h / w))


# ---- line breaking that suits Chinese ------------------------------------------------------------------
# ImGui's wrapping breaks only at spaces: a Chinese sentence is one long "word", so it breaks at the last
# space before it (often right after a number) and leaves a short ragged line. We break between two Chinese
# (wide) characters and at spaces, never inside a run of Latin letters, digits or symbols (0.415, α^γ stay
# whole), never around '=' (α = 0.618 stays on one line), and keep closing punctuation on the line it closes
# and opening punctuation with what it opens (the usual kinsoku rules).
_NO_LINE_START = set("，。、；：？！）」』》〉”’%…·,.;:?!)]}")
_NO_LINE_END = set("（「『《〈“‘([{")
_GLUE = ("=", "<", ">", "≤", "≥", "≈", "→", "×")


def _wide(ch: str) -> bool:
    import unicodedata
    return len(ch) == 1 and unicodedata.east_asian_width(ch) in ("W", "F")


def _units(text: str) -> list[str]:
    """Wide characters one by one, spaces one by one, every other run of characters as one unit."""
    units, run = [], ""
    for ch in text:
        if ch == " " or _wide(ch):
            if run:
                units.append(run)
                run = ""
            units.append(ch)
        else:
            run += ch
    if run:
        units.append(run)
    return units


def _can_break_before(seq: list[str], j: int) -> bool:
    prev, u = seq[j - 1], seq[j]
    if u == " ":
        return False                       # break after a space, not before it
    if prev == " ":
        pp = seq[j - 2] if j >= 2 else ""
        return not (pp.endswith(_GLUE) or u.startswith(_GLUE))
    if u[0] in _NO_LINE_START or prev[-1] in _NO_LINE_END:
        return False
    return _wide(u) or _wide(prev)


def wrap_lines(text: str, width: float, measure) -> list[str]:
    """Greedy line breaking for mixed Chinese / Latin text; measure(str) -> width in pixels."""
    lines: list[str] = []
    for para in text.split("\n"):
        line: list[str] = []
        for u in _units(para):
            if not line and u == " ":
                continue
            if line and measure(("".join(line) + u).rstrip()) > width:
                seq = line + [u]
                j = next((j for j in range(len(seq) - 1, 0, -1) if _can_break_before(seq, j)), None)
                if j is not None:
                    lines.append("".join(seq[:j]).rstrip())
                    line = seq[j:]
                    while line and line[0] == " ":
                        line.pop(0)
                    continue
            line.append(u)
        lines.append("".join(line).rstrip())
    return lines


_WRAP_CACHE: dict = {}


def wrapped(text: str, color=None) -> None:
    """Draw text wrapped to the window's content width (like imgui.text_wrapped, breaking Chinese properly)."""
    width = max(1.0, imgui.get_content_region_avail().x)
    key = (text, round(width), round(imgui.get_font_size(), 1))
    lines = _WRAP_CACHE.get(key)
    if lines is None:
        if len(_WRAP_CACHE) > 256:
            _WRAP_CACHE.clear()
        lines = wrap_lines(text, width, lambda s: imgui.calc_text_size(s).x)
        _WRAP_CACHE[key] = lines
    out = "\n".join(lines)
    if color is not None:
        imgui.text_colored(imgui.ImVec4(*color), out)
    else:
        imgui.text(out)
