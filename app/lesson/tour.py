"""The tour: twelve chapters of the lesson, each a set of parameters and paged narration whose beats frame parts.

Narration lives in assets/tour/NN-slug.json (zh and en, our own words); this module holds what each
chapter does to the table. Pacing follows llm-viz: a page of text, then a key press, then the action;
a checkpoint page asks for a prediction first and reveals it on the next key press.

Every beat (a page's text, then its action) names the parts it talks about (`parts`, names of
scenes.layout.PARTS): the camera frames exactly those (scenes.framing) and holds the frame while the action
plays. A beat may stand the table 'cutaway' (the read head cut open) or 'exploded' (`view`).

A chapter file is checked against a typed schema when it loads (Narration, Page, Action): an unknown key,
a missing language, an unknown part, action or view is an InputError naming the file and page, never a
silent no-op. A page may put the shipped neural pair on the table ("pair": "neural"; the pages around it keep the n-gram pair).
A page may draw its own plot ("plot"), put sliders for the quantity it is about under the class's hand
("controls"), and ask a question before its action reveals the answer ("ask", with "keep_back": the numbers
shown as '?' until then).
Actions: {"do": "play"} plays the next target pass (or pass "pass", 0-based; the tubes' rounds
when the beat frames the tubes alone); {"do": "checkpoint", "kind": "test"|"count"} asks for a prediction about
pass "pass" (default the first) and reveals it; either may name its own "parts" and "view" and carry the
words "zh"/"en" shown once it has run.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache

from app.paths import TOUR_DIR
from corpus.errors import InputError
from app.figures import PAGE_PLOTS, PLOT_NAMES
from app.i18n import catalog
from app.settings import LAB_FIELDS, check_values
from models.demo import EVENTS

ACTION_KINDS = ("play", "checkpoint")
CHECKPOINT_KINDS = ("test", "count")     # test: will this guess pass?  count: how many will the target keep?
LANGS = ("zh", "en")
BEAT_VIEWS = ("table", "cutaway", "exploded")     # how the table stands while a beat frames its parts
HOLDS = ("start", "drafted", "end")
# Where a played pass stops (Action.until): at the end of its drafting (the guesses pencilled), halfway through its
# verify (the big drum half round, the lanes lit, the cabinet's drawers pulled out to be read), at the end of its
# verify (the check and the meters not yet), or of its writing (the whole pass). A later play of the same pass goes
# on from there.
UNTILS = ("draft", "mid-verify", "verify", "write")
PAGE_PAIRS = ("ngram", "neural")      # a page may run the table on the shipped neural pair (app/pairs.py)
# What a page may draw in the tour's panel besides its numbers: "residual" draws p, q and norm(max(0, p − q)) of
# the run's rejection the page talks about (the checkpoint's guess), with the token drawn from it marked.
PAGE_PANELS = ("residual",)
# Lab settings a page may put under the class's hand (a slider in the tour's panel, above its plot): the quantity
# the page is about, dragged while the plot and the numbers answer. They hold on that page only.
PAGE_CONTROLS = ("gamma", "c", "lanes", "context")


@dataclass(frozen=True)
class Action:
    do: str                       # 'play' | 'checkpoint'
    parts: tuple[str, ...] = ()   # parts the action frames (empty: the page's)
    view: str | None = None       # how the table stands (BEAT_VIEWS; None: as the page)
    kind: str = "test"            # checkpoint only: 'test' | 'count'
    pass_index: int | None = None  # "pass" in the file, 0-based: which pass to play or ask about; None: the next
    text: dict = field(default_factory=dict)   # {'zh', 'en'} shown once the action has run (may be empty)
    until: str = "write"          # play only: the phase the pass stops after (UNTILS)


@dataclass(frozen=True)
class Page:
    text: dict                    # {'zh', 'en'}; may hold {fact} fields (app.lesson.facts)
    parts: tuple[str, ...]        # the parts the text talks about: what the camera frames
    action: Action | None = None
    view: str = "table"           # how the table stands while the text shows (BEAT_VIEWS)
    pair: str = "ngram"           # the models on the table for this page (PAGE_PAIRS): the shipped neural pair
                                  # shows the same rule on real networks of the same book
    # Lab settings this page sets (through update(), as the chapter's params) and that hold for the pages after
    # it in the chapter (chapter 10 runs heads, lookup, a tree, then typical acceptance in the tubes); events:
    # what this page's pass must show (models.demo), searched on the run with these settings.
    params: dict = field(default_factory=dict)
    events: tuple[str, ...] = ()
    panel: str | None = None      # PAGE_PANELS: a picture the panel draws for this page
    # The live numbers beside this page (fact names, app.lesson.facts), when not the chapter's: a page shows the numbers
    # its sentence is about, never those of a page still to come.
    facts: tuple[str, ...] = ()
    # Where the table stands before this page's action plays (HOLDS), when not where a page that sets its own
    # settings starts (the run's first pass): 'drafted' shows the pass's guesses pencilled, as its sentence says.
    hold: str | None = None
    # The panel's picture for this page (app.figures.PLOT_NAMES or PAGE_PLOTS), when not the chapter's plot.
    plot: str | None = None
    controls: tuple[str, ...] = ()    # PAGE_CONTROLS: sliders for the quantity the page is about
    # Predict, then reveal: a question shown under the page's text until its action has been shown, and the live
    # numbers ("plot": the panel's plot; busy figures: the mill's too) kept back ('?') until then; the action's words
    # give the answer. A page that keeps numbers back without asking keeps them back throughout (the next asks).
    ask: dict = field(default_factory=dict)
    keep_back: tuple[str, ...] = ()

    def __getitem__(self, lang: str) -> str:
        return self.text[lang]


@dataclass(frozen=True)
class Narration:
    title: dict                   # {'zh', 'en'}
    pages: tuple[Page, ...]


@dataclass(frozen=True)
class Chapter:
    slug: str
    # lab settings the chapter sets through the controller's update() (gamma, lanes, context, decoder...);
    # decoder 'target': the big drum alone (the chapters before speculation is introduced)
    params: dict = field(default_factory=dict)
    plot: str | None = None       # panel plot: 'speedup' | 'tpp' | 'roofline' | 'tubes' | 'drafters'
    facts: tuple[str, ...] = ()   # live numbers listed beside the narration
    # What the passes the text describes must show, in order (models.demo.EVENTS): the tour picks the first seed
    # from the lab's on whose real run they happen (app.derived.demo_seed), never a made-up trace.
    events: tuple[str, ...] = ()
    # Where the table stands on the text pages before a pass has played: the start of the run, the first
    # pass's guesses pencilled in (waiting for the check), or the end of the run.
    hold: str = "start"
    # Live numbers (and "plot": the panel's plot) that answer the question the chapter asks before its first
    # play: kept back ('?') until that play has been shown, so the class predicts before it is told.
    after_play: tuple[str, ...] = ()
    # Whether the HUD may count lit lanes: not before chapter 2 has said what a lane is.
    lanes_named: bool = True


CHAPTERS: tuple[Chapter, ...] = (
    # Each page lists only the numbers it has reached (the busy share is asked for before it is shown).
    Chapter("01-one-token", {"lanes": 1, "context": 1, "decoder": "target"}, lanes_named=False),
    Chapter("02-batching", {"lanes": 64, "context": 4096, "decoder": "target"}, plot="roofline",
            facts=("lanes", "tps_weights", "busy_weights", "kv_gb", "bytes_per_step", "tokens_per_s", "busy")),
    # The first speculative pass a class sees keeps guesses: the idea working, not failing.
    Chapter("03-guess-first", {"gamma": 4, "lanes": 1, "context": 1},
            facts=("vocab", "gamma", "c", "spec_lanes"), events=("some_kept",)),
    Chapter("04-keep-replace", {"gamma": 4}, facts=("step_written",),
            events=("kept_and_replaced", "all_kept_bonus"), hold="drafted"),
    # Pass 2's checkpoint asks about a real coin toss that goes against the guess: the last page draws the
    # residual its replacement was drawn from. Its p, q and p/q are the checkpoint's to show (and then the
    # residual page's), never listed beside the pages before it.
    Chapter("05-acceptance-rule", {"gamma": 4},
            events=("kept_and_replaced", "gamble_rejected"), hold="drafted"),
    # Its pages draw the running example's p and q, then the tubes; the tube page asks before it plays and keeps the
    # distances and their plot back until then (its keep_back, and the page before it); the proof comes after.
    Chapter("06-same-as-target", {"tube_rule": "exact"}, plot="tubes",
            facts=("under_char", "over_char", "tv_left", "tv_right", "tv_noise")),
    Chapter("07-alpha", {"gamma": 4}, plot="tpp",
            facts=("alpha", "long_count", "alpha_corpus", "run_count", "tpp_formula", "tpp_counted", "run_tpp"),
            hold="end"),
    Chapter("08-how-much-faster", {"c": 0.1}, plot="speedup",
            facts=("alpha", "c", "pass_cost", "best_gamma", "best_speedup"), events=("some_kept",)),
    Chapter("09-idle-arithmetic", {"lanes": 1, "context": 1}, plot="roofline_computer",
            facts=("extra_pct", "busy", "busy_spec", "lanes_to_saturate")),     # context 1: as the mill counts
    # the bridge shows a finished check; its pages then run heads, lookup and a tree, and typical acceptance in the
    # tubes (each page's params), beside every drafter's long run
    # (the plot's legend gives every drafter's speedup on paper: no facts table beside it, the plot needs the room)
    Chapter("10-no-second-model", {}, plot="drafters", hold="end"),
    Chapter("11-inside-read-head", {"lanes": 9, "context": 1, "decoder": "target"},
            facts=("lanes", "busy", "lanes_to_saturate", "cpu_lanes")),     # nine sequences: nine lanes
    Chapter("12-taken-apart", {}, facts=("vocab", "alpha")),
)


def chapter_index(slug: str) -> int:
    """Where the chapter `slug` stands in the tour (0-based): what refers to a chapter names it, this counts."""
    for i, c in enumerate(CHAPTERS):
        if c.slug == slug:
            return i
    raise KeyError(f"no chapter {slug!r}")


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


def _parts(raw, where: str, required: bool) -> tuple[str, ...]:
    """A beat's parts: a non-empty list of the scene's part names (scenes.layout.PARTS), each once."""
    from scenes.layout import PARTS  # lazy: window/scenes side, not loaded with this module
    if raw is None and not required:
        return ()
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) for p in raw):
        raise InputError(f"{where}: 'parts' must be a non-empty list of part names ({', '.join(PARTS)})")
    unknown = [p for p in raw if p not in PARTS]
    if unknown:
        raise InputError(f"{where}: unknown part {unknown[0]!r} (choose from {', '.join(PARTS)})")
    if len(set(raw)) != len(raw):
        raise InputError(f"{where}: a part is named twice in {raw}")
    return tuple(raw)


def _view(raw, where: str):
    if raw is not None and raw not in BEAT_VIEWS:
        raise InputError(f"{where}: unknown view {raw!r} (a beat stands the table as {', '.join(BEAT_VIEWS)})")
    return raw


def _params(raw, where: str) -> dict:
    """A page's lab settings: an object of lab fields (app.settings.LAB_FIELDS), each checked as update() checks it."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not raw:
        raise InputError(f"{where}: 'params' must be a non-empty object of lab settings")
    for k in raw:
        if k not in LAB_FIELDS:
            raise InputError(f"{where}: 'params' sets {k!r}, which is not a lab setting ({', '.join(LAB_FIELDS)})")
    return check_values(raw, f"{where}: params")


