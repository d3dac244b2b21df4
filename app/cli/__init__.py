"""The `spectable` command line: one dispatcher, subcommands registered by the module that owns them.

Every user-caused failure is an InputError: printed as one line on stderr, exit code 2, no traceback.
"""
from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import importlib
import os
import sys
import re

from corpus.errors import InputError

# Each module here owns a group of subcommands and exposes register(subparsers).
COMMAND_MODULES = (
    "app.cli.core",       # corpus, probs, generate, step (app.cli.step), alpha, drafters, tubes, eval, roofline
    "app.cli.scene",      # render
    "app.cli.llm",        # model-info, llm-generate, bench
    "app.cli.window",     # run, open (the window); also what a bare `spectable` opens
    "app.cli.classroom",  # handout
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
    # lazy: `import app.cli` (and so `python -m app.cli.llm`) stays light; the window's CLI loads only when asked
    from app.cli.window import open_window_default
    return open_window_default()


def run_command(make_parser, argv: list[str], bare=None) -> int:
    """Parse argv and run its command (no argv: bare(), if given); returns the exit code. Every failure a user
    can cause is one line on stderr (exit 2), never a traceback; a reader that goes away (`| head -1`) ends
    the command quietly with 0; an output that cannot be written (closed, full) is one line and exit 2."""
    with guarded_streams():
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
        except OutputError as exc:
            _discard_stdout()
            print(f"spectable: error: cannot write to standard output: {exc.strerror or exc}", file=sys.stderr)
            return 2
        except OSError as exc:
            # A path the user named cannot be read or written (a folder that is a file, no permission, disk full).
            where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
            print(f"spectable: error: {exc.strerror or exc}{where}", file=sys.stderr)
            return 2
        except MemoryError:
            # Allocation the up-front estimates could not see (ulimit -v, a limit set by the administrator).
            print(f"spectable: error: {OUT_OF_MEMORY}", file=sys.stderr)
            return 2
        except RuntimeError as exc:
            # torch's allocators raise RuntimeError (CUDA's OutOfMemoryError is one); anything else is a bug
            # and keeps its traceback.
            size = allocation_failure(exc)
            if size is None:
                raise
            print(f"spectable: error: {OUT_OF_MEMORY}{size}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("spectable: interrupted", file=sys.stderr)
            return 130


OUT_OF_MEMORY = "out of memory: the request is too big for the memory this process may use"


def allocation_failure(exc: BaseException) -> str | None:
    """For torch's 'can't allocate memory' / CUDA 'out of memory' errors: ' (it asked for N bytes)' or '';
    None for any other error."""
    text = str(exc)
    if "can't allocate memory" not in text and "out of memory" not in text.lower():
        return None
    asked = re.search(r"allocate (\d+) bytes", text)
    return f" (one allocation of {int(asked.group(1)):,} bytes failed)" if asked else ""


class OutputError(OSError):
    """Standard output could not be written (closed, disk full, a device error): not the user's named file."""


class _GuardedStdout:
    """sys.stdout as the commands see it: writes that fail become OutputError (one line at the edge, not a
    traceback); characters the terminal's encoding lacks are escaped (\\u6211), never an UnicodeEncodeError;
    a closed stdout (`>&-`, sys.stdout is None) fails on the first write like a full disk."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is None:
            raise OutputError(errno.EBADF, "it is closed")
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.errno, exc.strerror or str(exc)) from None

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.errno, exc.strerror or str(exc)) from None

    def __getattr__(self, name):             # encoding, isatty, fileno, buffer ... as the real stream has them
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


class _NoStderr:
    """stderr closed (`2>&-`): there is nowhere to say anything; the exit code still tells."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def _escape(exc: UnicodeEncodeError):
    """What the terminal cannot show, escaped: a file name's undecodable byte as \\xff (the byte it was), any
    other character as \\u6211."""
    bad = exc.object[exc.start:exc.end]
    return "".join(f"\\x{ord(ch) - 0xDC00:02x}" if 0xDC80 <= ord(ch) <= 0xDCFF else
                   (f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}") for ch in bad), exc.end


ESCAPE_ERRORS = "spectable.escape"
codecs.register_error(ESCAPE_ERRORS, _escape)


@contextlib.contextmanager
def guarded_streams():
    """For one command: stdout guarded (above), stderr escaping what its encoding lacks; restored after."""
    saved = sys.stdout, sys.stderr
    for stream in saved:
        if stream is not None and not isinstance(stream, _GuardedStdout):
            try:
                stream.reconfigure(errors=ESCAPE_ERRORS)    # a Latin-1 terminal, a lone surrogate in a path
            except (AttributeError, ValueError, OSError):         # not a TextIOWrapper (a test's capture)
                pass
    if not isinstance(sys.stdout, _GuardedStdout):
        sys.stdout = _GuardedStdout(sys.stdout)
    if sys.stderr is None:
        sys.stderr = _NoStderr()
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _discard_stdout() -> None:
    """Point stdout at /dev/null so Python's flush at exit does not fail on the closed pipe a second time."""
    real = sys.stdout._stream if isinstance(sys.stdout, _GuardedStdout) else sys.stdout
    if real is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, real.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):   # stdout is not a file (a test's capture): nothing to flush
        pass
