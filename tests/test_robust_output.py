"""The CLI's output side: whatever standard output is (closed, a full disk, a terminal whose encoding lacks
Chinese, a reader that goes away), a command ends with at most one line on stderr and the documented exit
code, never a traceback; every --json output is valid JSON (no NaN or Infinity)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus import jsonio
from tests.fuzz_helpers import budget

REPO = Path(__file__).resolve().parents[1]

# Cheap commands (well under a second of work each) that print Chinese, numbers and JSON.
COMMANDS = [
    ["probs", "--prefix", "我们"],
    ["probs", "--prefix", "我们", "--json"],
    ["generate", "--tokens", "30", "--prefix", "孔乙"],
    ["step", "--prefix", "孔乙"],
    ["roofline", "--json"],
    ["alpha", "--chars", "2000", "--json"],
    ["model-info", "tiny"],
]


def _spectable(argv, stdout, env_changes=None, pass_fds=()):
    env = dict(os.environ, **(env_changes or {}))
    return subprocess.run([sys.executable, "-m", "app", *argv], cwd=REPO, stdin=subprocess.DEVNULL, stdout=stdout,
                          stderr=subprocess.PIPE, env=env, timeout=300, pass_fds=pass_fds)


def _closed_stdout(argv):
    """The command with file descriptor 1 closed, as `spectable ... >&-` runs it."""
    code = ("import os, subprocess, sys; os.close(1); "
            "sys.exit(subprocess.call([sys.executable, '-m', 'app', *sys.argv[1:]], cwd=%r))" % str(REPO))
    return subprocess.run([sys.executable, "-c", code, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=300)


def _one_clean_line(err: bytes) -> str:
    text = err.decode("utf-8", "replace")
    assert "Traceback" not in text and "Exception ignored" not in text, text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) <= 1, text
    return lines[0] if lines else ""


@pytest.mark.parametrize("argv", COMMANDS[:2], ids=["text", "json"])
def test_a_full_disk_on_stdout_is_one_line_and_exit_2(argv):
    with open("/dev/full", "wb") as full:
        r = _spectable(argv, full)
    line = _one_clean_line(r.stderr)
    assert r.returncode == 2 and line == "spectable: error: cannot write to standard output: No space left on device"


@pytest.mark.parametrize("argv", COMMANDS[:2], ids=["text", "json"])
def test_a_closed_stdout_is_one_line_and_exit_2(argv):
    r = _closed_stdout(argv)
    line = _one_clean_line(r.stderr)
    assert r.returncode == 2 and line == "spectable: error: cannot write to standard output: it is closed"


def test_a_latin1_terminal_gets_escapes_not_an_encoding_error():
    r = _spectable(["probs", "--prefix", "我们"], subprocess.PIPE, {"PYTHONIOENCODING": "latin-1"})
    assert r.returncode == 0 and _one_clean_line(r.stderr) == ""
    first = r.stdout.decode("latin-1").splitlines()[0]
    assert first.startswith("after \\u300c\\u6211\\u4eec\\u300d"), first      # 「我们」, escaped


def test_an_ascii_terminal_still_gets_valid_json():
    r = _spectable(["probs", "--prefix", "我们", "--json"], subprocess.PIPE, {"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0 and _one_clean_line(r.stderr) == ""
    assert json.loads(r.stdout.decode("ascii"))["prefix"] == "我们"       # \u escapes are JSON's own


@given(argv=st.sampled_from(COMMANDS), sink=st.sampled_from(["full", "closed", "latin-1", "ascii", "pipe"]))
@budget(8)
def test_fuzz_every_command_against_every_kind_of_stdout(argv, sink):
    """Each command, each stdout: exit 0 with the output (pipe, escaped terminals) or 2 with one line."""
    if sink == "closed":
        r = _closed_stdout(argv)
    elif sink == "full":
        with open("/dev/full", "wb") as full:
            r = _spectable(argv, full)
    else:
        enc = {"latin-1": {"PYTHONIOENCODING": "latin-1"}, "ascii": {"PYTHONIOENCODING": "ascii"}}.get(sink)
        r = _spectable(argv, subprocess.PIPE, enc)
    line = _one_clean_line(r.stderr)
    if sink in ("full", "closed"):
        assert r.returncode == 2 and line.startswith("spectable: error: cannot write to standard output: ")
    else:
        assert r.returncode == 0 and line == "" and r.stdout.strip()
        if "--json" in argv:
            json.loads(r.stdout.decode("latin-1" if sink == "latin-1" else "utf-8"))


def test_a_reader_that_goes_away_mid_output_ends_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "app", "generate", "--tokens", "3000"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0 and _one_clean_line(err) == ""


# ---- JSON: every --json output and every file written is valid JSON ---------------------------------------
def test_a_result_that_came_out_nan_is_written_as_null():
    """drafters --chars 5: a drafter that never guessed has α = 0/0. It printed 'Out of range float values are
    not JSON compliant' as a traceback; now that figure is null."""
    r = _spectable(["drafters", "--chars", "5", "--json"], subprocess.PIPE)
    assert r.returncode == 0, r.stderr.decode()
    text = r.stdout.decode()
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert any(p.get("alpha") is None for p in doc["points"]) and "NaN" not in text


@given(st.recursive(st.one_of(st.floats(), st.integers(), st.text(), st.none(), st.booleans()),
                    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(), inner, max_size=4)),
                    max_leaves=20))
@budget(200)
def test_fuzz_jsonio_always_writes_strict_json(obj):
    """Any nesting of floats (NaN, ±inf), text (lone surrogates too) and numbers: the text is strict JSON and
    encodes to UTF-8."""
    text = jsonio.dumps(obj)
    text.encode("utf-8")
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
