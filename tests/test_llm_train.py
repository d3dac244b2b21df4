"""tools/train_pair.py: the training forward is the inference forward; a few steps of a tiny config reproduce
bit for bit and write loadable Hugging Face folders atomically."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from models.llm.model import LlamaConfig, Transformer
from models.llm.hf import load_checkpoint
from tests.llm_helpers import load_train_pair, one_thread

_threads = pytest.fixture(autouse=True, scope="module")(one_thread)

CORPUS = Path("/work/shared/corpus/nahan")


def test_training_forward_is_the_inference_forward():
    tp = load_train_pair()
    cfg = replace(LlamaConfig.from_name("tiny"), rope_scaling=None, vocab_size=50)
    model = Transformer(cfg)
    tp.init_weights(model, torch.Generator().manual_seed(0))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "norm" in n:
                p.add_(0.3 * torch.randn_like(p))
    model.eval()
    x = torch.randint(0, 50, (2, 40))
    cos, sin = tp.rope_tables(cfg, 40)
    model.setup_caches(2, 48)
    with torch.no_grad():
        assert torch.allclose(tp.train_forward(model, x, cos, sin), model(x, torch.arange(40)), atol=1e-5)
        # dropout is on only when asked for, and then changes the output
        assert not torch.allclose(tp.train_forward(model, x, cos, sin, 0.5), model(x, torch.arange(40)), atol=1e-3)


def _train(out: Path, capsys, *extra):
    """The tool's main() in this process (a fresh interpreter costs more than the few steps); (rc, out, err)."""
    rc = load_train_pair().main(["--corpus", str(CORPUS), "--tiny", "--out", str(out), *extra])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_a_tiny_training_run_reproduces_and_writes_loadable_folders(tmp_path, capsys):
    rc, out, err = _train(tmp_path / "a", capsys)
    assert rc == 0, err[-2000:]
    assert "held out: 03-yao.txt" in out and "train " in out and " val " in out
    assert not torch.are_deterministic_algorithms_enabled()           # torch left as it was
    rc, _, err = _train(tmp_path / "b", capsys, "--only", "draft")
    assert rc == 0, err[-2000:]
    da, db = tmp_path / "a" / "tiny-char-draft", tmp_path / "b" / "tiny-char-draft"
    assert (da / "model.safetensors").read_bytes() == (db / "model.safetensors").read_bytes()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["tiny-char-draft", "tiny-char-target"]  # no temp
    man = json.loads((da / "training.json").read_text())
    assert man["heldout"]["file"] == "03-yao.txt" and "03-yao.txt" not in [p["file"] for p in man["pieces"]]
    assert [c["step"] for c in man["curve"]] == [2, 4] and man["best_step"] in (2, 4)
    model = load_checkpoint(tmp_path / "a" / "tiny-char-target")
    from transformers import LlamaForCausalLM
    hf = LlamaForCausalLM.from_pretrained(str(tmp_path / "a" / "tiny-char-target")).eval()
    assert hf.config.vocab_size == model.config.vocab_size
    capsys.readouterr()
    rc, out, err = _train(tmp_path / "c", capsys, "--draft-steps", "0")
    assert rc == 2 and err.count("\n") == 1 and "steps" in err
