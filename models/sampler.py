"""The samplers: speculative decoding on the n-gram pair (Leviathan et al., Algorithm 1) and the target alone.

Both draw every random number from one numpy Generator seeded at reset(), a fixed number per step
(speculative: n uniforms for the guesses, n for the tests, 1 for the final token, n = the drafter's
guess_uniforms(γ): γ for a chain, the node count for a tree; target alone: 1), so the same (seed, settings,
prefix, drafter) replays the same run. Who proposes is a drafter (models.drafters; default the bigram chain,
whose runs are unchanged); the rule is models.acceptance.verify, or models.multi_candidate.verify_tree for a tree.
Temperature, top-k and top-p shape both models' rows before anything is drawn: q in a trace is exactly
the distribution its guess came from, p exactly the one the output follows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from corpus.errors import InputError
from models.acceptance import MAX_GAMMA, verify
from models.drafters import ChainDrafter, TreeProposal
from models.multi_candidate import verify_tree
from models.trace import PassTally, StepTrace, TreeNode, TreeTrace



@dataclass
class SamplerSettings:
    """γ guesses per pass; shaping (temperature, top-k, top-p); seed; lenience (1 = exact, < 1 = the paper's
    lenient variant, not exact). Invalid values raise InputError at construction and again at every
    sampler reset()/step() (the fields may be changed in place, e.g. by a slider)."""

    gamma: int = 4
    temperature: float = 1.0
    top_k: int = 0          # 0 = off
    top_p: float = 1.0      # 1 = off
    seed: int = 0
    lenience: float = 1.0

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, (int, np.integer)):
            raise InputError(f"gamma must be a whole number, got {self.gamma!r}")
        if not 1 <= self.gamma <= MAX_GAMMA:
            raise InputError(f"gamma must be between 1 and {MAX_GAMMA}, got {self.gamma}")
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)) \
                or self.temperature < 0:
            raise InputError(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if not isinstance(self.top_k, (int, np.integer)) or self.top_k < 0:
            raise InputError(f"top-k must be a whole number >= 0 (0 = off), got {self.top_k!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise InputError(f"top-p must be in (0, 1] (1 = off), got {self.top_p!r}")
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise InputError(f"seed must be a whole number >= 0, got {self.seed!r}")
        if not (isinstance(self.lenience, (int, float)) and 0 < self.lenience <= 1):
            raise InputError(f"lenience must be in (0, 1] (1 = exact), got {self.lenience!r}")

    @property
    def exact(self) -> bool:
        return self.lenience == 1.0

    @property
    def shapes_rows(self) -> bool:
        return self.temperature != 1.0 or self.top_k > 0 or self.top_p < 1.0


def shape_row(row: np.ndarray, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> np.ndarray:
    """Apply temperature, then top-k, then top-p to a probability row; returns a new normalised row.

    temperature 0 is greedy: one-hot at the most likely token (the lowest id among ties).
    temperature t > 0: row^(1/t), computed as (row / max)^(1/t) so nothing overflows.
    top-k keeps the k most likely tokens; top-p keeps the smallest most-likely set with mass >= top_p
    (ties broken by lower id, so the result is deterministic).
    """
    row = np.asarray(row, dtype=np.float64)
    if temperature == 0:
        out = np.zeros_like(row)
        out[int(np.argmax(row))] = 1.0
        return out
    if temperature != 1.0:
        out = np.power(row / row.max(), 1.0 / temperature)
    else:
        out = row.copy()
    if top_k > 0 or top_p < 1.0:
        order = np.argsort(-out, kind="stable")
        keep = len(out)
        if top_k > 0:
            keep = min(keep, int(top_k))
        if top_p < 1.0:
            mass = np.cumsum(out[order[:keep]])
            keep = min(keep, int(np.searchsorted(mass, top_p * out.sum() * (1 - 1e-12), side="left")) + 1)
        mask = np.zeros(len(out), dtype=bool)
        mask[order[:keep]] = True
        out[~mask] = 0.0
    return out / out.sum()


class Rows:
    """The rows a drafter proposes from and the rule checks against: the pair's q and p (and any other proposal row,
    through shape()) after the settings' temperature / top-k / top-p. The samplers are Rows; the test tubes make one."""

    def __init__(self, pair, settings: SamplerSettings | None = None):
        self.pair = pair
        self.settings = settings or SamplerSettings()

    def shape(self, row):
        s = self.settings
        return shape_row(row, s.temperature, s.top_k, s.top_p) if s.shapes_rows else row

    def draft_row(self, ctx):
        row, backed = self.pair.draft_row(ctx)
        return self.shape(row), backed

    def target_row(self, ctx):
        row, backed = self.pair.target_row(ctx)
        return self.shape(row), backed

    _q = draft_row
    _p = target_row


