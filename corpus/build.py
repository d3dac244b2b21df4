"""Building a count table from text files: read, normalise, tokenize, count, save (with its manifest)."""
from __future__ import annotations

import shlex
from pathlib import Path

from corpus.normalise import NORMALISATION, read_piece, resolve_sources
from corpus.atomic import remove_stale_temps
from corpus.tables import CountTables, count_tokens, manifest_path, save_tables
from corpus.tokenizers import NEWLINE, TOKEN_KINDS, tokenize
from corpus.errors import InputError

TABLES_DIR = Path(__file__).resolve().parent / "tables"


def default_table_path(tokens: str = "char") -> Path:
    """The shipped table for the default five stories."""
    if tokens not in TOKEN_KINDS:
        raise InputError(f"unknown token kind {tokens!r} (use one of: {', '.join(TOKEN_KINDS)})")
    return TABLES_DIR / f"nahan-{tokens}.npz"


def build_tables(paths, pieces=None, tokens: str = "char", command: str | None = None) -> CountTables:
    """Count a table from folders/files; pieces are joined in the order given, separated by a newline token."""
    if tokens not in TOKEN_KINDS:
        raise InputError(f"unknown token kind {tokens!r} (use one of: {', '.join(TOKEN_KINDS)})")
    files = resolve_sources(paths, pieces)
    all_tokens: list[str] = []
    piece_info = []
    for k, f in enumerate(files):
        piece = read_piece(f)
        toks = tokenize(piece.paragraphs, tokens)
        if k:
            all_tokens.append(NEWLINE)
        all_tokens.extend(toks)
        piece_info.append({"file": f.name, "title": piece.title, "sha256": piece.sha256,
                           "paragraphs": len(piece.paragraphs), "tokens": len(toks)})
    if len(all_tokens) < 3:
        raise InputError("too little text to count trigrams (need at least 3 tokens)")
    manifest = {"tokens": tokens, "pieces": piece_info, "normalisation": NORMALISATION,
                "newline_token": NEWLINE, "models": {
                    "draft_q": "interpolated Witten-Bell bigram over a Witten-Bell unigram floor",
                    "target_p": "interpolated Witten-Bell trigram over the draft bigram"}}
    if tokens == "word":
        from importlib.metadata import version
        manifest["tokenizer"] = f"jieba {version('jieba')} lcut (accurate mode, HMM on), per paragraph"
    else:
        manifest["tokenizer"] = "one token per character"
    if command:
        manifest["command"] = command
    return count_tokens(all_tokens, manifest)


def build_command(paths, pieces, tokens, out) -> str:
    parts = ["spectable", "corpus", "build", *map(str, paths)]
    if pieces:
        parts += ["--pieces", *map(str, pieces)]
    parts += ["--tokens", tokens, "--out", str(out)]
    return " ".join(shlex.quote(p) for p in parts)


def build_and_save(paths, out, pieces=None, tokens: str = "char") -> CountTables:
    out = Path(out)
    if out.exists() and out.is_dir():
        raise InputError(f"--out is a folder, give a file name: {out}")
    if out.suffix == ".json":
        raise InputError(f"--out names the table (.npz); its manifest .json is written beside it: {out}")
    tables = build_tables(paths, pieces, tokens, command=build_command(paths, pieces, tokens, out))
    for name in (out.name, manifest_path(out).name):      # temp files an earlier, killed build left
        remove_stale_temps(out.parent, name)
    try:
        save_tables(tables, out)
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror or exc}") from None
    return tables
