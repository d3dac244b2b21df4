"""The table driver: between the controller and the table (scenes.stage.Stage).

It hands the run to the stage when the run or a field the table shows changed (app.settings.STAGE_FIELDS),
plays and holds the table's timeline for the modes (play / hold), moves everything on from one clock
(advance(dt): the timeline, the camera's flights, the exploded view), and renders the stage into its own
texture for the window to show behind the panels. Without a stage (no GL: tests of the controller, a scene
that failed to start) every call is a no-op and the panels go on alone.
"""
from __future__ import annotations

from app.lesson.facts import UNAVAILABLE
from app.settings import RUN_FIELDS, STAGE_FIELDS

# What the table shows besides the run itself: a change of one of these re-hands the run (the run's own
# fields are covered by the session's version).
TABLE_ONLY_FIELDS = tuple(k for k in STAGE_FIELDS if k not in RUN_FIELDS)
_TABLE_ONLY = frozenset(TABLE_ONLY_FIELDS)


class TableDriver:
    def __init__(self, ctl):
        self.ctl = ctl
        self.stage = None
        self.stage_error: str | None = None
        self.play_until: float | None = None  # the tour plays one action then holds still
        self.after_flight = False             # a played span waits for the camera to arrive at its frame
        self.loop = False                     # free play: the run repeats
        self.stage_stats = None
        self.shown_version = None             # the session's run version the table shows
        self.read_screen = None               # () -> the window's picture (h, w, 3); set by the window
        self._restage = True                  # a field the table shows (not the run's) changed: hand it again
        self._stage_key = None
        self._fb = None                       # (size, framebuffer, colour texture, depth) the table renders into
        self.stage_uv = (1.0, 1.0)            # the part of that texture the last render drew (lower left)
        ctl.listeners.append(self._on_change)

    def attach(self, stage) -> None:
        """Show the table (the window builds it on its GL context)."""
        s = self.ctl.settings
        self.stage = stage
        self._restage = True                  # a new stage has no run yet
        stage.reduced_motion = s.reduced_motion
        stage.language = s.language
        stage.set_palette(s.palette)

    def fail(self, message: str) -> None:
        """A broken scene must not take the lesson down: drop the table, keep the message, go on with panels."""
        self.stage_error = message
        self.stage = None

    def _on_change(self, changed: frozenset) -> None:
        if changed & _TABLE_ONLY:
            self._restage = True
        st = self.stage
        if st is None:
            return
        s = self.ctl.settings
        if "language" in changed:
            st.language = s.language
        if "palette" in changed:
            st.set_palette(s.palette)
        if "reduced_motion" in changed:
            st.reduced_motion = s.reduced_motion

    # ---- the table's clock ---------------------------------------------------------------------
    @property
    def timeline(self):
        return self.stage.timeline if self.stage is not None else None

    def play(self, start: float, end: float | None = None, after_flight: bool = False) -> None:
        """Play the table from `start` to `end` (then hold still), or freely to the end when end is None;
        `after_flight`: not before the camera has arrived at the frame it is flying to (a tour beat)."""
        tl = self.timeline
        if tl is None:
            return
        tl.seek(start)
        tl.paused = False
        self.play_until = end
        self.after_flight = after_flight

    def hold(self, t: float) -> None:
        """Show the table still at time t (step-through stops, the tour's text pages)."""
        tl = self.timeline
        if tl is None:
            return
        tl.seek(t)
        tl.paused = True
        self.play_until = None
        self.after_flight = False

    def advance(self, dt: float) -> None:
        """The one clock: everything on the table moves dt seconds on (the timeline only when not paused),
        and a played span stops at its end. Scripted runs feed a fixed dt, so their frames are reproducible."""
        st = self.stage
        if st is None:
            return
        if self.after_flight and not st.camera.moving:
            self.after_flight = False
        playing = not self.ctl.paused
        st.advance(dt, play=playing and not self.after_flight)
        if not playing:
            return
        tl = st.timeline
        if self.play_until is not None and tl.t >= self.play_until:
            tl.seek(self.play_until)
            tl.paused = True
            self.play_until = None
        elif self.loop and not tl.paused and tl.t >= tl.duration:
            tl.seek(0.0)     # free play (lab, hardware): the run repeats so there is always motion to watch

    @property
    def moving(self) -> bool:
        """Something on the table moves next frame (render on demand draws while this holds)."""
        st = self.stage
        return st is not None and not self.ctl.paused and (not st.timeline.paused or st.animating)

    def set_view(self, name: str) -> None:
        if self.stage is not None:
            try:
                self.stage.set_view(name)
            except (ValueError, KeyError) as exc:
                self.ctl.notify(f"view {name}: {exc}")

    def set_focus(self, parts, view: str = "table") -> None:
        """Frame these parts (a tour beat): the camera fits them in the frame the HUD leaves free."""
        if self.stage is not None:
            self.stage.set_focus(parts, view)

    # ---- the run on the table ------------------------------------------------------------------
    def sync(self) -> bool:
        """Hand the current run to the table when it changed (settings -> sampler -> traces -> stage); the mode
        then puts the clock where it wants it. Returns True when the table got a new run."""
        ctl = self.ctl
        run = ctl.session.ensure()
        if self.stage is None or run is None:
            return False
        s = ctl.settings
        try:
            # Scripted runs wait for the tubes (frames must not depend on thread timing); a teacher's window
            # shows the table at once and the tubes fill in when their experiment is done.
            tubes = ctl.tubes()
        except UNAVAILABLE:          # a tube model that cannot be computed leaves the tubes empty, not the table
            tubes = None
        # The run's version (the session's), a change of a field the table shows (pushed by update()), or the
        # tubes' experiment arriving from its thread.
        key = (ctl.session.version, tubes is not None)
        if key == self._stage_key and not self._restage:
            return False
        self._stage_key, self._restage = key, False
        try:
            # batch_lanes is the number of sequences; the table lights batch × (γ + 1) lanes for a speculative
            # pass and batch × 1 for the target alone (its traces say lanes_lit = 1).
            self.stage.set_run(ctl.session.pair(), run.traces, tubes=tubes, device=s.device, model=s.model,
                               batch_lanes=s.lanes, context=s.context, cost_ratio=s.c)
            self.shown_version = ctl.session.version
            ctl.panel.restage()
        except Exception as exc:  # noqa: BLE001 - the outermost edge of the table: the lesson goes on, on panels
            self.fail(f"scene could not take the run: {type(exc).__name__}: {exc}")
        return True

    def shows_current_run(self) -> bool:
        """The table has been handed the session's current run (a mode entered before sync sees the old one)."""
        return self.stage is not None and self.shown_version == self.ctl.session.version

    def lanes_lit(self) -> int | None:
        """Lanes the table lights in the current (or first) target pass: what its HUD says."""
        tl = self.timeline
        if tl is None or not tl.steps:
            return None
        return int(tl.steps[max(0, tl.current_step)].lanes)

    # ---- drawing -------------------------------------------------------------------------------
    def render(self, width: int, height: int, text_height: float | None = None):
        """Render the table at this size into its own texture, its text sized for a picture `text_height` tall
        (the window's); returns the texture (the part drawn: stage_uv), or None without a table. The texture only
        grows (scenes.renderer.grown): a mode whose panels leave the table another size, or a window being
        resized, draws into the same one instead of making one per size."""
        if self.stage is None:
            return None
        from scenes.renderer import grown  # lazy: window/scenes side, not loaded with this module
        self.stage.text_height = text_height
        w, h = max(16, int(width)), max(16, int(height))
        size = grown(self._fb[0] if self._fb else None, (w, h))
        if self._fb is None or self._fb[0] != size:
            self._release_fb()
            ctx = self.stage.ctx
            color = ctx.texture(size, 4)
            depth = ctx.depth_renderbuffer(size)
            self._fb = (size, ctx.framebuffer(color_attachments=[color], depth_attachment=depth), color, depth)
        try:
            self.stage_stats = self.stage.render(self._fb[1], w, h)
        except Exception as exc:  # noqa: BLE001 - keep the lesson going on panels alone
            self.fail(f"scene failed to draw: {type(exc).__name__}: {exc}")
            return None
        self.stage_uv = (w / size[0], h / size[1])
        return self._fb[2]

    def _release_fb(self) -> None:
        if self._fb is not None:
            for obj in self._fb[1:]:
                obj.release()
            self._fb = None

    def release(self) -> None:
        self._release_fb()
        if self.stage is not None:
            self.stage.release()
            self.stage = None
