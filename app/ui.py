"""Shared pieces of the UI: layout rectangles, the mode bar, status line, help overlay, plot textures, tables.

Layout is proportional to the framebuffer so the same lesson reads at 1280x720 and on a 1920x1080
projector: the table fills the window, the mode's panel takes the right 40%, the tour's narration the
lower left.
"""
from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from imgui_bundle import imgui

from app.lesson.facts import UNAVAILABLE
from app.palette import u32
from app.settings import MODES
from app.paths import resolve_font
from scenes.legibility import FLOOR_PX, min_text_px, overlapping_pairs

FLAGS = (imgui.WindowFlags_.no_title_bar | imgui.WindowFlags_.no_resize | imgui.WindowFlags_.no_move
         | imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_saved_settings)


@dataclass
class FrameLog:
    """What a frame's panels drew that the legibility measures need (app/window.py reports them): every text
    size used, the smallest text of each plot as shown and the overlaps inside it, and table cells whose text
    did not fit."""
    sizes: list = field(default_factory=list)
    plots: dict = field(default_factory=dict)  # name -> (smallest text px, [overlapping pairs], [texts cut off])
    clipped: list = field(default_factory=list)        # texts cut off by their cell


@dataclass
class Screen:
    """What drawing needs from the window this frame: the framebuffer size, the text size and the ImGui
    renderer (for plot textures). The window fills it in each frame; panels get this, never the window."""
    ctl: object
    w: int = 1280
    h: int = 720
    font_size: float = 18.0
    renderer: object = None
    log: FrameLog = field(default_factory=FrameLog)
    # ImGui sizes a font by its line (ascender to descender), not its em: the shipped font's em is 1/1.448 of
    # that. Text heights are reported as em heights, as the table's and the plots' are (scenes.legibility).
    em_ratio: float = 1.0

    def em(self, size: float | None = None) -> float:
        """The em height in pixels of ImGui text of `size` (default: the panel's text)."""
        return (self.font_size if size is None else size) * self.em_ratio

    @property
    def colors(self) -> dict:
        return self.ctl.colors

    @property
    def t(self):
        return self.ctl.t


PANEL_EM_FRACTION = 1 / 44.0     # panel text: an em of 1/44 of the window's height (16.4 px at 720p)
MAX_EM = 40.0


def em_ratio(font_path) -> float:
    """units per em ÷ (ascender − descender) of a font: ImGui's font size times this is the em in pixels."""
    return _em_ratio(str(font_path))


@lru_cache(maxsize=4)
def _em_ratio(path: str) -> float:
    import freetype  # lazy: freetype only when a font atlas is built
    face = freetype.Face(path)
    return face.units_per_EM / float(face.ascender - face.descender)


def panel_font_size(height: int, ui_scale: float, ratio: float) -> int:
    """The ImGui font size whose em is 1/44 of the window's height times the UI scale (never under the
    legibility minimum at the default scale, never under 14 px at any)."""
    em = max(min_text_px(height), height * PANEL_EM_FRACTION)
    em = min(MAX_EM, max(FLOOR_PX, em * ui_scale))
    return int(math.ceil(em / ratio - 1e-9))      # never a hair under the em asked for


def push_font(scr: Screen, scale: float = 1.0) -> None:
    """Text `scale` times the panel size from here to pop_font() (recorded for the smallest-text measure)."""
    size = scr.font_size * scale
    scr.log.sizes.append(size)
    imgui.push_font(None, size)


def pop_font() -> None:
    imgui.pop_font()


def screen_for(ctl, w: int, h: int, renderer=None) -> Screen:
    """The Screen of a w x h framebuffer: the panels' em follows its height (HiDPI, projectors) times the UI
    scale (panel_font_size)."""
    ratio = em_ratio(resolve_font())
    return Screen(ctl, int(w), int(h), panel_font_size(int(h), ctl.settings.ui_scale, ratio), renderer,
                  em_ratio=ratio)


