"""The CLI's path side: any file name Linux allows (bytes that are not UTF-8, glob characters), devices, FIFOs
and links, for what the program writes and what it reads back. Nothing is lost (a device is never renamed
over, an old table survives a failed build, a settings file that cannot be read is never saved over),
nothing hangs (a FIFO with no writer, /dev/zero), and every failure is one line, exit 2."""
from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus.errors import InputError
from tests.fuzz_helpers import budget

REPO = Path(__file__).resolve().parents[1]
TEXT = "标题\n甲乙丙甲乙丙丁甲乙丙\n"


def spectable(argv, cwd, timeout=120, env_changes=None):
    """`python -m app ARGV` in cwd; argv items may be bytes (file names that are not UTF-8)."""
    env = dict(os.environ, **(env_changes or {}))
    return subprocess.run([sys.executable, "-m", "app", *argv], cwd=cwd, env=dict(env, PYTHONPATH=str(REPO)),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)


def one_line(r) -> str:
    err = r.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) <= 1, err
    return lines[0] if lines else ""


@pytest.fixture
def source(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text(TEXT, encoding="utf-8")
    return src


def _device(path: Path, minor: int = 3) -> Path:
    """A character device node (1, minor): /dev/null's (3) or /dev/zero's (5), made in the test's folder."""
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    return path


# ---- names: any bytes, glob characters --------------------------------------------------------------------
names = st.one_of(
    st.binary(min_size=1, max_size=10).filter(lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")),
    st.sampled_from([b"a**b", b"[x]", b"*", b"?.npz", b"\xff\xfe", b"caf\xe9", b"-x", b" space ", b"~user"]))


@given(name=names)
@budget(12)
def test_fuzz_a_table_under_any_file_name_is_written_and_read_back(name, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("names")
    (tmp / "src").mkdir()
    (tmp / "src" / "a.txt").write_text(TEXT, encoding="utf-8")
    out = os.path.join(b"tables", name + b".npz")
    r = spectable(["corpus", "build", "src", "--out", out], tmp)
    assert r.returncode == 0 and one_line(r) == "", r.stderr
    r.stdout.decode("utf-8")                                    # the name printed as text (escapes), not raw bytes
    assert sorted(os.listdir(os.path.join(os.fsencode(tmp), b"tables"))) == sorted([name + b".npz", name + b".json"])
    r = spectable(["probs", "--table", out, "--prefix", "甲乙", "--json"], tmp)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["target"]["丙"] > 0.5


@given(name=names)
@budget(6)
def test_fuzz_a_source_file_under_any_name_is_counted_and_its_manifest_is_text(name, tmp_path_factory):
    """A corpus file whose name is not UTF-8 failed the build with a traceback after replacing the old table."""
    tmp = tmp_path_factory.mktemp("srcnames")
    src = os.path.join(os.fsencode(tmp), b"src")
    os.mkdir(src)
    with open(os.path.join(src, name + b".txt"), "w", encoding="utf-8") as fh:
        fh.write(TEXT)
    r = spectable(["corpus", "build", "src", "--out", "t.npz"], tmp)
    assert r.returncode == 0 and one_line(r) == "", r.stderr
    manifest = json.loads((tmp / "t.json").read_text(encoding="utf-8"))
    assert manifest["pieces"][0]["file"] == (name + b".txt").decode("utf-8", "backslashreplace")


def test_a_glob_pattern_in_an_output_name_is_a_name(tmp_path):
    """'a**b' reached Path.glob as a pattern: ValueError."""
    for name in ("a**b.png", "[x].png"):
        r = spectable(["render", "--out", name], tmp_path)
        assert r.returncode == 0 and one_line(r) == "", r.stderr
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"


def test_a_home_folder_that_does_not_exist_is_one_line(tmp_path):
    r = spectable(["llm-generate", "--checkpoint", "~nosuchuser/x", "--prompt-ids", "1", "--tokens", "2"], tmp_path)
    assert r.returncode == 2
    assert one_line(r) == "spectable: error: checkpoint '~nosuchuser/x': ~nosuchuser names no user with a home folder"


# ---- devices, FIFOs, links as outputs ---------------------------------------------------------------------
def test_an_output_that_is_a_device_is_written_to_never_replaced(tmp_path):
    """As root, renaming over /dev/null replaced it with a regular file."""
    node = _device(tmp_path / "null")
    r = spectable(["render", "--out", "null"], tmp_path)
    assert r.returncode == 0 and one_line(r) == "", r.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    r = spectable(["run", "--no-save", "--frames", "1", "--screenshot", "null"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode) and sorted(os.listdir(tmp_path)) == ["null"]


def test_a_table_is_never_built_into_a_device(tmp_path, source):
    node = _device(tmp_path / "null")
    r = spectable(["corpus", "build", str(source), "--out", "null"], tmp_path)
    assert r.returncode == 2 and "--out must name a file" in one_line(r) and "a character device" in one_line(r)
    assert stat.S_ISCHR(os.lstat(node).st_mode) and not (tmp_path / "null.json").exists()


def test_a_fifo_nobody_reads_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    r = spectable(["render", "--out", "pipe"], tmp_path, timeout=60)
    assert r.returncode == 2 and one_line(r) == "spectable: error: cannot write pipe: it is a FIFO that nothing is reading"
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode)


def test_a_fifo_with_a_reader_gets_the_whole_file(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    try:
        r = spectable(["render", "--out", "pipe"], tmp_path, timeout=60)
    finally:
        if reader.is_alive() and not got:
            with open(fifo, "wb"):       # unblock the reader if the command never opened the FIFO
                pass
        reader.join(10)
    assert r.returncode == 0, r.stderr
    assert got and got[0][:4] == b"\x89PNG" and len(got[0]) > 10_000


def test_a_link_is_followed_and_stays_a_link(tmp_path):
    (tmp_path / "real.png").write_bytes(b"old")
    (tmp_path / "link.png").symlink_to("real.png")
    r = spectable(["render", "--out", "link.png"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "link.png").is_symlink() and (tmp_path / "real.png").read_bytes()[:4] == b"\x89PNG"


def test_writing_into_a_folder_or_a_socket_is_one_line(tmp_path):
    import socket
    (tmp_path / "dir.png").mkdir()
    r = spectable(["render", "--out", "dir.png"], tmp_path)
    assert r.returncode == 2 and one_line(r).startswith("spectable: error: ")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "sock"))
        r = spectable(["render", "--out", "sock"], tmp_path)
        assert r.returncode == 2 and "it is a socket, not a file" in one_line(r)


# ---- a failed build keeps the old table --------------------------------------------------------------------
def test_a_build_that_fails_while_writing_keeps_the_old_pair_whole(tmp_path, source, monkeypatch):
    from corpus.build import build_and_save
    out = tmp_path / "t.npz"
    build_and_save([source], out)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    (source / "a.txt").write_text("标题\n丙丁戊丙丁戊丙丁戊\n", encoding="utf-8")
    real = Path.write_bytes

    def full_disk_on_the_manifest(self, data):
        if self.name.startswith(".t.json."):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)
    monkeypatch.setattr(Path, "write_bytes", full_disk_on_the_manifest)
    with pytest.raises(InputError, match="No space left on device"):
        build_and_save([source], out)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before                                      # the old table and manifest, and no temp file


# ---- what the program reads back: FIFOs, devices, unreadable files ---------------------------------------
def test_a_key_script_that_is_a_fifo_is_one_line_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "keys")
    r = spectable(["run", "--no-save", "--frames", "2", "--script", "keys"], tmp_path, timeout=60)
    assert r.returncode == 2
    assert one_line(r) == "spectable: error: key script keys is a FIFO (named pipe), not a regular file"


@pytest.mark.parametrize("make", ["fifo", "zero", "folder"])
def test_a_settings_file_that_is_no_file_is_set_aside_at_once(tmp_path, make):
    """A FIFO with no writer blocked the start forever; /dev/zero as settings.json was a MemoryError."""
    cfg = tmp_path / "config" / "spectable"
    cfg.mkdir(parents=True)
    path = cfg / "settings.json"
    {"fifo": lambda: os.mkfifo(path), "zero": lambda: _device(path, 5), "folder": path.mkdir}[make]()
    code = ("import sys; from pathlib import Path; from app.settings import load_settings; "
            "s, msg = load_settings(Path(sys.argv[1])); print(msg)")
    r = subprocess.run([sys.executable, "-c", code, str(path)], cwd=REPO, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    msg = r.stdout.decode().strip()
    assert "could not be read" in msg and "set aside as settings.json.corrupt-1" in msg, msg
    assert os.path.lexists(cfg / "settings.json.corrupt-1") and not os.path.lexists(path)


def _unreadable(monkeypatch, path: Path, also_fixed_in_place: bool):
    """Reading `path` fails with EACCES (root reads anything, so it is simulated); optionally renaming it too."""
    real_open, real_rename = os.open, os.rename

    def deny_open(p, *a, **kw):
        if os.fspath(p) == os.fspath(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(p))
        return real_open(p, *a, **kw)

    def deny_rename(a, b, *rest, **kw):
        if os.fspath(a) == os.fspath(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(a))
        return real_rename(a, b, *rest, **kw)
    monkeypatch.setattr(os, "open", deny_open)
    if also_fixed_in_place:
        monkeypatch.setattr(os, "rename", deny_rename)


@pytest.fixture
def users_settings(tmp_path):
    """A settings file holding the user's own values: (its path, its bytes)."""
    from app.settings import DEFAULTS, save_settings, with_values
    path = tmp_path / "settings.json"
    save_settings(with_values(DEFAULTS, gamma=7), path)
    return path, path.read_bytes()


def test_a_settings_file_that_cannot_be_read_is_set_aside_whole(tmp_path, monkeypatch, users_settings):
    from app.settings import DEFAULTS, load_settings, save_settings
    path, mine = users_settings
    _unreadable(monkeypatch, path, also_fixed_in_place=False)
    s, msg = load_settings(path)
    monkeypatch.undo()
    assert s == DEFAULTS and "Permission denied" in msg and "set aside as settings.json.corrupt-1" in msg
    assert (tmp_path / "settings.json.corrupt-1").read_bytes() == mine
    save_settings(s, path)                                      # the next save writes a new file, loses nothing
    assert (tmp_path / "settings.json.corrupt-1").read_bytes() == mine


def test_a_settings_file_that_can_be_neither_read_nor_moved_is_never_saved_over(monkeypatch, users_settings):
    """It was replaced by defaults on save: the user's values were gone."""
    from app.controller import Controller
    from app.settings import DEFAULTS, load_settings, save_settings, with_values
    path, mine = users_settings
    _unreadable(monkeypatch, path, also_fixed_in_place=True)
    s, msg = load_settings(path)
    assert s == DEFAULTS and "left as it is" in msg and "not saved over it" in msg
    with pytest.raises(InputError, match="not saved over"):
        save_settings(with_values(DEFAULTS, gamma=3), path)
    ctl = Controller(s, settings_file=path, scripted=True)
    ctl.save()                                                  # the window's save: a message, not an exception
    assert any("not saved over" in m for m in ctl.recent_messages())
    monkeypatch.undo()
    assert path.read_bytes() == mine


def test_a_settings_prompt_with_a_lone_surrogate_is_set_aside(tmp_path):
    from app.settings import DEFAULTS, load_settings
    path = tmp_path / "settings.json"
    path.write_text('{"prompt": "\\ud800abc", "gamma": 3}', encoding="utf-8")
    s, msg = load_settings(path)
    assert s == DEFAULTS and "lone surrogate U+D800" in msg and (tmp_path / "settings.json.corrupt-1").exists()


def test_a_corpus_file_that_is_a_fifo_is_one_line(tmp_path):
    (tmp_path / "src").mkdir()
    os.mkfifo(tmp_path / "src" / "a.txt")
    r = spectable(["corpus", "build", "src/a.txt", "--out", "t.npz"], tmp_path, timeout=60)
    assert r.returncode == 2 and "a FIFO (named pipe), not a regular file" in one_line(r)


# ---- checkpoints and exports in folders whose names are not UTF-8 -----------------------------------------
@pytest.fixture(scope="module")
def odd_pair(tmp_path_factory):
    base = os.fsencode(tmp_path_factory.mktemp("odd"))
    for name in ("nahan-target", "nahan-draft"):
        shutil.copytree(os.fsencode(REPO / "assets" / "models" / name), os.path.join(base, name.encode() + b"-\xff"))
    return base


def test_a_checkpoint_in_a_folder_whose_name_is_not_utf8_loads(odd_pair):
    """tokenizers and safetensors refuse such a name: three commands refused a valid checkpoint."""
    r = spectable(["generate", "--pair", "neural", "--target", b"nahan-target-\xff", "--draft", b"nahan-draft-\xff",
                   "--tokens", "6", "--json"], odd_pair)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tokens_written"] >= 6
    r = spectable(["llm-generate", "--checkpoint", b"nahan-target-\xff", "--prompt", "孔乙", "--tokens", "3",
                   "--json"], odd_pair)
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["tokens"]) == 3


def test_a_measurement_file_naming_such_a_folder_is_valid_json(odd_pair):
    r = spectable(["bench", "--checkpoint", b"nahan-target-\xff", "--draft-checkpoint", b"nahan-draft-\xff",
                   "--out", b"m-\xff.json", "--tokens", "8", "--reps", "1", "--quiet"], odd_pair, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "m-\\xff.json" in r.stdout.decode("utf-8")               # printed with an escape, as text
    doc = json.loads(open(os.path.join(odd_pair, b"m-\xff.json"), encoding="utf-8").read())
    assert doc["settings"]["checkpoint"] == "nahan-target-\\xff" and doc["models"]["draft"]["name"] == "nahan-draft-\\xff"


def test_an_export_folder_whose_name_is_not_utf8_works(tmp_path):
    """The status line drew the path through ImGui, which takes text only: TypeError."""
    (tmp_path / "keys.txt").write_text("f12\nwait 3\n", encoding="utf-8")
    r = spectable(["run", "--no-save", "--frames", "8", "--script", "keys.txt", "--export-dir", b"ex-\xff", "--json"],
                  tmp_path)
    assert r.returncode == 0, r.stderr
    state = json.loads(r.stdout.decode("utf-8").strip().splitlines()[-1])
    assert len(state["exports"]) == 1 and state["exports"][0].startswith("ex-\\xff/")
    assert os.listdir(os.path.join(os.fsencode(tmp_path), b"ex-\xff"))[0].endswith(b".png")
