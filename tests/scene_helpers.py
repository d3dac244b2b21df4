"""Shared fixtures for the scene tests: a headless GL context, a seeded real run, render-and-read helpers."""
from __future__ import annotations

import functools

import numpy as np


_CONTEXTS: list = []       # the headless contexts made so far (the last is the one in use; none is released)
_PROBE_VS = "#version 330\nvoid main() { gl_Position = vec4(0.0); }"
_PROBE_FS = "#version 330\nout vec4 c;\nvoid main() { c = vec4(1.0); }"


def gl_context():
    """The headless GL context the scene tests share, made current. A test that opens and closes the app's
    window leaves it unusable: SDL's offscreen driver shares its EGL display, and quitting the display takes the
    display down with it (a later program then fails: "cannot create program"). Where it no longer compiles a
    program, a fresh context is made (which brings the display back) and used from then on."""
    from scenes.offscreen import headless_context
    if _CONTEXTS:
        ctx = _CONTEXTS[-1]
        try:
            ctx.__enter__()         # current again (another context may have been made current since)
            ctx.program(vertex_shader=_PROBE_VS, fragment_shader=_PROBE_FS).release()
            return ctx
        except Exception:  # noqa: BLE001 - moderngl raises its own Error for a context gone with its display
            pass
    _CONTEXTS.append(headless_context())
    return _CONTEXTS[-1]


@functools.lru_cache(maxsize=1)
def pair():
    from models.ngram import NGramPair
    return NGramPair.load()


@functools.lru_cache(maxsize=8)
def traces(seed: int = 0, gamma: int = 4, steps: int = 6, prefix: str = "孔乙己"):
    from models.sampler import SamplerSettings, SpeculativeSampler
    p = pair()
    s = SpeculativeSampler(p, SamplerSettings(gamma=gamma, seed=seed))
    s.reset(p.encode(prefix))
    return tuple(s.step() for _ in range(steps))


@functools.lru_cache(maxsize=2)
def tubes(rounds: int = 30, seed: int = 1):
    from models.tubes import run_tubes
    return run_tubes(pair(), rounds=rounds, seed=seed)


def make_stage(seed=0, gamma=4, steps=6, with_tubes=True, batch_lanes=1, **kw):
    from scenes.stage import Stage
    st = Stage(gl_context(), **kw)
    st.set_run(pair(), list(traces(seed, gamma, steps)), tubes=tubes() if with_tubes else None,
               batch_lanes=batch_lanes)
    st.show_hud = False
    st.camera_transition_s = 0.0      # views switch at once: frames depend on t only
    return st


class Shooter:
    """Renders a stage into a reusable offscreen framebuffer and returns (H, W, 3) uint8 arrays."""

    def __init__(self, width=640, height=360):
        from scenes.offscreen import Offscreen
        self.w, self.h = width, height
        self.off = Offscreen(gl_context(), width, height)
        self.last_stats = None

    def shoot(self, stage) -> np.ndarray:
        self.last_stats = stage.render(self.off.fbo, self.w, self.h)
        return self.off.read()

    def release(self):
        self.off.release()


def patch(img: np.ndarray, x: float, y: float, r: int = 3) -> np.ndarray:
    h, w = img.shape[:2]
    xi, yi = int(round(x)), int(round(y))
    return img[max(yi - r, 0):min(yi + r + 1, h), max(xi - r, 0):min(xi + r + 1, w)].astype(np.float64)


def copper(px) -> bool:
    """Copper or brass, not the red line: warm with a good share of green."""
    px = np.asarray(px, dtype=np.float64)
    return warm(px) and px[1] > 0.5 * px[0] and px[2] < 0.45 * px[0]


def red(px) -> bool:
    px = np.asarray(px, dtype=np.float64)
    return bool(px[0] > 120 and px[1] < 0.48 * px[0] and px[2] < 0.5 * px[0])


def warm(px) -> bool:
    """Copper / amber / red: red well above blue."""
    px = np.asarray(px, dtype=np.float64)
    return bool(px[0] > 110 and px[0] - px[2] > 60)
