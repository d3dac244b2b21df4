"""The run cache: from the settings to the n-gram pair and a run of step traces, recomputed only when a field
that the run depends on changed (app.settings.RUN_FIELDS), the test-tube experiment's worker and the worker of
the pair's long run.

Everything the UI shows about the run is read from here; the numbers derived from it (α, speedups,
roofline) are plain cached functions in app/derived.py.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from concurrent.futures import ThreadPoolExecutor

from app.settings import RUN_FIELDS, AppSettings
from corpus.errors import InputError
from models.tubes import DEFAULT_PREFIX, run_tubes
from app import pairs
from models import analytics, drafter_analytics as da
from models.drafters import COUNTS, FEATURES, choice, kind
from models.heads import HeadModels
from models.sampler import SamplerSettings, make_sampler

# What a live measurement or a checkpoint that loads may meet that is not a bug: app.lesson.facts.UNAVAILABLE's kinds
# (a file that cannot load, a number out of range, a figure not there) and torch's own RuntimeError (out of
# memory, an op or dtype the device lacks). Anything else is a bug and is raised.
NOT_MEASURED = (InputError, OSError, ValueError, ArithmeticError, LookupError, RuntimeError)

_RUN = frozenset(RUN_FIELDS)
TUBE_PREFIX = DEFAULT_PREFIX      # the test-tube prefix of the lesson (chapter 6)


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
        self._load_lock = threading.Lock()
        self._heads: dict = {}
        self._stale = True                 # a field the run reads changed since it was made (changed() says so)
        self.run: Run | None = None
        self._run_pair: str | None = None   # the pair_key() of the pair that wrote self.run
        self.error: str | None = None      # the last bad input (shown in the lab, never fatal)
        self.version = 0

    def changed(self, names: frozenset) -> None:
        """The controller's update() names the fields that changed (pushed, not polled): a field the run reads
        (app.settings.RUN_FIELDS) makes the run stale; ensure() remakes it when it is next asked for."""
        if names & _RUN:
            self._stale = True

    def pair_key(self, tokens: str | None = None) -> str:
        """Which pair the settings name: 'ngram-char', 'ngram-word', 'neural' or 'custom' (app/pairs.py)."""
        return pairs.key(self.settings.pair, tokens or self.settings.tokens)

    def pair(self, tokens: str | None = None):
        """The pair the `pair` setting names (the n-gram pair of `tokens` for 'ngram'), loaded once."""
        return self.pair_by_key(self.pair_key(tokens))

    def pair_by_key(self, key: str):
        if key not in self._pairs:
            with self._load_lock:                    # the long-run and tube workers may ask at the same moment
                if key not in self._pairs:
                    self._pairs[key] = pairs.open_key(key)
        return self._pairs[key]

    @property
    def neural(self) -> bool:
        return pairs.is_neural(self.settings.pair)

    def heads(self, pair=None):
        """The heads drafter's tables for the pair (loaded once per pair)."""
        pair = pair or self.pair()
        if pair.tokens not in self._heads:
            self._heads[pair.tokens] = HeadModels.for_pair(pair)
        return self._heads[pair.tokens]

    def drafter_key(self) -> tuple:
        """The settings the drafter is built from (models.drafters.choice: its name and only the options it reads)."""
        return choice(self.settings)

    def drafter(self, pair=None, key: tuple | None = None):
        """The drafter the settings (or a drafter_key()) name (models.drafters), on the pair: what the pair drafts
        with where it has its own way (a neural pair's draft model), a one-line InputError where it cannot run it
        (heads and trees are built on the n-gram counts), never a silent switch."""
        name, opts = key or self.drafter_key()
        pair = pair or self.pair()
        k = kind(name)
        own = pair.drafter_for(k)
        if own is not None:
            return own
        problem = k.problem_on(pair)
        if problem is not None:
            raise InputError(problem)
        return k.make(pair, dict(opts), lambda: self.heads(pair))     # the heads table loaded once, if read

    def sampler_settings(self, gamma: int | None = None):
        s = self.settings
        return SamplerSettings(gamma=gamma or s.gamma, temperature=s.temperature, top_k=s.top_k, top_p=s.top_p,
                               seed=s.seed)

    def ensure(self) -> Run | None:
        """Remake the run if a field it depends on changed (changed()). A bad prompt keeps the previous run and
        sets .error."""
        if not self._stale:
            return self.run
        s = self.settings
        self._stale = False
        try:
            pair = self.pair()
            prompt_ids = pair.encode(s.prompt)
            if len(prompt_ids) == 0:
                raise InputError("the prompt is empty")
            # Either pair, the same StepTrace: the n-gram samplers, or the torch rule with KV rollback.
            sampler = make_sampler(pair, self.sampler_settings(), target_only=s.decoder == "target",
                                   drafter=None if s.decoder == "target" else self.drafter(pair))
            sampler.reset(prompt_ids)
            traces = tuple(sampler.step() for _ in range(s.steps))
        except (InputError, OSError, ValueError) as exc:    # a bad prompt, table or checkpoint: say so, keep the last run
            self.error = str(exc)
            if self.run is not None and self._run_pair != self.pair_key():
                # ...unless another pair wrote it: its token ids mean nothing in this pair's vocabulary
                self.run = None
                self.version += 1
            return self.run
        self.error = None
        self.run = Run(prompt_ids=tuple(prompt_ids), traces=traces, tokens=tuple(sampler.tokens))
        self._run_pair = self.pair_key()
        self.version += 1
        return self.run


