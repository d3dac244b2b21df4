"""What every mode has: a view to set on entry, where the table's clock stands, next/previous, and a panel.

A mode gets the controller (settings, session, tour, update()) and the table driver (play / hold / the
stage); it draws with the window's per-frame Screen (app.ui.Screen), never the window itself.
"""
from __future__ import annotations

from app import ui


class Panel:
    view = "table"
    free_play = True       # the table's run plays and repeats while this mode is shown
    panel_frac = 0.40      # share of the width the mode's panel takes

    def __init__(self, ctl, driver):
        self.ctl = ctl
        self.driver = driver

    def enter(self) -> None:
        self.ctl.set_view(self.view)
        tl = self.driver.timeline
        if tl is not None:
            tl.speed = 1.0             # a mode's own clock speed (the tubes' fast-forward) never outlives it
        self.restage()

    def restage(self) -> None:
        """Put the table's clock where this mode wants it (on entry, and whenever the run is replaced)."""
        self.driver.loop = self.free_play
        if self.free_play:
            self.driver.play(0.0)

    def stage_rect(self, scr):
        """Where the table is drawn: left of the panel, between the mode bar and the status line."""
        x, y, w, h = ui.panel_rect(scr)
        return 0.0, y, x, h

    def draw(self, scr) -> None:
        raise NotImplementedError

    def facts_shown(self) -> dict[str, str]:
        """Every number this mode's panel shows now, by fact name, as shown (spectable run --json `facts`)."""
        return {}

    def on_key(self, action: str) -> None:
        """Default next/previous: seek the table one target pass forward or back."""
        tl = self.driver.timeline
        run = self.ctl.session.run
        if tl is None or run is None:
            return
        k = tl.current_step + (1 if action == "next" else -1)
        k = max(0, min(len(run.traces) - 1, k))
        self.driver.play(tl.step_start(k))
