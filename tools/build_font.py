"""Build the shipped subset CJK font assets/fonts/SpectableSans-SC.otf from Noto Sans CJK SC (SIL OFL 1.1).

Character set = every character of GB2312 (the common-character list: 6,763 hanzi + symbols)
+ every character of the 15 texts of the corpus (so any story of the book can be shown)
+ printable ASCII, Latin-1, general punctuation, arrows, math symbols, Greek, box/geometric shapes
+ every non-ASCII character found in the repository's own strings (app/ scenes/ models/ corpus/ tools/
  *.py, assets/**/*.json, *.md), scanned at build time so a rebuild after new narration picks them up.

The OFL forbids a Modified Version from using the Reserved Font Name as its primary name, and "Noto"
is Google's trademark, so the family is renamed "Spectable Sans SC" in the name table and the CFF table.

The build is deterministic: the same source font, corpus and repository strings give the same bytes
(head.created is the source font's, head.modified is SOURCE_DATE_EPOCH when set, else the source font's
own; fontTools is told not to stamp the time of the build), so a rebuild with nothing changed is no new
binary in git.

Usage:
    [SOURCE_DATE_EPOCH=unix-seconds] python tools/build_font.py [--source PATH] [--face N] [--corpus DIR] [--out PATH]
Needs fonttools (the optional extra `font`) and, to build, the Debian package fonts-noto-cjk.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
DEFAULT_FACE = 2  # face 2 of the Noto Sans CJK TTC is Simplified Chinese (SC)
DEFAULT_CORPUS = Path("/work/shared/corpus/nahan")
sys.path.insert(0, str(REPO))    # run as a script: import the project without installing it
from corpus.atomic import atomic_path  # noqa: E402

DEFAULT_OUT = REPO / "assets" / "fonts" / "SpectableSans-SC.otf"

FAMILY = "Spectable Sans SC"
POSTSCRIPT_NAME = "SpectableSansSC-Regular"

# Folders and file patterns whose strings the program shows; scanned for non-ASCII characters.
SCAN_DIRS = ("app", "scenes", "models", "corpus", "tools", "benchmarks", "tests")
SCAN_PATTERNS = ("*.py", "*.json", "*.md")

# Symbols the UI and the scene labels use (explicit, so they survive even before any string names them).
UI_SYMBOLS = (
    "↵←→↑↓↔⇒⇐⇔↺↻⟲⟳"  # arrows (↵ stands for a newline token)
    "≤≥≠≈≡±×÷·−∓√∞∑∏∫∂∆∇∈∉∝≪≫⊂⊃∩∪∧∨¬°‰′″"  # math
    "ΣΔΠΩαβγδεζηθικλμνξοπρστυφχψωℓ"  # Greek in formulas (full Greek block added below)
    "✓✗✔✘◆◇●○◎▶▷◀◁■□▲△▼▽★☆•◦…‥–—‖§¶†‡※"  # marks and shapes
    "①②③④⑤⑥⑦⑧⑨⑩"
    "　、。〃々〈〉《》「」『』【】〔〕〖〗〜～！＂＃＄％＆＇（）＊＋，－．／：；＜＝＞？＠［＼］＾＿｀｛｜｝"
)


def gb2312_characters() -> set[str]:
    """Every character the GB2312 codec can decode: rows 0xA1-0xF7, columns 0xA1-0xFE."""
    chars: set[str] = set()
    for hi in range(0xA1, 0xF8):
        for lo in range(0xA1, 0xFF):
            try:
                chars.add(bytes((hi, lo)).decode("gb2312"))
            except UnicodeDecodeError:
                pass  # unassigned code points of the table
    return chars


def block_characters() -> set[str]:
    """Printable ASCII, Latin-1, Greek, general punctuation, arrows, math operators, shapes, CJK punctuation."""
    ranges = [
        (0x20, 0x7E),      # printable ASCII
        (0xA0, 0xFF),      # Latin-1 supplement
        (0x370, 0x3FF),    # Greek and Coptic
        (0x2000, 0x206F),  # general punctuation
        (0x2070, 0x209F),  # super- and subscripts
        (0x2100, 0x214F),  # letterlike symbols
        (0x2190, 0x21FF),  # arrows
        (0x2200, 0x22FF),  # mathematical operators
        (0x2300, 0x23FF),  # miscellaneous technical (⌘ ⏎ ⏸ ...)
        (0x2460, 0x24FF),  # enclosed alphanumerics
        (0x2500, 0x259F),  # box drawing, block elements
        (0x25A0, 0x25FF),  # geometric shapes
        (0x2600, 0x26FF),  # miscellaneous symbols
        (0x2700, 0x27BF),  # dingbats (✓ ✗)
        (0x3000, 0x303F),  # CJK symbols and punctuation
        (0xFF00, 0xFFEF),  # full-width forms
    ]
    return {chr(c) for lo, hi in ranges for c in range(lo, hi + 1)}


def corpus_characters(corpus_dir: Path) -> set[str]:
    """Every character of every text of the corpus folder (newlines aside)."""
    chars: set[str] = set()
    for path in sorted(corpus_dir.glob("*.txt")):
        chars.update(path.read_text(encoding="utf-8"))
    return chars


def repository_characters(repo: Path) -> set[str]:
    """Every non-ASCII character in the program's own sources and data (.py, .json, .md)."""
    chars: set[str] = set()
    files = [p for p in repo.glob("*.md")]
    for d in SCAN_DIRS:
        for pattern in SCAN_PATTERNS:
            files.extend((repo / d).rglob(pattern))
    files.extend((repo / "assets").rglob("*.json"))
    files.extend((repo / "assets").rglob("*.md"))
    for path in files:
        if ".venv" in path.parts or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        chars.update(ch for ch in text if ord(ch) > 0x7E)
    return chars