class _OneThread:
    """A worker's one background thread, started when it is first given a job (never at start-up) and shut
    down by close(), which drops jobs not begun. Subclasses name it (thread_name) and set self._pool = None."""

    thread_name = "worker"

    def _submit(self, fn, *args):
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self.thread_name)
        return self._pool.submit(fn, *args)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class TubeWorker(_OneThread):
    """The test-tube experiment (about a second: 10,000 draws a tube) on one background thread, one result
    per (rule, tokens, rounds). get() waits for it; ready() returns it if done, else starts it and returns None."""

    thread_name = "tubes"

    def __init__(self, session: Session):
        self.session = session
        self._results: dict = {}
        self._jobs: dict = {}
        self._pool = None

    def _compute(self, key):
        rule, pair_key, rounds, drafter = key
        pair = self.session.pair_by_key(pair_key)
        return run_tubes(pair, prefix=TUBE_PREFIX, rounds=rounds, draws=50, seed=1, rule=rule,
                         drafter=self.session.drafter(pair, drafter))

    def _key(self, rule, rounds):
        """The experiment for the rule, the table and the drafter the right tube's guesses come from (the key
        holds the drafter's settings: the worker thread builds it from them, not from settings that may move)."""
        s = self.session.settings
        return (rule or s.tube_rule, self.session.pair_key(), rounds, self.session.drafter_key())

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
            self.session.drafter(self.session.pair(), key[3])   # load the tables here, not from two threads at once
            self._jobs[key] = self._submit(self._compute, key)
            return None
        return self.get(rule, rounds) if job.done() else None


class DrafterWorker(_OneThread):
    """What each drafter buys and costs (tokens and lanes per pass) for the lab's table, γ and row shaping: the
    shipped long runs when they were counted at these settings (models.drafter_analytics.shipped_long_runs, no
    wait), else a short run of every drafter counted now on one background thread (about ten seconds).
    get() waits; ready() returns the figures if done, else starts them and returns None. The figures:
    {"points", "source": "long" | "short", "chars", "seed"}."""

    thread_name = "drafters"

    SHORT_CHARS = 600           # tokens per drafter when nothing long was counted at these settings

    def __init__(self, session: Session):
        self.session = session
        self._results: dict = {}
        self._jobs: dict = {}
        self._pool = None

    def _key(self):
        # the pair first: switching from the n-gram pair to a network pair is another set of figures
        st = self.session.sampler_settings()
        return (self.session.pair_key(), st.gamma, st.temperature, st.top_k, st.top_p)

    def _compute(self, key):

        pair_key, gamma, temperature, top_k, top_p = key
        pair = self.session.pair_by_key(pair_key)
        if COUNTS not in pair.offers and FEATURES not in pair.offers:
            # a network without self-drafters runs the chain and lookup only: nothing to compare
            return {"points": [], "source": "none", "chars": 0, "seed": 0}
        settings = replace(self.session.sampler_settings(), gamma=gamma, temperature=temperature, top_k=top_k,
                           top_p=top_p, seed=0)
        doc = da.shipped_long_runs(pair, settings)
        if doc is not None:
            return {"points": doc["points"], "source": "long", "chars": doc["settings"]["chars"],
                    "seed": doc["settings"]["seed"]}

        def runs_here(spec) -> bool:          # a tree too big at this γ, or no heads table beside a user's pair
            k = kind(spec[2])
            try:
                pair.check_drafter(k)
                k.make(pair, spec[3], lambda: self.session.heads(pair)).validate(gamma)
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
            try:                                  # load the tables here, not from two threads at once
                pair = self.session.pair_by_key(key[0])
                if COUNTS in pair.offers:
                    self.session.heads(pair)
            except (InputError, OSError, ValueError):
                pass                              # no heads table: the runs leave the heads out
            self._jobs[key] = self._submit(self._compute, key)
            return None
        return self.get() if job.done() else None