def checked_prefix(pair, prefix_ids) -> list[int]:
    """The prefix as token ids of the pair's vocabulary (every sampler, either kind of pair, starts from one)."""
    ids = [int(i) for i in prefix_ids]
    if any(not 0 <= i < pair.V for i in ids):
        raise InputError("prefix holds token ids outside the vocabulary")
    return ids


class Sampler(Protocol):
    """What every sampler does, the n-gram ones here and the network ones (models.llm.pair): start from a prefix,
    make passes, keep the text. The table, the long runs, the tubes and the CLI read samplers through this only."""

    settings: SamplerSettings
    tokens: list[int]                 # the prefix and every token written since reset
    step_index: int                   # passes made since reset

    def reset(self, prefix_ids=()) -> None: ...
    def rewind(self, prefix_ids) -> None: ...
    def step(self) -> StepTrace: ...
    def tally_step(self) -> PassTally: ...
    def run_tokens(self, n: int) -> list[StepTrace]: ...


class SamplerBase:
    """The text and the pass counter every sampler keeps; its random stream (numpy or torch) is its own
    (_start_stream), seeded at reset, so a run replays from (seed, settings, prefix)."""

    def __init__(self, pair, settings: SamplerSettings | None = None):
        self.pair = pair
        self.settings = settings or SamplerSettings()
        self.reset([])

    def reset(self, prefix_ids=()) -> None:
        """Start again from a prefix with a freshly seeded random stream: the same run replays exactly."""
        self.settings.validate()
        ids = checked_prefix(self.pair, prefix_ids)
        self.tokens: list[int] = ids
        self.prefix_len = len(ids)
        self.step_index = 0
        self._start_stream()

    def _start_stream(self) -> None:
        raise NotImplementedError

    def _stream(self):
        raise NotImplementedError

    def rewind(self, prefix_ids) -> None:
        """Back to a prefix with the random stream going on (not re-seeded): many independent runs from one
        prefix, as the test tubes draw them."""
        stream = self._stream()
        self.reset(prefix_ids)
        self._restore_stream(stream)

    def _restore_stream(self, stream) -> None:
        raise NotImplementedError

    @property
    def written(self) -> list[int]:
        """Tokens written since reset (the prefix excluded)."""
        return self.tokens[self.prefix_len:]

    def run_tokens(self, n: int) -> list[StepTrace]:
        """Whole passes until at least n tokens are written by this call (a pass is never cut)."""
        return list(self.steps(n))

    def steps(self, n: int):
        """The passes of run_tokens(n) one at a time: a long run counted as it goes keeps no trace (a tree's
        pass holds every lane's rows: 20,000 tokens of them were 15 GB)."""
        if n < 0:
            raise InputError("number of tokens must be >= 0")
        start = len(self.tokens)
        while len(self.tokens) - start < n:
            yield self.step()


class _Base(SamplerBase, Rows):
    """An n-gram sampler: its rows are the pair's, shaped; its stream a numpy Generator."""

    def __init__(self, pair, settings: SamplerSettings | None = None):
        Rows.__init__(self, pair, settings)
        SamplerBase.__init__(self, pair, self.settings)

    def _start_stream(self) -> None:
        self.rng = np.random.default_rng(self.settings.seed)

    def _stream(self):
        return self.rng

    def _restore_stream(self, stream) -> None:
        self.rng = stream


