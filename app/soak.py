"""The soak's machinery: the real window, in this process, through every mode and export for N frames, counting
what it holds as it goes (resident memory, GL objects alive by kind and where each was made, open files, ImGui
textures, matplotlib figures, frame time). benchmarks/soak.py prints it over a long run; tests/test_app_soak.py
runs three short cycles and bounds the counts. Nothing of the program imports it."""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import ctypes
import gc
from pathlib import Path

import numpy as np

from app.settings import AppSettings
from app.lesson.tour import CHAPTERS


# Context methods that make a GL object, and what the object is counted as.
CREATE_CALLS = ("buffer", "texture", "texture_array", "texture3d", "texture_cube", "depth_texture", "renderbuffer",
                "depth_renderbuffer", "framebuffer", "simple_framebuffer", "empty_framebuffer", "vertex_array",
                "simple_vertex_array", "program", "compute_shader", "sampler", "query", "scope")
KINDS = {"Buffer": "buffers", "Texture": "textures", "TextureArray": "textures", "Texture3D": "textures",
         "TextureCube": "textures", "Renderbuffer": "renderbuffers", "Framebuffer": "framebuffers",
         "VertexArray": "vertex_arrays", "Program": "programs", "ComputeShader": "programs", "Sampler": "samplers",
         "Query": "queries", "Scope": "scopes"}       # (a Query has nothing to release: it is counted and stays)


class GLCensus:
    """GL objects alive: every object a moderngl Context's create calls return is counted once, by its class, and
    uncounted at its first release(). moderngl frees nothing on garbage collection (its default gc_mode), so an
    object dropped without release() stays alive here as it does in the driver. Use as a context manager: the
    moderngl classes are patched only while it is installed."""

    def __init__(self):
        self.created: dict[str, int] = {}
        self.released: dict[str, int] = {}
        self.texture_writes = 0          # Texture.write calls and their bytes: uploads, the churn that makes no object
        self.texture_bytes = 0
        self.frame = lambda: 0           # set by the soak: the window's frame, recorded with each object made
        self.log: list[tuple[int, str, str]] = []    # (frame, kind, where in the program it was made)
        self._undo: list = []

    def made(self) -> int:
        """GL objects created so far (alive or not): its growth is per-frame recreation."""
        return sum(self.created.values())

    def alive(self) -> dict[str, int]:
        return {k: self.created[k] - self.released.get(k, 0) for k in sorted(self.created)
                if self.created[k] - self.released.get(k, 0)}

    def total(self) -> int:
        return sum(self.alive().values())

    def made_since(self, frame: int) -> dict[str, int]:
        """Objects made after `frame`, by kind and the program's line that made them: where churn comes from."""
        out: dict[str, int] = {}
        for f, kind, where in self.log:
            if f > frame:
                out[f"{kind} {where}"] = out.get(f"{kind} {where}", 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def __enter__(self) -> "GLCensus":
        import moderngl  # lazy: moderngl only when a GL context is made
        census = self

        def counted(method):
            def create(ctx, *args, **kwargs):
                obj = method(ctx, *args, **kwargs)
                kind = KINDS.get(type(obj).__name__)
                # simple_framebuffer and friends return objects their inner calls already counted.
                if kind is not None and not getattr(obj, "_soak_counted", False):
                    obj._soak_counted = True
                    census.created[kind] = census.created.get(kind, 0) + 1
                    census.log.append((census.frame(), kind, _caller()))
                return obj
            return create

        def counted_release(method):
            def release(obj):
                if getattr(obj, "_soak_counted", False) and not isinstance(obj.mglo, moderngl.InvalidObject):
                    kind = KINDS[type(obj).__name__]
                    census.released[kind] = census.released.get(kind, 0) + 1
                return method(obj)
            return release

        def counted_write(method):
            def write(obj, data, *args, **kwargs):
                census.texture_writes += 1
                census.texture_bytes += int(getattr(data, "nbytes", None) or len(data))
                return method(obj, data, *args, **kwargs)
            return write

        self._patch(moderngl.Texture, "write", counted_write(moderngl.Texture.write))
        for name in CREATE_CALLS:
            if hasattr(moderngl.Context, name):
                self._patch(moderngl.Context, name, counted(getattr(moderngl.Context, name)))
        for cls_name in KINDS:
            cls = getattr(moderngl, cls_name, None)
            if cls is not None and "release" in cls.__dict__:
                self._patch(cls, "release", counted_release(cls.release))
        return self

    def _patch(self, owner, name, value) -> None:
        self._undo.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, value)

    def __exit__(self, *exc) -> None:
        for owner, name, value in reversed(self._undo):
            setattr(owner, name, value)
        self._undo.clear()


