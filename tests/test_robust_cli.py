"""CLI numbers: one validation layer (app.cli.numbers) used by every subcommand; a closed pipe ends quietly."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import build_parser, main
from app.cli.llm import main as llm_main

REPO = Path(__file__).resolve().parents[1]


def _run(capsys, argv, entry=main):
    rc = entry([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("argv, needle", [
    (["llm-generate", "--random", "tiny", "--prompt-ids", "1,2", "--tokens", "2", "--seed", str(2 ** 70)],
     "argument --seed: 1180591620717411303424 is out of range (0 to 2147483647)"),
    (["llm-generate", "--random", "tiny", "--prompt-ids", "1,-2", "--tokens", "2"], "argument --prompt-ids"),
    (["llm-generate", "--random", "tiny", "--prompt-ids", "1", "--tokens", "1e3"], "'1e3' is not a whole number"),
    (["llm-generate", "--random", "tiny", "--prompt-ids", "1", "--tokens", "2", "--temperature", "1e400"],
     "argument --temperature: '1e400' is not a finite number"),
    (["bench", "--reps", "-1", "--out", "x.json"], "argument --reps: -1 is out of range (0 to 100000)"),
    (["bench", "--threads", "5000", "--out", "x.json"], "argument --threads"),
    (["bench", "--batch", "1,0", "--out", "x.json"], "argument --batch: 0 is out of range"),
    (["bench", "--batch", ",", "--out", "x.json"], "argument --batch: is empty"),
    (["bench", "--context", "0", "--out", "x.json"], "argument --context"),
    (["bench", "--tokens", "1", "--out", "x.json"], "argument --tokens"),
    (["bench", "--prompt-len", "9" * 5000, "--out", "x.json"], "is not a whole number"),
    (["generate", "--seed", "-1"], "argument --seed: -1 is out of range"),
    (["generate", "--tokens", "0"], "argument --tokens"),
    (["generate", "--top-p", "nan"], "argument --top-p: 'nan' is not a finite number"),
    (["generate", "--lenience", "0"], "argument --lenience: 0 is out of range (above 0 to 1)"),
    (["step", "--steps", "10001"], "argument --steps"),
    (["probs", "--top", "0"], "argument --top"),
    (["probs", "--top-k", "-3"], "argument --top-k"),
    (["probs", "--temperature", "inf"], "argument --temperature"),
    (["alpha", "--c", "nan"], "argument --c"),
    (["alpha", "--chars", "0"], "argument --chars"),
    (["tubes", "--draws", "1e9"], "argument --draws"),
    (["roofline", "--context", "-1"], "argument --context"),
    (["roofline", "--batch", str(2 ** 64)], "argument --batch"),
    (["render", "--fps", "-inf"], "argument --fps"),
    (["render", "--seed", "4294967296"], "argument --seed"),
    (["render", "--msaa", "3"], "--msaa must be 0, 2, 4 or 8"),
    (["run", "--frames", "0"], "argument --frames"),
    (["run", "--gif-seconds", "nan"], "argument --gif-seconds"),
    (["run", "--seed", "2147483648"], "argument --seed"),
])
def test_a_bad_number_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run(capsys, argv)
    assert rc == 2 and out == "" and err.startswith("spectable: error:") and err.count("\n") == 1
    assert needle in err, err
    assert list(tmp_path.iterdir()) == []                              # nothing written


def test_the_backend_entry_validates_alike(capsys):
    rc, _, err = _run(capsys, ["bench", "--reps", "-1", "--out", "x.json"], llm_main)
    assert rc == 2 and "argument --reps" in err and err.count("\n") == 1


def _options(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for sub_name, opt in _options(sub):
                    yield f"{name} {sub_name}".strip(), opt
        else:
            yield "", action


def test_every_numeric_option_of_every_subcommand_goes_through_the_layer():
    plain = [(cmd, a.option_strings) for cmd, a in _options(build_parser()) if a.type in (int, float)]
    assert plain == []                                                # no bare type=int / type=float anywhere
    ours = {cmd for cmd, a in _options(build_parser()) if getattr(a.type, "__module__", "") == "app.cli.numbers"}
    assert {"generate", "step", "probs", "alpha", "tubes", "roofline", "render", "llm-generate", "bench",
            "run"} <= ours


def test_seeds_at_the_limit_run(capsys):
    rc, out, _ = _run(capsys, ["generate", "--tokens", "5", "--seed", str(2 ** 31 - 1), "--json"])
    assert rc == 0 and '"seed": 2147483647' in out


# ---- a reader that goes away --------------------------------------------------------------------------
def _spectable(*argv):
    return subprocess.Popen([sys.executable, "-m", "app", *argv], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_step_piped_into_head_exits_0_quietly():
    """`spectable step --steps 2000 | head -1`: the reader closes after one line."""
    proc = _spectable("step", "--steps", "2000", "--prefix", "孔乙")
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0 and first.strip() and err == b""


def test_a_pipe_closed_before_a_short_output_is_flushed_exits_0_quietly():
    proc = _spectable("probs", "--json")
    proc.stdout.close()                   # nothing read: the one write fails at the final flush
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0 and err == b""