class SpeculativeSampler(_Base):
    """Guesses from a drafter (default: γ from q, the small drum), one target pass computing p where they need it
    (the big drum), the exact rule."""

    def __init__(self, pair, settings: SamplerSettings | None = None, drafter=None):
        self.drafter = drafter if drafter is not None else ChainDrafter()
        super().__init__(pair, settings)

    def reset(self, prefix_ids=()) -> None:
        super().reset(prefix_ids)
        self.drafter.reset()

    def step(self) -> StepTrace:
        return self._advance(record=True)

    def tally_step(self) -> PassTally:
        """One pass that keeps no trace, counted (a long run's α)."""
        return self._advance(record=False)

    def _advance(self, record: bool):
        """One pass: its StepTrace, or with record=False its PassTally (a tree's tally comes from its trace)."""
        s = self.settings
        s.validate()
        self.drafter.validate(s.gamma)
        n = self.drafter.guess_uniforms(s.gamma)
        u = self.rng.random(2 * n + 1)               # fixed draw count per step: replayable
        out, written = self.pass_from(self.tokens, u[:n], u[n:2 * n], float(u[-1]), record=record)
        self.tokens.extend(written)
        self.step_index += 1
        if not record and isinstance(out, StepTrace):
            return PassTally(out.n_accepted, out.tested, ())
        return out

    def pass_from(self, ctx, u_guess, r, u_final: float, record: bool = True):
        """One pass from the context `ctx` with the given uniforms (pure: nothing in the sampler moves).
        Returns (StepTrace, or the Verdicts when record is False for a one-guess-per-position drafter, tokens
        written). The tests enumerate a pass's outcomes through this."""
        s = self.settings
        prop = self.drafter.propose(self, ctx, s.gamma, u_guess)
        if isinstance(prop, TreeProposal):
            trace = self._tree_pass(ctx, prop, u_guess, r, u_final)
            return trace, trace.tokens_written
        guesses, q_rows = prop.guesses, prop.q_rows
        k = len(guesses)
        tail = list(ctx[-2:])                        # the models see at most two tokens back
        p_rows = np.empty((k + 1, self.pair.V))
        target_bo = []
        for i in range(k + 1):
            # One turn of the big drum, k+1 lanes lit: p after the prefix and after each guess.
            p, bo = self.target_row(tail + guesses[:i])
            p_rows[i] = p
            target_bo.append(bo)
        v = verify(guesses, q_rows, p_rows, r[:k], u_final, lenience=s.lenience)
        written = guesses[:v.n_accepted] + [v.final_token]
        if not record:
            return PassTally(v.n_accepted, min(v.n_accepted + 1, k), ()), written
        extra = {"u_guess": [float(x) for x in u_guess], "u_final": u_final, "sampler": "speculative"}
        if not isinstance(self.drafter, ChainDrafter):       # k may be under γ: say what was asked
            extra["gamma_setting"] = s.gamma
        trace = StepTrace.of(
            step_index=self.step_index, context=ctx, guesses=guesses, q_rows=q_rows, p_rows=p_rows,
            ratios=v.ratios, r=r[:k], n_accepted=v.n_accepted, final_token=v.final_token, final_row=v.final_row,
            residual_fallback=v.residual_fallback, exact=s.exact, extra=extra, draft_backed_off=prop.backed_off,
            target_backed_off=target_bo, drafter=self.drafter.name, source_span=prop.source_span,
            heads=prop.heads)
        return trace, written

    def _tree_pass(self, ctx, prop, u_guess, r, u_final) -> StepTrace:
        """Every node computed in one target pass, the multi-candidate rule over the tree."""
        s = self.settings
        if not s.exact:
            raise InputError("lenience < 1 is a rule for one guess per position; the tree runs the exact rule only")
        n = len(prop.tokens)
        tail = list(ctx[-2:])
        p_rows = np.empty((n + 1, self.pair.V))
        target_bo = []
        for i in range(n + 1):
            # p after the context and after every node's path: the whole tree is one pass (tree attention).
            p, bo = self.target_row(tail if i == 0 else (tail + prop.paths[i - 1])[-2:])
            p_rows[i] = p
            target_bo.append(bo)
        tv = verify_tree(prop.parents, prop.tokens, prop.q_rows, prop.q_of, p_rows, r[:n], u_final)
        return tree_trace(self.step_index, ctx, prop, p_rows, target_bo, tv, u_guess, r, u_final, s.gamma,
                          self.drafter.name)


