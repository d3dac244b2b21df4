"""Atomic file writes for every layer: a temp file in the target's folder, then os.replace.

A crash or a full disk mid-write leaves the old file (or none), never half a file. The result gets the
ordinary permissions of a new file (0666 minus the umask), not mkstemp's owner-only 0600.
It lives in corpus/ for the same reason as InputError: corpus is the root of the data flow.
"""
from __future__ import annotations

import errno
import fnmatch
import os
import shutil
import stat
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from corpus.errors import InputError
from corpus.validate import file_kind


def _new_file_mode() -> int:
    old = os.umask(0)
    os.umask(old)
    return 0o666 & ~old


@contextmanager
def atomic_path(path: str | Path, make_parents: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside `path` for a writer that wants a file name (savefig, savez, font.save);
    on success it replaces `path`, on any exception it is removed and `path` is untouched.

    A link is followed: the file it names is replaced and the link stays. A character device or a FIFO
    (`--out /dev/null`, `--out >(gzip > x)`) is written to as a stream once the writer is done, never renamed
    over: as root that would replace /dev/null with a file. A folder, a block device or a socket is refused."""
    path = Path(path)
    mode = _existing_mode(path)
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            with _streamed(path) as tmp:
                yield tmp
            return
        raise InputError(f"cannot write {path}: it is {file_kind(mode)}, not a file")
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    for folder in path.parents:             # mkdir would say "File exists" for a parent that is a file
        if folder.exists():
            if not folder.is_dir():
                raise InputError(f"cannot write {path}: {folder} is a file, not a folder")
            break
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, _new_file_mode())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _existing_mode(path: Path) -> int | None:
    """The mode of what path names (a link followed), or None when nothing is there."""
    try:
        return os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


@contextmanager
def _streamed(device: Path) -> Iterator[Path]:
    """A temp file for the writer, then its bytes copied into the device or FIFO. A FIFO nobody reads is
    refused at once (opening it for writing would wait forever)."""
    folder = tempfile.mkdtemp(prefix="spectable-out-")
    tmp = Path(folder) / ("out" + device.suffix)
    try:
        yield tmp
        try:
            fd = os.open(device, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise InputError(f"cannot write {device}: it is a FIFO that nothing is reading") from None
            raise InputError(f"cannot write {device}: {exc.strerror or exc}") from None
        try:
            os.set_blocking(fd, True)
            with open(tmp, "rb") as src:
                while chunk := src.read(1 << 20):
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view):]
        except OSError as exc:
            raise InputError(f"cannot write {device}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_atomic(path: str | Path, write: Callable, binary: bool = True, make_parents: bool = True) -> Path:
    """Open a temp file beside `path`, call write(fh), then replace `path`."""
    with atomic_path(path, make_parents) as tmp:
        with open(tmp, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as fh:
            write(fh)
    return Path(path)


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    return write_atomic(path, lambda fh: fh.write(data))


def write_text_atomic(path: str | Path, text: str) -> Path:
    return write_atomic(path, lambda fh: fh.write(text), binary=False)


STALE_AFTER_S = 60.0     # older than any write in progress: a temp file this old was left by a kill


def remove_stale_temps(folder: str | Path, name: str | None = None, older_than_s: float = STALE_AFTER_S, *,
                       pattern: str = "*") -> list[Path]:
    """Delete the temp files atomic_path() leaves when the process is killed mid-write (.<name>.<random>.tmp…),
    for the file called `name` (taken literally: a name may hold '*' or '[') or, without one, for the files
    whose names match the glob `pattern`, in `folder`, if older than `older_than_s` (a live writer's is newer).
    Returns what was removed; a folder that is missing or unreadable is left alone."""
    folder = Path(folder)
    removed = []
    try:
        entries = os.listdir(folder)
    except OSError:
        return removed
    lead = None if name is None else f".{name}."
    now = time.time()
    for entry in entries:
        if lead is not None:
            if not (entry.startswith(lead) and ".tmp" in entry[len(lead):]):
                continue
        elif not fnmatch.fnmatchcase(entry, f".{pattern}.*.tmp*"):
            continue
        p = folder / entry
        try:
            if p.is_file() and not p.is_symlink() and now - p.stat().st_mtime > older_than_s:
                p.unlink()
                removed.append(p)
        except OSError:
            pass
    return removed
