"""A prepared lesson: which chapters of the tour, in what order, with what settings, the teacher's notes, the quiz.

A lesson file is plain JSON a teacher saves, opens (`spectable open LESSON`) and shares:

    {"schema": "spectable-lesson/1",
     "title": "My class" | {"zh": "…", "en": "…"},
     "chapters": [{"chapter": "05-acceptance-rule",           # a chapter's slug (app.lesson.tour.CHAPTERS), each once
                   "minutes": 5,                              # optional: how long the plan gives it
                   "settings": {"prompt": "我们", "seed": 3, "gamma": 4, "drafter": "chain", "pair": "ngram"},
                   "skip": [4],                               # page numbers (1 = the first) not shown
                   "notes": {"2": "Ask for a show of hands" | {"zh": "…", "en": "…"}}}, …],
     "quiz": ["keep_prob", "residual_top"]}                   # optional: the quiz's questions (app.lesson.quiz ids)

It is checked once, here, when it is read: an unknown key, chapter, setting, page or question, a value out of
range, a skipped page with a note, a chapter with every page skipped is an InputError naming the file and the
place (the command line prints it as one line and exits 2). Notes may quote live numbers as the narration does
({alpha}, app.lesson.facts): they are filled from the same facts as the screen, so the plan cannot disagree with it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from app.paths import ASSETS
from app.lesson.tour import CHAPTERS, LANGS, _keys as tour_keys, narration
from corpus import jsonio
from corpus.atomic import write_text_atomic
from corpus.errors import InputError
from corpus.validate import read_json
from app import pairs
from app.lesson import quiz
from app.settings import check_values
from models.ngram import NGramPair

SCHEMA = "spectable-lesson/1"
LESSONS_DIR = ASSETS / "lessons"
MAX_LESSON_BYTES = 1 << 20          # a lesson is a few kilobytes
MAX_NOTE_CHARS = 2000
MAX_MINUTES = 240
# What a lesson may set per chapter: the run the class sees (the tour sets the rest per chapter and page).
CHAPTER_SETTINGS = ("prompt", "seed", "gamma", "drafter", "pair", "temperature", "c")
LESSON_PAIRS = ("ngram", "neural")   # your own checkpoints are not part of a file you share


@dataclass(frozen=True)
class LessonChapter:
    slug: str
    settings: dict = field(default_factory=dict)     # CHAPTER_SETTINGS, each checked as the lab checks it
    skip: frozenset = frozenset()                     # 0-based page indices not shown
    notes: dict = field(default_factory=dict)        # 0-based page index -> {'zh'?, 'en'?} or {'*': text}
    minutes: float | None = None

    @property
    def index(self) -> int:
        return SLUGS.index(self.slug)

    def note(self, page: int, lang: str) -> str | None:
        n = self.notes.get(page)
        if not n:
            return None
        return n.get(lang) or n.get("*") or next(iter(n.values()))


@dataclass(frozen=True)
class Lesson:
    title: dict                                       # {'zh'?, 'en'?} or {'*': text}
    chapters: tuple[LessonChapter, ...]
    quiz: tuple[str, ...] | None = None               # question ids; None: every question
    source: str | None = None                         # where it was read from (not saved)

    def chapter(self, index: int) -> LessonChapter | None:
        """The lesson's entry for CHAPTERS[index], or None when the lesson leaves that chapter out."""
        for c in self.chapters:
            if c.index == index:
                return c
        return None

    @property
    def order(self) -> tuple[int, ...]:
        return tuple(c.index for c in self.chapters)

    def title_in(self, lang: str) -> str:
        return self.title.get(lang) or self.title.get("*") or next(iter(self.title.values()))


SLUGS = tuple(c.slug for c in CHAPTERS)


def full_tour() -> Lesson:
    """Every chapter in order, nothing skipped: the tour as it ships."""
    return Lesson(title={"zh": "导览", "en": "The tour"}, chapters=tuple(LessonChapter(s) for s in SLUGS))


