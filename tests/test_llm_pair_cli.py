"""`--pair neural` and `--target/--draft` on the core commands: the same JSON keys as the n-gram pair; `eval`;
`bench` of a checkpoint pair; every kind of bad input is one line and exit code 2."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from app.cli import main
from models.measurements import PAIR_SCHEMA
from models.llm.model import LlamaConfig, build_random
from tests.llm_helpers import char_checkpoint, one_thread, write_gguf

_threads = pytest.fixture(autouse=True, scope="module")(one_thread)

CORPUS = Path("/work/shared/corpus/nahan")      # the book, beside the repository on the project's machines
VOCAB = ["<unk>", "\n", "一", "了", "人", "地", "己", "慢", "的", "，", "孔", "乙"]


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def run_json(argv, capsys):
    rc, out, err = run(list(argv) + ["--json"], capsys)
    assert rc == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    d = tmp_path_factory.mktemp("ck")
    char_checkpoint(d / "t", VOCAB, name="tiny", seed=1)
    char_checkpoint(d / "d", VOCAB, name="tiny-draft", seed=2)
    return d


def _keys(obj):
    return sorted(obj) if isinstance(obj, dict) else obj


@pytest.mark.parametrize("argv", [
    ["generate", "--tokens", 20, "--seed", 3],
    ["step", "--steps", 2, "--prefix", "孔乙"],
    ["tubes", "--rounds", 20, "--draws", 20],
    ["probs", "--top", 3],
    ["alpha", "--chars", 120],
])
def test_neural_pair_answers_with_the_n_gram_keys(argv, capsys):
    ngram = run_json(argv + ["--pair", "ngram"], capsys)
    neural = run_json(argv + ["--pair", "neural"], capsys)
    assert _keys(neural) == _keys(ngram)
    if argv[0] == "step":
        a, b = ngram["steps"][0], neural["steps"][0]
        assert _keys(a) == _keys(b) and _keys(a["tests"][0]) == _keys(b["tests"][0])
        assert b["lanes_lit"] == 5 and not any(b["target_backed_off"])
    if argv[0] == "generate":
        assert len(neural["tokens"]) == neural["tokens_written"] >= 20
        assert neural["text"] == "".join(neural["tokens"]) and len(neural["marks"]) == len(neural["tokens"])
    if argv[0] == "tubes":
        assert sum(neural["right_counts"].values()) == 400 and neural["exact"] is True
    if argv[0] == "alpha":
        assert neural["alpha_corpus"] is None and neural["method"] == "decoder"
        assert 0 < neural["alpha_generated"] < 1 and neural["chars"] >= 120


def test_eval_scores_both_pairs_on_the_same_characters_of_the_held_out_story(capsys):
    common = ["--corpus", CORPUS, "--chars", 150]
    n = run_json(["eval", "--pair", "neural"] + common, capsys)
    g = run_json(["eval", "--pair", "ngram"] + common, capsys)
    assert _keys(n) == _keys(g)
    assert n["heldout"]["file"] == "03-yao.txt" and n["heldout"] == g["heldout"]
    assert n["scored_positions"] == g["scored_positions"] and n["oov_positions"] == g["oov_positions"]
    assert n["scored_positions"] + n["oov_positions"] == n["positions"] == n["heldout"]["chars"]
    assert 0 < n["oov_neural_vocabulary"] < n["oov_ngram_vocabulary"] <= n["oov_positions"]
    for r in (n, g):
        assert 1 < r["perplexity_target"] < 3000 and 1 < r["perplexity_draft"] < 3000
        assert 0 < r["alpha_heldout"] < 1 and 0 < r["alpha_generated"] < 1
    # both networks beat both counted models on unseen text (the trigram does worse there than its bigram)
    assert max(n["perplexity_target"], n["perplexity_draft"]) < min(g["perplexity_target"], g["perplexity_draft"])


def test_custom_checkpoints_drive_step_alpha_and_bench(ckpts, capsys, tmp_path):
    pair = ["--target", ckpts / "t", "--draft", ckpts / "d"]
    st = run_json(["step", "--prefix", "孔乙", "--steps", 3, "--gamma", 3] + pair, capsys)
    assert len(st["steps"]) == 3 and all(len(s["tests"]) == 3 for s in st["steps"])
    assert set("".join(st["text"])) <= set(VOCAB)
    al = run_json(["alpha", "--chars", 60] + pair, capsys)
    assert 0 <= al["alpha_generated"] <= 1
    out = tmp_path / "pair.json"
    b = run_json(["bench", "--prompt", "孔乙己", "--tokens", 12, "--reps", 1, "--compile", "off", "--out", out] + pair,
                 capsys)
    assert json.loads(out.read_text()) == b and b["schema"] == PAIR_SCHEMA
    assert b["draft_step"] == "eager" and b["drafter"] == "chain"          # --compile off: as the table runs it
    lk = run_json(["bench", "--prompt", "孔乙己孔乙己", "--tokens", 12, "--reps", 1, "--drafter", "lookup",
                   "--target", ckpts / "t"], capsys)                    # a target alone, guessing by copying
    assert lk["drafter"] == "lookup" and lk["draft_step"] is None and lk["models"]["draft"] is None
    assert lk["in_run"]["c"] >= 0 and lk["speedup"] > 0 and lk["draft_ms"] == 0
    assert b["c"] == pytest.approx(b["draft_ms"] / b["target_ms"])
    run = b["in_run"]                                   # the formula is fed with the same runs' costs
    assert sum(run["share_of_pass"].values()) == pytest.approx(1.0)
    assert run["c"] == pytest.approx(run["draft_ms_per_guess"] / run["plain_ms_per_token"])
    assert b["on_paper"]["speedup_from_measured_costs"] == run["speedup_formula"] > 0
    assert str(ckpts) not in out.read_text()            # no absolute path of this machine in the file
    assert b["pair"]["target"] == "t" and b["pair"]["draft"] == "d"
    assert b["speedup"] == pytest.approx(b["speculative_tokens_per_s"] / b["plain_tokens_per_s"])
    assert 0 < b["on_paper"]["c"] < 1 and b["on_paper"]["target_ms"] > 0 and "threads" in b["method"]


def test_gguf_checkpoints_drive_the_step_with_decoded_tokens(tmp_path, capsys):
    from dataclasses import replace
    t = build_random(replace(LlamaConfig.from_name("tiny"), rope_scaling=None, max_position_embeddings=256), seed=4,
                     std=0.2)
    d = build_random(replace(LlamaConfig.from_name("tiny-draft"), rope_scaling=None, max_position_embeddings=256),
                     seed=5, std=0.2)
    write_gguf(tmp_path / "t.gguf", t)
    write_gguf(tmp_path / "d.gguf", d)
    st = run_json(["step", "--target", tmp_path / "t.gguf", "--draft", tmp_path / "d.gguf", "--prefix", "the",
                   "--steps", 2], capsys)
    assert st["steps"][0]["context_tail"] == "the"
    assert all(isinstance(g, str) and g for s in st["steps"] for g in s["guesses"])
    gen = run_json(["llm-generate", "--checkpoint", tmp_path / "t.gguf", "--draft-checkpoint", tmp_path / "d.gguf",
                    "--prompt", "the other", "--tokens", 6], capsys)
    plain = run_json(["llm-generate", "--checkpoint", tmp_path / "t.gguf", "--prompt", "the other", "--tokens", 6],
                     capsys)
    from models.llm.gguf import gguf_tokenizer
    assert gen["prompt_ids"] == gguf_tokenizer(tmp_path / "t.gguf", 512).encode("the other")
    assert gen["tokens"] == plain["tokens"]                                          # greedy: equal
    assert isinstance(gen["text"], str) and gen["mode"] == "speculative"


def _broken(ckpts, tmp_path):
    bad_shape = tmp_path / "bad-shape"
    shutil.copytree(ckpts / "t", bad_shape)
    cfg = json.loads((bad_shape / "config.json").read_text())
    cfg["intermediate_size"] = 96
    (bad_shape / "config.json").write_text(json.dumps(cfg))
    no_tok = tmp_path / "no-tok"
    shutil.copytree(ckpts / "t", no_tok)
    (no_tok / "tokenizer.json").unlink()
    other_vocab = tmp_path / "other-vocab"
    char_checkpoint(other_vocab, VOCAB + ["好"], name="tiny-draft")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"\0" * 64)
    return {"bad_shape": bad_shape, "no_tok": no_tok, "other_vocab": other_vocab, "junk": junk}


@pytest.mark.parametrize("argv,needle", [
    (["step", "--target", "/nonexistent/ck", "--draft", "{d}"], "does not exist"),
    (["step", "--target", "{t}"], "give --draft"),
    (["step", "--draft", "{d}"], "needs a --target"),
    (["step", "--pair", "ngram", "--target", "{t}", "--draft", "{d}"], "do not go with"),
    (["step", "--pair", "neural", "--prefix", "孔乙☃x"], "not in the vocabulary"),
    (["step", "--pair", "neural", "--temperature", "-1"], "temperature"),
    (["generate", "--pair", "neural", "--temperature", "nan"], "temperature"),
    (["step", "--pair", "neural", "--gamma", "0"], "gamma"),
    (["alpha", "--pair", "neural", "--gamma", "65"], "gamma"),
    (["step", "--pair", "neural", "--table", "corpus/tables/nahan-char.npz"], "--table"),
    (["step", "--target", "{bad_shape}", "--draft", "{d}"], "shape"),
    (["step", "--target", "{no_tok}", "--draft", "{d}"], "tokenizer.json"),
    (["step", "--target", "{t}", "--draft", "{other_vocab}"], "vocabulary"),
    (["alpha", "--target", "{junk}", "--draft", "{d}"], "not a readable GGUF"),
    (["tubes", "--target", "{t}", "--draft", "{d}", "--prefix", "好"], "not in the vocabulary"),
    (["eval", "--pair", "neural", "--corpus", "/nonexistent"], "held-out story"),
    (["alpha", "--pair", "neural", "--chars", "200000"], "--chars"),
    (["bench", "--pair", "neural", "--target", "tiny"], "without it"),
    (["bench", "--target", "{t}", "--draft", "{d}", "--tokens", "1"], "--tokens"),
    (["bench", "--target", "{t}", "--draft", "{d}", "--temperature", "-2"], "temperature"),
    (["bench", "--target", "{t}", "--draft", "{d}", "--prompt", "☃"], "not in the vocabulary"),
])
def test_bad_input_is_one_line_and_exit_2(argv, needle, ckpts, tmp_path, capsys):
    paths = {"t": ckpts / "t", "d": ckpts / "d", **_broken(ckpts, tmp_path)}
    rc, out, err = run([a.format(**{k: str(v) for k, v in paths.items()}) for a in argv], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("spectable: error:") and needle in err, err


def test_memory_is_estimated_before_loading(ckpts, capsys, monkeypatch):
    import models.llm.checkpoint as lc
    import models.llm.device as ld
    loaded = []
    monkeypatch.setattr(ld, "available_bytes", lambda device: 10_000)
    monkeypatch.setattr(lc, "load_weights", lambda *a, **k: loaded.append(a))
    rc, out, err = run(["step", "--target", ckpts / "t", "--draft", ckpts / "d"], capsys)
    assert rc == 2 and "need about" in err and "GB free" in err and loaded == []


def _hub_snapshot(src: Path, hub: Path, name: str) -> Path:
    """A copy of checkpoint folder `src` in the Hugging Face cache's layout: every file of
    hub/models--spectable--<name>/snapshots/<rev>/ is a relative link to ../../blobs/<hash>."""
    repo = hub / f"models--spectable--{name}"
    snap = repo / "snapshots" / ("a" * 40)
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    for i, f in enumerate(sorted(p for p in src.iterdir() if p.is_file())):
        blob = repo / "blobs" / f"{i:064x}"
        shutil.copyfile(f, blob)
        os.symlink(os.path.relpath(blob, snap), snap / f.name)
    return snap


def test_a_hugging_face_cache_snapshot_drives_the_step_as_its_folder_does(ckpts, tmp_path, capsys):
    """config.json, tokenizer.json and the weights are links to blobs outside the folder: they load, and the step
    is the one the plain folders give."""
    t, d = _hub_snapshot(ckpts / "t", tmp_path / "hub", "t"), _hub_snapshot(ckpts / "d", tmp_path / "hub", "d")
    assert all((t / n).is_symlink() for n in ("config.json", "tokenizer.json", "model.safetensors"))
    argv = ["step", "--steps", 2, "--prefix", "孔乙", "--seed", 4]
    via_links = run_json(argv + ["--target", t, "--draft", d], capsys)
    plain = run_json(argv + ["--target", ckpts / "t", "--draft", ckpts / "d"], capsys)
    assert via_links["steps"] == plain["steps"] and via_links["text"] == plain["text"]


@pytest.mark.parametrize("odd", ["fifo", "folder", "link_to_fifo", "dangling"])
def test_other_odd_files_in_a_checkpoint_stay_refused(odd, ckpts, tmp_path, capsys):
    """Only a regular file, or a link to one, is read: a FIFO (reading it would wait forever), a folder, a link to
    a FIFO or to nothing is one line and exit 2."""
    ck = tmp_path / "ck"
    shutil.copytree(ckpts / "t", ck)
    (ck / "tokenizer.json").unlink()
    if odd == "fifo":
        os.mkfifo(ck / "tokenizer.json")
    elif odd == "folder":
        (ck / "tokenizer.json").mkdir()
    elif odd == "link_to_fifo":
        os.mkfifo(tmp_path / "pipe")
        os.symlink(tmp_path / "pipe", ck / "tokenizer.json")
    else:
        os.symlink(tmp_path / "nothing.json", ck / "tokenizer.json")
    rc, out, err = run(["step", "--target", ck, "--draft", ckpts / "d", "--prefix", "孔乙"], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "tokenizer.json" in err and ("not a regular file" in err), err
