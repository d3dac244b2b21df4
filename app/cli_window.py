"""Subcommands that open the window (placeholder until its owner fills it in)."""
from corpus.errors import InputError


def register(sub) -> None:
    pass


def open_window_default() -> int:
    raise InputError("the window is not built yet")