def _events(raw, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or any(e not in EVENTS for e in raw):
        raise InputError(f"{where}: 'events' must be a non-empty list of {', '.join(EVENTS)}")
    return tuple(raw)


def _fact_names(raw, where: str) -> tuple[str, ...]:
    """A page's live numbers: names the catalogs label (fact.<name> in every language), each once."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or not all(isinstance(n, str) for n in raw) or len(set(raw)) != len(raw):
        raise InputError(f"{where}: 'facts' must be a non-empty list of fact names, each once")
    unknown = [n for n in raw if any(f"fact.{n}" not in catalog(lang) for lang in LANGS)]
    if unknown:
        raise InputError(f"{where}: unknown fact {unknown[0]!r} (no label fact.{unknown[0]} in the catalogs)")
    return tuple(raw)


def _plot(raw, where: str) -> str | None:
    if raw is not None and raw not in PLOT_NAMES + PAGE_PLOTS:
        raise InputError(f"{where}: 'plot' must be one of {', '.join(PLOT_NAMES + PAGE_PLOTS)}, not {raw!r}")
    return raw


def _controls(raw, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or any(c not in PAGE_CONTROLS for c in raw) or len(set(raw)) != len(raw):
        raise InputError(f"{where}: 'controls' must be a non-empty list of {', '.join(PAGE_CONTROLS)}, each once")
    return tuple(raw)


# What a page may keep back besides fact names: its plot, and the tubes' counts (the racks stand empty, only p's
# black lines in them, so a question about where the beads will settle is asked before any have fallen).
KEEP_BACK_PICTURES = ("plot", "tube_counts")


def _keep_back(raw, where: str) -> tuple[str, ...]:
    """Fact names (or a picture: KEEP_BACK_PICTURES) a predict-then-reveal page keeps back until its action has
    been shown."""
    if raw is None:
        return ()
    facts = tuple(n for n in raw if n not in KEEP_BACK_PICTURES) if isinstance(raw, list) else raw
    if facts:
        _fact_names(list(facts), where)
    if not isinstance(raw, list) or not raw or len(set(raw)) != len(raw):
        raise InputError(f"{where}: 'keep_back' must be a non-empty list of fact names (or "
                         f"{', '.join(KEEP_BACK_PICTURES)}), each once")
    return tuple(raw)


def parse_action(raw, where: str) -> Action:
    _keys(raw, {"do", "parts", "view", "kind", "pass", "until", *LANGS}, where)
    do = raw.get("do")
    if do not in ACTION_KINDS:
        raise InputError(f"{where}: 'do' must be one of {', '.join(ACTION_KINDS)}, not {do!r}")
    kind = raw.get("kind", "test")
    if "kind" in raw and do != "checkpoint":
        raise InputError(f"{where}: 'kind' belongs to a checkpoint, not to {do!r}")
    if kind not in CHECKPOINT_KINDS:
        raise InputError(f"{where}: checkpoint kind must be one of {', '.join(CHECKPOINT_KINDS)}, not {kind!r}")
    index = raw.get("pass")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
        raise InputError(f"{where}: 'pass' is a pass number (a whole number >= 0, 0 the first), not {index!r}")
    until = raw.get("until", "write")
    if until not in UNTILS or ("until" in raw and do != "play"):
        raise InputError(f"{where}: 'until' belongs to a play and is one of {', '.join(UNTILS)}, not {until!r}")
    return Action(do=do, parts=_parts(raw.get("parts"), where, required=False), view=_view(raw.get("view"), where),
                  kind=kind, pass_index=index, text=_texts(raw, where, required=False), until=until)


def parse_narration(raw, where: str) -> Narration:
    _keys(raw, {"title", "pages"}, where)
    title = _texts(raw.get("title") if isinstance(raw.get("title"), dict) else {}, f"{where}: title")
    pages_raw = raw.get("pages")
    if not isinstance(pages_raw, list) or not pages_raw:
        raise InputError(f"{where}: 'pages' must be a non-empty list")
    pages = []
    for i, p in enumerate(pages_raw):
        at = f"{where}: page {i + 1}"
        _keys(p, {"action", "parts", "view", "pair", "params", "events", "panel", "facts", "hold", "plot", "controls",
                  "ask", "keep_back", *LANGS}, at)
        if p.get("hold") is not None and p["hold"] not in HOLDS:
            raise InputError(f"{at}: 'hold' must be one of {', '.join(HOLDS)}, not {p['hold']!r}")
        if p.get("panel") is not None and p["panel"] not in PAGE_PANELS:
            raise InputError(f"{at}: 'panel' must be one of {', '.join(PAGE_PANELS)}, not {p['panel']!r}")
        action = parse_action(p["action"], f"{at}: action") if "action" in p else None
        pair = p.get("pair", "ngram")
        if pair not in PAGE_PAIRS:
            raise InputError(f"{at}: 'pair' must be one of {', '.join(PAGE_PAIRS)}, not {pair!r}")
        ask = _texts(p["ask"], f"{at}: ask") if isinstance(p.get("ask"), dict) else {}
        if "ask" in p and (action is None or not ask):
            raise InputError(f"{at}: 'ask' (a question in zh and en) needs an action that reveals")
        nxt = pages_raw[i + 1] if i + 1 < len(pages_raw) else None
        if "keep_back" in p and "ask" not in p and not (isinstance(nxt, dict) and "ask" in nxt):
            raise InputError(f"{at}: 'keep_back' needs a question: this page's 'ask' or the next page's")
        pages.append(Page(text=_texts(p, at), parts=_parts(p.get("parts"), at, required=True), action=action,
                          view=_view(p.get("view"), at) or "table", pair=pair, params=_params(p.get("params"), at),
                          events=_events(p.get("events"), at), panel=p.get("panel"),
                          facts=_fact_names(p.get("facts"), at), hold=p.get("hold"), plot=_plot(p.get("plot"), at),
                          controls=_controls(p.get("controls"), at), ask=ask,
                          keep_back=_keep_back(p.get("keep_back"), at)))
    return Narration(title=title, pages=tuple(pages))


class TourState:
    """Where the tour is: chapter, page, and whether the page's action has run (text -> key -> action).

    A prepared lesson (app.lesson.prepared) chooses the chapters, their order and the pages left out; without one, every
    chapter and page in order. `chapter` is always an index of CHAPTERS (the quiz's "show me" may jump to a
    chapter the lesson leaves out: PageDown then goes on to the lesson's next chapter after it)."""

    def __init__(self, chapter: int = 0, lesson=None):
        self.lesson = lesson
        self.chapter = max(0, min(len(CHAPTERS) - 1, chapter))
        if self.order and self.chapter not in self.order:
            self.chapter = self.order[0]
        self.page = self.first_page()
        self.acted = False        # the current page's action (or reveal) has been triggered

    # ---- the lesson's arrangement ----
    @property
    def order(self) -> tuple[int, ...]:
        return self.lesson.order if self.lesson is not None else tuple(range(len(CHAPTERS)))

    def entry(self, chapter: int | None = None):
        """The lesson's entry for a chapter (app.lesson.prepared.LessonChapter), or None (no lesson, or left out)."""
        if self.lesson is None:
            return None
        return self.lesson.chapter(self.chapter if chapter is None else chapter)

    def skipped(self, chapter: int | None = None) -> frozenset:
        e = self.entry(chapter)
        return e.skip if e is not None else frozenset()

    def shown_pages(self, chapter: int | None = None) -> list[int]:
        """The page indices of a chapter the class sees, in order."""
        ch = self.chapter if chapter is None else chapter
        skip = self.skipped(ch)
        return [i for i in range(len(narration(CHAPTERS[ch].slug).pages)) if i not in skip]

    def first_page(self) -> int:
        return self.shown_pages()[0]

    def note(self, lang: str) -> str | None:
        """The teacher's note on this page, if the lesson has one."""
        e = self.entry()
        return e.note(self.page, lang) if e is not None else None

    def position(self) -> tuple[int, int, int, int]:
        """(chapter number, chapters, page number, pages) as the class counts them in this lesson."""
        order, shown = self.order, self.shown_pages()
        ch = order.index(self.chapter) + 1 if self.chapter in order else self.chapter + 1
        pg = shown.index(self.page) + 1 if self.page in shown else self.page + 1
        return ch, len(order), pg, len(shown)

    def _next_chapter(self) -> int | None:
        later = [c for c in self.order if (self.order.index(c) > self.order.index(self.chapter)
                                           if self.chapter in self.order else c > self.chapter)]
        return later[0] if later else None

    def _prev_chapter(self) -> int | None:
        earlier = [c for c in self.order if (self.order.index(c) < self.order.index(self.chapter)
                                             if self.chapter in self.order else c < self.chapter)]
        return earlier[-1] if earlier else None

    @property
    def current(self) -> Chapter:
        return CHAPTERS[self.chapter]

    def pages(self) -> tuple[Page, ...]:
        return narration(self.current.slug).pages

    def page_data(self) -> Page:
        return self.pages()[self.page]

    def action(self) -> Action | None:
        return self.page_data().action

    def page_params(self) -> tuple[dict, tuple[str, ...]]:
        """The lab settings the chapter's pages have set up to this one (later pages override earlier ones) and the
        events the run must show: the chapter's, or those of the latest page that names some; a page that sets
        params starts over with its own (none: the lab's seed). A page the lesson skips still sets its params
        (the pages after it were written on them)."""
        params, events = {}, self.current.events
        for page in self.pages()[:self.page + 1]:
            params.update(page.params)
            if page.params:
                events = page.events          # new settings: only the events this page names (if any) hold
            else:
                events = page.events or events
        return params, events

    def beat(self) -> tuple[tuple[str, ...], str]:
        """(parts, view) of the beat showing now: the page's text, or its action once it has run."""
        page = self.page_data()
        if self.acted and page.action is not None:
            return page.action.parts or page.parts, page.action.view or page.view
        return page.parts, page.view

    def next(self) -> str:
        """Advance one beat. Returns 'act' (run this page's action), 'page', 'chapter' or 'end'."""
        if self.action() and not self.acted:
            self.acted = True
            return "act"
        later = [i for i in self.shown_pages() if i > self.page]
        if later:
            self.page = later[0]
            self.acted = False
            return "page"
        nxt = self._next_chapter()
        if nxt is not None:
            self.chapter = nxt
            self.page = self.first_page()
            self.acted = False
            return "chapter"
        return "end"

    def prev(self) -> str:
        if self.acted:
            self.acted = False
            return "page"
        earlier = [i for i in self.shown_pages() if i < self.page]
        if earlier:
            self.page = earlier[-1]
            return "page"
        prv = self._prev_chapter()
        if prv is not None:
            self.chapter = prv
            self.page = self.shown_pages()[-1]
            self.acted = False
            return "chapter"
        return "start"

    def goto(self, chapter: int) -> None:
        self.chapter = max(0, min(len(CHAPTERS) - 1, chapter))
        self.page = self.first_page()
        self.acted = False

    def is_last_beat(self) -> bool:
        action = self.action()
        return (self._next_chapter() is None and self.page == self.shown_pages()[-1]
                and (action is None or self.acted))
