"""Building a count table from text files: read, normalise, tokenize, count, save (with its manifest)."""
from __future__ import annotations

import shlex
import stat
from pathlib import Path
from importlib.metadata import version

from corpus.normalise import NORMALISATION, read_piece, resolve_sources
from corpus.atomic import remove_stale_temps
from corpus.tables import CountTables, count_tokens, manifest_path, save_tables
from corpus.tokenizers import NEWLINE, TOKEN_KINDS, tokenize
from corpus.errors import InputError
from corpus.validate import file_kind, shown_name
from corpus.heads import count_heads, save_heads

TABLES_DIR = Path(__file__).resolve().parent / "tables"


def default_table_path(tokens: str = "char") -> Path:
    """The shipped table for the default five stories."""
    if tokens not in TOKEN_KINDS:
        raise InputError(f"unknown token kind {tokens!r} (use one of: {', '.join(TOKEN_KINDS)})")
    return TABLES_DIR / f"nahan-{tokens}.npz"


def default_heads_path(tokens: str = "char") -> Path:
    """The shipped heads table (heads drafter) beside the shipped pair table."""
    return heads_path_for(default_table_path(tokens))


def heads_path_for(table_path: str | Path) -> Path:
    """Where the heads table of a pair table lives: X.npz -> X-heads.npz, beside it."""
    table_path = Path(table_path)
    return table_path.with_name(table_path.stem + "-heads.npz")


def read_token_stream(paths, pieces=None, tokens: str = "char") -> tuple[list[str], dict]:
    """The normalised token stream of the sources (pieces joined in the order given, a newline token between
    them) and the manifest fields that describe it. Every table (the pair, the heads) counts this one stream."""
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
        piece_info.append({"file": shown_name(f.name), "title": piece.title, "sha256": piece.sha256,
                           "paragraphs": len(piece.paragraphs), "tokens": len(toks)})
    if len(all_tokens) < 3:
        raise InputError("too little text to count trigrams (need at least 3 tokens)")
    manifest = {"tokens": tokens, "pieces": piece_info, "normalisation": NORMALISATION, "newline_token": NEWLINE}
    if tokens == "word":
        manifest["tokenizer"] = f"jieba {version('jieba')} lcut (accurate mode, HMM on), per paragraph"
    else:
        manifest["tokenizer"] = "one token per character"
    return all_tokens, manifest


def build_tables(paths, pieces=None, tokens: str = "char", command: str | None = None) -> CountTables:
    """Count a table from folders/files; pieces are joined in the order given, separated by a newline token."""
    all_tokens, manifest = read_token_stream(paths, pieces, tokens)
    manifest["models"] = {"draft_q": "interpolated Witten-Bell bigram over a Witten-Bell unigram floor",
                          "target_p": "interpolated Witten-Bell trigram over the draft bigram"}
    if command:
        manifest["command"] = command
    return count_tokens(all_tokens, manifest)


def build_command(paths, pieces, tokens, out, heads: int | None = None) -> str:
    parts = ["spectable", "corpus", "build", *map(str, paths)]
    if pieces:
        parts += ["--pieces", *map(str, pieces)]
    parts += ["--tokens", tokens]
    if heads is not None:
        parts += ["--heads", str(heads)]
    parts += ["--out", str(out)]
    return " ".join(shlex.quote(shown_name(p)) for p in parts)


def _check_out(out: Path) -> None:
    if out.exists() and out.is_dir():
        raise InputError(f"--out is a folder, give a file name: {out}")
    mode = out.stat().st_mode if out.exists() else None
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(f"--out must name a file (its manifest is written beside it), not {file_kind(mode)}: {out}")
    if out.suffix == ".json":
        raise InputError(f"--out names the table (.npz); its manifest .json is written beside it: {out}")


def build_and_save(paths, out, pieces=None, tokens: str = "char") -> CountTables:
    out = Path(out)
    _check_out(out)
    tables = build_tables(paths, pieces, tokens, command=build_command(paths, pieces, tokens, out))
    for name in (out.name, manifest_path(out).name):      # temp files an earlier, killed build left
        remove_stale_temps(out.parent, name)
    try:
        save_tables(tables, out)
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror or exc}") from None
    return tables


def build_and_save_heads(paths, out, pieces=None, tokens: str = "char", last_head: int = 13):
    """Count and write a heads table (heads 2..last_head) from the same stream a pair table counts."""
    out = Path(out)
    _check_out(out)
    all_tokens, manifest = read_token_stream(paths, pieces, tokens)
    manifest["command"] = build_command(paths, pieces, tokens, out, heads=last_head)
    heads = count_heads(all_tokens, last_head, manifest)
    try:
        save_heads(heads, out)
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror or exc}") from None
    return heads