def ui_rects(scr: Screen) -> list[tuple[float, float, float, float]]:
    """The rectangles (x0, y0, x1, y1) the mode's UI covers: the mode bar, the status line, the panel and, in
    the tour and the lab, the lower-left box."""
    rects = [(0.0, 0.0, scr.w, bar_h(scr)), (0.0, scr.h - status_h(scr), scr.w, scr.h)]
    for x, y, w, h in (panel_rect(scr), narration_rect(scr)):
        rects.append((x, y, x + w, y + h))
    return rects


def bar_h(scr: Screen) -> float:
    """The mode bar: one row of buttons (a line plus the button's and the strip's padding)."""
    return scr.font_size * 1.6


def status_h(scr) -> float:
    return scr.font_size * 1.5


def panel_frac(scr) -> float:
    """Share of the width the mode's panel takes (a tour page with no plot leaves more to the table)."""
    return getattr(scr.ctl.panel, "panel_frac", 0.40)


def panel_rect(scr):
    """Right-hand panel: (x, y, w, h)."""
    x = scr.w * (1.0 - panel_frac(scr))
    y = bar_h(scr)
    return x, y, scr.w - x, scr.h - y - status_h(scr)


def narration_rect(scr):
    """Lower-left narration box of the tour (the lab's results, the hardware mode's roofline)."""
    h = scr.h * getattr(scr.ctl.panel, "narration_frac", 0.30)
    return 0.0, scr.h - status_h(scr) - h, scr.w * (1.0 - panel_frac(scr)), h


def begin_panel(name: str, rect, bg_alpha: float | None = None, scroll: bool = True) -> bool:
    """A fixed panel. scroll=False: a strip (mode bar, status line) whose one row always fits: no scrollbar
    ever, however the text size is stepped."""
    x, y, w, h = rect
    imgui.set_next_window_pos((x, y))
    imgui.set_next_window_size((w, h))
    if bg_alpha is not None:
        imgui.set_next_window_bg_alpha(bg_alpha)
    flags = FLAGS
    if not scroll:
        flags |= imgui.WindowFlags_.no_scrollbar | imgui.WindowFlags_.no_scroll_with_mouse
        imgui.push_style_var(imgui.StyleVar_.window_padding, (8.0, max(2.0, (h - imgui.get_frame_height()) / 2)))
    shown = imgui.begin(name, None, flags)[0]
    if not scroll:
        imgui.pop_style_var()
    return shown


# Windows drawn over everything on purpose (help, export progress): not part of the layout measures.
OVERLAYS = ("##help", "##progress")
# Panels shown in the table's place on purpose (the lab's drafters plot, too big for its panel): while one is open
# the table is not what the class looks at there, so a panel over it is not a panel covering it.
INSTEAD_OF_TABLE = ("##labplot",)


def window_boxes() -> list[dict]:
    """Every panel ImGui drew this frame: its rectangle, whether it shows a scrollbar, and whether its content
    is wider than it (text cut off at its right edge). Read after the panels are drawn."""
    ctx = imgui.get_current_context()
    out = []
    for win in ctx.windows:
        # ImGui's own implicit "Debug##Default" window is always active but never drawn (nothing goes in it).
        if not win.active or win.hidden or win.name.startswith(("##Tooltip", "Debug##")) or "/" in win.name:
            continue
        inner_w = win.size.x - 2 * win.window_padding.x - (win.scrollbar_sizes.x if win.scrollbar_y else 0)
        out.append({"name": win.name, "rect": (float(win.pos.x), float(win.pos.y), float(win.size.x),
                                               float(win.size.y)),
                    "scrollbar": bool(win.scrollbar_y or win.scrollbar_x),
                    "too_wide": bool(win.content_size.x > inner_w + 1.0)})
    return out


