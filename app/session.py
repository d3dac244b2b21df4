"""The run cache: from the settings to the n-gram pair and a run of step traces, recomputed only when a field
that the run depends on changed (app.settings.RUN_FIELDS), the test-tube experiment's worker and the worker of
the pair's long run.

Everything the UI shows about the run is read from here; the numbers derived from it (α, speedups,
roofline) are plain cached functions in app/derived.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from app.settings import RUN_FIELDS, AppSettings
from corpus.errors import InputError

TUBE_PREFIX = "慢慢"      # the test-tube prefix of the lesson (chapter 6)


@dataclass(frozen=True)
class Run:
    prompt_ids: tuple[int, ...]
    traces: tuple
    tokens: tuple[int, ...]           # prompt + written
    # No α here: a short run's counts are that run's (models.analytics.count_run); the pair's α and tokens per
    # pass come from its long run (LongRunWorker).

    @property
    def written(self) -> int:
        return len(self.tokens) - len(self.prompt_ids)


class Session:
    """The run cache. ensure() returns the run for the settings now (the previous run, with .error set, when the
    settings cannot make one: a prompt the table does not know); version bumps whenever the run changes."""

    def __init__(self, settings: AppSettings):
        self.settings = settings
        self._pairs: dict = {}
        self._heads: dict = {}
        self._run_key = None
        self.run: Run | None = None
        self.error: str | None = None      # the last bad input (shown in the lab, never fatal)
        self.version = 0

    def pair(self, tokens: str | None = None):
        from models.ngram import NGramPair
        tokens = tokens or self.settings.tokens
        if tokens not in self._pairs:
            self._pairs[tokens] = NGramPair.load(tokens=tokens)
        return self._pairs[tokens]

    def heads(self, pair=None):
        """The heads drafter's tables for the pair (loaded once per pair)."""
        from models.heads import HeadModels
        pair = pair or self.pair()
        if pair.tokens not in self._heads:
            self._heads[pair.tokens] = HeadModels.for_pair(pair)
        return self._heads[pair.tokens]

    def drafter_key(self) -> tuple:
        """The settings the drafter is built from (only those its kind uses)."""
        s = self.settings
        if s.drafter == "tree":
            return (s.drafter, s.tree_width, s.tree_depth, s.tree_from, s.tree_sampling)
        return (s.drafter,)

    def drafter(self, pair=None, key: tuple | None = None):
        """The drafter the settings (or a drafter_key()) name (models.drafters), with the lab's tree shape."""
        from models.drafters import make_drafter
        name, *tree = key or self.drafter_key()
        pair = pair or self.pair()
        if name != "tree":
            return make_drafter(name, pair, heads=self.heads(pair) if name == "heads" else None)
        width, depth, base, sampling = tree
        return make_drafter("tree", pair, tree_width=width, tree_depth=depth, tree_from=base, tree_sampling=sampling,
                            heads=self.heads(pair) if base == "heads" else None)

    def sampler_settings(self, gamma: int | None = None):
        from models.sampler import SamplerSettings
        s = self.settings
        return SamplerSettings(gamma=gamma or s.gamma, temperature=s.temperature, top_k=s.top_k, top_p=s.top_p,
                               seed=s.seed)

    def ensure(self) -> Run | None:
        """Recompute the run if a field it depends on changed. A bad prompt keeps the previous run and sets .error."""
        key = self.settings.values(RUN_FIELDS)
        if key == self._run_key:
            return self.run
        from models.sampler import SpeculativeSampler, TargetSampler
        s = self.settings
        self._run_key = key
        try:
            pair = self.pair()
            prompt_ids = pair.encode(s.prompt)
            if len(prompt_ids) == 0:
                raise InputError("the prompt is empty")
            if s.decoder == "target":
                sampler = TargetSampler(pair, self.sampler_settings())
            else:
                sampler = SpeculativeSampler(pair, self.sampler_settings(), drafter=self.drafter(pair))
            sampler.reset(prompt_ids)
            traces = tuple(sampler.step() for _ in range(s.steps))
        except (InputError, OSError, ValueError) as exc:    # a bad prompt or table: say so, keep the last run
            self.error = str(exc)
            return self.run
        self.error = None
        self.run = Run(prompt_ids=tuple(prompt_ids), traces=traces, tokens=tuple(sampler.tokens))
        self.version += 1
        return self.run