def wanted_characters(corpus_dir: Path, repo: Path = REPO) -> set[str]:
    """The whole character set of the subset: drawable characters only (no controls, no surrogates)."""
    chars = gb2312_characters() | block_characters() | set(UI_SYMBOLS) | repository_characters(repo)
    if corpus_dir.is_dir():
        chars |= corpus_characters(corpus_dir)
    else:
        print(f"warning: corpus folder {corpus_dir} not found; building without the corpus characters", file=sys.stderr)
    return {c for c in chars if unicodedata.category(c) not in ("Cc", "Cs", "Co", "Cn")}


# --- Glyphs the source lacks -------------------------------------------------------------------
# Noto Sans CJK SC has no ↵ ✗ ✘ ✔ ↺ ↻ ⏸ ⏵ ⏹, which the UI uses (↵ shows a newline token; ✓/✗ mark
# accepted/rejected draft tokens). They are drawn here as plain polygons on the 1000-unit em
# (ascent 880, descent -120), so the additions are our own work and ship under the same OFL.

Polygon = list[tuple[float, float]]


def _ccw(points: Polygon) -> Polygon:
    """Counter-clockwise order (PostScript outer contours); overlapping contours then fill as a union."""
    area = sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1]))
    return points if area > 0 else points[::-1]


def _stroke(x0: float, y0: float, x1: float, y1: float, width: float, extend: float = 0.0) -> Polygon:
    """A straight stroke as a rectangle of the given width around the segment (ends pushed out by `extend`)."""
    import math

    dx, dy = x1 - x0, y1 - y0
    length = math.hypot(dx, dy)
    ux, uy = dx / length, dy / length
    x0, y0, x1, y1 = x0 - ux * extend, y0 - uy * extend, x1 + ux * extend, y1 + uy * extend
    nx, ny = -uy * width / 2, ux * width / 2
    return [(x0 + nx, y0 + ny), (x0 - nx, y0 - ny), (x1 - nx, y1 - ny), (x1 + nx, y1 + ny)]


def _disc(cx: float, cy: float, r: float, n: int = 16) -> Polygon:
    import math

    return [(cx + r * math.cos(2 * math.pi * k / n), cy + r * math.sin(2 * math.pi * k / n)) for k in range(n)]


def _return_arrow() -> list[Polygon]:
    """↵: down from the top right, then left to an arrowhead."""
    return [[(150, 275), (330, 430), (330, 310), (760, 310), (760, 720), (835, 720), (835, 240), (330, 240), (330, 120)]]


def _ballot_x(width: float) -> list[Polygon]:
    return [_stroke(230, 60, 770, 700, width), _stroke(230, 700, 770, 60, width)]


def _check(width: float) -> list[Polygon]:
    return [_stroke(170, 390, 390, 110, width), _stroke(390, 110, 850, 720, width), _disc(390, 110, width / 2)]


def _circle_arrow(clockwise: bool) -> list[Polygon]:
    """↻ / ↺: an open ring with an arrowhead at the top, pointing the way it turns."""
    import math

    cx, cy, r, w = 500, 380, 300, 70
    angles = [math.radians(a) for a in range(110, 401, 10)]
    outer = [(cx + (r + w / 2) * math.cos(a), cy + (r + w / 2) * math.sin(a)) for a in angles]
    inner = [(cx + (r - w / 2) * math.cos(a), cy + (r - w / 2) * math.sin(a)) for a in reversed(angles)]
    a = math.radians(110)
    px, py = cx + r * math.cos(a), cy + r * math.sin(a)
    tx, ty = math.sin(a), -math.cos(a)  # clockwise tangent
    nx, ny = math.cos(a), math.sin(a)
    head = [(px + tx * 170, py + ty * 170), (px + nx * 140 - tx * 20, py + ny * 140 - ty * 20),
            (px - nx * 140 - tx * 20, py - ny * 140 - ty * 20)]
    shapes = [outer + inner, head]
    return shapes if clockwise else _mirrored(shapes)