def measure_frame(scr: Screen, stage_rect, stage_legibility: dict | None) -> dict:
    """The frame's legibility, as `spectable run --json` reports it (README, "spectable run"):
    min_text_px: the smallest text drawn anywhere (panels, plots as shown, the table's labels and readouts);
    overlaps: pairs of boxes that overlap, among the panels, the table's picture and the table's own text
    boxes (plates, readouts), and the text inside each plot; scrollbars: panels showing one;
    clipped: panels or table cells whose text is cut off; hidden_labels: table texts left out as too small."""
    wins = [w for w in window_boxes() if w["name"] not in OVERLAYS]
    sizes = [scr.em(s) for s in [*scr.log.sizes, scr.font_size]]
    sizes += [rep[0] for rep in scr.log.plots.values() if rep[0]]
    overlaps = [(f"plot {name}: {a}", f"plot {name}: {b}") for name, rep in scr.log.plots.items()
                for a, b in rep[1]]
    # The panels and the table's picture: a panel over the table covers the part being explained.
    boxes = [(w["name"], *w["rect"]) for w in wins]
    if stage_rect is not None and stage_rect[2] > 0 and stage_rect[3] > 0 \
            and not any(w["name"] in INSTEAD_OF_TABLE for w in wins):
        boxes.append(("table", *(float(v) for v in stage_rect)))
    overlaps += overlapping_pairs(boxes)
    leg = stage_legibility or {}
    if leg.get("min_text_px"):
        sizes.append(leg["min_text_px"])
    overlaps += [(f"table: {a}", f"table: {b}") for a, b in leg.get("overlaps", [])]
    hidden = len(leg.get("hidden", []))
    return {"min_text_px": round(min(sizes), 2),
            "overlaps": [list(p) for p in overlaps],
            "scrollbars": [w["name"] for w in wins if w["scrollbar"]],
            "clipped": [w["name"] for w in wins if w["too_wide"]] + list(scr.log.clipped)
            + [f"plot {name}: {txt}" for name, rep in scr.log.plots.items() for txt in rep[2]],
            "hidden_labels": hidden}


def top_bar(scr) -> None:
    ctl = scr.ctl
    t, s = ctl.t, ctl.settings
    begin_panel("##bar", (0, 0, scr.w, bar_h(scr)), scroll=False)
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
    begin_panel("##status", (0, scr.h - h, scr.w, h), scroll=False)
    recent = ctl.recent_messages()
    hint = t("status.keys_quiz" if ctl.mode == "quiz" else "status.keys")
    if ctl.paused:
        hint = t("status.paused") + "   " + hint
    if ctl.driver.stage is None and ctl.driver.stage_error:
        hint = t("status.no_stage") + "   " + hint
    if ctl.quiz_return is not None:         # the quiz's "show me" jumped here: the way back, always in sight
        if imgui.small_button("← " + t("quiz.back")):
            ctl.back_to_quiz()
        imgui.same_line()
    imgui.text_colored(imgui.ImVec4(*scr.colors["muted"]), recent[-1] if recent else hint)
    imgui.end()


HELP_ROWS = (
    ("PageDown / Space / →", "help.next"), ("PageUp / ←", "help.prev"), ("B / .", "help.blank"),
    ("F11", "help.fullscreen"), ("L", "help.language"), ("H / ?", "help.help"), ("P", "help.pause"),
    ("F9", "help.palette"), ("+ / -", "help.scale"), ("M", "help.motion"), ("X", "help.cutaway"),
    ("1 – 7", "help.modes"), ("A – D", "help.answer"), ("R S T W Backspace", "help.quiz"),
    ("[ / ]", "help.speed"), ("S", "help.save_lesson"), ("F12", "help.screenshot"), ("E", "help.plots"), ("C", "help.log"),
    ("G", "help.gif"), ("Esc", "help.close"), ("Ctrl+Q", "help.quit"),
)


def help_overlay(scr, note: str | None = None) -> None:
    """Every key; first, on a tour page of a prepared lesson, the teacher's note for the page (the class sees
    the narration; the teacher opens this with H)."""
    t = scr.t
    w, h = scr.w * 0.5, scr.h * 0.8
    begin_panel("##help", ((scr.w - w) / 2, (scr.h - h) / 2, w, h), bg_alpha=1.0)
    if note:
        push_font(scr, 1.3)
        imgui.text_colored(imgui.ImVec4(*scr.colors["accent"]), t("help.teacher_note"))
        pop_font()
        push_font(scr, 1.15)
        wrapped(note)
        pop_font()
        imgui.separator()
    push_font(scr, 1.3)
    imgui.text_colored(imgui.ImVec4(*scr.colors["accent"]), t("help.title"))
    pop_font()
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
    push_font(scr, scale)
    wrapped(text, scr.colors["accent"])
    pop_font()