# ---- reading -----------------------------------------------------------------------------------------
def _keys(obj, allowed: set, required: set, where: str) -> dict:
    """The tour's own check of an object's keys (app.lesson.tour._keys), and the keys it must have."""
    tour_keys(obj, allowed, where)
    missing = sorted(required - set(obj))
    if missing:
        raise InputError(f"{where}: missing {missing[0]!r}")
    return obj


def _text(raw, where: str, limit: int) -> dict:
    """A string (any language) or {'zh', 'en'} (either or both): non-empty, at most `limit` characters."""
    got = {"*": raw} if isinstance(raw, str) else raw
    if not isinstance(got, dict) or not got:
        raise InputError(f"{where}: must be text or an object of 'zh'/'en' texts")
    for k, v in got.items():
        if k != "*" and k not in LANGS:
            raise InputError(f"{where}: unknown language {k!r} (zh, en)")
        if not isinstance(v, str) or not v.strip():
            raise InputError(f"{where}: must be non-empty text")
        if len(v) > limit:
            raise InputError(f"{where}: is {len(v)} characters long (at most {limit})")
        if "\x00" in v:
            raise InputError(f"{where}: contains a NUL character")
    return dict(got)


def _page_number(raw, pages: int, where: str) -> int:
    """A page number as the file writes it (1 = the first; a JSON object's key is a string) -> 0-based index."""
    n = raw
    if isinstance(raw, str) and raw.strip().isdigit():
        n = int(raw)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= pages:
        raise InputError(f"{where}: page {raw!r} does not exist (the chapter has pages 1-{pages})")
    return n - 1


def _settings(raw, where: str) -> dict:
    if raw is None:
        return {}
    _keys(raw, set(CHAPTER_SETTINGS), set(), where)
    if "pair" in raw and raw["pair"] not in LESSON_PAIRS:
        raise InputError(f"{where}: pair must be one of {', '.join(LESSON_PAIRS)}, not {raw['pair']!r}")
    return check_values(raw, where)


def _chapter(raw, where: str) -> LessonChapter:
    _keys(raw, {"chapter", "minutes", "settings", "skip", "notes"}, {"chapter"}, where)
    slug = raw["chapter"]
    if slug not in SLUGS:
        raise InputError(f"{where}: unknown chapter {slug!r} (chapters: {', '.join(SLUGS)})")
    where = f"{where} ({slug})"
    pages = len(narration(slug).pages)
    skip_raw = raw.get("skip", [])
    if not isinstance(skip_raw, list):
        raise InputError(f"{where}: 'skip' must be a list of page numbers")
    skip = frozenset(_page_number(n, pages, f"{where}: skip") for n in skip_raw)
    if len(skip) == pages:
        raise InputError(f"{where}: every page is skipped (leave the chapter out instead)")
    notes_raw = raw.get("notes", {})
    if not isinstance(notes_raw, dict):
        raise InputError(f"{where}: 'notes' must be an object of page number -> note")
    notes = {}
    for k, v in notes_raw.items():
        i = _page_number(k, pages, f"{where}: notes")
        if i in skip:
            raise InputError(f"{where}: page {i + 1} is skipped and has a note")
        notes[i] = _text(v, f"{where}: note on page {i + 1}", MAX_NOTE_CHARS)
    minutes = raw.get("minutes")
    if minutes is not None and (isinstance(minutes, bool) or not isinstance(minutes, (int, float))
                                or not 0 < minutes <= MAX_MINUTES or minutes != minutes):
        raise InputError(f"{where}: 'minutes' must be a number above 0 and at most {MAX_MINUTES}")
    return LessonChapter(slug, _settings(raw.get("settings"), f"{where}: settings"), skip, notes,
                         None if minutes is None else float(minutes))


