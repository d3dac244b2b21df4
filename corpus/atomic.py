"""Atomic file writes for every layer: a temp file in the target's folder, then os.replace.

A crash or a full disk mid-write leaves the old file (or none), never half a file. The result gets the
ordinary permissions of a new file (0666 minus the umask), not mkstemp's owner-only 0600.
It lives in corpus/ for the same reason as InputError: corpus is the root of the data flow.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from corpus.errors import InputError


def _new_file_mode() -> int:
    old = os.umask(0)
    os.umask(old)
    return 0o666 & ~old


@contextmanager
def atomic_path(path: str | Path, make_parents: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside `path` for a writer that wants a file name (savefig, savez, font.save);
    on success it replaces `path`, on any exception it is removed and `path` is untouched."""
    path = Path(path)
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


def remove_stale_temps(folder: str | Path, name: str = "*", older_than_s: float = STALE_AFTER_S) -> list[Path]:
    """Delete the temp files atomic_path() leaves when the process is killed mid-write (.<name>.<random>.tmp…),
    for files called `name` (a glob) in `folder`, if older than `older_than_s` (a live writer's is newer).
    Returns what was removed; a folder that is missing or unreadable is left alone."""
    import time
    folder = Path(folder)
    removed = []
    try:
        candidates = list(folder.glob(f".{name}.*.tmp*"))
    except OSError:
        return removed
    now = time.time()
    for p in candidates:
        try:
            if p.is_file() and not p.is_symlink() and now - p.stat().st_mtime > older_than_s:
                p.unlink()
                removed.append(p)
        except OSError:
            pass
    return removed
