"""The tour: twelve chapters of docs/SCIENCE.md, each a camera view, parts in focus, parameters and paged narration.

Narration lives in assets/tour/NN-slug.json (zh and en, our own words); this module holds what each
chapter does to the table. Pacing follows llm-viz: a page of text, then a key press, then the action;
a checkpoint page asks for a prediction first and reveals it on the next key press.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache

from app.paths import TOUR_DIR


@dataclass(frozen=True)
class Chapter:
    slug: str
    view: str                     # Stage.set_view name
    focus: tuple[str, ...]        # parts the narration talks about
    params: dict = field(default_factory=dict)   # lab settings the chapter sets (gamma, lanes, context...)
    plot: str | None = None       # panel plot: 'speedup' | 'tpp' | 'roofline' | 'tubes'
    facts: tuple[str, ...] = ()   # live numbers listed beside the narration
    decoder: str = "speculative"  # 'target': the big drum alone (chapters before speculation is introduced)


CHAPTERS: tuple[Chapter, ...] = (
    Chapter("01-one-token", "bigdrum", ("bigdrum", "readhead"), {"lanes": 1, "context": 1},
            facts=("bytes_per_step", "ms_per_token", "tokens_per_s", "busy"), decoder="target"),
    Chapter("02-batching", "readhead", ("readhead", "cabinet"), {"lanes": 64, "context": 4096}, plot="roofline",
            facts=("lanes", "tps_weights", "busy_weights", "kv_gb", "bytes_per_step", "tokens_per_s", "busy"),
            decoder="target"),
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
    Chapter("11-inside-read-head", "cutaway", ("readhead", "mill"), {"lanes": 9, "context": 1},
            facts=("lanes", "busy", "lanes_to_saturate"), decoder="target"),     # nine sequences: nine lanes
    Chapter("12-taken-apart", "exploded", ("table",), {}, facts=("vocab", "alpha")),
)


@lru_cache(maxsize=None)
def narration(slug: str) -> dict:
    """{'title': {'zh','en'}, 'pages': [{'zh','en','action'?}, ...]} for one chapter."""
    with open(TOUR_DIR / f"{slug}.json", encoding="utf-8") as fh:
        return json.load(fh)


class TourState:
    """Where the tour is: chapter, page, and whether the page's action has run (text -> key -> action)."""

    def __init__(self, chapter: int = 0):
        self.chapter = max(0, min(len(CHAPTERS) - 1, chapter))
        self.page = 0
        self.acted = False        # the current page's action (or reveal) has been triggered

    @property
    def current(self) -> Chapter:
        return CHAPTERS[self.chapter]

    def pages(self) -> list[dict]:
        return narration(self.current.slug)["pages"]

    def page_data(self) -> dict:
        return self.pages()[self.page]

    def action(self) -> dict | None:
        return self.page_data().get("action")

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