def tree_trace(step_index: int, ctx, prop, p_rows: np.ndarray, target_bo: list[bool], tv, u_guess, r, u_final: float,
               gamma: int, drafter: str, extra: dict | None = None) -> StepTrace:
    """A tree pass as a StepTrace (the counted pair's and a network's): the whole tree in .tree, and the chain
    fields along the walk the rule took (the accepted path, then the last candidate rejected)."""
    n = len(prop.tokens)
    V = p_rows.shape[1]
    path = tv.accepted_path
    by_node = {c.node: c for c in tv.checks}         # a node is checked at most once; the last check wins anyway
    walk = list(path) + ([tv.checks[-1].node] if tv.final_kind == "replacement" else [])
    checks = [by_node[w] for w in walk]
    g = len(walk)
    q_proj = np.array([prop.q_rows[prop.q_of[w]] for w in walk]).reshape(g, V)
    p_proj = np.empty((g + 1, V))
    for i, c in enumerate(checks):
        p_proj[i] = tv.target_rows[c.target_row]
    p_proj[g] = p_rows[1 + walk[-1]] if walk else p_rows[0]
    parent_row = [0] + [1 + w for w in walk]
    tree = TreeTrace(
        base=prop.base, sampling=prop.sampling, widths=list(prop.widths),
        nodes=[TreeNode(i, prop.parents[i], prop.tokens[i], prop.depths[i], prop.q_of[i],
                        prop.heads[i] if prop.heads else None, prop.backed_off[i]) for i in range(n)],
        q_rows=prop.q_rows, p_rows=p_rows, checks=list(tv.checks), target_rows=tv.target_rows,
        accepted_path=list(path), target_backed_off=target_bo)
    return StepTrace.of(
        step_index=step_index, context=ctx, guesses=[prop.tokens[w] for w in walk],
        q_rows=q_proj, p_rows=p_proj, ratios=[c.ratio for c in checks], r=[c.r for c in checks], tested=g,
        accepted=[c.accepted for c in checks], n_accepted=len(path), final_token=tv.final_token,
        final_kind=tv.final_kind, final_row=tv.final_row, residual_fallback=tv.residual_fallback,
        draft_backed_off=[prop.backed_off[w] for w in walk],
        target_backed_off=[target_bo[i] for i in parent_row], lanes_lit=n + 1, exact=True,
        extra={"u_guess": [float(x) for x in u_guess], "u_test": [float(x) for x in r[:n]], "u_final": u_final,
               "sampler": "speculative", "gamma_setting": gamma, **(extra or {})},
        drafter=drafter, heads=[prop.heads[w] for w in walk] if prop.heads else None, tree=tree)


class TargetSampler(_Base):
    """The big drum alone: one pass, one token drawn from p (the left test tube)."""

    def step(self) -> StepTrace:
        self.settings.validate()
        ctx = self.tokens
        u_final = float(self.rng.random())
        p, bo = self._p(ctx[-2:])
        V = self.pair.V
        # verify with no guesses is exactly "draw the bonus token from p": the same code path.
        v = verify(np.zeros(0, dtype=np.int64), np.empty((0, V)), p[None, :], np.zeros(0), u_final)
        trace = StepTrace.of(
            step_index=self.step_index, context=ctx, guesses=[], q_rows=np.empty((0, V)),
            p_rows=np.array(p, dtype=np.float64)[None, :], ratios=[], r=[], n_accepted=0,
            final_token=v.final_token, final_row=v.final_row, target_backed_off=[bo],
            extra={"u_final": u_final, "sampler": "target"})
        self.tokens.append(v.final_token)
        self.step_index += 1
        return trace


def make_sampler(pair, settings: SamplerSettings | None = None, *, drafter=None, target_only: bool = False):
    """The sampler for any pair (models.pair.Pair.sampler): SpeculativeSampler / TargetSampler for the n-gram pair,
    the torch samplers of models.llm.pair for a network pair (imported only by it: the n-gram path never loads
    torch)."""
    return pair.sampler(settings, drafter=drafter, target_only=target_only)
