"""Every JSON the program writes (stdout --json, measurement files, settings, tables' manifests) is valid JSON:
a figure that came out NaN or infinite is written as null ("not measured"), never as the NaN/Infinity
literals Python's json would otherwise emit and other readers refuse; a file name that is not UTF-8 is
written with escapes, not as the lone surrogates no encoder writes."""
from __future__ import annotations

import json
import math
from pathlib import PurePath

import numpy as np


def as_text(s: str) -> str:
    """s as writable text: a file name's undecodable bytes (lone surrogates from Python's surrogateescape)
    become escapes ('\\xff'), any other lone surrogate '\\ud800'; valid text is returned as it is."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        pass
    try:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


def finite_or_null(obj):
    """obj with every non-finite float replaced by None, every string made writable text (as_text); numpy
    scalars and arrays, tuples and paths made plain."""
    if isinstance(obj, str):
        return as_text(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return finite_or_null(obj.tolist())
    if isinstance(obj, dict):
        return {as_text(k) if isinstance(k, str) else k: finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_null(v) for v in obj]
    if isinstance(obj, PurePath):
        return as_text(str(obj))
    return obj


def dumps(obj, indent: int | None = None, sort_keys: bool = False) -> str:
    return json.dumps(finite_or_null(obj), ensure_ascii=False, allow_nan=False, indent=indent, sort_keys=sort_keys)
