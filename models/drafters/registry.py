"""The drafter registry: every kind of drafter declared once, and the only place that tells drafters apart by name.

A DrafterKind says what the rest of the program needs to know about a drafter without naming it:

    name          the settings' and the CLI's word for it ('chain', 'lookup', ...)
    build         build(pair, options, heads) -> Drafter; heads() loads the pair's heads table when asked
    options       the settings it reads beside γ (a tree: its width, depth, base and sampling); γ is always read
    gamma_knob    the lab shows γ for it (a tree shows its width and depth instead)
    draft_model   a separate draft model runs (the small drum turns; c × a target pass per guess)
    look          how the table draws its guesses: DRUM (drawn by the small drum), COPY (the pencil cart copies
                  from the tape), HEADS (heads on the big drum's axle), TREE (a tree pencilled in the margin)
    needs         what a pair must offer (Pair.offers), any one of them: COUNTS (the n-gram tables: the toy's heads and
                  trees), FEATURES (a network target's features: Medusa's heads, EAGLE)
    formulas      the chain's closed forms (α, E[tokens per pass], the speed-up) describe it
    words         the step-through's words for its guess, its q and its residual (i18n keys), where they differ
    hue           its colour in the plots ('#rrggbb' or a palette name)
    positions     positions(options, γ) -> the guesses one pass makes at most (a tree: its nodes); lanes = this + 1
    variants      variants(γ) -> [(key, label, options)]: the settings its long runs are counted at
    compared      compared(γ) -> the same, for `spectable drafters --compare` (default: its variants)
    lean          how the lean torch loops on a checkpoint alone run it (models.llm.speculative): LEAN_MODEL (the
                  draft model proposes), LEAN_COPY (copies from the text), None (it runs on a pair only)
    problem       problem(pair) -> why it cannot run on that pair beyond `needs` (one line), or None

Adding a drafter: its module (a models.drafters.base.Drafter), a register(DrafterKind(...)) call, its words in
assets/i18n (lab.drafter_<name>, lab.note.<name>), its tests. The sampler, the lab, the step-through, the tubes and
the table read the kind; none of them compares a name.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType

from corpus.errors import InputError

# How the table draws a drafter's guesses (scenes.timeline reads these; a new drafter picks one).
DRUM, COPY, HEADS, TREE = "drum", "copy", "heads", "tree"
LOOKS = (DRUM, COPY, HEADS, TREE)
# How the lean torch loops (a checkpoint alone: llm-generate, llm-bench) run a drafter.
LEAN_MODEL, LEAN_COPY = "model", "copy"
# What a pair may offer a drafter (Pair.offers): the n-gram counts (the toy's heads and trees are built on them), or
# the target's features (a network pair with self-drafters: Medusa's heads, EAGLE's layer).
COUNTS, FEATURES = "counts", "features"

_NO_WORDS: Mapping[str, str] = MappingProxyType({})


def _one(name: str):
    return lambda gamma: [(name, name, {})]


@dataclass(frozen=True)
class DrafterKind:
    name: str
    build: Callable
    options: tuple[str, ...] = ()
    gamma_knob: bool = True
    draft_model: bool = False
    look: str = DRUM
    needs: frozenset = frozenset()
    formulas: bool = False
    words: Mapping[str, str] = field(default_factory=lambda: _NO_WORDS)
    hue: str = "accent"
    variants: Callable | None = None
    compared: Callable | None = None
    lean: str | None = None
    positions: Callable = lambda options, gamma: gamma
    problem: Callable | None = None         # problem(pair) -> why it cannot run there beyond `needs` (one line), or None

    def __post_init__(self):
        if not self.name or not self.name.isidentifier():
            raise ValueError(f"a drafter's name is one word, not {self.name!r}")
        if self.look not in LOOKS:
            raise ValueError(f"a drafter's look is one of {LOOKS}, not {self.look!r}")
        if self.variants is None:
            object.__setattr__(self, "variants", _one(self.name))
        if self.compared is None:
            object.__setattr__(self, "compared", self.variants)

    @property
    def fed_by_target(self) -> bool:
        """It drafts with a network of its own fed the target's features (EAGLE): the table draws the feed."""
        return self.needs == frozenset({FEATURES})

    def word(self, what: str, default: str) -> str:
        """The step-through's i18n key for `what` ('guess', 'q', 'residual')."""
        return self.words.get(what, default)

    def make(self, pair=None, options: Mapping | None = None, heads=None):
        """The drafter, from the pair and the options it reads (others are ignored); heads: a HeadModels already
        loaded, a function that loads it (called only if the drafter reads heads), or None to load the pair's."""
        opts = {k: v for k, v in (options or {}).items() if k in self.options}

        def load_heads():
            if callable(heads):
                return heads()
            if heads is not None:
                return heads
            if pair is None:
                raise InputError("the heads drafter needs the pair (its heads table sits beside the pair's)")
            from models.heads import HeadModels  # lazy: not loaded at `spectable` start
            return HeadModels.for_pair(pair)
        return self.build(pair, opts, load_heads)

    def problem_on(self, pair) -> str | None:
        """Why this drafter cannot run on `pair` (one line), or None when it can."""
        if self.needs and not self.needs & _offers(pair):
            built_on = " or ".join({COUNTS: "the n-gram counts", FEATURES: "a network's features with its trained "
                                    "self-drafters"}[n] for n in sorted(self.needs))
            return f"the {self.name} drafter is built on {built_on}; this pair runs {runs_on(pair, self.name)}"
        return self.problem(pair) if self.problem is not None else None

    def runs_on(self, pair) -> bool:
        """Whether this drafter can draft on `pair` (its needs met, no draft model missing, its own hook content)."""
        if self.needs and not self.needs & _offers(pair):
            return False
        if self.draft_model and getattr(pair, "draft", True) is None:      # a network target without a draft model
            return False
        return self.problem is None or self.problem(pair) is None