class TubeWorker:
    """The test-tube experiment (about a second: 10,000 draws a tube) on one background thread, one result
    per (rule, tokens, rounds). get() waits for it; ready() returns it if done, else starts it and returns None."""

    def __init__(self, session: Session):
        self.session = session
        self._results: dict = {}
        self._jobs: dict = {}
        self._pool = None

    def _compute(self, key):
        from models.tubes import run_tubes
        rule, tokens, rounds, drafter = key
        pair = self.session.pair(tokens)
        return run_tubes(pair, prefix=TUBE_PREFIX, rounds=rounds, draws=50, seed=1, rule=rule,
                         drafter=self.session.drafter(pair, drafter))

    def _key(self, rule, rounds):
        """The experiment for the rule, the table and the drafter the right tube's guesses come from (the key
        holds the drafter's settings: the worker thread builds it from them, not from settings that may move)."""
        s = self.session.settings
        return (rule or s.tube_rule, s.tokens, rounds, self.session.drafter_key())

    def get(self, rule: str | None = None, rounds: int = 200):
        """The TubesResult (waits for a background computation of it if one is running)."""
        key = self._key(rule, rounds)
        if key not in self._results:
            job = self._jobs.pop(key, None)
            self._results[key] = job.result() if job is not None else self._compute(key)
        return self._results[key]

    def ready(self, rule: str | None = None, rounds: int = 200):
        """The TubesResult if it is done, else None (and it is started in the background)."""
        key = self._key(rule, rounds)
        if key in self._results:
            return self._results[key]
        job = self._jobs.get(key)
        if job is None:
            from concurrent.futures import ThreadPoolExecutor
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tubes")
            self.session.drafter(self.session.pair(), key[3])   # load the tables here, not from two threads at once
            self._jobs[key] = self._pool.submit(self._compute, key)
            return None
        return self.get(rule, rounds) if job.done() else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DrafterWorker:
    """What each drafter buys and costs (tokens and lanes per pass) for the lab's table, γ and row shaping: the
    shipped long runs when they were counted at these settings (models.drafter_analytics.shipped_long_runs, no
    wait), else a short run of every drafter counted now on one background thread (about ten seconds).
    get() waits; ready() returns the figures if done, else starts them and returns None. The figures:
    {"points", "source": "long" | "short", "chars", "seed"}."""

    SHORT_CHARS = 600           # tokens per drafter when nothing long was counted at these settings

    def __init__(self, session: Session):
        self.session = session
        self._results: dict = {}
        self._jobs: dict = {}
        self._pool = None

    def _key(self):
        st = self.session.sampler_settings()
        return (self.session.settings.tokens, st.gamma, st.temperature, st.top_k, st.top_p)

    def _compute(self, key):
        from dataclasses import replace

        from models import drafter_analytics as da
        tokens, gamma, temperature, top_k, top_p = key
        pair = self.session.pair(tokens)
        settings = replace(self.session.sampler_settings(), gamma=gamma, temperature=temperature, top_k=top_k,
                           top_p=top_p, seed=0)
        doc = da.shipped_long_runs(pair, settings)
        if doc is not None:
            return {"points": doc["points"], "source": "long", "chars": doc["settings"]["chars"],
                    "seed": doc["settings"]["seed"]}
        from models.drafters import make_drafter

        def runs_here(spec) -> bool:          # a tree too big at this γ, or no heads table beside a user's pair
            try:
                make_drafter(spec[2], pair, heads=self.session.heads(pair) if "heads" in spec[0] else None,
                             **spec[3]).validate(gamma)
                return True
            except InputError:
                return False
        specs = [sp for sp in da.long_run_specs(gamma) if runs_here(sp)]
        doc = da.long_runs(pair, settings, chars=self.SHORT_CHARS, specs=specs)
        return {"points": doc["points"], "source": "short", "chars": self.SHORT_CHARS, "seed": 0}

    def get(self):
        key = self._key()
        if key not in self._results:
            job = self._jobs.pop(key, None)
            self._results[key] = job.result() if job is not None else self._compute(key)
        return self._results[key]

    def ready(self):
        key = self._key()
        if key in self._results:
            return self._results[key]
        job = self._jobs.get(key)
        if job is None:
            from concurrent.futures import ThreadPoolExecutor
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="drafters")
            try:                                  # load the tables here, not from two threads at once
                self.session.heads(self.session.pair(key[0]))
            except InputError:
                pass                              # no heads table: the runs leave the heads out
            self._jobs[key] = self._pool.submit(self._compute, key)
            return None
        return self.get() if job.done() else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class LongRunWorker:
    """The pair's long-run facts (models.analytics.pair_facts: about 0.6 s once per table, γ and row shaping)
    on one background thread. Seed 0, the run `spectable alpha` reports, not the lab's seed (which only picks
    the demo text). get() waits; ready() returns the facts if done, else starts them and returns None."""

    def __init__(self, session: Session):
        self.session = session
        self._jobs: dict = {}
        self._pool = None

    def _args(self):
        from models import analytics
        ses, s = self.session, self.session.settings
        pair = ses.pair()
        st = ses.sampler_settings()
        return (analytics.table_key(pair), s.gamma, st.temperature, st.top_k, st.top_p), (pair, s.gamma, st)

    def get(self):
        from models import analytics
        key, (pair, gamma, st) = self._args()
        job = self._jobs.get(key)
        return job.result() if job is not None else analytics.pair_facts(pair, gamma, st, seed=0)

    def ready(self):
        from models import analytics
        key, (pair, gamma, st) = self._args()
        job = self._jobs.get(key)
        if job is None:
            from concurrent.futures import ThreadPoolExecutor
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="long-run")
            job = self._jobs[key] = self._pool.submit(analytics.pair_facts, pair, gamma, st, None, 0)
        return job.result() if job.done() else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
