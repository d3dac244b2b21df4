"""Bad input ends in seconds and in bounded memory: documented maxima for the long commands, long runs counted
without keeping their traces, progress on stderr, a GGUF header whose counts lie refused before it is
parsed, GGUF tokenizers that lie refused in one line, memory the estimates cannot see (ulimit -v) one line,
fp32 rows from bf16 logits, and a GIF export still rendering at the end of a run finished with the window
hidden."""
from __future__ import annotations

import io
import os
import resource
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
import torch

from app.cli import main
from corpus.errors import InputError

REPO = Path(__file__).resolve().parents[1]


# ---- documented maxima: refused at once, before any work ---------------------------------------------------
@pytest.mark.parametrize("argv, needle", [
    (["generate", "--tokens", "1000000"], "argument --tokens: 1000000 is out of range (1 to 100000)"),
    (["alpha", "--chars", "10000000"], "argument --chars: 10000000 is out of range (1 to 2000000)"),
    (["drafters", "--chars", "200000"], "argument --chars: 200000 is out of range (1 to 50000)"),
    (["tubes", "--rounds", "1000000"], "argument --rounds: 1000000 is out of range (1 to 20000)"),
    (["eval", "--pair", "ngram", "--chars", "10000000"], "argument --chars: 10000000 is out of range (1 to 1000000)"),
    (["llm-generate", "--random", "tiny", "--prompt-ids", "1", "--tokens", "1000000"],
     "argument --tokens: 1000000 is out of range (1 to 100000)"),
    (["bench", "--tokens", "1000000", "--out", "x.json"], "argument --tokens: 1000000 is out of range (2 to 100000)"),
])
def test_a_request_past_its_documented_maximum_is_refused_at_once(capsys, argv, needle):
    """They ran for minutes (drafters --chars 200000: 404 s; generate --tokens 1000000 past any timeout)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_the_documented_maxima_are_the_ones_in_the_help(capsys):
    for argv, text in ((["generate", "--help"], "at most 100000"), (["alpha", "--help"], "at most 2000000"),
                       (["drafters", "--help"], "at most 50000"), (["tubes", "--help"], "at most 20000")):
        assert main(argv) == 0
        assert text in " ".join(capsys.readouterr().out.split())


def test_a_long_run_is_counted_without_keeping_its_passes():
    """A tree's pass holds every lane's rows: drafters --chars 20000 peaked at 15 GB; 500 tokens were ~375 MB."""
    from models.drafter_analytics import drafter_generated
    from models.drafters import make_drafter
    from models.ngram import NGramPair
    from models.sampler import SamplerSettings
    pair = NGramPair.load()
    drafter = make_drafter("tree", pair, tree_width=3)
    tracemalloc.start()
    try:
        run = drafter_generated(pair, SamplerSettings(gamma=4, seed=0), drafter, chars=500)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert run.tokens >= 500 and run.passes > 100
    assert peak < 40e6, f"{peak / 1e6:.0f} MB traced"


def test_generate_counts_the_same_as_the_kept_traces(capsys):
    """The command now counts pass by pass; its figures are the ones the traces give."""
    import json
    from models.ngram import NGramPair
    from models.sampler import SamplerSettings, SpeculativeSampler
    assert main(["generate", "--tokens", "300", "--seed", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    pair = NGramPair.load()
    sampler = SpeculativeSampler(pair, SamplerSettings(gamma=4, seed=5))
    sampler.reset(pair.encode("孔乙"))
    traces = sampler.run_tokens(300)
    assert out["passes"] == len(traces) and out["accepted"] == sum(t.n_accepted for t in traces)
    assert out["marks"] == "".join("." * t.n_accepted + "◆" for t in traces)


# ---- progress ---------------------------------------------------------------------------------------------
class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_silent_for_a_short_run_then_says_how_far_and_how_long():
    from app.cli.progress import Progress
    clock, log = _Clock(), io.StringIO()
    p = Progress("generating", 1000, "tokens", stream=log, clock=clock)
    clock.t = 1.0
    p(100)
    assert log.getvalue() == ""                                 # under two seconds: nothing
    clock.t = 4.0
    p(400)
    clock.t = 5.0
    p(500)                                                      # a log gets a line every ten seconds only
    assert log.getvalue() == ("spectable: generating: 400 of 1,000 tokens (40%), about 6 s left; Ctrl-C stops\n")
    tty = _Tty()
    p = Progress("generating", 1000, "tokens", stream=tty, clock=clock)
    clock.t += 3
    p(500)
    clock.t += 1
    p(750)
    p.done()
    assert tty.getvalue().count("\r") == 3 and "750 of 1,000" in tty.getvalue() and tty.getvalue().endswith("\r\033[K")


def test_a_slow_generate_reports_progress_on_stderr(capsys, monkeypatch):
    import app.cli.progress as cp
    monkeypatch.setattr(cp, "QUIET_FOR_S", 0.0)
    monkeypatch.setattr(cp, "LOG_EVERY_S", 0.0)
    assert main(["generate", "--tokens", "200"]) == 0
    err = capsys.readouterr().err
    assert "spectable: generating: " in err and "of 200 tokens" in err


# ---- GGUF: a header whose counts lie, a tokenizer that lies ----------------------------------------------
@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    from models.llm.model import CONFIGS, build_random
    from tests.llm_helpers import write_gguf
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    write_gguf(path, build_random(CONFIGS["tiny"], seed=3, std=0.1))
    return path


def _patched(src: Path, dst: Path, key: bytes | None, offset: int, value: int) -> Path:
    data = bytearray(src.read_bytes())
    at = data.index(key) + len(key) + 8 if key else offset        # past the value type and the array's type
    struct.pack_into("<Q", data, at, value)
    dst.write_bytes(bytes(data))
    return dst


@pytest.mark.parametrize("key, offset, needle", [
    (b"tokenizer.ggml.tokens", 0, "'tokenizer.ggml.tokens' claims 1,099,511,627,776 entries"),
    (b"tokenizer.ggml.token_type", 0, "(1,099,511,627,776 entries) claims 4,398,046,511,104 bytes"),
    (None, 16, "claims 1,099,511,627,776 metadata entries"),
    (None, 8, "and 1,099,511,627,776 tensors"),
])
def test_a_gguf_whose_counts_lie_is_refused_before_it_is_parsed(tiny_gguf, tmp_path, key, offset, needle):
    from models.llm.gguf import gguf_config
    bad = _patched(tiny_gguf, tmp_path / "lies.gguf", key, offset, 2 ** 40)
    with pytest.raises(InputError) as exc:
        gguf_config(bad)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_a_gguf_cut_short_is_one_line(tiny_gguf, tmp_path):
    from models.llm.gguf import gguf_config
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_gguf.read_bytes()[:3000])
    with pytest.raises(InputError, match="past the end of the file|more than the file.s 3,000 bytes can hold"):
        gguf_config(cut)


def _lying_tokenizer(tmp_path, edit):
    from models.llm.model import CONFIGS, build_random
    from tests.llm_helpers import write_gguf
    path = tmp_path / "tok.gguf"
    write_gguf(path, build_random(CONFIGS["tiny"], seed=3, std=0.1), tokenizer_edit=edit)
    return path


def _dup(tokens, types, merges, bos):
    return tokens[:-1] + [tokens[5]], types, merges, bos


def _no_space(tokens, types, merges, bos):
    return tokens, types, merges + ["thr"], bos


def _unknown(tokens, types, merges, bos):
    return tokens, types, merges + ["q z"], bos


def _far_bos(tokens, types, merges, bos):
    return tokens, types, merges, 10 ** 9


@pytest.mark.parametrize("edit, needle", [
    (_dup, "lists '\u0103' twice (ids 5 and 511)"),                 # tokenizers: its own exception, a traceback
    (_no_space, "merges entry 8 ('thr') is not two tokens separated by a space"),
    (_unknown, "merges entry 8 ('q z') names 'qz', which is not in tokenizer.ggml.tokens"),
    (_far_bos, "bos_token_id 1000000000 is not a token id (0 to 511)"),    # IndexError when used as the start
], ids=["duplicate", "merge-without-space", "merge-unknown", "bos"])
def test_a_gguf_tokenizer_that_lies_is_one_line(tmp_path, edit, needle):
    from models.llm.gguf import gguf_tokenizer
    path = _lying_tokenizer(tmp_path, edit)
    with pytest.raises(InputError) as exc:
        gguf_tokenizer(path, 512)
    assert needle in str(exc.value), str(exc.value)


def test_attention_rows_that_the_heads_do_not_divide_are_one_line(tiny_gguf, tmp_path):
    """6 heads of 10 dimensions for 64 rows: the un-permute's reshape raised ValueError."""
    from models.llm.gguf import gguf_config, load_gguf
    from tests.llm_helpers import rewrite_gguf
    bad = tmp_path / "heads.gguf"
    rewrite_gguf(tiny_gguf, bad, edit=lambda k, v: {"llama.attention.head_count": 6,
                                                    "llama.attention.head_count_kv": 2,
                                                    "llama.rope.dimension_count": 10}.get(k, v))
    with pytest.raises(InputError, match=r"attn_q.weight has shape \(64, 64\), the metadata implies \(60, 64\)"):
        load_gguf(bad, gguf_config(bad))


