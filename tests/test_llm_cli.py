"""The backend's subcommands: model-info, llm-generate, bench, the GPU script's CPU rehearsal; bad input exits 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.llm_helpers import make_checkpoint, one_thread, run_cli


_threads = pytest.fixture(autouse=True, scope="module")(one_thread)

ROOT = Path(__file__).resolve().parents[1]


def test_model_info_json_gives_published_counts(capsys):
    rc, out, err = run_cli(["model-info", "llama-3.1-8b", "--json"], capsys)
    info = json.loads(out)
    assert rc == 0 and err == ""
    assert info["params"] == 8_030_261_248
    assert info["bytes"]["bf16"] == 16_060_522_496 and info["bytes"]["fp32"] == 4 * 8_030_261_248
    assert info["kv_bytes_per_token"]["bf16"] == 131_072
    rc, out, _ = run_cli(["model-info", "llama-3.2-1b", "--json"], capsys)
    info = json.loads(out)
    assert info["params"] == 1_235_814_400 and info["tied_embeddings"] is True
    assert info["config"]["rope_scaling"]["factor"] == 32.0


def test_model_info_reads_a_checkpoint_directory_and_rejects_unknown_names(tmp_path, capsys):
    make_checkpoint(tmp_path / "ck", name="tiny")
    rc, out, _ = run_cli(["model-info", tmp_path / "ck", "--json"], capsys)
    assert rc == 0 and json.loads(out)["params"] == json.loads(
        (run_cli(["model-info", "tiny", "--json"], capsys)[1]))["params"]
    rc, out, err = run_cli(["model-info", "llama-9b"], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("spectable: error:")


def test_llm_generate_text_through_the_tokenizer_speculative_equals_plain(tmp_path, capsys):
    make_checkpoint(tmp_path / "target", name="tiny", seed=1, tokenizer=True)
    make_checkpoint(tmp_path / "draft", name="tiny-draft", seed=2)
    common = ["llm-generate", "--checkpoint", tmp_path / "target", "--prompt", "w5 w6 w7 w8", "--tokens", 20, "--json"]
    rc, out, _ = run_cli(common + ["--draft-checkpoint", tmp_path / "draft", "--gamma", 3], capsys)
    spec = json.loads(out)
    rc2, out2, _ = run_cli(common + ["--draft-checkpoint", tmp_path / "draft", "--plain"], capsys)
    plain = json.loads(out2)
    assert rc == rc2 == 0
    assert spec["prompt_ids"] == [5, 6, 7, 8]
    assert spec["tokens"] == plain["tokens"] and len(spec["tokens"]) == 20
    assert spec["text"] == " ".join(f"w{i}" for i in spec["tokens"])
    assert spec["mode"] == "speculative" and plain["mode"] == "plain" and plain["passes"] == 20
    assert spec["tokens_per_pass"] == pytest.approx(20 / spec["passes"])
    assert "note" not in spec and spec["random_weights"] is False


def test_llm_generate_random_weights_say_text_is_not_real(capsys):
    rc, out, _ = run_cli(["llm-generate", "--random", "tiny", "--draft-random", "tiny-draft", "--prompt-ids", "1,2,3",
                          "--tokens", 8, "--temperature", 0.9, "--seed", 4, "--json"], capsys)
    res = json.loads(out)
    assert rc == 0 and res["random_weights"] and "text is not" in res["note"]
    assert len(res["tokens"]) == 8 and "text" not in res


@pytest.mark.parametrize("argv,needle", [
    (["llm-generate", "--checkpoint", "{tmp}/nonexistent/ck", "--prompt-ids", "1", "--tokens", 2], "does not exist"),
    (["llm-generate", "--random", "tiny", "--prompt", "hello", "--tokens", 2], "tokenizer.json"),
    (["llm-generate", "--random", "tiny", "--prompt-ids", "1,x", "--tokens", 2], "integers"),
    (["llm-generate", "--random", "tiny", "--prompt-ids", "1,99999", "--tokens", 2], "vocabulary"),
    (["llm-generate", "--random", "tiny", "--draft-random", "mini-draft-128k", "--prompt-ids", "1", "--tokens", 2],
     "vocabulary"),
    (["llm-generate", "--random", "tiny", "--prompt-ids", "1", "--tokens", 2, "--device", "cuda"], "CUDA"),
    (["bench", "--device", "cuda", "--out", "x.json"], "CUDA"),
    (["bench", "--target", "tiny", "--draft", "tiny-draft", "--batch", "1000000", "--context", "4096",
      "--out", "x.json"], "GB"),
    (["bench", "--target", "tiny", "--draft", "mini-draft-128k", "--out", "x.json"], "vocabulary"),
    (["bench", "--target", "tiny", "--draft", "tiny-draft", "--batch", "1,a", "--out", "x.json"], "integers"),
    (["bench", "--target", "tiny", "--draft", "tiny-draft", "--checkpoint", "{tmp}/nonexistent", "--out", "x.json"],
     "does not exist"),
])
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) if isinstance(a, str) else a for a in argv]   # a path that is not there
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("spectable: error:") and needle in err
    assert not (tmp_path / "x.json").exists()


def test_bench_writes_every_figure_beside_its_on_paper_value(tmp_path, capsys):
    out_file = tmp_path / "m" / "bench.json"
    rc, out, err = run_cli(["bench", "--device", "cpu", "--target", "tiny", "--draft", "tiny-draft", "--dtype", "fp32",
                            "--batch", "1,3", "--context", 48, "--tokens", 12, "--reps", 2, "--out", out_file,
                            "--json"], capsys)
    assert rc == 0
    r = json.loads(out)
    assert json.loads(out_file.read_text()) == r
    assert "bench [" in err                                       # progress on stderr, stdout is one object
    assert r["device"]["type"] == "cpu" and r["device"]["torch"] and r["date"] and r["dtype"] == "fp32"
    assert r["settings"]["batches"] == [1, 3] and r["settings"]["gamma"] == 4
    assert "text is not" in r["weights"]["note"]
    f = r["figures"]
    assert f["copy_bandwidth"]["GB_per_s"] > 0
    d = f["decode_batch1"]
    assert d["ms_per_token"] > 0 and d["on_paper_ms"] > 0
    assert d["fraction_of_roofline"] == pytest.approx(d["on_paper_ms"] / d["ms_per_token"])
    assert f["verify_cost"]["tokens"] == 5 and f["verify_cost"]["ratio"] > 0
    assert f["draft_cost"]["c"] == pytest.approx(f["draft_cost"]["draft_ms"] / f["draft_cost"]["target_ms"])
    tiny_bytes = r["models"]["target"]["weight_bytes_read_per_token"]
    assert r["models"]["target"]["kv_bytes_per_token"] == 2 * 2 * 16 * 2 * 4
    for p, b in zip(f["batch_sweep"]["points"], [1, 3]):
        assert p["batch"] == b and p["context"] == 48
        assert p["bytes_per_step"] == tiny_bytes + b * 48 * r["models"]["target"]["kv_bytes_per_token"]
        assert p["on_paper_tokens_per_s"] > 0 and p["tokens_per_s"] > 0
    sp = f["speculative"]
    assert sp["same_tokens_as_plain"] is True                     # fp32 greedy: token for token
    assert sp["tokens_per_pass"] >= 1 and 0 <= sp["alpha"] <= 1 and "not meaningful" in sp["alpha_note"]
    assert all(k in x for x in f.values() for k in ["method"] if isinstance(x, dict))
    assert not list((tmp_path / "m").glob("*.tmp*"))             # written atomically, no temp left
    # the hardware model picks the file up as a measured device (bandwidth and arithmetic rate)
    from models import hardware
    dev = hardware.load_measurements(tmp_path / "m")["measured-bench"]
    assert dev.bandwidth_Bps == pytest.approx(f["copy_bandwidth"]["GB_per_s"] * 1e9)
    assert dev.flops == pytest.approx(f["matmul"]["TFLOP_per_s"] * 1e12)


def test_gpu_script_rehearses_on_cpu(tmp_path):
    env = dict(os.environ, DEVICE="cpu", TARGET="tiny", DRAFT="tiny-draft", DTYPE="fp32", BATCHES="1,2",
               CONTEXT="32", TOKENS="10", RESULT=str(tmp_path / "res" / "m.json"), OUT=str(tmp_path / "out"),
               PYTHON=sys.executable, OMP_NUM_THREADS="1")
    proc = subprocess.run(["bash", str(ROOT / "tools" / "gpu_measure.sh")], env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads((tmp_path / "out" / "m.json").read_text())
    assert r["settings"]["batches"] == [1, 2] and r["settings"]["context"] == 32
    log = (tmp_path / "out" / "gpu_measure.log").read_text()
    assert "verify(5)/verify(1)" in log and "c = draft/target" in log and "roofline" in log


def test_fast_path_steps_down_when_compiling_fails_and_says_so():
    from models.llm.model import CONFIGS, block_forward, build_random
    from models.llm.bench import BenchSettings, FastPath

    model = build_random(CONFIGS["tiny"])
    fast = FastPath(BenchSettings(compile="on"), torch.device("cpu"), [model])
    assert fast.compile and model.block_impl is not block_forward
    calls = []

    def run():
        calls.append(model.block_impl)
        if len(calls) == 1:
            raise RuntimeError("inductor: no compiler here")
        return 42
    assert fast.guarded(run) == 42
    assert not fast.compile and model.block_impl is block_forward
    assert "compiled blocks failed" in fast.describe()["fallbacks"][0]
    with pytest.raises(RuntimeError):                       # nothing left to drop: the error is real
        fast.guarded(lambda: (_ for _ in ()).throw(RuntimeError("real")))