def parse_lesson(raw, where: str) -> Lesson:
    """A lesson from its parsed JSON: InputError naming `where` and the place for anything it cannot be."""
    _keys(raw, {"schema", "title", "chapters", "quiz"}, {"schema", "chapters"}, where)
    if raw["schema"] != SCHEMA:
        raise InputError(f"{where}: schema must be {SCHEMA!r}, not {raw['schema']!r}"[:300])
    title = _text(raw.get("title", "—"), f"{where}: title", 200)
    chs = raw["chapters"]
    if not isinstance(chs, list) or not chs:
        raise InputError(f"{where}: 'chapters' must be a non-empty list")
    chapters = tuple(_chapter(c, f"{where}: chapter {i + 1}") for i, c in enumerate(chs))
    seen = [c.slug for c in chapters]
    twice = next((s for s in seen if seen.count(s) > 1), None)
    if twice:
        raise InputError(f"{where}: chapter {twice!r} is listed twice")
    qs = raw.get("quiz")
    if qs is not None:
        ids = tuple(qid for qid, _ in quiz.BUILDERS)
        if not isinstance(qs, list) or not qs or not all(isinstance(q, str) for q in qs):
            raise InputError(f"{where}: 'quiz' must be a non-empty list of question ids (leave it out for all)")
        bad = [q for q in qs if q not in ids]
        if bad:
            raise InputError(f"{where}: unknown quiz question {bad[0]!r}"[:200] + f" (questions: {', '.join(ids)})")
        if len(set(qs)) != len(qs):
            raise InputError(f"{where}: a quiz question is listed twice")
        qs = tuple(qs)
    return Lesson(title, chapters, qs, source=where)


def resolve(name: str | Path) -> Path:
    """A lesson file's path: the path given, else a shipped lesson by name ('45-minutes')."""
    p = Path(name)
    if p.exists() or p.suffix or p.parent != Path("."):
        return p
    shipped = LESSONS_DIR / f"{name}.json"
    if shipped.exists():
        return shipped
    names = ", ".join(sorted(x.stem for x in LESSONS_DIR.glob("*.json")))
    raise InputError(f"lesson {name} is neither a file nor a shipped lesson ({names})")


def load_lesson(path: str | Path) -> Lesson:
    """Read and check a lesson file (InputError: one line naming the file and what is wrong)."""
    path = resolve(path)
    raw = read_json(path, "lesson file", MAX_LESSON_BYTES)
    return parse_lesson(raw, f"lesson file {path}")


def check_prompts(lesson: Lesson) -> None:
    """Every chapter's prompt is text its pair can write after (an unknown character is one line, at load)."""
    for c in lesson.chapters:
        prompt = c.settings.get("prompt")
        if prompt is None:
            continue
        name = c.settings.get("pair", pairs.COUNTED)
        pair = pairs.load(name) if pairs.is_neural(name) else None
        if pair is None:
            pair = NGramPair.load()
        try:
            pair.encode(prompt)
        except InputError as exc:
            raise InputError(f"{lesson.source}: chapter {c.slug}: prompt: {exc}") from None


# ---- writing -----------------------------------------------------------------------------------------
def _text_out(t: dict):
    return t["*"] if set(t) == {"*"} else dict(t)


def to_json(lesson: Lesson) -> dict:
    out = {"schema": SCHEMA, "title": _text_out(lesson.title), "chapters": []}
    for c in lesson.chapters:
        entry = {"chapter": c.slug}
        if c.minutes is not None:
            entry["minutes"] = int(c.minutes) if c.minutes == int(c.minutes) else c.minutes
        if c.settings:
            entry["settings"] = dict(c.settings)
        if c.skip:
            entry["skip"] = sorted(i + 1 for i in c.skip)
        if c.notes:
            entry["notes"] = {str(i + 1): _text_out(n) for i, n in sorted(c.notes.items())}
        out["chapters"].append(entry)
    if lesson.quiz is not None:
        out["quiz"] = list(lesson.quiz)
    return out


def save_lesson(lesson: Lesson, path: str | Path) -> Path:
    """Write a lesson file atomically (a crash mid-write leaves the old file, never half of one)."""
    return write_text_atomic(Path(path), jsonio.dumps(to_json(lesson), indent=1) + "\n")