class LongRunWorker(_OneThread):
    """The pair's long-run facts (models.analytics.pair_facts: about 0.6 s once per table, γ and row shaping)
    on one background thread. Seed 0, the run `spectable alpha` reports, not the lab's seed (which only picks
    the demo text). get() waits; ready() returns the facts if done, else starts them and returns None."""

    thread_name = "long-run"

    def __init__(self, session: Session):
        self.session = session
        self._jobs: dict = {}
        self._pool = None

    def _args(self):
        ses, s = self.session, self.session.settings
        pair = ses.pair()
        st = ses.sampler_settings()
        return (analytics.table_key(pair), s.gamma, st.temperature, st.top_k, st.top_p), (pair, s.gamma, st)

    def get(self):
        key, (pair, gamma, st) = self._args()
        job = self._jobs.get(key)
        return job.result() if job is not None else analytics.pair_facts(pair, gamma, st, seed=0)

    def ready(self):
        key, (pair, gamma, st) = self._args()
        job = self._jobs.get(key)
        if job is None:
            job = self._jobs[key] = self._submit(analytics.pair_facts, pair, gamma, st, None, 0)
        return job.result() if job.done() else None


class BenchWorker(_OneThread):
    """The neural pair measured live on this machine (models.llm.bench.measure_llama_pair: draft and target ms per
    pass, c, tokens per pass, plain vs speculative tokens/s, each beside the roofline's value for the same shapes)
    on one background thread, with the measurement's progress notes. One result per pair and γ; start() measures
    again. In a scripted run (frames must not depend on thread timing) result() measures at once."""

    thread_name = "bench"

    TOKENS = 96          # tokens written by each plain and each speculative run
    REPS = 5             # runs of each, alternating; forwards timed as the median of REPS after 2 warm-ups
    PROMPT = "孔乙己"     # the shipped pair's prompt (a checkpoint of another vocabulary starts from its start token)

    def __init__(self, session: Session):
        self.session = session
        self.results: dict = {}
        self.errors: dict = {}
        self.progress: str | None = None
        self.step = 0
        self._job = None
        self._job_key = None
        self._pool = None

    def _key(self):
        return (self.session.pair_key(), self.session.settings.gamma)

    def _measure(self, key):
        from models.llm.pair_bench import measure_llama_pair  # lazy: pulls in safetensors, torch
        pair = self.session.pair_by_key(key[0])
        if pair.draft is None:
            raise InputError(f"{pair.name} has no draft model: there is no draft cost to measure")
        try:
            ids = pair.encode(self.PROMPT)
        except InputError:
            ids = pair._model_ids([])
        self.step = 0

        def note(msg: str) -> None:
            self.step += 1
            self.progress = msg

        dtype = pair.target.format_name
        # the draft's step eager, as the table runs it (compiling would take seconds and a C++ compiler)
        r = measure_llama_pair(pair, ids, gamma=key[1], tokens=self.TOKENS, temperature=1.0, reps=self.REPS,
                               seed=0, dtype_name=dtype, progress=note, compile_draft=False)
        self.progress = None
        return r

    def _done(self, key, job) -> None:
        try:
            self.results[key] = job.result()
            self.errors.pop(key, None)
        except NOT_MEASURED as exc:          # a failed measurement is a message in the panel, not a crash
            self.errors[key] = f"{type(exc).__name__}: {exc}" if not isinstance(exc, InputError) else str(exc)
        self.progress = None

    def start(self) -> None:
        """Measure (again) for the pair and γ now, in the background."""
        key = self._key()
        if self._job is not None and not self._job.done():
            return
        self.session.pair_by_key(key[0])          # loaded here, not on the worker
        self._job_key, self._job = key, self._submit(self._measure, key)
        self.progress = "…"

    def running(self) -> bool:
        return self._job is not None and not self._job.done()

    def result(self, scripted: bool = False):
        """(result dict or None, error or None) for the pair and γ now; a finished job is collected here."""
        key = self._key()
        if self._job is not None and self._job.done() and self._job_key is not None:
            self._done(self._job_key, self._job)
            self._job = self._job_key = None
        if scripted and key not in self.results and key not in self.errors:
            try:
                self.results[key] = self._measure(key)
            except InputError as exc:
                self.errors[key] = str(exc)
        return self.results.get(key), self.errors.get(key)