def _media(kind: str) -> list[Polygon]:
    """Transport-control symbols: ⏸ pause, ⏹ stop, ⏵ play, ⏩ ⏪ fast forward/back, ⏭ ⏮ skip."""
    lo, hi = 60, 700
    mid = (lo + hi) / 2
    right = [(200, lo), (800, mid), (200, hi)]
    if kind == "pause":
        return [[(250, lo), (420, lo), (420, hi), (250, hi)], [(580, lo), (750, lo), (750, hi), (580, hi)]]
    if kind == "stop":
        return [[(220, lo + 40), (780, lo + 40), (780, hi - 40), (220, hi - 40)]]
    if kind == "play":
        return [right]
    if kind == "forward":
        return [[(120, lo), (500, mid), (120, hi)], [(500, lo), (880, mid), (500, hi)]]
    if kind == "skip":
        return [[(150, lo), (680, mid), (150, hi)], [(700, lo), (820, lo), (820, hi), (700, hi)]]
    raise ValueError(kind)


def _mirrored(shapes: list[Polygon]) -> list[Polygon]:
    return [[(1000 - x, y) for x, y in poly] for poly in shapes]


DRAWN_GLYPHS = {
    "⏸": lambda: _media("pause"), "⏹": lambda: _media("stop"), "⏵": lambda: _media("play"),
    "⏩": lambda: _media("forward"), "⏪": lambda: _mirrored(_media("forward")),
    "⏭": lambda: _media("skip"), "⏮": lambda: _mirrored(_media("skip")),
    "↵": _return_arrow, "⏎": _return_arrow,
    "✗": lambda: _ballot_x(80), "✕": lambda: _ballot_x(80),
    "✘": lambda: _ballot_x(130), "✖": lambda: _ballot_x(130),
    "✔": lambda: _check(130),
    "↻": lambda: _circle_arrow(True), "⟳": lambda: _circle_arrow(True),
    "↺": lambda: _circle_arrow(False), "⟲": lambda: _circle_arrow(False),
}


def add_drawn_glyphs(font, chars: set[str]) -> list[str]:
    """Add DRAWN_GLYPHS the subset lacks to the CID-keyed CFF, hmtx/vmtx and cmap; return the characters added."""
    from fontTools.pens.boundsPen import BoundsPen
    from fontTools.pens.t2CharStringPen import T2CharStringPen

    cff = font["CFF "].cff
    top = cff.topDictIndex[0]
    charstrings = top.CharStrings
    cmap = font.getBestCmap()
    # Use the FD (private dict) that the source's own arrows use, so hinting zones fit full-width symbols.
    fd = charstrings.getItemAndSelector(cmap[ord("→")])[1]
    private = top.FDArray[fd].Private
    order = font.getGlyphOrder()
    used_cids = {int(name[3:]) for name in order if name.startswith("cid")}
    free_cids = (cid for cid in range(60000, 65535) if cid not in used_cids)
    added = []
    for ch, draw in DRAWN_GLYPHS.items():
        if ord(ch) in cmap or ch not in chars:
            continue
        name = f"cid{next(free_cids):05d}"
        advance = 1000
        pen = T2CharStringPen(advance - private.nominalWidthX if advance != private.defaultWidthX else None, None)
        bounds = BoundsPen(None)
        for poly in draw():
            poly = [(round(x), round(y)) for x, y in _ccw(poly)]
            for p in (pen, bounds):
                p.moveTo(poly[0])
                for point in poly[1:]:
                    p.lineTo(point)
                p.closePath()
        charstring = pen.getCharString(private=private, globalSubrs=cff.GlobalSubrs)
        charstrings.charStringsIndex.items.append(charstring)
        charstrings.charStrings[name] = len(charstrings.charStringsIndex.items) - 1
        top.charset.append(name)
        top.FDSelect.gidArray.append(fd)
        order.append(name)
        x_min, y_min, x_max, y_max = bounds.bounds
        font["hmtx"][name] = (advance, x_min)
        if "vmtx" in font:
            font["vmtx"][name] = (1000, font["VORG"].defaultVertOriginY - y_max if "VORG" in font else 880 - y_max)
        for table in font["cmap"].tables:
            if table.isUnicode():
                table.cmap[ord(ch)] = name
        added.append(ch)
    font.setGlyphOrder(order)
    return added


