"""Keyboard bindings (clicker-safe) and the key-script format that lets tests drive the real loop.

PageDown / Space / Right = next, PageUp / Left = previous: a presentation clicker sends PageDown /
PageUp, and nothing else is bound to those two keys.

Key script (spectable run --script keys.txt): one entry per line, delivered one per frame from
frame 1 on; `wait N` lets N frames pass; `#` starts a comment. Entries are key names as pygame
spells them ("page down", "space", "f11", "b", ".", "l", "h", "?", "1".."7", "f12", "e", "c", "g", "a".."d",
"[1]".."[4]" for the number pad, "backspace", "[", "]")
or the aliases below. A scripted run (--frames N) lasts exactly N frames: entries still queued then are
never delivered, so no wait can keep a run going.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import pygame

from corpus.errors import InputError
from corpus.validate import read_regular_file

MAX_SCRIPT_BYTES = 1 << 20      # a key script is a few hundred lines

ACTIONS = {
    "next": ("page down", "space", "right"),
    "prev": ("page up", "left"),
    "blank": ("b", "."),
    "fullscreen": ("f11",),
    "language": ("l",),
    "help": ("h", "?", "f1"),
    "pause": ("p",),
    "palette": ("f9",),
    "scale_up": ("=", "+", "[+]"),
    "scale_down": ("-", "[-]"),
    "reduced_motion": ("m",),
    "screenshot": ("f12",),
    "export_plots": ("e",),
    "export_log": ("c",),
    "export_gif": ("g",),
    "mode_tour": ("1",),
    "mode_lab": ("2",),
    "mode_step": ("3",),
    "mode_tubes": ("4",),
    "mode_exploded": ("5",),
    "mode_hardware": ("6",),
    "mode_quiz": ("7",),
    "cutaway": ("x",),
    "close": ("escape",),
    "quiz_back": ("backspace",),
}

# Keys that mean something else in one mode: they take precedence there (the quiz answers with A-D, which
# elsewhere blank the screen (B) and export the run log (C); the number pad's 1-4 answer too, the top row's
# digits still switch modes). Blank stays on '.', the run log on the lab's and other modes' C.
MODE_KEYS = {
    "quiz": {"a": "answer_a", "b": "answer_b", "c": "answer_c", "d": "answer_d",
             "[1]": "answer_a", "[2]": "answer_b", "[3]": "answer_c", "[4]": "answer_d",
             "r": "reveal", "s": "show_me", "t": "class_mode", "w": "export_answers"},
    "tubes": {"[": "tubes_slower", "]": "tubes_faster", "f": "tubes_faster"},
    "tour": {"s": "save_lesson"},
}

ALIASES = {"pagedown": "page down", "pgdn": "page down", "pageup": "page up", "pgup": "page up",
           "period": ".", "question": "?", "esc": "escape", "plus": "+", "minus": "-"}


def action_for(key: int, unicode: str = "", mode: str | None = None) -> str | None:
    """The action a key press means in `mode`, or None. '?' arrives as shift+'/' on most layouts: use its
    character."""
    if unicode == "?":
        return "help"
    if unicode == "+":
        return "scale_up"
    name = pygame.key.name(key).lower()
    if name in MODE_KEYS.get(mode, {}):
        return MODE_KEYS[mode][name]
    for action, names in ACTIONS.items():
        if name in names:
            return action
    return None


def parse_script(path: str | Path) -> list[str | int]:
    """Returns a list of key names and integer waits; InputError on an unknown key name."""
    try:
        lines = read_regular_file(path, "key script", MAX_SCRIPT_BYTES).decode("utf-8").splitlines()
    except FileNotFoundError as exc:
        raise InputError(f"cannot read key script {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"key script {path} is not UTF-8 text (bad byte at offset {exc.start})") from None
    out: list[str | int] = []
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if " #" in line:
            line = line.split(" #", 1)[0].strip()
        low = line.lower()
        if low == "wait" or low.startswith("wait "):
            parts = low.split()
            if len(parts) != 2 or not (parts[1].isascii() and parts[1].isdigit()):
                raise InputError(f"key script {path} line {n}: 'wait' needs one whole number of frames, "
                                 f"not {line!r}"[:200])
            out.append(int(parts[1]))
            continue
        name = ALIASES.get(low, low)
        if name not in ("?", "+") and not _known(name):
            raise InputError(f"key script {path} line {n}: unknown key {line!r}"[:200])
        out.append(name)
    return out


def _known(name: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # key names do not need an initialised display
        try:
            pygame.key.key_code(name)
            return True
        except ValueError:
            return False


def key_event(name: str) -> list[pygame.event.Event]:
    """KEYDOWN + KEYUP for a script entry, as the window's event queue would deliver them."""
    if name == "?":
        key, uni, mod = pygame.K_SLASH, "?", pygame.KMOD_SHIFT
    elif name == "+":
        key, uni, mod = pygame.K_EQUALS, "+", pygame.KMOD_SHIFT
    else:
        key = pygame.key.key_code(name)
        uni = name if len(name) == 1 else ""
        mod = 0
    down = pygame.event.Event(pygame.KEYDOWN, key=key, unicode=uni, mod=mod, scancode=0, scripted=True)
    up = pygame.event.Event(pygame.KEYUP, key=key, unicode="", mod=mod, scancode=0, scripted=True)
    return [down, up]