def cell(scr, text: str, color=None, wrap: bool = True) -> None:
    """Text in a table cell: wrapped to the column (Chinese between characters), or on one line when `wrap` is
    off; a line wider than its cell is recorded as clipped (the legibility measure), never silently cut."""
    if wrap:
        wrapped(text, color)
        return
    if imgui.calc_text_size(text).x > imgui.get_content_region_avail().x + 1.0:
        scr.log.clipped.append(text)
    if color is not None:
        imgui.text_colored(imgui.ImVec4(*color), text)
    else:
        imgui.text(text)


def facts_table(scr, rows) -> None:
    """rows: [(label, value)] two columns, values right next to their names."""
    if not rows:
        return
    if imgui.begin_table("facts", 2, imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_h):
        # Names are long and values short: the names get the room, so most stay on one line.
        widest = max(imgui.calc_text_size(v).x for _, v in rows) + 2 * imgui.get_style().cell_padding.x
        widest = min(widest, imgui.get_content_region_avail().x * 0.55)
        imgui.table_setup_column("name", imgui.TableColumnFlags_.width_stretch)
        imgui.table_setup_column("value", imgui.TableColumnFlags_.width_fixed, widest)
        for label, value in rows:
            imgui.table_next_row()
            imgui.table_next_column()
            cell(scr, label)
            imgui.table_next_column()
            cell(scr, value, wrap=False)
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


DRAG_REDRAW_FRAMES = 6     # while a slider is dragged, a plot is redrawn at most every this many frames


class PlotTextures:
    """Matplotlib figures as textures, rebuilt only when what they show changes (what the plot is drawn from:
    figures.PLOT_INPUTS; the size). Drawing one costs tens of milliseconds, so while the mouse drags a slider
    a plot follows every DRAG_REDRAW_FRAMES-th frame, and at once when it is let go."""

    def __init__(self, ctl):
        self.ctl = ctl
        self.cache: dict[str, tuple] = {}

    def image(self, scr, name: str, width: float, aspect: float | None = None, height: float | None = None,
              overlay=None, reserve: float = 0.0, only=None) -> None:
        """Draw plot `name` `width` pixels wide and `height` tall (default: the height left in the panel, at most
        width / 1.6, never under about nine lines of text; `reserve` pixels are kept for what follows it; `aspect`
        w/h instead fixes the shape). The figure is
        laid out at exactly the size it is shown, with text of the panel's size (never under the legibility
        minimum): a plot is never scaled down into text nobody can read. overlay(draw_list, x, y, w, h, fig_info)
        draws over the picture (the tube mode marks the round shown). only: the drafters the drafters plot draws
        (None: all; the tour's, those its pages have introduced)."""
        from app import figures, plots  # lazy: pulls in matplotlib
        ctl = self.ctl
        if name == "tubes" and ctl.tubes() is None:
            imgui.text_colored(imgui.ImVec4(*scr.colors["muted"]), ctl.t("tubes.computing"))
            return
        if name == "drafters" and ctl.drafter_figures() is None:
            imgui.text_colored(imgui.ImVec4(*scr.colors["muted"]), ctl.t("plot.drafters_computing"))
            return
        if name in figures.LONG_RUN_PLOTS and ctl.long_run() is None:
            imgui.text_colored(imgui.ImVec4(*scr.colors["muted"]), ctl.t("plot.computing_long"))
            return
        text_px = max(min_text_px(scr.h), scr.em() * 0.95)
        avail_h = imgui.get_content_region_avail().y - reserve
        if aspect:
            h = width / aspect
        elif height is not None:
            h = height
        else:
            # The drafters plot in a panel carries its legend under the axes: it takes a squarer box.
            shape = 1.05 if name == "drafters" else 1.6
            h = max(min(width / shape, avail_h - imgui.get_style().item_spacing.y), text_px * 9)
        w, h = max(64, int(width)), max(64, int(h))
        only = None if only is None else frozenset(only)
        full_key = (w, h, round(text_px, 1), figures.inputs_key(ctl, name), only)
        entry = self.cache.get(name)
        frame = imgui.get_frame_count()
        dragging = imgui.is_any_item_active() and imgui.is_mouse_down(0)
        if entry is not None and entry[0] != full_key and dragging and frame - entry[6] < DRAG_REDRAW_FRAMES:
            full_key = entry[0]          # keep the last picture a few frames more (the slider is still moving)
        if entry is None or entry[0] != full_key:
            try:
                fig = figures.make(ctl, name, (w, h), text_px, only=only)
                rgba = plots.figure_rgba(fig)
                report = plots.text_report(fig)
                info = axes_info(fig)
                plots.close(fig)
            except UNAVAILABLE as exc:     # a model or number that cannot be computed must not kill the panel
                imgui.text_wrapped(f"{name}: {type(exc).__name__}: {exc}")
                return
            tex_id = scr.renderer.register_rgba(rgba, entry[1] if entry else None)
            entry = (full_key, tex_id, rgba.shape[1], rgba.shape[0], report, info, frame)
            self.cache[name] = entry
        _, tex_id, tw, th, report, info, _ = entry
        scr.log.plots[name] = report
        x0, y0 = imgui.get_cursor_screen_pos()
        imgui.image(imgui.ImTextureRef(tex_id), (tw, th), (0.0, 0.0), scr.renderer.uv1(tex_id, tw, th))
        if overlay is not None:
            overlay(imgui.get_window_draw_list(), x0, y0, tw, th, info)


