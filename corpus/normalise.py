"""Reading and normalising source text: one UTF-8 file per piece, title on the first line, one paragraph per line.

Normalisation (recorded in every manifest as NORMALISATION):
  - decode strictly as UTF-8 (a BOM is dropped); CR LF and CR become LF;
  - drop the first line (the title);
  - drop lines that are empty or only whitespace; strip whitespace at the end of each line;
  - refuse control characters other than tab (NUL, form feed, DEL, C1 ...): a text file has none, and a
    NUL usually means a UTF-16 or binary file read as UTF-8; the error names the line and the character;
  - keep every other character unchanged, punctuation included (no case folding, no width folding);
  - join paragraphs, and pieces, with a single newline '\n', which is itself a token (drawn as ↵).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from corpus.errors import InputError
from corpus.validate import read_regular_file

NORMALISATION = ("utf-8 (BOM dropped, CRLF/CR -> LF); control characters other than tab refused; "
                 "first line (title) dropped; blank lines dropped; "
                 "trailing whitespace stripped; every other character kept (punctuation included); "
                 "paragraphs and pieces joined with '\\n', itself a token")

# C0 controls but tab and newline, DEL, and the C1 controls (CR is already LF when this is applied).
CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_NAMES = {0x00: "NUL", 0x0B: "vertical tab", 0x0C: "form feed", 0x1A: "SUB", 0x1B: "escape", 0x7F: "DEL"}

# The five default stories in book order: 孔乙己, 一件小事, 风波, 故乡, 社戏.
MAX_PIECE_BYTES = 64 << 20       # one text file; all of 《呐喊》 is 0.4 MB
DEFAULT_PIECES = ("02", "05", "07", "08", "14")


@dataclass(frozen=True)
class Piece:
    """One source file after normalisation."""

    path: Path
    title: str
    paragraphs: list[str]
    sha256: str

    @property
    def text(self) -> str:
        return "\n".join(self.paragraphs)


def read_piece(path: str | Path) -> Piece:
    """Read and normalise one file; every user-caused failure is one InputError line."""
    path = Path(path)
    try:
        raw = read_regular_file(path, "corpus file", MAX_PIECE_BYTES)
    except FileNotFoundError:
        raise InputError(f"no such file or folder: {path}") from None
    if not raw.strip():
        raise InputError(f"empty file: {path}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {path} (bad byte at offset {exc.start})") from None
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    bad = CONTROL_CHARACTERS.search(text)
    if bad:
        cp = ord(bad.group())
        line = text.count("\n", 0, bad.start()) + 1
        name = f" ({_CONTROL_NAMES[cp]})" if cp in _CONTROL_NAMES else ""
        hint = "; is it UTF-16? save it as UTF-8" if cp == 0 else ""
        raise InputError(f"control character U+{cp:04X}{name} on line {line} of {path}: not plain text{hint}")
    lines = text.split("\n")
    title = lines[0].strip()
    paragraphs = [ln.rstrip() for ln in lines[1:] if ln.strip()]
    if not paragraphs:
        raise InputError(f"no text after the title line: {path}")
    return Piece(path=path, title=title, paragraphs=paragraphs, sha256=hashlib.sha256(raw).hexdigest())


def _matches(path: Path, spec: str) -> bool:
    # A piece is named by its file name, its stem, or the number before the first '-' (02 = 02-kong-yiji.txt).
    return spec in (path.name, path.stem, path.stem.split("-", 1)[0])


def resolve_sources(paths, pieces=None) -> list[Path]:
    """Expand folders (their *.txt files, sorted by name) and files; keep only `pieces` when given."""
    if not paths:
        raise InputError("give at least one folder or file")
    files: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise InputError(f"no such file or folder: {p}")
        if p.is_dir():
            found = sorted(x for x in p.iterdir() if x.suffix == ".txt" and x.is_file())
            if not found:
                raise InputError(f"no .txt files in folder: {p}")
            files.extend(found)
        else:
            files.append(p)
    if pieces:
        specs = [s for item in pieces for s in str(item).split(",") if s.strip()]
        chosen = []
        for spec in specs:
            hits = [f for f in files if _matches(f, spec.strip())]
            if not hits:
                raise InputError(f"no piece named {spec!r} among the given files")
            chosen.extend(h for h in hits if h not in chosen)
        files = chosen
    return files
