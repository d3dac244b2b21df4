"""The tour: twelve chapters of the lesson, each a camera view, parts in focus, parameters and paged narration.

Narration lives in assets/tour/NN-slug.json (zh and en, our own words); this module holds what each
chapter does to the table. Pacing follows llm-viz: a page of text, then a key press, then the action;
a checkpoint page asks for a prediction first and reveals it on the next key press.

A chapter file is checked against a typed schema when it loads (Narration, Page, Action): an unknown key,
a missing language, an unknown action or camera view is an InputError naming the file and page, never a
silent no-op. Actions: {"do": "play"} plays the next target pass (the tubes' rounds on the tube view);
{"do": "checkpoint", "kind": "test"|"count"} asks for a prediction and reveals it; either may name the
camera "view" to fly to first and carry the words "zh"/"en" shown once it has run.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache

from app.paths import TOUR_DIR
from corpus.errors import InputError

ACTION_KINDS = ("play", "checkpoint")
CHECKPOINT_KINDS = ("test", "count")     # test: will this guess pass?  count: how many will the target keep?
LANGS = ("zh", "en")


@dataclass(frozen=True)
class Action:
    do: str                       # 'play' | 'checkpoint'
    view: str | None = None       # camera view to fly to when the action runs (scenes.camera.VIEWS)
    kind: str = "test"            # checkpoint only: 'test' | 'count'
    pass_index: int | None = None  # play only ("pass" in the file): which pass of the run to play, 0-based; None: the next
    text: dict = field(default_factory=dict)   # {'zh', 'en'} shown once the action has run (may be empty)


@dataclass(frozen=True)
class Page:
    text: dict                    # {'zh', 'en'}; may hold {fact} fields (app.facts)
    action: Action | None = None
    view: str | None = None       # camera view as soon as the page's text shows (before its action)

    def __getitem__(self, lang: str) -> str:
        return self.text[lang]


@dataclass(frozen=True)
class Narration:
    title: dict                   # {'zh', 'en'}
    pages: tuple[Page, ...]


@dataclass(frozen=True)
class Chapter:
    slug: str
    view: str                     # Stage.set_view name
    focus: tuple[str, ...]        # parts the narration talks about
    # lab settings the chapter sets through the controller's update() (gamma, lanes, context, decoder...);
    # decoder 'target': the big drum alone (the chapters before speculation is introduced)
    params: dict = field(default_factory=dict)
    plot: str | None = None       # panel plot: 'speedup' | 'tpp' | 'roofline' | 'tubes'
    facts: tuple[str, ...] = ()   # live numbers listed beside the narration


CHAPTERS: tuple[Chapter, ...] = (
    Chapter("01-one-token", "bigdrum", ("bigdrum", "readhead"), {"lanes": 1, "context": 1, "decoder": "target"},
            facts=("bytes_per_step", "ms_per_token", "tokens_per_s", "busy")),
    Chapter("02-batching", "readhead", ("readhead", "cabinet"), {"lanes": 64, "context": 4096, "decoder": "target"},
            plot="roofline",
            facts=("lanes", "tps_weights", "busy_weights", "kv_gb", "bytes_per_step", "tokens_per_s", "busy")),
    Chapter("03-guess-first", "smalldrum", ("smalldrum", "tape", "bigdrum"), {"gamma": 4, "lanes": 1, "context": 1},
            facts=("vocab", "gamma", "c", "spec_lanes")),
    Chapter("04-keep-replace", "tape", ("tape",), {"gamma": 4},
            facts=("step_written", "run_passes", "run_tpp")),
    Chapter("05-acceptance-rule", "bridge", ("bridge",), {"gamma": 4},
            facts=("check_p", "check_q", "check_ratio")),
    Chapter("06-same-as-target", "tubes", ("tubes",), {"tube_rule": "exact"}, plot="tubes",
            facts=("under_char", "over_char", "tv_left", "tv_right")),
    Chapter("07-alpha", "table", ("bridge", "tape"), {"gamma": 4}, plot="tpp",
            facts=("alpha", "long_count", "alpha_corpus", "run_count", "tpp_formula", "tpp_counted", "run_tpp")),
    Chapter("08-how-much-faster", "table", ("smalldrum", "bigdrum"), {"c": 0.1}, plot="speedup",
            facts=("alpha", "c", "best_gamma", "best_speedup")),
    Chapter("09-idle-arithmetic", "mill", ("mill", "readhead"), {"lanes": 1, "context": 1}, plot="roofline",
            facts=("extra_pct", "busy", "busy_spec", "lanes_to_saturate")),     # context 1: as the mill counts
    Chapter("10-no-second-model", "table", ("bigdrum",), {}, facts=()),
    Chapter("11-inside-read-head", "cutaway", ("readhead", "mill"), {"lanes": 9, "context": 1, "decoder": "target"},
            facts=("lanes", "busy", "lanes_to_saturate")),     # nine sequences: nine lanes
    Chapter("12-taken-apart", "exploded", ("table",), {}, facts=("vocab", "alpha")),
)


@lru_cache(maxsize=None)
def narration(slug: str) -> Narration:
    """The chapter's narration, checked against the schema (InputError naming the file and page)."""
    path = TOUR_DIR / f"{slug}.json"
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except (OSError, ValueError) as exc:
        raise InputError(f"tour file {path} cannot be read: {exc}") from None
    return parse_narration(raw, str(path))


