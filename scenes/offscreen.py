"""Headless rendering: an EGL context with no window, an offscreen framebuffer, frames as arrays and PNGs.

The CLI's `render`, the tests and the benchmark share this; the window uses its own context and the
same Stage, so a frame here is the frame the class sees.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from corpus.atomic import write_atomic
from corpus.errors import InputError


def headless_context():
    """A moderngl standalone context on EGL (Mesa llvmpipe without a GPU); InputError if there is no GL."""
    try:
        import moderngl  # lazy: moderngl only when a GL context is made
        return moderngl.create_standalone_context(require=330, backend="egl")
    except Exception as exc:  # noqa: BLE001 - any GL/EGL failure means the same thing to the user
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"no OpenGL 3.3 available for headless rendering (EGL): {msg}") from None


class Offscreen:
    """A colour + depth framebuffer of a fixed size."""

    def __init__(self, ctx, width: int, height: int):
        self.ctx = ctx
        self.width, self.height = int(width), int(height)
        self.color = ctx.renderbuffer((self.width, self.height), 4)
        self.depth = ctx.depth_renderbuffer((self.width, self.height))
        self.fbo = ctx.framebuffer([self.color], self.depth)

    def read(self) -> np.ndarray:
        """The frame as (H, W, 3) uint8, top row first."""
        data = self.fbo.read(components=3, alignment=1)
        return np.frombuffer(data, dtype=np.uint8).reshape(self.height, self.width, 3)[::-1].copy()

    def release(self) -> None:
        self.fbo.release()
        self.color.release()
        self.depth.release()


def save_png(image: np.ndarray, path: str | Path) -> Path:
    """Write atomically: a temporary file in the same folder, then os.replace."""
    from PIL import Image  # lazy: PIL only on this path

    path = Path(path)
    if path.parent and not path.parent.exists():
        raise InputError(f"folder {path.parent} does not exist")
    write_atomic(path, lambda fh: Image.fromarray(image).save(fh, format="PNG"), make_parents=False)
    return path


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise InputError(f"size must look like 1280x720, got {text!r}") from None
    if not (16 <= w <= 7680 and 16 <= h <= 4320):
        raise InputError(f"size {w}x{h} out of range (16x16 to 7680x4320)")
    return w, h
