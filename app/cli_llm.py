"""Subcommands (placeholder until its owner fills it in)."""


def register(sub) -> None:
    pass
