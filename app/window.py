"""The window shell: pygame + a moderngl GL 3.3 core context, ImGui, events, fullscreen and the main loop.

What the program does lives in the controller (app/controller.py) and what the table does in the table
driver (app/driver.py); this shell feeds them events and a clock and draws what they say. The loop runs at
the display's refresh rate interactively, or for exactly N frames with a fixed time step (spectable run
--frames N), feeding key presses from a script: that is how tests drive the real program, and why scripted
frames are the same on any machine. Environment failures (no display, no OpenGL 3.3, no font) are
InputError: one line, exit 2.
"""
from __future__ import annotations

import time
from pathlib import Path

from app import exports, keys, ui
from app.controller import Controller
from app.display import Display
from app.notes_window import NotesWindow
from app.cli.progress import Progress
from app.imgui_renderer import ImGuiRenderer, feed_imgui, imgui_key_map
from app.palette import apply_style
from app.paths import resolve_font
from corpus.errors import InputError
from scenes.stage import Stage

STAGE_TEXTURE_ID = 1      # the ImGui texture id of the table's render target (the renderer hands out 2, 3, ...)
FIXED_DT = 1.0 / 30.0     # the scripted loop's clock: frames are reproducible, whatever the machine


class App:
    def __init__(self, ctl: Controller, *, size: tuple[int, int] | None = None, notes_window: bool | None = None):
        """notes_window: the teacher's notes in a window of their own (app/notes_window.py); None: when the
        computer has a second display."""
        self.ctl = ctl
        self.frame = 0
        self._quiet_frames = 0
        self.legibility: dict = {}       # the last frame's text sizes and overlaps (ui.measure_frame)
        s = ctl.settings
        self.display = Display(s, size or (s.window_w, s.window_h), ctl.notify)
        self.pg, self.ctx = self.display.pg, self.display.ctx
        self._init_imgui()
        self._init_stage()
        self.notes = None if notes_window is False else NotesWindow.for_display(
            self.pg, resolve_font(), lambda key: self.ctl.t(key), force=bool(notes_window))
        ctl.listeners.append(self._on_change)
        ctl.driver.read_screen = self.read_frame
        ctl.start()

    # ---- set-up ------------------------------------------------------------------------------------
    def _init_imgui(self) -> None:
        from imgui_bundle import imgui  # lazy: ImGui only in the window

        self.imgui = imgui
        font_file = resolve_font()
        imgui.create_context()
        io = imgui.get_io()
        io.set_ini_filename("")          # panel layout is ours, not a stray imgui.ini in the cwd
        # ImGui bakes each glyph per text size on demand. From its default 512x128 atlas it discards the sizes
        # not drawn in the last frames whenever the atlas is full, and re-bakes them when drawn again: with CJK
        # text at six sizes, every mode change re-uploaded glyphs for seconds. One 2048² single-channel atlas
        # (4 MB) holds them all; ImGui still grows it if a 4K projector needs more.
        io.fonts.tex_min_width = io.fonts.tex_min_height = 2048
        io.fonts.tex_desired_format = imgui.ImTextureFormat.alpha8
        try:
            font = io.fonts.add_font_from_file_ttf(str(font_file), 20.0)
        except Exception as exc:  # noqa: BLE001 - ImGui raises plain Exception for a font it cannot read
            raise InputError(f"cannot load font {font_file}: {exc}") from None
        if font is None:
            raise InputError(f"cannot load font {font_file}")
        self.renderer = ImGuiRenderer(self.ctx)
        apply_style(self.ctl.settings.palette)     # matplotlib (0.5 s to import) loads with the first plot
        self._key_map = imgui_key_map(imgui, self.pg)

    def _init_stage(self) -> None:
        try:
            stage = Stage(self.ctx, palette=self.ctl.settings.palette)
            # No wait for the table's pixels: software GL rasterises them on its own threads while the panels
            # are built; the panels' draw of the table's texture (or the buffer swap) waits for them.
            stage.sync = False
            self.ctl.driver.attach(stage)
        except Exception as exc:  # noqa: BLE001 - a broken scene must not take the panels down
            self.ctl.driver.fail(f"scene failed to start: {type(exc).__name__}: {exc}")

    def _on_change(self, changed: frozenset) -> None:
        if "palette" in changed:
            apply_style(self.ctl.settings.palette)

    @property
    def fb_w(self) -> int:
        return self.display.fb_w

    @property
    def fb_h(self) -> int:
        return self.display.fb_h

    def screen(self) -> ui.Screen:
        """What panels draw with this frame; text size follows the framebuffer height (HiDPI, projectors)."""
        return ui.screen_for(self.ctl, self.fb_w, self.fb_h, self.renderer)

    # ---- window-only actions -------------------------------------------------------------------------
    def toggle_fullscreen(self) -> None:
        if self.display.toggle_fullscreen():
            self.ctl.update(fullscreen=not self.ctl.settings.fullscreen)

    def _take(self, request: str) -> int:
        """How often the controller asked for this window-only action (fullscreen, screenshot) since last asked."""
        n = self.ctl.requests.count(request)
        self.ctl.requests = [r for r in self.ctl.requests if r != request]
        return n

    # ---- the loop ----------------------------------------------------------------------------------
    def handle_event(self, ev) -> None:
        pg, ctl = self.pg, self.ctl
        if self.notes is not None and self.notes.owns(ev):
            self.notes.handle(ev)                # its own close and size; its keys turn the pages below
            return
        if ev.type == pg.QUIT or (ev.type == pg.WINDOWCLOSE and self.notes is not None):
            ctl.quit = True
        elif ev.type in (pg.VIDEORESIZE, pg.WINDOWSIZECHANGED):
            size = (ev.w, ev.h) if ev.type == pg.VIDEORESIZE else (ev.x, ev.y)
            if not self.display.resized(size):
                return
            if not ctl.settings.fullscreen:
                desk = self.display.desktop_size(pg)
                ctl.adjust(window_w=min(self.fb_w, desk[0]), window_h=min(self.fb_h, desk[1]))
        typing = feed_imgui(self.imgui, pg, ev, self._key_map)     # True while a text field has the keys
        if ev.type == pg.KEYDOWN and not typing:
            if ev.key == pg.K_q and (pg.key.get_mods() | getattr(ev, "mod", 0)) & pg.KMOD_CTRL:
                ctl.quit = True
                return
            action = keys.action_for(ev.key, getattr(ev, "unicode", ""), ctl.mode)
            if action:
                ctl.do(action)

    def draw_frame(self, dt: float) -> None:
        imgui, ctl, drv = self.imgui, self.ctl, self.ctl.driver
        io = imgui.get_io()
        io.display_size = (self.fb_w, self.fb_h)
        io.display_framebuffer_scale = (1.0, 1.0)
        io.delta_time = max(dt, 1e-4)
        drv.sync()
        drv.advance(dt)
        ctl.pump_exports()
        scr = self.screen()
        full = (0, 0, self.fb_w, self.fb_h)
        if ctl.blank:
            self.display.use_screen()
            self.ctx.clear(0, 0, 0, 1, viewport=full)
            imgui.new_frame()
            imgui.render()
            return
        rect = ctl.panel.stage_rect(scr)
        # A mode that gives the table no room (the quiz's class mode) draws none.
        tex = drv.render(rect[2], rect[3], text_height=self.fb_h) if rect[2] >= 1 and rect[3] >= 1 else None
        self.renderer.textures.pop(STAGE_TEXTURE_ID, None)
        self.display.use_screen()
        self.ctx.clear(*ctl.colors["clear"], viewport=full)
        imgui.get_style().font_size_base = scr.font_size
        imgui.new_frame()
        if tex is not None:
            self.renderer.textures[STAGE_TEXTURE_ID] = tex
            x, y, w, h = rect
            u, v = drv.stage_uv        # the part of the texture the table was drawn into (its lower left)
            imgui.get_background_draw_list().add_image(imgui.ImTextureRef(STAGE_TEXTURE_ID), (x, y), (x + w, y + h),
                                                       (0, v), (u, 0))
        ui.top_bar(scr)
        ctl.panel.draw(scr)
        ui.status_line(scr)
        notes_open = self.notes is not None and not self.notes.closed
        if notes_open:
            self.notes.show(self.notes_title(), ctl.teacher_note())
        if ctl.help:
            # The class sees the help overlay: with the notes on the teacher's screen, the note stays there.
            ui.help_overlay(scr, None if notes_open else ctl.teacher_note())
        if ctl.gif_job is not None:
            ui.progress_overlay(scr, ctl.gif_job)
        self.legibility = ui.measure_frame(scr, rect if tex is not None else None,
                                           drv.stage.legibility if tex is not None else None)
        imgui.render()
        self.renderer.render(imgui.get_draw_data(), self.fb_w, self.fb_h)

    def notes_title(self) -> str:
        ctl = self.ctl
        if ctl.mode != "tour":
            return ctl.t("notes.not_tour")
        ch, chapters, page, pages = ctl.tour.position()
        return ctl.t("tour.where", chapter=ch, chapters=chapters, page=page, pages=pages)

    def read_frame(self):
        return self.display.read_frame()

    def run(self, frames: int | None = None, script: list | None = None, screenshot: Path | None = None) -> None:
        """The loop. With `frames`: exactly that many frames at FIXED_DT, the script's entries delivered one per
        frame from frame 1 (a wait lets its frames pass); whatever is still queued at the end is dropped."""
        pg, ctl = self.pg, self.ctl
        clock = pg.time.Clock()
        queue, wait = list(script or []), 0
        last = time.perf_counter()
        if frames is None:
            pg.key.start_text_input()
        while not ctl.quit:
            if wait > 0:
                wait -= 1
            elif queue and self.frame >= 1:      # frame 0 lays the panels out first
                entry = queue.pop(0)
                if isinstance(entry, int):
                    wait = entry - 1 if entry > 0 else 0     # this frame counts as the first of the wait
                else:
                    for ev in keys.key_event(entry):
                        pg.event.post(ev)
            events = pg.event.get()
            for ev in events:
                self.handle_event(ev)
            self.display.tick()
            for _ in range(self._take("fullscreen")):
                self.toggle_fullscreen()
            if frames is None and self._idle(bool(events)):
                clock.tick(30)      # nothing moves and nobody touched anything: keep the last picture
                last = time.perf_counter()
                continue
            now = time.perf_counter()
            dt = FIXED_DT if (ctl.scripted or frames is not None) else min(0.1, now - last)
            last = now
            self.draw_frame(dt)
            self.frame += 1
            final = frames is not None and self.frame >= frames
            if self._take("screenshot"):
                self.ctl.export(lambda: [exports.save_png(self.read_frame(),
                                                          ctl.out_dir() / exports.stamp("screenshot", "png"))])
            if final and screenshot is not None:
                exports.save_png(self.read_frame(), Path(screenshot))
            pg.display.flip()
            if final:
                break
            if frames is None:
                clock.tick(0 if self.display.vsync else 60)   # vsync paces the interactive loop; else cap at 60/s
        self._finish_exports()

    def _finish_exports(self) -> None:
        """A run ends with its GIF export finished, not abandoned; but not with the window held open past its
        frames: it is hidden and the replay's remaining frames render offscreen (its own framebuffer, the same
        GL context), with progress on stderr; Ctrl-C abandons it (nothing half-written is left)."""
        job = self.ctl.gif_job
        if job is None:
            return
        if job.fbo is not None:          # without the table the replay reads the window's picture: keep it
            try:
                self.pg.Window.from_display_module().hide()
            except (AttributeError, self.pg.error):
                pass
        progress = Progress("finishing the GIF export", job.total, "frames")
        try:
            self.ctl.pump_exports(finish=True, progress=lambda: progress(job.count))
        except KeyboardInterrupt:
            job.abandon()
            self.ctl.gif_job = None
            raise
        progress.done()

    def _idle(self, had_events: bool) -> bool:
        """Render on demand: after two quiet frames (both buffers hold the picture) stop drawing until an event,
        a playing table, a camera move, an export or a finished background computation needs a new frame."""
        ctl = self.ctl
        restaged = ctl.driver.sync()
        quiet = not (had_events or ctl.driver.moving or ctl.gif_job is not None or restaged or ctl.requests)
        self._quiet_frames = self._quiet_frames + 1 if quiet else 0
        return self._quiet_frames > 2

    def state(self) -> dict:
        """What the run ended on (spectable run --json): the controller's state and the window's own."""
        try:
            pos = list(self.pg.display.get_window_position())
        except self.pg.error:
            pos = None
        notes = None if self.notes is None or self.notes.closed else \
            {"title": self.notes.shown[0], "note": self.notes.shown[1]} if self.notes.shown else {}
        return {"frames": self.frame, **self.ctl.state(self.screen()), "framebuffer": [self.fb_w, self.fb_h],
                "window_position": pos, "notes_window": notes, **self.legibility}

    def close(self) -> None:
        self.ctl.close()
        try:
            if self.notes is not None:
                self.notes.close()
            self.renderer.textures.pop(STAGE_TEXTURE_ID, None)
            self.ctl.driver.release()
            self.renderer.release()
            self.imgui.destroy_context()
        finally:
            self.pg.display.quit()
            self.pg.quit()