def _texts(obj: dict, where: str, required: bool = True) -> dict:
    got = {lang: obj[lang] for lang in LANGS if lang in obj}
    if required or got:
        for lang in LANGS:
            if not isinstance(got.get(lang), str) or not got[lang].strip():
                raise InputError(f"{where}: needs non-empty '{lang}' text")
    return got


def _keys(obj, allowed: set, where: str) -> None:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: must be a JSON object")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def parse_action(raw, where: str) -> Action:
    from scenes.camera import VIEWS
    _keys(raw, {"do", "view", "kind", "pass", *LANGS}, where)
    do = raw.get("do")
    if do not in ACTION_KINDS:
        raise InputError(f"{where}: 'do' must be one of {', '.join(ACTION_KINDS)}, not {do!r}")
    view = raw.get("view")
    if view is not None and view not in VIEWS:
        raise InputError(f"{where}: unknown view {view!r}")
    kind = raw.get("kind", "test")
    if "kind" in raw and do != "checkpoint":
        raise InputError(f"{where}: 'kind' belongs to a checkpoint, not to {do!r}")
    if kind not in CHECKPOINT_KINDS:
        raise InputError(f"{where}: checkpoint kind must be one of {', '.join(CHECKPOINT_KINDS)}, not {kind!r}")
    index = raw.get("pass")
    if index is not None and (do != "play" or isinstance(index, bool) or not isinstance(index, int) or index < 0):
        raise InputError(f"{where}: 'pass' is a play's pass number (a whole number >= 0), not {index!r}")
    return Action(do=do, view=view, kind=kind, pass_index=index, text=_texts(raw, where, required=False))


def parse_narration(raw, where: str) -> Narration:
    from scenes.camera import VIEWS
    _keys(raw, {"title", "pages"}, where)
    title = _texts(raw.get("title") if isinstance(raw.get("title"), dict) else {}, f"{where}: title")
    pages_raw = raw.get("pages")
    if not isinstance(pages_raw, list) or not pages_raw:
        raise InputError(f"{where}: 'pages' must be a non-empty list")
    pages = []
    for i, p in enumerate(pages_raw):
        at = f"{where}: page {i + 1}"
        _keys(p, {"action", "view", *LANGS}, at)
        action = parse_action(p["action"], f"{at}: action") if "action" in p else None
        view = p.get("view")
        if view is not None and view not in VIEWS:
            raise InputError(f"{at}: unknown view {view!r}")
        pages.append(Page(text=_texts(p, at), action=action, view=view))
    return Narration(title=title, pages=tuple(pages))


class TourState:
    """Where the tour is: chapter, page, and whether the page's action has run (text -> key -> action)."""

    def __init__(self, chapter: int = 0):
        self.chapter = max(0, min(len(CHAPTERS) - 1, chapter))
        self.page = 0
        self.acted = False        # the current page's action (or reveal) has been triggered

    @property
    def current(self) -> Chapter:
        return CHAPTERS[self.chapter]

    def pages(self) -> tuple[Page, ...]:
        return narration(self.current.slug).pages

    def page_data(self) -> Page:
        return self.pages()[self.page]

    def action(self) -> Action | None:
        return self.page_data().action

    def next(self) -> str:
        """Advance one beat. Returns 'act' (run this page's action), 'page', 'chapter' or 'end'."""
        if self.action() and not self.acted:
            self.acted = True
            return "act"
        if self.page + 1 < len(self.pages()):
            self.page += 1
            self.acted = False
            return "page"
        if self.chapter + 1 < len(CHAPTERS):
            self.chapter += 1
            self.page = 0
            self.acted = False
            return "chapter"
        return "end"

    def prev(self) -> str:
        if self.acted:
            self.acted = False
            return "page"
        if self.page > 0:
            self.page -= 1
            return "page"
        if self.chapter > 0:
            self.chapter -= 1
            self.page = len(self.pages()) - 1
            self.acted = False
            return "chapter"
        return "start"

    def goto(self, chapter: int) -> None:
        self.chapter = max(0, min(len(CHAPTERS) - 1, chapter))
        self.page = 0
        self.acted = False