# ---- memory the estimates cannot see -------------------------------------------------------------------
def test_an_allocation_refused_by_ulimit_is_one_line():
    """ulimit -v: torch's allocator raised RuntimeError ('DefaultCPUAllocator: can't allocate memory')."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    r = subprocess.run([sys.executable, "-m", "app", "llm-generate", "--random", "llama-3.2-1b", "--prompt-ids", "1",
                        "--tokens", "2"], cwd=REPO, capture_output=True, timeout=300, preexec_fn=limit)
    err = r.stderr.decode()
    assert r.returncode == 2 and "Traceback" not in err, err
    assert err.startswith("spectable: error: out of memory: the request is too big for the memory this process "
                          "may use") and len(err.strip().splitlines()) == 1


def test_a_memory_error_anywhere_in_a_command_is_one_line(capsys, monkeypatch):
    import app.cli.core as core
    monkeypatch.setattr(core, "_cmd_roofline", lambda args: (_ for _ in ()).throw(MemoryError()))
    assert main(["roofline"]) == 2
    assert capsys.readouterr().err == ("spectable: error: out of memory: the request is too big for the memory this "
                                       "process may use\n")


def test_any_other_runtime_error_keeps_its_traceback(monkeypatch):
    """Only allocation failures are turned into a line: a bug must stay visible."""
    import app.cli.core as core
    monkeypatch.setattr(core, "_cmd_roofline", lambda args: (_ for _ in ()).throw(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        main(["roofline"])


# ---- the GPU path's rows stay fp32 -----------------------------------------------------------------------
def test_rows_from_bf16_logits_of_a_large_vocabulary_are_fp32_distributions():
    """Rows that sum to 1 only within bf16 precision are what the rule refuses for large vocabularies: every
    path of ours softmaxes in fp32, on the GPU too (the same functions)."""
    from models.acceptance import ROW_SUM_TOLERANCE
    from models.llm.pair import shape_probs
    from models.llm.speculative import verify_on_device
    gen = torch.Generator().manual_seed(0)
    logits = (torch.randn(5, 128256, generator=gen) * 3).bfloat16()
    for rows in (shape_probs(logits, 1.0), shape_probs(logits, 0.7), shape_probs(logits, 1.0),
                 shape_probs(logits, 0.8, top_k=50), shape_probs(logits, 1.0, top_p=0.9)):
        assert rows.dtype == torch.float32
        assert float((rows.double().sum(-1) - 1).abs().max()) < 1e-4 < ROW_SUM_TOLERANCE
    p = shape_probs(logits, 1.0)
    q = shape_probs(logits.roll(1, dims=-1), 1.0)[:4]
    guesses = q.argmax(-1)
    v = verify_on_device(guesses, q, p, torch.rand(4, dtype=torch.float64, generator=gen),
                         torch.rand((), dtype=torch.float64, generator=gen), check=True)
    assert 0 <= int(v.n_accepted) <= 4


def test_a_bf16_pair_decodes_with_the_exact_rule():
    from models.llm.model import CONFIGS, build_random
    from models.llm.speculative import SpeculativeDecoder
    target = build_random(CONFIGS["tiny"], seed=11, std=0.1).to(torch.bfloat16)
    draft = build_random(CONFIGS["tiny"], seed=12, std=0.1).to(torch.bfloat16)
    for m in (target, draft):
        m.setup_caches(1, 96)
    res = SpeculativeDecoder(target, draft, gamma=3, temperature=1.0, seed=1).generate(list(range(5, 15)), 30)
    assert len(res.tokens) == 30 and not any(r.residual_fallback for r in res.records)


# ---- a GIF still rendering when the run ends -------------------------------------------------------------
def test_a_gif_still_rendering_at_the_end_is_finished_with_the_window_hidden(capsys, tmp_path, monkeypatch):
    """The window stayed open past its frames while the replay rendered; now it is hidden first."""
    import pygame

    from tests.app_helpers import run_app
    hidden = []

    class Window:
        @classmethod
        def from_display_module(cls):
            return cls()

        def hide(self):
            hidden.append(True)
    monkeypatch.setattr(pygame, "Window", Window)
    st = run_app(capsys, tmp_path, "--no-save", "--mode", "lab", "--gif-seconds", "2", "--gif-fps", "6",
                 script=["g"], frames=3)
    gifs = [p for p in st["exports"] if p.endswith(".gif")]
    assert hidden == [True] and len(gifs) == 1 and os.path.getsize(gifs[0]) > 1000
