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
            kind = TargetSampler if s.decoder == "target" else SpeculativeSampler
            sampler = kind(pair, self.sampler_settings())
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
        rule, tokens, rounds = key
        return run_tubes(self.session.pair(tokens), prefix=TUBE_PREFIX, rounds=rounds, draws=50, seed=1, rule=rule)

    def _key(self, rule, rounds):
        s = self.session.settings
        return (rule or s.tube_rule, s.tokens, rounds)

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
            self.session.pair()             # load the table here, not from two threads at once
            self._jobs[key] = self._pool.submit(self._compute, key)
            return None
        return self.get(rule, rounds) if job.done() else None

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
