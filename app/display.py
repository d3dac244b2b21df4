"""The window's display: the pygame window with its moderngl GL 3.3 core context, its size, and fullscreen.

The shell (app/window.py) owns the loop, ImGui and the panels; this owns the window itself: opening it (one line,
InputError, when there is no display or no OpenGL 3.3), the framebuffer's size as resize events report it, F11
(set_mode on the existing window keeps the GL context) and the window manager's late resize back from fullscreen,
binding and reading the window's framebuffer.
"""
from __future__ import annotations

import os

import numpy as np

from corpus.errors import InputError
from app.paths import ASSETS


class Display:
    def __init__(self, settings, size, notify):
        self.settings = settings            # read: fullscreen at start (the controller writes it)
        self.notify = notify                # a failure of F11 is a status-line message, not an exit
        self._init_display(size)

    def _init_display(self, size) -> None:
        import pygame  # lazy: pygame only in the window
        self.pg = pygame
        drv = os.environ.get("SDL_VIDEODRIVER", "")
        if drv == "dummy":
            raise InputError("no OpenGL display: SDL_VIDEODRIVER=dummy has no GL (use a display, or SDL_VIDEODRIVER=offscreen)")
        if os.name != "nt" and not drv and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") \
                and os.uname().sysname != "Darwin":
            raise InputError("no display: DISPLAY is not set (for a headless run use SDL_VIDEODRIVER=offscreen)")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
        self.offscreen = drv == "offscreen"
        try:
            pygame.display.init()
            for attr, value in ((pygame.GL_CONTEXT_MAJOR_VERSION, 3), (pygame.GL_CONTEXT_MINOR_VERSION, 3),
                                (pygame.GL_CONTEXT_PROFILE_MASK, pygame.GL_CONTEXT_PROFILE_CORE),
                                (pygame.GL_CONTEXT_FORWARD_COMPATIBLE_FLAG, 1), (pygame.GL_DOUBLEBUFFER, 1)):
                pygame.display.gl_set_attribute(attr, value)
            pygame.display.set_caption("铸铁台 · spectable")
            try:
                pygame.display.set_icon(pygame.image.load(str(ASSETS / "icon.png")))
            except (pygame.error, OSError, FileNotFoundError):
                pass        # no icon is no reason not to teach
            desk = self.desktop_size(pygame)
            size = (min(size[0], desk[0]), min(size[1], desk[1]))     # a size saved on a larger screen
            self.windowed_size = tuple(size)
            self.windowed_pos = None
            self._restoring = 0
            self.vsync = not self.offscreen
            flags = pygame.OPENGL | pygame.DOUBLEBUF | pygame.RESIZABLE
            if self.settings.fullscreen and not self.offscreen:
                flags |= pygame.FULLSCREEN
                size = (0, 0)
            try:
                pygame.display.set_mode(size, flags, vsync=int(self.vsync))
            except pygame.error:
                # Some drivers (Xvfb, remote X, some VMs) cannot sync to the refresh: run unsynced, capped below.
                pygame.display.set_mode(size, flags, vsync=0)
                self.vsync = False
        except pygame.error as exc:
            raise InputError(f"cannot open an OpenGL 3.3 window: {exc}") from None
        import moderngl  # lazy: moderngl only when a GL context is made
        try:
            # init_context() builds a fresh context each time: moderngl keeps a process-wide default, and a stale
            # one from an earlier window (tests open many) would make create_context() probe GLX instead.
            moderngl.init_context()
            self.ctx = moderngl.get_context()
            if self.ctx.version_code < 330:
                v = self.ctx.version_code
                raise RuntimeError(f"OpenGL {v // 100}.{v % 100 // 10} found, 3.3 needed")
        except Exception as exc:  # noqa: BLE001 - moderngl raises plain Exception for a missing GL
            raise InputError(f"OpenGL 3.3 is not available: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        self._set_size(pygame.display.get_window_size())

    def desktop_size(self, pg) -> tuple[int, int]:
        """The display the window is on (the first one): no window is opened or saved larger than it. SDL's
        offscreen driver has no display (it reports a nominal 1024x768): any size goes there."""
        if os.environ.get("SDL_VIDEODRIVER", "") == "offscreen":
            return (8192, 8192)
        try:
            sizes = pg.display.get_desktop_sizes()
        except pg.error:
            sizes = []
        return tuple(sizes[0]) if sizes and sizes[0][0] > 0 and sizes[0][1] > 0 else (8192, 8192)

    def _set_size(self, size) -> None:
        """The framebuffer size, from the size we asked for or a resize event (right after set_mode some X
        servers still report the old size). pygame asks SDL for no high-DPI drawable, so it is the window's."""
        self.fb_w, self.fb_h = int(size[0]), int(size[1])

    def toggle_fullscreen(self) -> bool:
        """F11: True when the window changed. set_mode on the existing OpenGL window keeps the GL context
        (pygame 2) and, unlike toggle_fullscreen(), resizes the GL drawable on X11 too."""
        pg, full = self.pg, not self.settings.fullscreen
        if not self.offscreen:      # offscreen: nothing to fill; the state still round-trips
            base = pg.OPENGL | pg.DOUBLEBUF
            try:
                if full:
                    # Where the window was, to come back to: a window manager otherwise keeps the fullscreen
                    # size (and where it put it) for the restored window.
                    self.windowed_size = (self.fb_w, self.fb_h)
                    self.windowed_pos = pg.display.get_window_position()
                    pg.display.set_mode((0, 0), base | pg.FULLSCREEN, vsync=int(self.vsync))
                    self._set_size(pg.display.get_desktop_sizes()[0])
                else:
                    pg.display.set_mode(self.windowed_size, base | pg.RESIZABLE, vsync=int(self.vsync))
                    if self.windowed_pos is not None:
                        pg.display.set_window_position(self.windowed_pos)
                    self._set_size(self.windowed_size)
                    self._restoring = 30       # frames in which a late resize to the fullscreen size is undone
            except pg.error as exc:
                self.notify(f"fullscreen: {exc}")
                return False
        return True

    def _undo_late_resize(self) -> None:
        pg = self.pg
        try:
            pg.display.set_mode(self.windowed_size, pg.OPENGL | pg.DOUBLEBUF | pg.RESIZABLE, vsync=int(self.vsync))
            if self.windowed_pos is not None:
                pg.display.set_window_position(self.windowed_pos)
        except pg.error as exc:
            self.notify(f"fullscreen: {exc}")
        self._set_size(self.windowed_size)

    def resized(self, size) -> bool:
        """A resize event: False when it was the window manager's late resize back from fullscreen, undone here
        (the window goes back to its size before fullscreen instead of keeping, and saving, that)."""
        if self._restoring and not self.settings.fullscreen and tuple(size) != tuple(self.windowed_size) \
                and tuple(size) == self.desktop_size(self.pg):
            self._restoring = 0
            self._undo_late_resize()
            return False
        self._set_size(size)
        return True

    def tick(self) -> None:
        """One frame has passed: a late resize after this many is the user's own."""
        self._restoring = max(0, self._restoring - 1)

    def use_screen(self) -> None:
        """Bind the window's framebuffer at its current size. moderngl records the default framebuffer's size
        when the context is made; after a resize or F11 that record is stale, so the viewport is set here."""
        self.ctx.screen.use()
        self.ctx.viewport = (0, 0, self.fb_w, self.fb_h)

    def read_frame(self):
        """The framebuffer as an (h, w, 3) uint8 array, top row first."""
        data = self.ctx.screen.read(viewport=(0, 0, self.fb_w, self.fb_h), components=3)
        return np.frombuffer(data, dtype=np.uint8).reshape(self.fb_h, self.fb_w, 3)[::-1]