ROOT = Path(__file__).resolve().parents[1]


def _caller() -> str:
    """The innermost frame in the program's own code (not this file, not a library): file:line."""
    f = sys._getframe(2)
    while f is not None:
        path = Path(f.f_code.co_filename)
        if path != Path(__file__).resolve() and ROOT in path.parents and ".venv" not in path.parts:
            return f"{path.relative_to(ROOT)}:{f.f_lineno}"
        f = f.f_back
    return "?"


# ---- what the process holds -------------------------------------------------------------------------
def rss_mb() -> float:
    """Resident memory now (VmRSS) after a garbage collection and, with glibc, malloc_trim: what the process
    holds, not what the allocator kept from a burst (a GIF's frames are ~80 MB for a moment). Where /proc is
    missing, the peak (ru_maxrss) instead."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return peak_rss_mb()


def peak_rss_mb() -> float:
    """The most resident memory the process has had (ru_maxrss, in kB on Linux)."""
    import resource  # lazy: resource is Unix-only
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd")) - 1      # less the one listdir itself holds open
    except OSError:
        return -1


def open_figures() -> int:
    plt = sys.modules.get("matplotlib.pyplot")
    return len(plt.get_fignums()) if plt is not None else 0


# ---- the schedule -----------------------------------------------------------------------------------
def cycle_plan(ctl, length: int, quick: bool = False) -> dict[int, list]:
    """One cycle's events by frame offset: ("key", name) a key press through the window's event queue,
    ("do", action), ("update", fields) through Controller.update, ("chapter", i), ("restart", "quiz").
    Everything toggled or changed in a cycle is put back by its end, so every cycle ends in the same state and
    the counts at the ends of two cycles compare like with like. quick (the test's): four tour chapters (with
    and without a plot, the first and the last) and four lab changes (a run field, a table field, the word
    table, back) instead of all."""
    from app import keys  # lazy: pulls in pygame
    modes = list(ctl.modes)
    per_mode = max(12, length // len(modes))
    plan: dict[int, list] = {}

    def at(offset: int, *events) -> None:
        plan.setdefault(min(offset, length - 1), []).extend(events)

    def press(offset: int, action: str, mode: str | None = None) -> None:
        """The key for `action` (a mode's own key where the mode has one, keys.MODE_KEYS), else the action."""
        own = [k for k, a in getattr(keys, "MODE_KEYS", {}).get(mode, {}).items() if a == action]
        names = own or keys.ACTIONS.get(action)
        at(offset, ("key", names[0]) if names else ("do", action))

    s = ctl.settings
    lab0 = {k: getattr(s, k) for k in ("gamma", "c", "temperature", "top_k", "top_p", "seed", "lanes", "context",
                                       "decoder", "tokens")}
    lab_changes = [dict(gamma=2), dict(c=0.35), dict(temperature=0.6), dict(top_k=8), dict(top_p=0.8),
                   dict(seed=lab0["seed"] + 1), dict(lanes=16), dict(context=32768), dict(gamma=7),
                   dict(decoder="target"), dict(tokens="word"), lab0]
    chapters = list(range(len(CHAPTERS)))
    if quick:
        lab_changes = [dict(gamma=2), dict(lanes=16), dict(tokens="word"), lab0]
        chapters = sorted({0, len(CHAPTERS) // 3, 2 * len(CHAPTERS) // 3, len(CHAPTERS) - 1})
    exports = {"tour": "screenshot", "lab": "export_plots", "step": "export_log", "exploded": "export_gif",
               "quiz": "export_answers"}
    toggles = {"tour": ["language", "help"], "lab": ["palette", "scale_up"], "step": ["cutaway", "pause"],
               "tubes": ["reduced_motion", "scale_down"], "hardware": ["blank"]}
    undo = {"scale_up": "scale_down", "scale_down": "scale_up"}
    start = 0
    for mode in modes:
        end = start + per_mode
        press(start, f"mode_{mode}")
        if mode in exports:
            press(start + 1, exports[mode], mode)
        on = [t for t in toggles.get(mode, []) if t != "blank"]
        for j, action in enumerate(on):               # on near the start, off near the end of the segment
            press(start + 2 + j, action)
            press(end - 4 - j, undo.get(action, action))
        if "blank" in toggles.get(mode, []):
            press(end - 3, "blank")                   # blank and back with no next/previous between (either
            press(end - 2, "blank")                   # would bring the picture back by itself)
        inner = list(range(start + 3 + len(on), end - 4 - len(on)))   # the mode's own events go here
        if not inner:
            start = end
            continue
        if mode == "tour":
            step = max(1, len(inner) // len(chapters))
            for i, chapter in enumerate(chapters):
                at(inner[0] + i * step, ("chapter", chapter))
                press(inner[0] + i * step + step // 2, "next")      # the page's action or the next page
        elif mode == "lab":
            step = max(1, len(inner) // len(lab_changes))
            for i, change in enumerate(lab_changes):
                at(inner[0] + i * step, ("update", dict(change)))
        elif mode == "tubes":
            from app.modes.tubes import STOPS  # lazy: pulls in imgui_bundle
            step = max(1, len(inner) // len(STOPS))
            for i in range(len(STOPS)):                  # once round every rule, back to where it started
                press(inner[0] + i * step, "next")
            if "tubes_faster" in getattr(keys, "MODE_KEYS", {}).get("tubes", {}).values():
                press(inner[0] + 1, "tubes_faster", mode)   # the rack's speed up and back down
                press(inner[-1], "tubes_slower", mode)
        elif mode == "quiz":
            # A new class each round (the quiz starts over), answers, moves on, reveals in class mode, "show me"
            # and back, then back to the first question.
            at(start + 2, ("restart", mode))
            seq = ["answer_a", "next", "class_mode", "answer_b", "next", "next", "class_mode", "show_me",
                   "quiz_back", "prev", "prev"]
            step = max(1, len(inner) // len(seq))
            for i, action in enumerate(seq):
                press(inner[0] + i * step, action, mode)
        else:
            presses = inner[::3]
            half = len(presses) // 2
            for f in presses[:half]:
                press(f, "next")
            for f in presses[half:2 * half]:
                press(f, "prev")
        start = end
    return plan


def run_soak(frames: int = 3600, cycle: int = 600, size=(1280, 720), every: int | None = None, report=None,
             gif_seconds: float | None = None, export_dir: Path | None = None, quick: bool = False,
             plot_names: tuple[str, ...] | None = None) -> dict:
    """Run the window `frames` frames (a whole number of cycles is best); returns the samples taken before the
    first frame, at the end of every `every` frames (default: every cycle) and after close. report(sample) is
    called with each. quick: cycle_plan's shorter tour and lab. plot_names: the plots the E key exports (default
    all of app.figures.PLOT_NAMES; the test exports two, the same code for a quarter of the time)."""
    os.environ.setdefault("SDL_VIDEODRIVER", "offscreen")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    # lazy: pulls in PIL, imgui_bundle, pygame
    from app import keys
    from app.controller import Controller
    from app.window import App  # lazy: pulls in PIL, imgui_bundle, moderngl, pygame

    from app import exports, plots  # lazy: pulls in PIL, matplotlib
    every = every or cycle
    samples: list[dict] = []
    frame_ms: list[float] = []
    cpu_ms: list[float] = []       # the process's CPU time per frame (all threads, llvmpipe's included): on a
                                   # shared machine wall time moves with the load, CPU time much less
    renders = {"plots": 0}
    real_rgba = plots.figure_rgba

    def counted_rgba(fig):
        renders["plots"] += 1          # a matplotlib figure drawn into a texture (a panel's plot)
        return real_rgba(fig)
    plots.figure_rgba = counted_rgba
    real_export_plots = exports.export_plots
    if plot_names:
        exports.export_plots = lambda ctl, names=None: real_export_plots(ctl, names or plot_names)

    with GLCensus() as census, tempfile.TemporaryDirectory(prefix="spectable-soak-") as tmp:
        out = Path(export_dir) if export_dir else Path(tmp) / "exports"
        gif = {"seconds": gif_seconds} if gif_seconds else {}
        ctl = Controller(AppSettings(window_w=size[0], window_h=size[1]), persist=False, scripted=True,
                         export_dir=out, gif_options=gif)
        plan = cycle_plan(ctl, cycle, quick)
        state = {"last": None, "since": 0}

        def sample(frame: int, closed: bool = False) -> dict:
            recent = frame_ms[-state["since"]:] if state["since"] else []
            recent_cpu = cpu_ms[-state["since"]:] if state["since"] else []
            s = {"frame": frame, "rss_mb": round(rss_mb(), 1), "gl_alive": census.total(), "gl": census.alive(),
                 "gl_made": census.made(), "texture_writes": census.texture_writes,
                 "texture_mb": round(census.texture_bytes / 2 ** 20, 1), "plot_renders": renders["plots"],
                 "rss_peak_mb": round(peak_rss_mb(), 1), "fds": open_fds(), "figures": open_figures(),
                 "imgui_textures": None if closed else len(app.renderer.textures),
                 "frame_ms_median": round(statistics.median(recent), 2) if recent else None,
                 "cpu_ms_median": round(statistics.median(recent_cpu), 2) if recent_cpu else None,
                 "exports": len(ctl.exports_done), "mode": ctl.mode, "closed": closed}
            state["since"] = 0
            samples.append(s)
            if report:
                report(s)
            return s

        def on_frame(app_) -> None:
            now, cpu = time.perf_counter(), time.process_time()
            if state["last"] is not None:
                frame_ms.append((now - state["last"][0]) * 1000.0)
                cpu_ms.append((cpu - state["last"][1]) * 1000.0)
                state["since"] += 1
            state["last"] = (now, cpu)
            f = app_.frame
            if f and f % every == 0:
                sample(f)
            for kind, arg in plan.get(f % cycle, []):
                if kind == "key":
                    for ev in keys.key_event(arg):
                        app_.pg.event.post(ev)
                elif kind == "do":
                    ctl.do(arg)
                elif kind == "update":
                    ctl.update(**arg)
                elif kind == "restart" and ctl.mode == arg:
                    ctl.panel.restart()
                elif kind == "chapter" and ctl.mode == "tour":
                    ctl.tour.goto(arg)
                    ctl.panel.apply_chapter()

        class SoakApp(App):
            def draw_frame(self, dt: float) -> None:
                on_frame(self)
                super().draw_frame(dt)

        made_in = {}                  # the window, once there is one: census.frame reads its frame count
        census.frame = lambda: made_in["app"].frame if made_in else 0
        opened = False
        try:
            app = made_in["app"] = SoakApp(ctl, size=size)
            opened = True
        finally:
            if not opened:        # the window did not open: put the real plot functions back, then fail
                plots.figure_rgba, exports.export_plots = real_rgba, real_export_plots
        try:
            sample(0)                 # the window open, nothing drawn yet
            app.run(frames=frames)
            sample(app.frame)
        finally:
            app.close()
            plots.figure_rgba, exports.export_plots = real_rgba, real_export_plots
        sample(app.frame, closed=True)
        written = sorted(p.name for p in out.iterdir()) if out.exists() else []
    return {"samples": samples, "frame_ms": frame_ms, "cpu_ms": cpu_ms, "exports": list(ctl.exports_done),
            "files": written,
            "messages": [m for _, m in ctl.messages], "cycle": cycle, "frames": frames,
            "stage_error": ctl.driver.stage_error, "made_after_first_cycle": census.made_since(cycle)}


def growth_per_1000(samples: list[dict], cycle: int) -> dict:
    """Per 1,000 frames, from the end of the first cycle to the last sample before close."""
    live = [s for s in samples if not s["closed"]]
    base = next((s for s in live if s["frame"] >= cycle), live[0])
    last = live[-1]
    span = last["frame"] - base["frame"]
    if span <= 0:
        return {}
    k = 1000.0 / span
    return {key: round((last[key] - base[key]) * k, 2)
            for key in ("rss_mb", "gl_alive", "fds", "imgui_textures", "figures",
                        "gl_made", "texture_writes", "texture_mb", "plot_renders")}


def frame_time_growth(frame_ms: list[float], cycle: int) -> float | None:
    """Median frame time of the last cycle minus that of the second, per 1,000 frames."""
    n = len(frame_ms) // cycle
    if n < 3:
        return None
    second = statistics.median(frame_ms[cycle:2 * cycle])
    last = statistics.median(frame_ms[(n - 1) * cycle:n * cycle])
    return round((last - second) * 1000.0 / ((n - 2) * cycle), 3)


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100) of values, linear between the nearest ranks; None for none."""
    if not values:
        return None
    return round(float(np.percentile(values, q)), 2)
