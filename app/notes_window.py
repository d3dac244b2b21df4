"""The teacher's notes on a second screen: a plain window that shows the prepared lesson's note for the tour page
the class sees, on the teacher's display while the projector shows the program.

It opens by itself when the computer has a second display (on that display), or when asked (`spectable open
LESSON --notes-window`, for a teacher who drags it wherever the class does not look). It is drawn with pygame's
own software surface and the shipped font, not with the program's GL context: it can never cost the table a frame.
While it is open, the help overlay (H) leaves the note out, since the class sees the overlay. Keys pressed in it
turn the pages as in the main window; closing it closes only it.
"""
from __future__ import annotations

import os

BACKGROUND = (24, 26, 30)
INK = (235, 232, 226)
ACCENT = (230, 150, 70)
MUTED = (150, 150, 150)
_CENTRED_ON_DISPLAY = 0x2FFF0000     # SDL_WINDOWPOS_CENTERED_DISPLAY(n) = this | n


class NotesWindow:
    def __init__(self, pg, font_path, t, *, display: int | None = None, size=(900, 600)):
        self.pg, self.t = pg, t
        pos = (_CENTRED_ON_DISPLAY | display,) * 2 if display is not None else pg.WINDOWPOS_CENTERED
        self.window = pg.Window(t("notes.window_title"), size, position=pos, resizable=True)
        # Its surface must stay in main memory: an accelerated window framebuffer would make its own GL context
        # current and leave the program's GL calls on it.
        os.environ["SDL_FRAMEBUFFER_ACCELERATION"] = "0"
        pg.font.init()
        self.font_path = font_path
        self._fonts: dict = {}
        self.shown: tuple | None = None          # (title, note, size) last drawn: redrawn only when it changes
        self.closed = False

    @classmethod
    def for_display(cls, pg, font_path, t, force: bool = False):
        """The notes window on the second display, or (force) on this one; None when there is no second display
        and it was not asked for."""
        try:
            displays = pg.display.get_num_displays()
        except pg.error:
            displays = 1
        if displays < 2 and not force:
            return None
        return cls(pg, font_path, t, display=1 if displays >= 2 else None)

    def owns(self, ev) -> bool:
        """The event is about this window itself (its close, its size), not a key for the lesson."""
        return getattr(ev, "window", None) is self.window and ev.type in (
            self.pg.WINDOWCLOSE, self.pg.WINDOWRESIZED, self.pg.WINDOWSIZECHANGED, self.pg.VIDEORESIZE,
            self.pg.WINDOWEXPOSED)

    def handle(self, ev) -> None:
        if ev.type == self.pg.WINDOWCLOSE:
            self.close()
        else:
            self.shown = None                    # resized or uncovered: draw again

    def show(self, title: str, note: str | None) -> bool:
        """Draw the page's title and note (a word that there is none); True when it drew."""
        if self.closed:
            return False
        surf = self.window.get_surface()
        key = (title, note, surf.get_size())
        if key == self.shown:
            return False
        self.shown = key
        w, h = surf.get_size()
        surf.fill(BACKGROUND)
        em = max(18, h // 22)                    # the teacher reads it at arm's length, not across a room
        pad = em
        y = pad
        y = self._paragraph(surf, self.t("help.teacher_note"), self._font(round(em * 1.2)), ACCENT, pad, y, w - 2 * pad)
        y = self._paragraph(surf, title, self._font(em), MUTED, pad, y + em // 2, w - 2 * pad)
        body = note if note else self.t("notes.none")
        self._paragraph(surf, body, self._font(em), INK if note else MUTED, pad, y + em, w - 2 * pad)
        self.window.flip()
        return True

    def _font(self, px: int):
        if px not in self._fonts:
            self._fonts[px] = self.pg.font.Font(str(self.font_path), px)
        return self._fonts[px]

    def _paragraph(self, surf, text: str, font, colour, x: int, y: int, width: int) -> int:
        """Text wrapped to `width` (by word where there are spaces, else by character: Chinese); returns the y
        after it."""
        line_h = font.get_linesize()
        for para in text.split("\n"):
            line = ""
            for piece in _pieces(para):
                trial = line + piece
                if line and font.size(trial)[0] > width:
                    surf.blit(font.render(line.rstrip(), True, colour), (x, y))
                    y += line_h
                    line = piece.lstrip()
                else:
                    line = trial
            surf.blit(font.render(line.rstrip(), True, colour), (x, y))
            y += line_h
        return y

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.window.destroy()


def _pieces(text: str) -> list[str]:
    """Words with their leading space for Latin text; single characters for CJK (it breaks between any two)."""
    out: list[str] = []
    word = ""
    for ch in text:
        if ch == " ":
            if word:
                out.append(word)
            word = " "
        elif ord(ch) >= 0x2E80:                  # CJK and full-width punctuation: a break may fall on either side
            if word.strip():
                out.append(word)
                word = ""
            out.append(word + ch)
            word = ""
        else:
            word += ch
    if word:
        out.append(word)
    return out
