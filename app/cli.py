"""The `spectable` command line: one dispatcher, subcommands registered by the module that owns them.

Every user-caused failure is an InputError: printed as one line on stderr, exit code 2, no traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from corpus.errors import InputError

# Each module here owns a group of subcommands and exposes register(subparsers).
COMMAND_MODULES = (
    "app.cli_core",    # corpus, probs, generate, step, alpha, tubes, roofline
    "app.cli_scene",   # render
    "app.cli_llm",     # model-info, llm-generate, bench
    "app.cli_window",  # run (the window); also what a bare `spectable` opens
    "app.cli_classroom",  # handout
)


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage already; keep its message to one line."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"spectable: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="spectable", description="The cast-iron table: speculative decoding, run for real.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if not argv:
            from app.cli_window import open_window_default
            return open_window_default()
        args = build_parser().parse_args(argv)
        if not getattr(args, "func", None):
            build_parser().print_help()
            return 2
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"spectable: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        # A path the user named cannot be read or written (a folder that is a file, no permission, disk full).
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"spectable: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spectable: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
