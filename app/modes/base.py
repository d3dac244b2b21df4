"""What every mode panel has: a view to set on entry, a draw, and next/previous."""
from __future__ import annotations


class Panel:
    view = "table"
    free_play = True       # the table's run plays and repeats while this mode is shown

    def __init__(self, app):
        self.app = app

    def enter(self) -> None:
        self.app.set_view(self.view)
        self.restage()

    def restage(self) -> None:
        """Put the table's clock where this mode wants it (on entry, and whenever the run is replaced)."""
        self.app.loop_timeline = self.free_play
        if self.free_play:
            self.app.play(0.0)

    def stage_rect(self):
        """Where the table is drawn: left of the panel, between the mode bar and the status line."""
        from app import ui
        x, y, w, h = ui.panel_rect(self.app)
        return 0.0, y, x, h

    def draw(self) -> None:
        raise NotImplementedError

    def on_key(self, action: str) -> None:
        """Default next/previous: seek the table one target pass forward or back."""
        st = self.app.stage
        run = self.app.session.run
        if st is None or run is None:
            return
        tl = st.timeline
        k = tl.current_step + (1 if action == "next" else -1)
        k = max(0, min(len(run.traces) - 1, k))
        self.app.play(tl.step_start(k))
