"""The settings a teacher expects to find again next time: language, palette, scale, lab parameters.

Every field is declared once in FIELDS: its type and range (checked at the edge: the settings file, the
command line, every change the program makes) and what a change to it invalidates (the run, the table).
The controller's update() and the caches read these declarations; nothing else lists fields by hand.

The file is written atomically (temp file in the same folder, then os.replace). On load:
- a file that is not JSON, not an object, or holds a known field of the wrong type or a number that is
  not finite (NaN, Infinity, 1e400) is set aside as settings.json.corrupt-<n> with a message, and the
  program starts from defaults (nothing of a file we cannot trust is half-used);
- a field of the right type that is out of range is clamped, and an unknown choice (a mode, a device
  no longer known) falls back to its default, silently: a hand edit of a number is not an error.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Callable

from app.paths import config_dir
from corpus import jsonio
from corpus.atomic import remove_stale_temps, write_text_atomic
from corpus.errors import InputError
from corpus.validate import lone_surrogate, read_regular_file
from models.tubes import DEFAULT_PREFIX
from app import pairs
from models import drafters, hardware

MODES = ("tour", "lab", "step", "tubes", "exploded", "hardware", "quiz")
TUBE_RULES = ("exact", "resample_from_p", "exact_match_only", "draft_only", "typical")
DECODERS = ("speculative", "target")
# The tree's shape in the lab: a tree the table can draw (at most 4 children per node and 4 deep: 340 nodes), the
# drafters it is built from and the two ways of drawing siblings.
TREE_SAMPLINGS = ("iid", "distinct")
# Older settings files may name draft_only 'no_bonus' (a misnomer: it never let the target write at all).
LEGACY_TUBE_RULES = {"no_bonus": "draft_only"}
INT32_MAX = 2**31 - 1          # ImGui's integer inputs hold a C int: nothing larger may reach them


def _devices() -> tuple[str, ...]:
    return tuple(hardware.DEVICES)


def _pairs() -> tuple[str, ...]:
    return pairs.choices()


def _drafters() -> tuple[str, ...]:
    return drafters.names()          # who proposes the guesses: every registered drafter


def _tree_bases() -> tuple[str, ...]:
    return drafters.BASES


def _models() -> tuple[str, ...]:
    return tuple(hardware.MODELS)


@dataclass(frozen=True)
class Field:
    """One setting: its type and legal values, and what changing it invalidates.

    lab: a lab value (the tour sets it per chapter and puts the lab's own back when it is left; only the
         lab's values are saved). run: a change replaces the run (new traces). stage: a change hands the
         run to the table again (lanes, device, c... the table shows them). save_now: a classroom setting,
         written to the file at once rather than on exit."""
    kind: type
    lo: float | None = None
    hi: float | None = None
    choices: tuple | Callable[[], tuple] | None = None
    max_len: int | None = None
    lab: bool = False
    run: bool = False
    stage: bool = False
    save_now: bool = False

    def int_range(self) -> tuple[int, int]:
        """(lo, hi) of a whole-number field: what its slider offers."""
        return int(self.lo), int(self.hi)

    def legal(self) -> tuple | None:
        return self.choices() if callable(self.choices) else self.choices


FIELDS: dict[str, Field] = {
    # classroom
    "language": Field(str, choices=("zh", "en"), save_now=True),
    "palette": Field(str, choices=("default", "projector"), save_now=True),
    "ui_scale": Field(float, 0.75, 2.5, save_now=True),
    "reduced_motion": Field(bool, save_now=True),
    "fullscreen": Field(bool, save_now=True),
    "window_w": Field(int, 320, 8192),
    "window_h": Field(int, 200, 8192),
    # where we were
    "mode": Field(str, choices=MODES),
    "chapter": Field(int, 0, 11),
    # the lab: these drive the sampler, the analytics and the hardware model
    "pair": Field(str, choices=_pairs, lab=True, run=True, stage=True),
    "prompt": Field(str, max_len=200, lab=True, run=True, stage=True),
    "gamma": Field(int, 1, 12, lab=True, run=True, stage=True),
    "c": Field(float, 0.0, 1.0, lab=True, stage=True),
    "temperature": Field(float, 0.0, 3.0, lab=True, run=True, stage=True),
    "top_k": Field(int, 0, 10_000, lab=True, run=True, stage=True),
    "top_p": Field(float, 0.01, 1.0, lab=True, run=True, stage=True),
    "seed": Field(int, 0, INT32_MAX, lab=True, run=True, stage=True),
    "tokens": Field(str, choices=("char", "word"), lab=True, run=True, stage=True),
    "steps": Field(int, 1, 200, lab=True, run=True, stage=True),
    "lanes": Field(int, 1, 512, lab=True, stage=True),
    "context": Field(int, 1, 131072, lab=True, stage=True),
    "device": Field(str, choices=_devices, lab=True, stage=True),
    "model": Field(str, choices=_models, lab=True, stage=True),
    "tube_rule": Field(str, choices=TUBE_RULES, lab=True, stage=True),
    "skip_bonus": Field(bool, lab=True, save_now=True),
    "decoder": Field(str, choices=DECODERS, lab=True, run=True, stage=True),
    "drafter": Field(str, choices=_drafters, lab=True, run=True, stage=True),
    "tree_width": Field(int, 1, 4, lab=True, run=True, stage=True),
    "tree_depth": Field(int, 1, 4, lab=True, run=True, stage=True),
    "tree_from": Field(str, choices=_tree_bases, lab=True, run=True, stage=True),
    "tree_sampling": Field(str, choices=TREE_SAMPLINGS, lab=True, run=True, stage=True),
}
LAB_FIELDS = tuple(k for k, f in FIELDS.items() if f.lab)
RUN_FIELDS = tuple(k for k, f in FIELDS.items() if f.run)
STAGE_FIELDS = tuple(k for k, f in FIELDS.items() if f.stage)


@dataclass
class AppSettings:
    # classroom
    language: str = "zh"              # 'zh' | 'en'
    palette: str = "default"          # 'default' | 'projector'
    ui_scale: float = 1.0             # multiplies the font size chosen from the window height
    reduced_motion: bool = False
    fullscreen: bool = False
    window_w: int = 1280
    window_h: int = 720
    # where we were
    mode: str = "tour"
    chapter: int = 0
    # the lab (these drive the sampler, the analytics and the hardware model)
    pair: str = "ngram"               # 'ngram' | 'neural' | 'custom' (app/pairs.py: which models drive the table)
    prompt: str = DEFAULT_PREFIX
    gamma: int = 4
    c: float = 0.1                    # draft cost / target cost
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    tokens: str = "char"              # 'char' | 'word'
    steps: int = 12                   # target passes in the run shown on the table
    lanes: int = 1                    # batch lanes (sequences written at once)
    context: int = 4096               # context length for the KV-cache reads
    device: str = "h100-sxm"
    model: str = "llama-3.1-8b"
    tube_rule: str = "exact"
    skip_bonus: bool = False          # test tubes: drop the bonus token (still exact, fewer tokens per pass)
    # 'speculative' (draft guesses, the target checks) or 'target' (the big drum alone, one token a pass:
    # tour chapters 1-2, before speculation is introduced, and 11, nine sequences lighting nine lanes)
    decoder: str = "speculative"
    # who proposes (models.drafters): the bigram chain, lookup (copy from the text), heads (Medusa-style), or a
    # tree of candidates (tree_width children per node, tree_depth deep, from the chain or the heads, drawn
    # i.i.d. or without replacement) checked by the multi-candidate rule
    drafter: str = "chain"
    tree_width: int = 2
    tree_depth: int = 2
    tree_from: str = "chain"
    tree_sampling: str = "iid"

    def clamp(self) -> "AppSettings":
        """Bring every field back into its legal range (each value must already have its field's type)."""
        for name in FIELDS:
            setattr(self, name, clamp_value(name, getattr(self, name)))
        return self

    def values(self, names) -> tuple:
        """The values of `names`, in order: the cache key of whatever those fields produce."""
        return tuple(getattr(self, n) for n in names)


DEFAULTS = AppSettings()
assert set(FIELDS) == {f.name for f in fields(AppSettings)}, "every setting is declared in FIELDS"


def check_type(name: str, value):
    """value as field `name`'s type, or InputError: wrong type, a number that is not finite, a float that is
    not whole for a whole-number field. Range is not checked here (see clamp_value and check_value)."""
    spec = FIELDS.get(name)
    if spec is None:
        raise InputError(f"unknown setting {name!r}")
    kind = spec.kind
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is str:
        if isinstance(value, str):
            bad = lone_surrogate(value)
            if bad is not None:
                raise InputError(f"setting {name} holds a lone surrogate U+{ord(bad):04X}, which is not text")
            return value
    elif not isinstance(value, bool) and isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"setting {name} must be a finite number, not {value!r}")
        if kind is int:
            if isinstance(value, float):
                if not value.is_integer():
                    raise InputError(f"setting {name} must be a whole number, not {value!r}")
                return int(value)
            return int(value)
        return float(value)
    shown = f" {value!r}"[:40] if isinstance(value, (bool, int, float, str)) else ""
    raise InputError(f"setting {name} must be {_kind_name(kind)}, not {type(value).__name__}{shown}")


def _kind_name(kind: type) -> str:
    return {bool: "true or false", str: "text", int: "a whole number", float: "a number"}[kind]


def clamp_value(name: str, value):
    """A value of the right type brought into its field's range; an unknown choice becomes the default."""
    spec = FIELDS[name]
    if name == "tube_rule":
        value = LEGACY_TUBE_RULES.get(value, value)
    legal = spec.legal()
    if legal is not None and value not in legal:
        return getattr(DEFAULTS, name)
    if spec.max_len is not None:
        value = value[:spec.max_len] if value else getattr(DEFAULTS, name)
    if spec.lo is not None:
        value = max(spec.kind(spec.lo), value)
    if spec.hi is not None:
        value = min(spec.kind(spec.hi), value)
    return value


def check_values(raw: dict, where: str) -> dict:
    """Each of a file's settings {name: value} checked as check_value checks it; the error says where."""
    out = {}
    for k, v in raw.items():
        try:
            out[k] = check_value(k, v)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
    return out


def check_value(name: str, value):
    """A value given on purpose (command line, the lab, a tour chapter): the right type and in range, else
    InputError saying what is allowed. Nothing is silently changed."""
    value = check_type(name, value)
    spec = FIELDS[name]
    if name == "tube_rule":
        value = LEGACY_TUBE_RULES.get(value, value)
    legal = spec.legal()
    if legal is not None and value not in legal:
        raise InputError(f"setting {name} must be one of {', '.join(map(str, legal))}, not {value!r}"[:300])
    if spec.max_len is not None and not 1 <= len(value) <= spec.max_len:
        raise InputError(f"setting {name} must be 1 to {spec.max_len} characters long")
    if (spec.lo is not None and value < spec.lo) or (spec.hi is not None and value > spec.hi):
        lo, hi = (f"{v:g}" if isinstance(v, float) else f"{v}" for v in (spec.lo, spec.hi))
        raise InputError(f"setting {name} must be between {lo} and {hi}, not {value}")
    return value


def settings_path() -> Path:
    return config_dir() / "settings.json"


def parse_settings(text: str) -> AppSettings:
    """Settings from a file's text: InputError for anything but a JSON object of well-typed, finite values;
    known fields are clamped into range, unknown keys ignored."""
    try:
        raw = json.loads(text)
    except RecursionError:
        raise InputError("nested too deeply") from None
    except ValueError as exc:
        raise InputError(f"not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise InputError("not a JSON object")
    values = {k: check_type(k, v) for k, v in raw.items() if k in FIELDS}
    return AppSettings(**values).clamp()


def load_settings(path: Path | None = None) -> tuple[AppSettings, str | None]:
    """Read the settings; returns (settings, message or None). Never raises on a bad file: one that cannot be
    trusted is set aside as <name>.corrupt-<n> (never overwriting an earlier one) and defaults are used."""
    path = path or settings_path()
    remove_stale_temps(path.parent, path.name)      # a temp file a kill left behind mid-save
    try:
        text = read_regular_file(path, "settings file", MAX_SETTINGS_BYTES).decode("utf-8")
    except FileNotFoundError:
        return AppSettings(), None
    except InputError as exc:                        # a folder, a FIFO, a device, no permission, too large
        reason = str(exc).removeprefix(f"settings file {path} ")
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 text (bad byte at offset {exc.start})"
    else:
        try:
            return parse_settings(text), None
        except InputError as exc:
            reason = str(exc)
    # Set aside under a name of its own (never over an earlier one), so the next save loses none of it.
    n = 1
    while os.path.lexists(path.with_name(f"{path.name}.corrupt-{n}")):
        n += 1
    aside = path.with_name(f"{path.name}.corrupt-{n}")
    try:
        os.rename(path, aside)
    except OSError:
        return AppSettings(), (f"settings file {path} could not be read ({reason}); using defaults, and it is "
                               "left as it is: this session's settings are not saved over it")
    return AppSettings(), (f"settings file {path} could not be read ({reason}); set aside as {aside.name}, "
                           "using defaults")


MAX_SETTINGS_BYTES = 1 << 20     # ours are about 2 KB


def save_settings(settings: AppSettings, path: Path | None = None) -> Path:
    """Atomic write: a crash mid-write leaves the old file, never half a file. A file there that cannot be read
    (and could not be set aside at load) is not saved over: what could not be read may still be the user's."""
    path = path or settings_path()
    if os.path.lexists(path):
        try:
            read_regular_file(path, "settings file", MAX_SETTINGS_BYTES)
        except FileNotFoundError:
            pass
        except InputError as exc:
            raise InputError(f"{exc}; it is left as it is, not saved over") from None
    write_text_atomic(path, jsonio.dumps(asdict(settings), indent=1))
    return path


def with_values(settings: AppSettings, **values) -> AppSettings:
    """A copy with some fields replaced (each checked: type and range)."""
    return replace(settings, **{k: check_value(k, v) for k, v in values.items()})
