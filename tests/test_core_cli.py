"""The core CLI contract: --json keys, and bad input as one line on stderr with exit code 2 (no traceback)."""
from __future__ import annotations

import json
import math

import pytest

from app.cli import main


def run(capsys, *argv):
    try:
        rc = main(list(argv))
    except SystemExit as exc:          # argparse's own usage errors exit 2 with one line
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, *argv):
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 0, err
    assert out.count("\n") == 1
    return json.loads(out)


def test_probs_json(capsys):
    d = run_json(capsys, "probs", "--prefix", "慢慢", "--top", "5")
    assert d["prefix"] == "慢慢" and len(d["target"]) == 5 and len(d["draft"]) == 5
    assert 0 < d["overlap"] < 1 and abs(d["overlap"] + d["tv"] - 1) < 1e-12
    assert list(d["target"].values()) == sorted(d["target"].values(), reverse=True)
    rc, out, err = run(capsys, "probs", "--prefix", "慢慢", "--top", "5")
    assert rc == 0 and "Σ min(p, q)" in out


def test_generate_and_step_json(capsys):
    d = run_json(capsys, "generate", "--prefix", "孔乙", "--tokens", "80", "--gamma", "4", "--seed", "1")
    assert d["tokens_written"] >= 80 and len(d["marks"]) == d["tokens_written"] == len(d["tokens"])
    assert d["marks"].count("◆") == d["passes"] and 1 <= d["tokens_per_pass"] <= 5
    assert d == run_json(capsys, "generate", "--prefix", "孔乙", "--tokens", "80", "--gamma", "4", "--seed", "1")
    s = run_json(capsys, "step", "--prefix", "孔乙", "--gamma", "4", "--seed", "1", "--steps", "3")
    assert len(s["steps"]) == 3
    for st in s["steps"]:
        assert len(st["tests"]) == 4 and st["lanes_lit"] == 5
        assert st["tokens_written"][-1] == st["final_token"]
    for lang in ("zh", "en"):
        rc, out, _ = run(capsys, "step", "--prefix", "孔乙", "--seed", "1", "--lang", lang)
        assert rc == 0 and "p/q" in out


def test_alpha_tubes_roofline_corpus_json(capsys, tmp_path):
    a = run_json(capsys, "alpha", "--chars", "20000")
    for k in ("alpha_corpus", "alpha_generated", "tokens_per_pass_formula", "tokens_per_pass_counted",
              "speedup", "best_gamma", "best_speedup"):
        assert k in a
    assert list(a["speedup"]) == [str(g) for g in range(1, 9)]
    assert a["best_speedup"] >= max(a["speedup"].values()) - 1e-12
    # the share kept at each place in a pass multiplies out to the tokens a pass counted (1 + Σ_k Π_(j≤k))
    d = a["alpha_by_depth"]
    assert len(d) == a["gamma"] and all(0 < r < 1 for r in d)
    assert 1 + sum(math.prod(d[:k + 1]) for k in range(len(d))) == pytest.approx(a["tokens_per_pass_counted"])
    t = run_json(capsys, "tubes", "--prefix", "慢慢", "--rounds", "20", "--draws", "50", "--seed", "1")
    for k in ("target_p", "left_counts", "right_counts", "right_accepted", "right_replaced", "tv_left", "tv_right",
              "chi2_p_left", "chi2_p_right"):
        assert k in t
    assert sum(t["left_counts"].values()) == 1000 == sum(t["right_counts"].values())
    assert sum(t["right_accepted"].values()) + sum(t["right_replaced"].values()) == 1000
    r = run_json(capsys, "roofline", "--device", "h100-sxm", "--model", "llama-3.1-8b", "--batch", "64",
                 "--context", "4096")
    assert r["kv_bytes_per_token"] == 131072 and round(r["tokens_per_s"], -1) == 4250
    i = run_json(capsys, "corpus", "info")
    assert i["tokens"] == "char" and len(i["pieces"]) == 5
    (tmp_path / "book.txt").write_text("书名\n一二三一二\n三一\n", encoding="utf-8")
    b = run_json(capsys, "corpus", "build", str(tmp_path), "--out", str(tmp_path / "mine.npz"))
    assert b["N"] == 8 and b["V"] == 4
    p = run_json(capsys, "probs", "--table", str(tmp_path / "mine.npz"), "--prefix", "一二")
    assert set(p["target"]) <= {"一", "二", "三", "↵"}


@pytest.mark.parametrize("argv", [
    ["probs", "--prefix", "慢Q"],
    ["generate", "--gamma", "0"],
    ["generate", "--gamma", "1000"],
    ["generate", "--temperature", "-0.5"],
    ["step", "--top-p", "0"],
    ["roofline", "--device", "tpu-v9"],
    ["roofline", "--model", "gpt-9"],
    ["roofline", "--batch", "0"],
    ["tubes", "--rounds", "0"],
    ["alpha", "--c", "-1"],
    ["corpus", "build", "/nonexistent/folder", "--out", "x.npz"],
    ["probs", "--table", "/nonexistent/t.npz"],
    ["generate", "--gamma", "four"],
    # greedy rows with different top tokens after 慢慢: "guess again until one passes" could never end
    ["tubes", "--temperature", "0", "--rule", "draft_only", "--rounds", "2", "--draws", "10"],
    ["tubes", "--top-k", "1", "--rule", "draft_only", "--rounds", "2", "--draws", "10"],
    ["llm-generate", "--random", "tiny", "--prompt-ids", "1,2", "--tokens", "2", "--temperature", "nan"],
    ["llm-generate", "--random", "tiny", "--prompt-ids", "1,2", "--tokens", "2", "--temperature", "inf"],
    ["llm-generate", "--random", "tiny", "--draft-random", "tiny-draft", "--prompt-ids", "1,2", "--tokens", "2",
     "--gamma", "65"],
    ["roofline", "--lanes", "0"],
    ["probs", "--table", "corpus/tables/nahan-char.npz", "--tokens-kind", "word"],
])
def test_bad_input_one_line_exit_2(capsys, argv):
    rc, out, err = run(capsys, *argv)
    assert rc == 2
    assert err.startswith("spectable: error:") and err.count("\n") == 1 and "Traceback" not in err


def test_bad_corpus_files_exit_2(capsys, tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "gbk.txt").write_bytes("标题\n中文".encode("gbk"))
    for name in ("empty.txt", "gbk.txt", "missing.txt"):
        rc, out, err = run(capsys, "corpus", "build", str(tmp_path / name), "--out", str(tmp_path / "o.npz"))
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
        assert not (tmp_path / "o.npz").exists()
