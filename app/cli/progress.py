"""Progress of a long command on stderr (stdout stays for the result and --json).

Nothing is said for a run that ends within a couple of seconds. After that: on a terminal one line that is
rewritten in place, elsewhere (a log) a line every ten seconds; each says how far, how long is left and that
Ctrl-C stops it (the CLI turns Ctrl-C into one line and exit 130).
"""
from __future__ import annotations

import sys
import time

QUIET_FOR_S = 2.0        # a run shorter than this says nothing
LOG_EVERY_S = 10.0       # stderr that is not a terminal: one line this often


class Progress:
    def __init__(self, what: str, total: int, unit: str, stream=None, clock=time.monotonic):
        self.what, self.total, self.unit = what, max(int(total), 1), unit
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.t0 = clock()
        self.last_said = None
        self.said = False
        try:
            self.tty = bool(self.stream.isatty())
        except (AttributeError, ValueError, OSError):
            self.tty = False

    def __call__(self, done: int) -> None:
        now = self.clock()
        elapsed = now - self.t0
        if elapsed < QUIET_FOR_S:
            return
        if self.last_said is not None and now - self.last_said < (0.5 if self.tty else LOG_EVERY_S):
            return
        self.last_said = now
        share = min(done / self.total, 1.0)
        left = f", about {elapsed * (1 - share) / share:.0f} s left" if share > 0 else ""
        line = (f"spectable: {self.what}: {done:,} of {self.total:,} {self.unit} ({share:.0%}){left}; "
                "Ctrl-C stops")
        self._say(("\r" + line + "\033[K") if self.tty else line + "\n")

    def done(self) -> None:
        if self.said and self.tty:
            self._say("\r\033[K")

    def _say(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
            self.said = True
        except (OSError, ValueError):     # stderr gone: progress is a courtesy, the result still counts
            pass
