"""Tokenizers: characters (the default) and jieba words; the newline between paragraphs is a token in both."""
from __future__ import annotations

import logging

from corpus.resources import cache_dir
from corpus.errors import InputError

NEWLINE = "\n"
TOKEN_KINDS = ("char", "word")

_jieba = None


def _get_jieba():
    """Import and initialise jieba once, quietly, with its cache in our folder (init ≈ 0.5 s)."""
    global _jieba
    if _jieba is None:
        import jieba  # lazy: jieba (its dictionary loads for seconds) only for word tables
        jieba.setLogLevel(logging.WARNING)
        jieba.dt.tmp_dir = str(cache_dir())
        jieba.initialize()
        _jieba = jieba
    return _jieba


def char_tokens(paragraphs: list[str]) -> list[str]:
    """Every character is a token; paragraphs are separated by the newline token."""
    return list(NEWLINE.join(paragraphs))


def word_tokens(paragraphs: list[str]) -> list[str]:
    """jieba's default (accurate, HMM on) segmentation of each paragraph; newline tokens between paragraphs."""
    jieba = _get_jieba()
    out: list[str] = []
    for i, par in enumerate(paragraphs):
        if i:
            out.append(NEWLINE)
        out.extend(jieba.lcut(par, HMM=True))
    return out


def tokenize(paragraphs: list[str], kind: str) -> list[str]:
    if kind == "char":
        return char_tokens(paragraphs)
    if kind == "word":
        return word_tokens(paragraphs)
    raise InputError(f"unknown token kind {kind!r} (use one of: {', '.join(TOKEN_KINDS)})")


def segment_words(text: str) -> list[str]:
    """jieba segmentation of free text (a user's prefix in word mode), newlines kept as tokens."""
    jieba = _get_jieba()
    out: list[str] = []
    for i, line in enumerate(text.split(NEWLINE)):
        if i:
            out.append(NEWLINE)
        if line:
            out.extend(jieba.lcut(line, HMM=True))
    return out