def rename(font, source_version: str) -> None:
    """Give the derivative its own family name (OFL: no Reserved Font Name, no "Noto" trademark)."""
    name = font["name"]
    # Keep only the English records; the localized ones repeat the old family name.
    name.names = [r for r in name.names if r.platformID == 3 and r.langID == 0x409 or r.platformID == 1 and r.langID == 0]
    version = f"Version {source_version}; subset for spectable"
    for nid, value in {
        1: FAMILY,
        2: "Regular",
        3: f"{source_version};SPECTABLE;{POSTSCRIPT_NAME}",
        4: FAMILY,
        5: version,
        6: POSTSCRIPT_NAME,
        7: "",  # the trademark notice belongs to the original name, which we no longer use
        16: FAMILY,
        17: "Regular",
        10: (
            f"{FAMILY} is a subset of Noto Sans CJK SC {source_version} (SIL OFL 1.1), "
            "made with fontTools by tools/build_font.py of the spectable project."
        ),
    }.items():
        name.removeNames(nameID=nid)
        if value:
            name.setName(value, nid, 3, 1, 0x409)
    if "CFF " in font:
        cff = font["CFF "].cff
        top = cff[cff.fontNames[0]]
        cff.fontNames = [POSTSCRIPT_NAME]
        top.FamilyName = FAMILY
        top.FullName = FAMILY
        if hasattr(top, "Notice"):
            top.Notice = "Subset of Noto Sans CJK SC; SIL Open Font License 1.1."
        # CID-keyed fonts name each FD after the original; those names are internal, keep them.


def fixed_timestamps(font, environ=None) -> tuple[int, int]:
    """Pin head.created / head.modified (seconds since 1904, the OpenType epoch) so rebuilds are byte-identical:
    created stays the source font's; modified = SOURCE_DATE_EPOCH (reproducible-builds.org) when set, else
    the source font's. Also turns off fontTools' recalcTimestamp, which would stamp the time of saving."""
    from fontTools.misc.timeTools import epoch_diff

    environ = os.environ if environ is None else environ
    head = font["head"]
    epoch = environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch:
        try:
            head.modified = int(epoch) - epoch_diff   # epoch_diff = 1904-01-01 in Unix seconds (negative)
        except ValueError:
            raise SystemExit(f"build_font: error: SOURCE_DATE_EPOCH must be whole seconds, got {epoch!r}") from None
    font.recalcTimestamp = False
    return int(head.created), int(head.modified)


def build(source: Path, face: int, corpus_dir: Path, out: Path) -> dict:
    """Subset, rename and write the font atomically; return a summary."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    started = time.perf_counter()
    chars = wanted_characters(corpus_dir)
    font = TTFont(str(source), fontNumber=face)
    source_version = f"{font['head'].fontRevision:.3f}"
    options = subset.Options()
    options.hinting = False           # CJK hints matter little at UI sizes; saves space
    options.desubroutinize = False    # subroutines keep the CFF small
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.notdef_outline = True
    options.layout_features = ["*"]  # keep vert/locl/kern etc.
    options.drop_tables += ["BASE", "DSIG"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in chars])
    subsetter.subset(font)
    drawn = add_drawn_glyphs(font, chars)
    rename(font, source_version)
    created, modified = fixed_timestamps(font)
    cmap = font.getBestCmap()
    missing = sorted(c for c in chars if ord(c) not in cmap)
    ui_missing = sorted(c for c in UI_SYMBOLS if ord(c) not in cmap)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        font.save(str(tmp))
    return {
        "out": str(out),
        "bytes": out.stat().st_size,
        "glyphs": len(font.getGlyphOrder()),
        "characters_mapped": len(cmap),
        "characters_wanted": len(chars),
        "drawn_glyphs_added": "".join(drawn) or "none",
        "characters_not_in_source": len(missing),
        "ui_symbols_missing": "".join(ui_missing) or "none",
        "source": f"{source} face {face} (Noto Sans CJK SC {source_version})",
        "head_created": _ts(created),
        "head_modified": _ts(modified),
        "seconds": round(time.perf_counter() - started, 2),
    }


def _ts(value: int) -> str:
    from fontTools.misc.timeTools import timestampToString
    return timestampToString(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--face", type=int, default=DEFAULT_FACE)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not args.source.is_file():
        print(f"build_font: error: source font {args.source} not found (apt-get install fonts-noto-cjk)", file=sys.stderr)
        return 2
    summary = build(args.source, args.face, args.corpus, args.out)
    for key, value in summary.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
