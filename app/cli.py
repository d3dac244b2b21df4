"""The `spectable` command line: one dispatcher, subcommands registered by the module that owns them.

Every user-caused failure is an InputError: printed as one line on stderr, exit code 2, no traceback.
"""
from __future__ import annotations

import argparse
import importlib
import os
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
    return run_command(build_parser, argv, bare=_open_window_default)


def _open_window_default() -> int:
    from app.cli_window import open_window_default
    return open_window_default()


def run_command(make_parser, argv: list[str], bare=None) -> int:
    """Parse argv and run its command (no argv: bare(), if given); returns the exit code. Every failure a user
    can cause is one line on stderr (exit 2), never a traceback; a reader that goes away (`| head -1`) ends
    the command quietly with 0."""
    try:
        if not argv and bare is not None:
            code = int(bare() or 0)
        else:
            parser = make_parser()
            try:
                args = parser.parse_args(argv)
            except SystemExit as exc:    # argparse: a usage error (its one line, 2) or --help (0)
                return exc.code if isinstance(exc.code, int) else 2
            if not getattr(args, "func", None):
                parser.print_help()
                return 2
            code = int(args.func(args) or 0)
        sys.stdout.flush()               # inside the try: a closed pipe fails here, not at interpreter exit
        return code
    except InputError as exc:
        print(f"spectable: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:              # before OSError, of which it is one
        _discard_stdout()
        return 0
    except OSError as exc:
        # A path the user named cannot be read or written (a folder that is a file, no permission, disk full).
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"spectable: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spectable: interrupted", file=sys.stderr)
        return 130


def _discard_stdout() -> None:
    """Point stdout at /dev/null so Python's flush at exit does not fail on the closed pipe a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):        # stdout is not a file (a test's capture): nothing to flush there
        pass


if __name__ == "__main__":
    raise SystemExit(main())
