"""The window: pygame + moderngl GL 3.3 core context, the table (scenes.stage), ImGui panels, the main loop.

One App object owns the GL resources and the loop. The loop runs at the display's refresh rate
interactively, or for a fixed number of frames with a fixed time step (spectable run), feeding key
presses from a script: that is how tests drive the real program. Environment failures (no display,
no OpenGL 3.3, no font) become InputError: one line, exit 2.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from app import exports, keys
from app.i18n import Strings
from app.palette import apply_style, colors
from app.session import Session
from app.settings import LAB_FIELDS, MODES, AppSettings, save_settings
from app.tour import CHAPTERS, TourState
from corpus.errors import InputError

STAGE_TEXTURE_ID = 1      # the ImGui texture id of the table's render target (the renderer hands out 2, 3, ...)
FIXED_DT = 1.0 / 30.0     # the scripted loop's clock: frames are reproducible, whatever the machine


def resolve_font() -> Path:
    """The shipped CJK font (scenes.fonts); SPECTABLE_FONT overrides it (tests point it at a missing file)."""
    override = os.environ.get("SPECTABLE_FONT")
    if override:
        p = Path(override)
        if not p.is_file():
            raise InputError(f"font file {p} is missing (SPECTABLE_FONT)")
        return p
    try:
        from scenes.fonts import font_path
    except ImportError:
        raise InputError("the shipped font module scenes.fonts is missing") from None
    return Path(font_path())


class App:
    def __init__(self, settings: AppSettings, *, size: tuple[int, int] | None = None, export_dir: Path | None = None,
                 settings_file: Path | None = None, persist: bool = True, notice: str | None = None,
                 fixed_step: bool = False, gif_options: dict | None = None):
        self.settings = settings
        self.t = Strings(settings.language)
        self.export_dir = Path(export_dir) if export_dir else None
        self.settings_file = settings_file
        self.persist = persist
        self.fixed_step = fixed_step
        self.gif_options = gif_options or {}
        self.messages: list[tuple[float, str]] = []
        if notice:
            self.notify(notice)
        self.blank = False
        self.help = False
        self.paused = False
        self.quit = False
        self.frame = 0
        self.tour = TourState(settings.chapter)
        self.mode = None
        self.lab_values: dict | None = None  # the lab's own values, kept aside while the tour sets its own
        self.step_pos = 0                    # index into session.run.points
        self.cutaway = False
        self.pending_screenshot = False
        self._quiet_frames = 0
        self.exports_done: list[str] = []
        self.gif_job: exports.GifJob | None = None
        self.session = Session(settings)
        self.stage = None
        self.stage_error: str | None = None
        self._stage_key = None
        self._stage_fb = None                # (size, framebuffer, colour texture, depth) the table renders into
        self.play_until: float | None = None # the tour plays one action then holds still
        self.loop_timeline = False
        self._init_display(size or (settings.window_w, settings.window_h))
        self._init_imgui()
        self._init_stage()
        from app.modes import MODE_PANELS
        self.panels = {name: cls(self) for name, cls in MODE_PANELS.items()}
        self.set_mode(settings.mode if settings.mode in MODES else "tour", initial=True)

    # ---- set-up ------------------------------------------------------------------------------------
    def _init_display(self, size) -> None:
        import pygame
        self.pg = pygame
        drv = os.environ.get("SDL_VIDEODRIVER", "")
        if drv == "dummy":
            raise InputError("no OpenGL display: SDL_VIDEODRIVER=dummy has no GL (use a display, or SDL_VIDEODRIVER=offscreen)")
        if os.name != "nt" and not drv and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") \
                and not _is_macos():
            raise InputError("no display: DISPLAY is not set (for a headless run use SDL_VIDEODRIVER=offscreen)")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
        try:
            pygame.display.init()
            pygame.display.gl_set_attribute(pygame.GL_CONTEXT_MAJOR_VERSION, 3)
            pygame.display.gl_set_attribute(pygame.GL_CONTEXT_MINOR_VERSION, 3)
            pygame.display.gl_set_attribute(pygame.GL_CONTEXT_PROFILE_MASK, pygame.GL_CONTEXT_PROFILE_CORE)
            pygame.display.gl_set_attribute(pygame.GL_CONTEXT_FORWARD_COMPATIBLE_FLAG, 1)
            pygame.display.gl_set_attribute(pygame.GL_DOUBLEBUFFER, 1)
            pygame.display.set_caption("铸铁台 spectable")
            self.windowed_size = tuple(size)
            self.vsync = drv != "offscreen"
            flags = pygame.OPENGL | pygame.DOUBLEBUF | pygame.RESIZABLE
            if self.settings.fullscreen and drv != "offscreen":
                flags |= pygame.FULLSCREEN
                size = (0, 0)
            try:
                pygame.display.set_mode(size, flags, vsync=0 if drv == "offscreen" else 1)
            except pygame.error:
                # Some drivers (Xvfb, remote X, some VMs) cannot sync to the refresh: run unsynced, capped below.
                pygame.display.set_mode(size, flags, vsync=0)
                self.vsync = False
        except pygame.error as exc:
            raise InputError(f"cannot open an OpenGL 3.3 window: {exc}") from None
        import moderngl
        try:
            self.ctx = _attach_context(moderngl, drv)
        except Exception as exc:  # noqa: BLE001 - moderngl raises plain Exception for a missing GL
            raise InputError(f"OpenGL 3.3 is not available: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        self._update_size()

    def _update_size(self, size: tuple[int, int] | None = None) -> None:
        """The framebuffer size. Taken from the size we asked for or a resize event when known: right after
        set_mode some X servers still report the old window size."""
        pg = self.pg
        self.win_w, self.win_h = size if size else pg.display.get_window_size()
        # pygame does not ask SDL for high-DPI windows, so the drawable has the window's size; the text size
        # follows the framebuffer height (font_size), which is what makes a 4K panel or a projector readable.
        self.fb_w, self.fb_h = int(self.win_w), int(self.win_h)

    def _init_imgui(self) -> None:
        from imgui_bundle import imgui

        from app.imgui_renderer import ImGuiRenderer
        self.imgui = imgui
        self.font_file = resolve_font()
        imgui.create_context()
        io = imgui.get_io()
        io.set_ini_filename("")          # panel layout is ours, not a stray imgui.ini in the cwd
        try:
            self.font = io.fonts.add_font_from_file_ttf(str(self.font_file), 20.0)
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"cannot load font {self.font_file}: {exc}") from None
        if self.font is None:
            raise InputError(f"cannot load font {self.font_file}")
        self.renderer = ImGuiRenderer(self.ctx)
        apply_style(self.settings.palette)     # matplotlib (0.5 s to import) loads with the first plot
        self._key_map = _imgui_key_map(imgui, self.pg)

    def _init_stage(self) -> None:
        try:
            from scenes.stage import Stage
        except ImportError as exc:
            self.stage_error = f"scene not available: {exc}"
            return
        try:
            self.stage = Stage(self.ctx, palette=self.settings.palette)
            self.stage.reduced_motion = self.settings.reduced_motion
            self.stage.language = self.settings.language
        except Exception as exc:  # noqa: BLE001 - a broken scene must not take the panels down
            self.stage = None
            self.stage_error = f"scene failed to start: {type(exc).__name__}: {exc}"

    # ---- sizes -------------------------------------------------------------------------------------
    @property
    def font_size(self) -> float:
        """Text size follows the framebuffer height (HiDPI and projectors) times the UI scale."""
        base = max(14.0, min(48.0, self.fb_h / 40.0))
        return round(base * self.settings.ui_scale)

    # ---- state changes -----------------------------------------------------------------------------
    def notify(self, msg: str) -> None:
        self.messages.append((time.monotonic(), msg))
        self.messages = self.messages[-4:]

    def set_mode(self, mode: str, initial: bool = False) -> None:
        # The tour sets γ, lanes, context... per chapter on the live settings; the lab's own values are put
        # aside on the way in and back on the way out, and only they are ever saved.
        if mode == "tour" and self.mode != "tour":
            self.lab_values = {k: getattr(self.settings, k) for k in LAB_FIELDS}
        elif mode != "tour" and self.mode == "tour":
            self.leave_tour()
        self.settings.mode = mode
        self.mode = mode
        self.panels[mode].enter()
        if not initial:
            self.save()

    def leave_tour(self) -> None:
        """Put the lab's values back (the tour's γ, lanes, context... never outlive it) and decode speculatively."""
        if self.lab_values is not None:
            for k, v in self.lab_values.items():
                setattr(self.settings, k, v)
            self.lab_values = None
        self.session.decoder = "speculative"

    def saved_settings(self) -> AppSettings:
        """What goes into the settings file: the live settings with the lab's own values (not the tour's)."""
        from dataclasses import replace
        return replace(self.settings, chapter=self.tour.chapter, **(self.lab_values or {}))

    def set_language(self, lang: str) -> None:
        self.settings.language = lang
        self.t = Strings(lang)
        if self.stage is not None:
            self.stage.language = lang
        self.save()

    def set_palette(self, name: str) -> None:
        self.settings.palette = name
        apply_style(name)
        if self.stage is not None:
            self.stage.set_palette(name)
        self.save()

    def set_view(self, name: str) -> None:
        if self.stage is not None:
            try:
                self.stage.set_view(name)
            except (ValueError, KeyError) as exc:
                self.notify(f"view {name}: {exc}")

    # ---- the table's clock -----------------------------------------------------------------------
    @property
    def timeline(self):
        return self.stage.timeline if self.stage is not None else None

    def play(self, start: float, end: float | None = None) -> None:
        """Play the table from `start` to `end` (then hold still), or freely to the end when end is None."""
        tl = self.timeline
        if tl is None:
            return
        tl.seek(start)
        tl.paused = False
        self.play_until = end

    def hold(self, t: float) -> None:
        """Show the table still at time t (step-through stops, the tour's text pages)."""
        tl = self.timeline
        if tl is None:
            return
        tl.seek(t)
        tl.paused = True
        self.play_until = None

    def _tick_timeline(self, dt: float) -> None:
        tl = self.timeline
        if tl is None or self.paused:
            return
        tl.advance(dt)
        if self.play_until is not None and tl.t >= self.play_until:
            tl.seek(self.play_until)
            tl.paused = True
            self.play_until = None
        elif self.loop_timeline and not tl.paused and tl.t >= tl.duration:
            tl.seek(0.0)     # free play (lab, hardware): the run repeats so there is always motion to watch

    def save(self) -> None:
        if not self.persist:
            return
        try:
            self.settings.chapter = self.tour.chapter
            save_settings(self.saved_settings(), self.settings_file)
        except OSError as exc:
            self.notify(self.t("msg.settings_not_saved", error=str(exc)))

    def live_facts(self):
        """facts.facts(), recomputed only when the run or a setting changed."""
        from dataclasses import astuple

        from app.facts import facts
        self.session.ensure()
        key = (self.session.version, astuple(self.settings), self.session.tubes_ready() is not None)
        if key != getattr(self, "_facts_key", None):
            self._facts_key = key
            self._facts = facts(self)
        return self._facts

    @property
    def colors(self) -> dict:
        return colors(self.settings.palette)

    def sync_stage(self) -> None:
        """Hand the current run to the table when it changed (settings -> sampler -> traces -> stage)."""
        run = self.session.ensure()
        if self.stage is None or run is None:
            return
        s = self.settings
        try:
            # Scripted runs wait for the tubes (frames must not depend on thread timing); a teacher's window
            # shows the table at once and the tubes fill in when their experiment is done.
            tubes = self.session.tubes() if self.fixed_step else self.session.tubes_ready()
        except Exception:  # noqa: BLE001 - a broken tube model leaves the tubes empty, not the table
            tubes = None
        key = (self.session.version, s.lanes, s.context, s.device, s.model, s.c, s.tube_rule, tubes is not None)
        # batch_lanes is the number of sequences; the table lights batch × (γ + 1) lanes for a speculative pass
        # and batch × 1 for the target alone (its traces say lanes_lit = 1).
        if key == self._stage_key:
            return
        self._stage_key = key
        try:
            self.stage.set_run(self.session.pair(), run.traces, tubes=tubes,
                               hardware={"device": s.device, "model": s.model}, batch_lanes=s.lanes, context=s.context,
                               settings=_StageSettings(self.session.sampler_settings(), s.c))
            self.panels[self.mode].restage()
        except Exception as exc:  # noqa: BLE001
            self.stage_error = f"scene could not take the run: {type(exc).__name__}: {exc}"
            self.stage = None

    # ---- actions -----------------------------------------------------------------------------------
    def do(self, action: str) -> None:
        s = self.settings
        if action == "blank":
            self.blank = not self.blank
            return
        if self.blank and action in ("next", "prev", "close"):
            self.blank = False      # any clicker key brings the picture back
            return
        if action == "close":
            self.help = False
        elif action == "help":
            self.help = not self.help
        elif action == "fullscreen":
            self.toggle_fullscreen()
        elif action == "language":
            self.set_language("en" if s.language == "zh" else "zh")
        elif action == "pause":
            self.paused = not self.paused
        elif action == "palette":
            self.set_palette("projector" if s.palette == "default" else "default")
        elif action in ("scale_up", "scale_down"):
            s.ui_scale = round(min(2.5, max(0.6, s.ui_scale + (0.1 if action == "scale_up" else -0.1))), 2)
            self.save()
        elif action == "reduced_motion":
            s.reduced_motion = not s.reduced_motion
            if self.stage is not None:
                self.stage.reduced_motion = s.reduced_motion
            self.save()
        elif action == "screenshot":
            self.pending_screenshot = True
        elif action == "export_plots":
            self.record_exports(exports.export_plots(self))
        elif action == "export_log":
            self.record_exports([exports.export_run_log(self)])
        elif action == "export_gif":
            self.gif_job = exports.GifJob(self, **self.gif_options)
        elif action == "cutaway":
            self.cutaway = not self.cutaway
            self.set_view("cutaway" if self.cutaway else "readhead")
        elif action.startswith("mode_"):
            self.set_mode(action[5:])
        elif action in ("next", "prev"):
            self.panels[self.mode].on_key(action)

    def record_exports(self, paths) -> None:
        for p in paths:
            self.exports_done.append(str(p))
            self.notify(self.t("msg.exported", path=str(p)))

    def out_dir(self) -> Path:
        from app.paths import default_export_dir
        d = self.export_dir or default_export_dir()
        d.mkdir(parents=True, exist_ok=True)
        return d

    def toggle_fullscreen(self) -> None:
        """F11. set_mode on the existing OpenGL window keeps the GL context (pygame 2) and, unlike
        toggle_fullscreen(), resizes the GL drawable on X11 too."""
        pg = self.pg
        self.settings.fullscreen = not self.settings.fullscreen
        if os.environ.get("SDL_VIDEODRIVER") == "offscreen":
            self.save()
            return   # nothing to fill; keep the state so the setting round-trips
        base = pg.OPENGL | pg.DOUBLEBUF
        try:
            if self.settings.fullscreen:
                self.windowed_size = (self.win_w, self.win_h)
                desktop = pg.display.get_desktop_sizes()[0]
                pg.display.set_mode((0, 0), base | pg.FULLSCREEN, vsync=int(self.vsync))
                self._update_size(desktop)
            else:
                pg.display.set_mode(self.windowed_size, base | pg.RESIZABLE, vsync=int(self.vsync))
                self._update_size(self.windowed_size)
        except pg.error as exc:
            self.settings.fullscreen = not self.settings.fullscreen
            self.notify(f"fullscreen: {exc}")
        self.save()

    # ---- the loop ----------------------------------------------------------------------------------
    def handle_event(self, ev) -> None:
        pg, imgui = self.pg, self.imgui
        io = imgui.get_io()
        if ev.type == pg.QUIT:
            self.quit = True
        elif ev.type == pg.VIDEORESIZE:
            self._update_size((ev.w, ev.h))
            if not self.settings.fullscreen:
                self.settings.window_w, self.settings.window_h = self.win_w, self.win_h
        elif ev.type == pg.WINDOWSIZECHANGED:
            self._update_size((ev.x, ev.y))
            if not self.settings.fullscreen:
                self.settings.window_w, self.settings.window_h = self.win_w, self.win_h
        elif ev.type == pg.MOUSEMOTION:
            io.add_mouse_pos_event(float(ev.pos[0]), float(ev.pos[1]))
        elif ev.type in (pg.MOUSEBUTTONDOWN, pg.MOUSEBUTTONUP):
            if ev.button in (1, 2, 3):
                io.add_mouse_pos_event(float(ev.pos[0]), float(ev.pos[1]))
                io.add_mouse_button_event({1: 0, 2: 2, 3: 1}[ev.button], ev.type == pg.MOUSEBUTTONDOWN)
        elif ev.type == pg.MOUSEWHEEL:
            io.add_mouse_wheel_event(float(ev.x), float(ev.y))
        elif ev.type == pg.TEXTINPUT:
            if io.want_text_input:
                io.add_input_characters_utf8(ev.text)
        elif ev.type in (pg.KEYDOWN, pg.KEYUP):
            down = ev.type == pg.KEYDOWN
            k = self._key_map.get(ev.key)
            if k is not None:
                io.add_key_event(k, down)
            mods = pg.key.get_mods() | getattr(ev, "mod", 0)
            io.add_key_event(imgui.Key.mod_ctrl, bool(mods & pg.KMOD_CTRL))
            io.add_key_event(imgui.Key.mod_shift, bool(mods & pg.KMOD_SHIFT))
            if down and getattr(ev, "scripted", False) and io.want_text_input and ev.unicode:
                io.add_input_characters_utf8(ev.unicode)
            if down and not io.want_text_input:
                if ev.key == pg.K_q and (mods & pg.KMOD_CTRL):
                    self.quit = True
                    return
                action = keys.action_for(ev.key, getattr(ev, "unicode", ""))
                if action:
                    self.do(action)

    def draw_frame(self, dt: float) -> None:
        imgui = self.imgui
        io = imgui.get_io()
        io.display_size = (self.fb_w, self.fb_h)
        io.display_framebuffer_scale = (1.0, 1.0)
        io.delta_time = max(dt, 1e-4)
        self.sync_stage()
        self._tick_timeline(dt)
        if self.gif_job is not None:
            self.gif_job.advance()
            if self.gif_job.done:
                self.record_exports([self.gif_job.path])
                self.gif_job = None
        ctx = self.ctx
        self._use_screen()
        full = (0, 0, self.fb_w, self.fb_h)
        c = self.colors["clear"]
        if self.blank:
            ctx.clear(0, 0, 0, 1, viewport=full)
            imgui.new_frame()
            imgui.render()
            return
        ctx.clear(*c, viewport=full)
        rect = self.panels[self.mode].stage_rect()
        drawn = self._render_stage(rect)
        self._use_screen()
        style = imgui.get_style()
        style.font_size_base = self.font_size
        imgui.new_frame()
        from app import ui
        if drawn:
            x, y, w, h = rect
            imgui.get_background_draw_list().add_image(imgui.ImTextureRef(STAGE_TEXTURE_ID), (x, y), (x + w, y + h),
                                                       (0, 1), (1, 0))
        ui.top_bar(self)
        self.panels[self.mode].draw()
        ui.status_line(self)
        if self.help:
            ui.help_overlay(self)
        if self.gif_job is not None:
            ui.progress_overlay(self, self.gif_job)
        imgui.render()
        self.renderer.render(imgui.get_draw_data(), self.fb_w, self.fb_h)

    def _use_screen(self) -> None:
        """Bind the window's framebuffer at its current size. moderngl records the default framebuffer's size
        when the context is made; after a resize or F11 that record is stale, so the viewport is set here."""
        self.ctx.screen.use()
        self.ctx.viewport = (0, 0, self.fb_w, self.fb_h)

    def _render_stage(self, rect) -> bool:
        """Render the table into its own texture, sized to the area the panels leave free."""
        if self.stage is None:
            return False
        w, h = max(16, int(rect[2])), max(16, int(rect[3]))
        if self._stage_fb is None or self._stage_fb[0] != (w, h):
            self._release_stage_fb()
            color = self.ctx.texture((w, h), 4)
            depth = self.ctx.depth_renderbuffer((w, h))
            fbo = self.ctx.framebuffer(color_attachments=[color], depth_attachment=depth)
            self._stage_fb = ((w, h), fbo, color, depth)
            self.renderer.textures[STAGE_TEXTURE_ID] = color
        try:
            self.stage_stats = self.stage.render(self._stage_fb[1], w, h)
        except Exception as exc:  # noqa: BLE001 - keep the lesson going on panels alone
            self.stage_error = f"scene failed to draw: {type(exc).__name__}: {exc}"
            self.stage = None
            return False
        return True

    def _release_stage_fb(self) -> None:
        if self._stage_fb is not None:
            self.renderer.textures.pop(STAGE_TEXTURE_ID, None)
            for obj in self._stage_fb[1:]:
                obj.release()
            self._stage_fb = None

    def read_frame(self):
        """The framebuffer as an (h, w, 3) uint8 array, top row first."""
        import numpy as np
        data = self.ctx.screen.read(viewport=(0, 0, self.fb_w, self.fb_h), components=3)
        return np.frombuffer(data, dtype=np.uint8).reshape(self.fb_h, self.fb_w, 3)[::-1]

    def run(self, frames: int | None = None, script: list | None = None, screenshot: Path | None = None) -> None:
        pg = self.pg
        clock = pg.time.Clock()
        queue = list(script or [])
        wait = 0
        self.pending_screenshot = False
        last = time.perf_counter()
        if frames is None:
            pg.key.start_text_input()
        while not self.quit:
            # Script: one entry per frame from frame 1 on (frame 0 lays the panels out first).
            if wait > 0:
                wait -= 1
            elif queue and self.frame >= 1:
                entry = queue.pop(0)
                if isinstance(entry, int):
                    wait = entry - 1 if entry > 0 else 0     # this frame counts as the first of the wait
                else:
                    for ev in keys.key_event(entry):
                        pg.event.post(ev)
            events = pg.event.get()
            for ev in events:
                self.handle_event(ev)
            if frames is None and self._idle(bool(events)):
                clock.tick(30)      # nothing moves and nobody touched anything: keep the last picture
                last = time.perf_counter()
                continue
            now = time.perf_counter()
            dt = FIXED_DT if (self.fixed_step or frames is not None) else min(0.1, now - last)
            last = now
            self.draw_frame(dt)
            self.frame += 1
            final = frames is not None and self.frame >= frames and not queue and wait == 0
            if self.pending_screenshot:
                self.pending_screenshot = False
                self.record_exports([exports.save_png(self.read_frame(), self.out_dir() / exports.stamp("screenshot", "png"))])
            if final and screenshot is not None:
                exports.save_png(self.read_frame(), Path(screenshot))
            pg.display.flip()
            if final:
                break
            if frames is None:
                clock.tick(0 if self.vsync else 60)   # vsync paces the interactive loop; else cap at 60/s
        if self.gif_job is not None:     # a scripted run ends with its export finished, not abandoned
            while not self.gif_job.done:
                self.gif_job.advance()
            self.record_exports([self.gif_job.path])
            self.gif_job = None

    def _idle(self, had_events: bool) -> bool:
        """Render on demand: after two quiet frames (both buffers hold the picture) stop drawing until an event,
        a playing table, a camera move, an export or a finished background computation needs a new frame."""
        key_before = self._stage_key
        self.sync_stage()
        moving = (self.stage is not None and not self.paused
                  and (not self.stage.timeline.paused or self.stage.animating))
        quiet = not (had_events or moving or self.gif_job is not None or self._stage_key != key_before
                     or self.pending_screenshot)
        self._quiet_frames = self._quiet_frames + 1 if quiet else 0
        return self._quiet_frames > 2

    def state(self) -> dict:
        """What the run ended on (spectable run --json): tests read the program's state from here."""
        from app.modes.step import current_explanation
        run = self.session.run
        out = {
            "frames": self.frame, "mode": self.mode, "language": self.settings.language,
            "palette": self.settings.palette, "ui_scale": self.settings.ui_scale,
            "fullscreen": self.settings.fullscreen, "blank": self.blank, "help": self.help, "paused": self.paused,
            "reduced_motion": self.settings.reduced_motion,
            "chapter": self.tour.chapter, "chapter_slug": CHAPTERS[self.tour.chapter].slug,
            "page": self.tour.page, "acted": self.tour.acted,
            "step_position": self.step_pos, "step": current_explanation(self),
            "tokens_written": len(run.tokens) - len(run.prompt_ids) if run else 0,
            "text": self.session.pair().decode(run.tokens) if run else "",
            "exports": list(self.exports_done), "framebuffer": [self.fb_w, self.fb_h],
            "stage": self.stage is not None, "stage_error": self.stage_error,
            "messages": [m for _, m in self.messages], "error": self.session.error,
            "decoder": self.session.decoder, "tube_rule": self.settings.tube_rule,
            "skip_bonus": self.settings.skip_bonus,
            "settings": {k: getattr(self.settings, k) for k in LAB_FIELDS},
            "lab": dict(self.lab_values) if self.lab_values is not None else {k: getattr(self.settings, k)
                                                                               for k in LAB_FIELDS},
            "lanes_lit": self._lanes_lit(),
        }
        return out

    def _lanes_lit(self):
        """Lanes the table lights in the current (or first) target pass: what its HUD says."""
        tl = self.timeline
        if tl is None or not tl.steps:
            return None
        k = max(0, min(len(tl.steps) - 1, int(getattr(tl, "current_step", 0) or 0)))
        return int(tl.steps[k].lanes)

    def close(self) -> None:
        self.save()
        self.session.close()
        try:
            self._release_stage_fb()
            if self.stage is not None:
                self.stage.release()
            self.renderer.release()
            self.imgui.destroy_context()
        finally:
            self.pg.display.quit()
            self.pg.quit()


class _StageSettings:
    """The sampler settings plus the lab's draft cost ratio c (the stage times the small drum with it)."""

    def __init__(self, sampler_settings, c: float):
        self._s = sampler_settings
        self.c = self.cost_ratio = c

    def __getattr__(self, name):
        return getattr(self._s, name)


def _attach_context(moderngl, driver: str):
    """moderngl context on the window's current GL context (any platform: moderngl's default loader).

    init_context() builds a fresh one each time: moderngl keeps a process-wide default context, and a
    stale one from an earlier window (tests open many) would make create_context() probe GLX instead.
    """
    moderngl.init_context()
    ctx = moderngl.get_context()
    if ctx.version_code < 330:
        raise RuntimeError(f"OpenGL {ctx.version_code // 100}.{ctx.version_code % 100 // 10} found, 3.3 needed")
    return ctx


def _is_macos() -> bool:
    import sys
    return sys.platform == "darwin"


def _imgui_key_map(imgui, pg) -> dict:
    K = imgui.Key
    m = {pg.K_LEFT: K.left_arrow, pg.K_RIGHT: K.right_arrow, pg.K_UP: K.up_arrow, pg.K_DOWN: K.down_arrow,
         pg.K_HOME: K.home, pg.K_END: K.end, pg.K_DELETE: K.delete, pg.K_BACKSPACE: K.backspace,
         pg.K_RETURN: K.enter, pg.K_KP_ENTER: K.keypad_enter, pg.K_ESCAPE: K.escape, pg.K_TAB: K.tab,
         pg.K_a: K.a, pg.K_c: K.c, pg.K_v: K.v, pg.K_x: K.x, pg.K_z: K.z, pg.K_y: K.y}
    return m
