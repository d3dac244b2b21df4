"""corpus.atomic: a failed write leaves the old file whole and no temp files behind; a new file is 0666 - umask."""
import os

import pytest

from corpus.atomic import atomic_path, write_bytes_atomic, write_text_atomic


def test_replaces_and_sets_ordinary_permissions(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    write_text_atomic(target, "一")
    write_text_atomic(target, "二")
    assert target.read_text(encoding="utf-8") == "二"
    old = os.umask(0)
    os.umask(old)
    assert (target.stat().st_mode & 0o777) == (0o666 & ~old)
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.txt"]


def test_failure_mid_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "settings.json"
    write_bytes_atomic(target, b"old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"half a fi")
            raise RuntimeError("disk full")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


def test_a_parent_that_is_a_file_is_a_clear_input_error(tmp_path):
    from corpus.errors import InputError
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError, match="is a file, not a folder"):
        write_text_atomic(tmp_path / "notes.txt" / "out.png", "y")
