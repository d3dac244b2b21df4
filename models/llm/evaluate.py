"""Held-out evaluation of a pair (neural or n-gram) on 《药》 (03-yao.txt), which neither pair was built from:
per-character perplexity of the target and of the draft, Σ min(p, q) along the story, and α on written text.

The unknown-character policy is one for both pairs. The story is read with corpus/normalise.py (title dropped,
paragraphs joined by '\\n') and every character of it is a position, predicted from the characters before it
(the first from a '\\n', as a story starts after one in both pairs' training text). A position is scored only
when its character is in the vocabulary of the neural pair AND of the n-gram table, so both pairs are scored
on exactly the same characters; the others are counted (`oov_positions`, and which vocabulary lacks them). In
a context, an unknown character is what each model has for it: the neural models read their <unk> token
(trained on 0.5 % of inputs replaced by it), the n-gram models treat a history holding it as unseen and back off.
"""
from __future__ import annotations

import math
import os
import json
from pathlib import Path

import numpy as np

from corpus.errors import InputError
from corpus.normalise import read_piece
from models import analytics
from models.llm.text import from_tokenizer_file
from models.ngram import NGramPair
from models.sampler import SamplerSettings

HELDOUT_FILE_PREFIX = "03"
ENV_CORPUS = "SPECTABLE_CORPUS"


def find_heldout(corpus: str | os.PathLike | None = None) -> Path:
    """The held-out story's file: in --corpus DIR, else $SPECTABLE_CORPUS, else ../shared/corpus/nahan beside the
    repository (where the build instructions keep the book)."""
    root = Path(__file__).resolve().parents[1]
    candidates = [Path(corpus)] if corpus else ([Path(os.environ[ENV_CORPUS])] if os.environ.get(ENV_CORPUS) else [])
    if not candidates:
        candidates = [root.parent / "shared" / "corpus" / "nahan", root.parent.parent / "shared" / "corpus" / "nahan"]
    for c in candidates:
        if c.is_file():
            return c
        hits = sorted(c.glob(f"{HELDOUT_FILE_PREFIX}-*.txt")) if c.is_dir() else []
        if hits:
            return hits[0]
    raise InputError(f"the held-out story ({HELDOUT_FILE_PREFIX}-*.txt, 《药》) was not found in "
                     f"{', '.join(str(c) for c in candidates)}: give --corpus DIR (the folder of the book's texts)")


def heldout_text(path: Path, expected_sha256: str | None = None) -> tuple[str, dict]:
    piece = read_piece(path)
    if expected_sha256 and piece.sha256 != expected_sha256:
        raise InputError(f"{path} is not the text the neural pair held out (sha256 {piece.sha256[:12]}…, "
                         f"expected {expected_sha256[:12]}…)")
    return piece.text, {"file": path.name, "title": piece.title, "sha256": piece.sha256, "chars": len(piece.text)}


def scored_mask(text: str, known_neural, known_ngram) -> tuple[np.ndarray, int, int]:
    """Which characters both pairs score; how many each vocabulary lacks."""
    n_ok = np.array([known_neural(c) for c in text])
    g_ok = np.array([known_ngram(c) for c in text])
    return n_ok & g_ok, int((~n_ok).sum()), int((~g_ok).sum())


def _ngram_known(pair):
    return lambda c: c in pair.index


def _neural_known(text_vocab):
    return text_vocab.known


def score_ngram(pair, text: str) -> dict[str, np.ndarray]:
    """log p, log q of each character of text (after a leading '\\n'), and Σ min(p, q) at each position."""
    ids = [pair.index.get(c, -1) for c in "\n" + text]
    n = len(ids) - 1
    logp, logq, ov = np.zeros(n), np.zeros(n), np.zeros(n)
    for t in range(n):
        a = ids[t - 1] if t >= 1 else -1
        b = ids[t]
        ctx = [] if b < 0 else ([b] if a < 0 else [a, b])     # an unknown character: an unseen history
        p, _ = pair.target_row(ctx)
        q, _ = pair.draft_row(ctx)
        x = ids[t + 1]
        ov[t] = float(np.minimum(p, q).sum())
        if x >= 0:
            logp[t], logq[t] = math.log(p[x]), math.log(q[x])
    return {"logp": logp, "logq": logq, "overlap": ov}


def evaluate(neural: bool, *, corpus=None, ngram_pair=None, neural_pair=None, alpha_tokens: int | None = None,
             gamma: int = 4, seed: int = 0) -> dict:
    """The `spectable eval` figures for one pair (the shipped neural pair, or the n-gram pair); both pairs'
    vocabularies are read to apply the one unknown-character policy."""
    ngram = ngram_pair or NGramPair.load()
    from models.llm.checkpoint import MODELS_DIR  # lazy: pulls in safetensors, torch
    expected = _heldout_sha(MODELS_DIR / "nahan-target" / "training.json")
    path = find_heldout(corpus)
    text, info = heldout_text(path, expected)
    vocab = neural_pair.text if neural_pair is not None else from_tokenizer_file(
        MODELS_DIR / "nahan-target" / "tokenizer.json", 1 << 30)
    mask, oov_neural, oov_ngram = scored_mask(text, _neural_known(vocab), _ngram_known(ngram))
    s = SamplerSettings(gamma=gamma, temperature=1.0, seed=seed)
    if neural:
        from models.llm.pair import LlamaPair, alpha_generated  # lazy: pulls in safetensors, torch
        pair = neural_pair or LlamaPair.shipped()
        ids = pair.encode("\n" + text, strict=False)
        sc = pair.score(ids)
        run = alpha_generated(pair, s, tokens=alpha_tokens or 2000)
        models = {"target": pair.sources.get("target"), "draft": pair.sources.get("draft"),
                  "params_target": pair.target.config.param_count(), "params_draft": pair.draft.config.param_count(),
                  "V": pair.V}
    else:
        sc = score_ngram(ngram, text)
        run = analytics.alpha_generated(ngram, s, chars=alpha_tokens or 200_000)
        models = {"target": "Witten-Bell trigram", "draft": "Witten-Bell bigram", "table": str(ngram.path),
                  "V": ngram.V, "N": ngram.N}
    k = int(mask.sum())
    out = {
        "pair": "neural" if neural else "ngram", "heldout": info, "positions": len(text), "scored_positions": k,
        "oov_positions": int(len(text) - k), "oov_neural_vocabulary": oov_neural, "oov_ngram_vocabulary": oov_ngram,
        "perplexity_target": math.exp(-float(sc["logp"][mask].mean())),
        "perplexity_draft": math.exp(-float(sc["logq"][mask].mean())),
        "bits_per_char_target": -float(sc["logp"][mask].mean()) / math.log(2),
        "bits_per_char_draft": -float(sc["logq"][mask].mean()) / math.log(2),
        "alpha_heldout": float(sc["overlap"][mask].mean()),
        "alpha_generated": run.alpha, "alpha_generated_expected": (run.alpha_expected
                                                                   if math.isfinite(run.alpha_expected) else None),
        "alpha_tokens": run.tokens, "tokens_per_pass_counted": run.tokens_per_pass, "gamma": gamma, "seed": seed,
        "temperature": 1.0, "alpha_method": run.method, "models": models,
        "oov_policy": "positions whose character is outside either pair's vocabulary are left out of both pairs' "
                      "perplexities; in a context an unknown character is <unk> (neural) or an unseen history "
                      "(n-gram, which backs off)",
    }
    return out


def _heldout_sha(training_json: Path) -> str | None:
    try:
        return json.loads(training_json.read_text(encoding="utf-8"))["heldout"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