def _offers(pair) -> frozenset:
    return getattr(pair, "offers", frozenset({COUNTS}))


def runs_on(pair, but: str | None = None) -> str:
    """The drafters `pair` can run, as words for a refusal ("chain or lookup"); `but`: one not asked (its own
    refusal asks this)."""
    return " or ".join(k.name for k in kinds() if k.name != but and k.runs_on(pair))


_KINDS: dict[str, DrafterKind] = {}


def register(kind: DrafterKind) -> DrafterKind:
    """Declare a drafter (a second kind of the same name replaces the first)."""
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    _KINDS.pop(name, None)


@contextmanager
def registered(kind: DrafterKind):
    """A drafter declared for the length of a with-block (a plug-in tried for a while, a test)."""
    before = _KINDS.get(kind.name)
    register(kind)
    try:
        yield kind
    finally:
        if before is None:
            unregister(kind.name)
        else:
            register(before)


def kinds() -> tuple[DrafterKind, ...]:
    return tuple(_KINDS.values())


def names() -> tuple[str, ...]:
    return tuple(_KINDS)


def kind(name: str) -> DrafterKind:
    k = _KINDS.get(name)
    if k is None:
        raise InputError(f"unknown drafter {name!r} (use one of: {', '.join(_KINDS)})")
    return k


def choice(values) -> tuple:
    """Which drafter a set of settings names, with the options its kind reads and nothing else: (name, ((option,
    value), ...)), hashable (a cache key). values: an object with the settings as attributes, or a dict."""
    get = values.get if isinstance(values, Mapping) else (lambda k, d=None: getattr(values, k, d))
    name = get("drafter", "chain")
    opts = tuple((o, get(o)) for o in kind(name).options if get(o) is not None)
    return name, opts


def make_choice(choice_: tuple, pair=None, heads=None):
    """The drafter a choice() names."""
    name, opts = choice_
    return kind(name).make(pair, dict(opts), heads)


def lean_names() -> tuple[str, ...]:
    """The drafters the lean torch loops run on a checkpoint alone."""
    return tuple(k.name for k in _KINDS.values() if k.lean is not None)


def kind_of(name: str, default: str = "chain") -> DrafterKind:
    """The kind of a name read back from a trace or a file: an unknown one reads as `default`."""
    return _KINDS.get(name) or _KINDS[default]
