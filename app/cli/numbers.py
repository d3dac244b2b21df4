"""Numbers on the command line, one validation layer for every subcommand: argparse `type=` functions that
check type, range and finiteness, so a bad value is argparse's one line (`spectable: error: argument --seed:
...`) and exit code 2 before any command runs; the commands trust what they get.

    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--gamma", type=whole(1, 64), default=4)
    p.add_argument("--temperature", type=number(0, 1000), default=1.0)
    p.add_argument("--top-p", type=number(0, 1, lo_open=True), default=1.0)
    p.add_argument("--batch", type=whole_list(1, 4096), default=[1, 4, 16, 64])
"""
from __future__ import annotations

import argparse
import math

SEED_MAX = 2**31 - 1        # every seed fits the window's 32-bit integer fields, numpy's and torch's generators
MAX_LIST = 4096             # values in a comma-separated list


def _show(text: str) -> str:
    return repr(text if len(text) <= 24 else text[:23] + "…")


def _fmt(x) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"      # as typed on a command line: no separators


def whole(lo: int, hi: int):
    """A whole number in [lo, hi] (written in decimal: '12', not '1e3' or '2**70')."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:                       # also int('9' * 5000): Python's digit limit
            raise argparse.ArgumentTypeError(f"{_show(text)} is not a whole number") from None
        if not lo <= value <= hi:
            shown = _fmt(value) if len(str(value)) <= 30 else f"{str(value)[:12]}… ({len(str(value))} digits)"
            raise argparse.ArgumentTypeError(f"{shown} is out of range ({_fmt(lo)} to {_fmt(hi)})")
        return value
    parse.__name__ = "whole number"
    return parse


def number(lo: float, hi: float, lo_open: bool = False):
    """A finite number in [lo, hi] ((lo, hi] with lo_open); 'nan', 'inf' and '1e400' are refused."""
    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_show(text)} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{_show(text)} is not a finite number")
        if (value <= lo if lo_open else value < lo) or value > hi:
            low = f"above {_fmt(lo)}" if lo_open else _fmt(lo)
            raise argparse.ArgumentTypeError(f"{value:g} is out of range ({low} to {_fmt(hi)})")
        return value
    parse.__name__ = "number"
    return parse


def whole_list(lo: int, hi: int, max_items: int = MAX_LIST):
    """Comma-separated whole numbers, each in [lo, hi]: '1,4,16,64' -> [1, 4, 16, 64]."""
    one = whole(lo, hi)

    def parse(text: str) -> list[int]:
        parts = [x for x in text.replace(" ", "").split(",") if x != ""]
        if not parts:
            raise argparse.ArgumentTypeError("is empty: give comma-separated whole numbers")
        if len(parts) > max_items:
            raise argparse.ArgumentTypeError(f"has {len(parts)} values (at most {max_items})")
        for x in parts:
            try:
                int(x)
            except ValueError:
                raise argparse.ArgumentTypeError(f"must be comma-separated integers: {_show(x)} is not one") from None
        return [one(x) for x in parts]
    parse.__name__ = "list of whole numbers"
    return parse


SEED = whole(0, SEED_MAX)
