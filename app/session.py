"""The app's model side: from the lab settings to a run (traces), analytics, tubes and hardware numbers.

Everything the UI shows is read from here, and everything here comes from models/ (the n-gram pair,
the sampler, the tube experiment, the analytics and the hardware model). Results are cached by the
settings that produce them, so moving a slider recomputes only what depends on it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from app.settings import AppSettings
from corpus.errors import InputError

# Published acceptance rates used only as reference curves (Leviathan et al. 2023: drafts two orders of
# magnitude smaller mostly give α between 0.5 and 0.9; a bigram draft for T5-XXL gave about 0.2).
REFERENCE_ALPHAS = (0.2, 0.5, 0.7, 0.9)
GAMMAS = tuple(range(1, 11))
LANE_SWEEP = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


@dataclass
class TestPoint:
    """One stop of the step-through: acceptance test i of target pass k (or the pass's final token)."""

    step: int
    test: int            # index of the guess tested; == gamma for the bonus stop
    kind: str            # 'test' | 'bonus'


@dataclass
class Run:
    prompt_ids: list[int]
    traces: list
    tokens: list[int]                 # prompt + written
    alpha_generated: float            # mean of sum_x min(p, q) over tested positions (1 - TV)
    tokens_per_pass_counted: float
    points: list[TestPoint] = field(default_factory=list)


class Session:
    def __init__(self, settings: AppSettings):
        self.settings = settings
        self._pairs: dict = {}
        self._run_key = None
        self.run: Run | None = None
        self.error: str | None = None      # the last bad input (shown in the lab, never fatal)
        self._tubes: dict = {}
        self._tube_jobs: dict = {}
        self._pool = None
        self._tpp: dict = {}
        self._alpha_corpus: dict = {}
        self.version = 0                   # bumps whenever the run changes (the stage and plots follow)
        # 'speculative' (draft guesses, the target checks) or 'target' (the big drum alone, one token a pass:
        # tour chapters 1-2, before speculation is introduced, and 11, nine sequences lighting nine lanes)
        self.decoder = "speculative"

    # ---- models ----------------------------------------------------------------------------------
    def pair(self, tokens: str | None = None):
        from models.ngram import NGramPair
        tokens = tokens or self.settings.tokens
        if tokens not in self._pairs:
            self._pairs[tokens] = NGramPair.load(tokens=tokens)
        return self._pairs[tokens]

    def sampler_settings(self, gamma: int | None = None, seed: int | None = None):
        from models.sampler import SamplerSettings
        s = self.settings
        return SamplerSettings(gamma=gamma or s.gamma, temperature=s.temperature, top_k=s.top_k,
                               top_p=s.top_p, seed=s.seed if seed is None else seed)

    def _key(self):
        s = self.settings
        return (s.prompt, s.gamma, s.temperature, s.top_k, s.top_p, s.seed, s.tokens, s.steps, self.decoder)

    def ensure(self) -> Run | None:
        """Recompute the run if its settings changed. A bad prompt keeps the previous run and sets .error."""
        key = self._key()
        if key == self._run_key:
            return self.run
        from models.sampler import SpeculativeSampler, TargetSampler
        s = self.settings
        try:
            pair = self.pair()
            prompt_ids = pair.encode(s.prompt)
            if len(prompt_ids) == 0:
                raise InputError("the prompt is empty")
            kind = TargetSampler if self.decoder == "target" else SpeculativeSampler
            sampler = kind(pair, self.sampler_settings())
            sampler.reset(prompt_ids)
            traces = [sampler.step() for _ in range(s.steps)]
        except (InputError, OSError, ValueError) as exc:    # a bad prompt or table: say so, keep the last run
            self.error = str(exc)
            self._run_key = key
            return self.run
        self.error = None
        tested_overlap = []
        for tr in traces:
            for i in range(tr.tested):
                tested_overlap.append(float(np.minimum(tr.p_rows[i], tr.q_rows[i]).sum()))
        points = []
        for k, tr in enumerate(traces):
            points.extend(TestPoint(k, i, "test") for i in range(tr.tested))
            if tr.n_accepted == tr.gamma:
                points.append(TestPoint(k, tr.gamma, "bonus"))
        self.run = Run(prompt_ids=list(prompt_ids), traces=traces, tokens=list(sampler.tokens),
                       alpha_generated=float(np.mean(tested_overlap)) if tested_overlap else 0.0,
                       tokens_per_pass_counted=float(np.mean([len(tr.tokens_written) for tr in traces])),
                       points=points)
        self._run_key = key
        self.version += 1
        return self.run

    # ---- analytics -------------------------------------------------------------------------------
    def alpha_corpus(self) -> float:
        from models import analytics
        tokens = self.settings.tokens
        if tokens not in self._alpha_corpus:
            self._alpha_corpus[tokens] = float(_scalar(analytics.alpha_corpus(self.pair())))
        return self._alpha_corpus[tokens]

    def alpha_corpus_at(self, temperature: float) -> float:
        """α over the book's contexts with both rows shaped to a temperature (T = 0: greedy, one-hot rows, so a
        guess passes only where the two models' top tokens agree). About 0.4 s, cached per tokens and T."""
        from models import analytics
        from models.sampler import SamplerSettings
        key = (self.settings.tokens, float(temperature))
        if key not in self._alpha_corpus:
            st = SamplerSettings(temperature=float(temperature))
            self._alpha_corpus[key] = float(_scalar(analytics.alpha_corpus(self.pair(), st)))
        return self._alpha_corpus[key]

    def toy_alpha(self) -> float:
        """The α the plots mark: measured on the text the run actually wrote (1 - TV at tested positions)."""
        run = self.ensure()
        return run.alpha_generated if run else self.alpha_corpus()

    def speedups(self, alpha: float, c: float | None = None) -> list[float]:
        from models import analytics
        c = self.settings.c if c is None else c
        return [float(analytics.speedup(alpha, g, c)) for g in GAMMAS]

    def best_gamma(self, alpha: float, c: float | None = None) -> tuple[int, float]:
        from models import analytics
        c = self.settings.c if c is None else c
        res = analytics.best_gamma(alpha, c)
        if isinstance(res, tuple):
            return int(res[0]), float(res[1])
        g = int(res)
        return g, float(analytics.speedup(alpha, g, c))

    def tokens_per_pass_formula(self, alpha: float) -> list[float]:
        from models import analytics
        return [float(analytics.tokens_per_pass_formula(alpha, g)) for g in GAMMAS]

    def tokens_per_pass_bonus(self, alpha: float, gamma: int | None = None) -> tuple[float, float]:
        """(with the bonus, without it): (1 - α^(γ+1))/(1 - α) and that minus α^γ. Skipping the bonus keeps the
        text exact; a pass that keeps all γ guesses (probability α^γ) just writes γ tokens instead of γ + 1."""
        from models import analytics
        gamma = self.settings.gamma if gamma is None else gamma
        with_bonus = float(analytics.tokens_per_pass_formula(alpha, gamma))
        return with_bonus, with_bonus - float(alpha) ** gamma

    def tokens_per_pass_counted(self, passes: int = 40) -> list[float]:
        """Run the real sampler at every γ of the plot and count tokens per pass (cached per settings)."""
        s = self.settings
        key = (s.prompt, s.temperature, s.top_k, s.top_p, s.seed, s.tokens, passes)
        if key not in self._tpp:
            from models.sampler import SpeculativeSampler
            pair = self.pair()
            try:
                ids = pair.encode(s.prompt)
            except InputError:
                ids = pair.encode("慢慢") if s.tokens == "char" else [0]
            out = []
            for g in GAMMAS:
                sm = SpeculativeSampler(pair, self.sampler_settings(gamma=g))
                sm.reset(ids)
                out.append(float(np.mean([len(sm.step().tokens_written) for _ in range(passes)])))
            self._tpp[key] = out
        return self._tpp[key]

    def extra_arithmetic(self, alpha: float, gamma: int) -> float:
        from models import analytics
        return float(_scalar(analytics.extra_arithmetic(alpha, gamma)))

    # ---- test tubes ------------------------------------------------------------------------------
    # The experiment takes about a second (10,000 draws a tube); the window starts without waiting for it.
    def _tube_key(self, rule, rounds):
        return (rule or self.settings.tube_rule, self.settings.tokens, rounds)

    def _compute_tubes(self, key):
        from models.tubes import run_tubes
        rule, tokens, rounds = key
        return run_tubes(self.pair(tokens), prefix="慢慢", rounds=rounds, draws=50, seed=1, rule=rule)

    def tubes(self, rule: str | None = None, rounds: int = 200):
        """The TubesResult (waits for a background computation of it if one is running)."""
        key = self._tube_key(rule, rounds)
        if key not in self._tubes:
            job = self._tube_jobs.pop(key, None)
            self._tubes[key] = job.result() if job is not None else self._compute_tubes(key)
        return self._tubes[key]

    def tubes_ready(self, rule: str | None = None, rounds: int = 200):
        """The TubesResult if it is done, else None (and it is started in the background)."""
        key = self._tube_key(rule, rounds)
        if key in self._tubes:
            return self._tubes[key]
        job = self._tube_jobs.get(key)
        if job is None:
            from concurrent.futures import ThreadPoolExecutor
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tubes")
            self.pair()             # load the table here, not from two threads at once
            self._tube_jobs[key] = self._pool.submit(self._compute_tubes, key)
            return None
        if job.done():
            return self.tubes(rule, rounds)
        return None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    # ---- hardware ----------------------------------------------------------------------------------
    def roofline(self, lanes: int | None = None, device: str | None = None, context: int | None = None) -> dict:
        from models import hardware
        s = self.settings
        return hardware.roofline(device or s.device, s.model, lanes or s.lanes, s.context if context is None else context)

    def lane_sweep(self) -> tuple[list[int], list[float], list[float]]:
        rows = [self.roofline(lanes=n) for n in LANE_SWEEP]
        return list(LANE_SWEEP), [float(r["tokens_per_s"]) for r in rows], [float(r["arithmetic_busy"]) for r in rows]


def _scalar(x) -> float:
    if isinstance(x, dict):
        for k in ("alpha", "value", "extra"):
            if k in x:
                return float(x[k])
    if isinstance(x, tuple):
        return float(x[0])
    return float(x)
