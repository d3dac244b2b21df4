"""Checks shared by every reader of user-editable input: bounded JSON, numbers, whole numbers, text, objects.

Each kind of input has one validator, beside its loader, built from these checks: count tables and their
manifests (corpus.tables.validate_tables), measurement files (models.measurements), checkpoint config.json,
shard index and tensors (models.llm.checks), CLI numbers (app.cli.numbers) and the acceptance rule's
inputs (models.acceptance.check_rule_inputs). Each raises InputError with one line naming the file and the
field; the code after it trusts what it returns.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import stat
from pathlib import Path

from corpus.errors import InputError

MAX_JSON_DEPTH = 64         # our files nest 5 deep; a 200,000-deep file must not reach the parser's recursion


def short(value, limit: int = 40) -> str:
    """A value as it may appear inside a one-line message."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def type_name(value) -> str:
    return {bool: "true/false", int: "a whole number", float: "a number", str: "text", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def file_kind(mode: int) -> str:
    """What a stat mode is, in words, for a message that refuses it."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_regular_file(path: str | Path, what: str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most max_bytes. Opened without blocking and checked on the open handle,
    so a FIFO with no writer (which would wait forever), a device (/dev/zero never ends) or a folder is one
    line, not a hang or a MemoryError; a file that grows past max_bytes while read is refused too.
    FileNotFoundError passes through (callers say what a missing file means); every other failure is InputError."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise InputError(f"{what} {path} is a folder, not a file") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise InputError(f"{what} {path} is {file_kind(info.st_mode)}, not a regular file")
    with os.fdopen(fd, "rb") as fh:
        size = info.st_size
        if size > max_bytes:
            raise InputError(f"{path}: {size:,} bytes is too large for {what} (at most {max_bytes:,})")
        try:
            raw = fh.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise InputError(f"{path}: more than {max_bytes:,} bytes is too large for {what}")
    return raw


@contextlib.contextmanager
def utf8_path(path: str | Path):
    """A name for `path` that libraries written in Rust or C++ (safetensors, tokenizers) can take: the path
    itself when it is valid UTF-8, else /proc/self/fd/N of the file opened here (Linux allows any bytes in a
    folder's name; those libraries refuse such a name outright)."""
    name = str(path)
    if lone_surrogate(name) is None:
        yield name
        return
    if not os.path.isdir("/proc/self/fd"):
        raise InputError(f"{shown_name(name)}: the name is not UTF-8 text; rename the file or its folder")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def read_json(path: str | Path, what: str, max_bytes: int, finite: bool = False):
    """Parse a JSON file of at most max_bytes, nested at most MAX_JSON_DEPTH deep; any failure is one line.
    finite=True also refuses NaN, Infinity and numbers too large for a float (1e400) anywhere in it."""
    path = Path(path)
    try:
        raw = read_regular_file(path, what, max_bytes)
    except FileNotFoundError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_json(raw, str(path), finite)


def _refuse(token):
    raise ValueError(f"{token} is not a finite number")


def _finite_float(token: str) -> float:
    value = float(token)
    return value if math.isfinite(value) else _refuse(token)


def parse_json(raw: bytes | str, where: str, finite: bool = False):
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(f"{where} is not UTF-8 text (bad byte at offset {exc.start})") from None
    try:
        data = json.loads(raw, parse_constant=_refuse, parse_float=_finite_float) if finite else json.loads(raw)
    except RecursionError:
        raise InputError(f"{where} is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:      # JSONDecodeError, and int('9' * 5000)'s digit limit
        raise InputError(f"{where} is not valid JSON ({str(exc).splitlines()[0][:80]})") from None
    if json_depth(data) > MAX_JSON_DEPTH:
        raise InputError(f"{where} is nested more than {MAX_JSON_DEPTH} levels deep")
    return data


def json_depth(obj) -> int:
    """Nesting depth of lists/objects, without recursion (a scalar is 0)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, dict):
            o = list(o.values())
        if isinstance(o, list):
            deepest = max(deepest, d)
            stack.extend((v, d + 1) for v in o if isinstance(v, (dict, list)))
    return deepest


def mapping(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"{where} must be an object, not {type_name(value)}")
    return value


def lone_surrogate(value: str) -> str | None:
    """The first lone surrogate in value ('\\ud800' in JSON decodes to one), or None: such a string is not
    text; it cannot be encoded, drawn or written back."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return value[exc.start]
    return None


def shown_name(name) -> str:
    """A file name as text: Linux allows any bytes in a name, and Python hands the ones that are not UTF-8 over
    as lone surrogates, which no encoder writes; those bytes become escapes (b'\\xff' -> '\\\\xff')."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def text(value, where: str, max_len: int = 200) -> str:
    if not isinstance(value, str):
        raise InputError(f"{where} must be text, not {type_name(value)}")
    bad = lone_surrogate(value)
    if bad is not None:
        raise InputError(f"{where} holds a lone surrogate U+{ord(bad):04X}, which is not text")
    if len(value) > max_len:
        raise InputError(f"{where} is {len(value)} characters long (at most {max_len})")
    return value


def _in_range(value, lo, hi, lo_open: bool) -> bool:
    # compared before any float(): a JSON integer of 400 digits is a Python int that float() cannot hold
    if lo is not None and (value <= lo if lo_open else value < lo):
        return False
    return hi is None or value <= hi


def _fmt(x) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def _range_text(lo, hi, lo_open: bool) -> str:
    if hi is None:
        return f"{'>' if lo_open else '>='} {_fmt(lo)}"
    if lo is None:
        return f"<= {_fmt(hi)}"
    return f"{'above' if lo_open else 'from'} {_fmt(lo)} to {_fmt(hi)}"


def number(value, where: str, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False) -> float:
    """A finite number (not true/false) in [lo, hi] (lo excluded with lo_open)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where} must be a number, not {type_name(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where} = {short(value)} is not a finite number")
    if not _in_range(value, lo, hi, lo_open):
        raise InputError(f"{where} = {short(value)} is out of range ({_range_text(lo, hi, lo_open)})")
    return float(value)


def whole(value, where: str, lo: int | None = None, hi: int | None = None) -> int:
    """A whole number in [lo, hi]; a float that is integral (1e3) counts, so 1e12 is told 'out of range'."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where} must be a whole number, not {type_name(value)}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise InputError(f"{where} = {short(value)} is not a whole number")
    if not _in_range(value, lo, hi, False):
        raise InputError(f"{where} = {short(value)} is out of range ({_range_text(lo, hi, False)})")
    return int(value)