def axes_info(fig) -> dict:
    """Where the first axes sit in the picture (pixels from its top-left) and its x mapping, for overlays:
    {'x0', 'y0', 'x1', 'y1', 'to_px': data x -> pixel x, 'legend': its box (x0, y0, x1, y1) or None}."""
    ax = fig.axes[0]
    bb = ax.get_window_extent()
    h = fig.bbox.height
    trans = ax.transData

    def to_px(x: float) -> float:
        return float(trans.transform((x, 1.0 if ax.get_yscale() == "log" else 0.0))[0])
    leg = ax.get_legend()
    box = None
    if leg is not None and leg.get_visible():
        lb = leg.get_window_extent(fig.canvas.get_renderer())
        box = (lb.x0, h - lb.y1, lb.x1, h - lb.y0)
    return {"x0": bb.x0, "x1": bb.x1, "y0": h - bb.y1, "y1": h - bb.y0, "to_px": to_px, "legend": box}


def rect_minus(rect, hole) -> list[tuple[float, float, float, float]]:
    """`rect` (x0, y0, x1, y1) less `hole`, as at most four rectangles (an overlay that covers a plot's curves
    keeps clear of its legend)."""
    x0, y0, x1, y1 = rect
    if hole is None:
        return [rect]
    hx0, hy0, hx1, hy1 = hole
    if hx0 >= x1 or hx1 <= x0 or hy0 >= y1 or hy1 <= y0:
        return [rect]
    top, bottom = max(y0, hy0), min(y1, hy1)
    parts = [(x0, y0, x1, top), (x0, bottom, x1, y1), (x0, top, min(x1, hx0), bottom), (max(x0, hx1), top, x1, bottom)]
    return [r for r in parts if r[2] > r[0] and r[3] > r[1]]


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


def side_by_side_table(scr, sbs: dict, name: str, columns: tuple[int, ...] | None = None) -> None:
    """Every drafter measured side by side (app.lesson.measured.side_by_side_view): its title, then a row per
    drafter; `columns`: the indices of the columns to show (a narrow panel leaves some out)."""
    keep = columns if columns is not None else tuple(range(len(sbs["columns"])))
    wrapped(sbs["title"])
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_h
    if imgui.begin_table(name, len(keep), flags):
        for k in keep:
            imgui.table_setup_column(sbs["columns"][k])
        imgui.table_headers_row()
        for row in sbs["rows"]:
            imgui.table_next_row()
            for k in keep:
                imgui.table_next_column()
                cell(scr, row[k], wrap=k == 0)
        imgui.end_table()


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
