"""The neural pair on the table: a Llama target and a draft (or any proposer of guesses) run the speculative step
through the torch mirror of the one rule (models.llm.speculative.verify_on_device), one StepTrace per pass: the
same plain data, in shape and meaning, as the n-gram sampler's (models/sampler.py).

    pair = LlamaPair.shipped()                     # the 《呐喊》 pair in assets/models/ (or LlamaPair.load(t, d))
    sampler = LlamaSampler(pair, SamplerSettings(gamma=4, temperature=1.0, seed=1))
    sampler.reset(pair.encode("孔乙"))
    traces = sampler.run_tokens(200)               # list[StepTrace]; pair.display(id) draws a token

A pass: γ uniforms for the guesses, γ for the tests, 1 for the final token, always drawn (one torch.Generator
seeded at reset), so a run replays from (seed, settings, prefix). The draft proposes γ guesses from its rows q
(shaped by temperature / top-k / top-p exactly as the n-gram sampler shapes its rows), the target computes p at
the γ+1 positions in one forward, the rule accepts or replaces, and both KV caches roll back by position: the
target wrote pos..pos+γ and is valid up to pos+n; the draft reads its own last guess at the start of the next
pass when every guess passed. Rows in a trace are float32 (what the rule compared); final_row is float64,
normalised, as in the n-gram traces. The pair's models are shared: a lock serialises their use, and a sampler
re-fills the caches with its own text when another user (another sampler, a row query) used them in between.
When the text outgrows the models' window the caches are refilled with its last half (the models then see
that much context), and the trace's `extra["window_start"]` says where the models' view begins.
"""
from __future__ import annotations

import threading
import hashlib
import json
from pathlib import Path
from collections import OrderedDict

import numpy as np
import torch

from corpus.errors import InputError
from models.llm.model import Transformer
from models.llm.speculative import (DrafterProposer, ModelProposer, Proposer, RowShaper, decode_one_token, prefill,
                                    shape_probs, speculative_pass, verify_on_device)  # noqa: F401 - shape_probs read here too
from models.llm.selfdraft import (RECORD_FILE, SHIPPED_DIR, EagleProposer, FeatureDrafter, MedusaProposer,
                                  SelfDrafters)
from models.llm.text import TokenText
from models.llm.tree import DraftModelTree, EagleTree, MedusaTree, NetworkTreeBase, tree_pass
from models.sampler import Rows, SamplerBase, SamplerSettings, tree_trace
from models.drafters import FEATURES, ChainDrafter, LookupDrafter, TreeDrafter, kind
from models.trace import GeneratedRun, PassTally, StepTrace
from models import long_runs
from models.analytics import LONG_RUN_TOKENS_NEURAL, MAX_RUN_TOKENS_NEURAL
from models.llm.checkpoint import load_pair_models
from models.llm.formats import compute_dtype

MIN_WINDOW = 2 * (64 + 1)      # a pass at the largest γ must fit after a refill to half the window
DEFAULT_WINDOW = 1024          # long-context checkpoints: a cache this long (attention over it costs per token)


def _shaper(s: SamplerSettings) -> RowShaper:
    return RowShaper(s.temperature, s.top_k, s.top_p)


# --- the pair ---------------------------------------------------------------------------------------
class LlamaPair:
    """A target (big drum) and a draft (small drum) over one vocabulary, with its text: what NGramPair is for the
    n-gram models (encode / decode / display / vocab / V / draft_row / target_row), plus the models."""

    kind = "neural"                       # the --pair word (a label: nothing branches on it)

    def __init__(self, target: Transformer, draft: Transformer | None, text: TokenText, *, name: str = "",
                 window: int | None = None, sources: dict | None = None, random_weights: bool = False):
        if draft is not None and draft.config.vocab_size != target.config.vocab_size:
            raise InputError("the draft and the target must share a vocabulary")
        self.target, self.draft, self.text = target, draft, text
        self.V = target.config.vocab_size
        self.name = name or target.config.name
        self.sources = sources or {}
        self.random_weights = random_weights
        self.notes = list(getattr(target, "load_notes", []))
        self.device = target.device
        limit = min([m.config.max_position_embeddings for m in (target, draft) if m is not None])
        self.window = int(window or min(limit, DEFAULT_WINDOW))
        if self.window < MIN_WINDOW:
            self.window = MIN_WINDOW   # positions past the trained length still compute; quality is the model's
        for m in (target, draft):
            if m is not None:
                m.setup_caches(1, self.window)
        # parameters() yields a tied embedding once
        self.params = {"target": target.config.param_count(),       # counted on the meta device: packed too
                       "draft": None if draft is None else draft.config.param_count()}
        self.lock = threading.RLock()
        self.owner = None              # who last filled the caches (a sampler, or "rows")
        self._rows: OrderedDict = OrderedDict()
        self._key: str | None = None

    # --- loading --------------------------------------------------------------------------------------
    @classmethod
    def load(cls, target_spec, draft_spec=None, *, dtype=None, dtype_name: str = "fp32", device="cpu",
             window: int | None = None, seed: int = 0, threads: int | None = None) -> "LlamaPair":
        """From two specs (checkpoint folders, .gguf files, named configs): see models.llm.checkpoint. dtype_name is
        the weight format (fp32, bf16, int8, int4: models.llm.formats); dtype, if given, the float dtype around it;
        threads: that many (None: measured on this computer as the target loads, models.llm.tuning)."""
        dtype = dtype or compute_dtype(dtype_name)
        t, d = load_pair_models(target_spec, draft_spec, dtype=dtype, dtype_name=dtype_name, device=device,
                                seq=window or DEFAULT_WINDOW, need_text=True, seed=seed, threads=threads)
        return cls(t.model, None if d is None else d.model, t.text, window=window,
                   name=f"{t.model.config.name} + {d.model.config.name}" if d else t.model.config.name,
                   sources={"target": t.source.label, "draft": None if d is None else d.source.label},
                   random_weights=t.random_weights or (d is not None and d.random_weights))

    @classmethod
    def shipped(cls, device="cpu") -> "LlamaPair":
        """The 《呐喊》 pair: assets/models/nahan-target (6M) and nahan-draft (0.7M), character-level, fp32."""
        return cls.load("nahan-target", "nahan-draft", device=device)

    @property
    def key(self) -> str:
        """What long-run figures are cached under (models.analytics.table_key): the checkpoint files (names, sizes,
        modification times), the models' configs, the compute dtype and the window. Random weights: never shared."""
        if self._key is None:
            files = []
            for label in self.sources.values():
                path = Path(label) if label else None
                if path is None or not path.exists():
                    continue
                for f in sorted(path.iterdir()) if path.is_dir() else [path]:
                    if f.is_file():
                        st = f.stat()
                        files.append([str(f.resolve()), st.st_size, st.st_mtime_ns])
            desc = {"files": files, "dtype": self.target.format_name, "window": self.window,
                    "configs": [m.config.as_dict() for m in (self.target, self.draft) if m is not None],
                    "random": id(self) if self.random_weights or not files else None}
            self._key = "neural-" + hashlib.sha256(json.dumps(desc, sort_keys=True, default=str).encode()).hexdigest()[:16]
        return self._key

    # --- the pair protocol (models.pair.Pair) -----------------------------------------------------------
    @property
    def offers(self) -> frozenset:
        """No n-gram counts (the toy's heads and trees are built on them); its target's features where it has
        self-drafters trained on them (models.llm.selfdraft)."""
        return frozenset({FEATURES}) if self.self_drafters() is not None else frozenset()

    def use_self_drafters(self, folder) -> None:
        """Read the self-drafters from `folder` instead (a freshly trained set, before it is shipped)."""
        self._self_drafters = SelfDrafters.load(self.target, Path(folder))

    def self_drafters(self):
        """Medusa's heads and EAGLE's layer trained on this target (SelfDrafters), or None: the shipped target's
        in assets/models/nahan-selfdraft, another checkpoint's in a `selfdraft` folder inside it; not for a packed
        target (they were trained on its fp32 features)."""
        if not hasattr(self, "_self_drafters"):
            self._self_drafters = None
            label = self.sources.get("target")
            folder = None
            if label is not None and Path(str(label)).name == "nahan-target":
                folder = SHIPPED_DIR
            elif label is not None and (Path(str(label)) / "selfdraft").is_dir():
                folder = Path(str(label)) / "selfdraft"
            if folder is not None and (folder / RECORD_FILE).is_file() and self.target.format_name == "fp32":
                self._self_drafters = SelfDrafters.load(self.target, folder)
        return self._self_drafters

    def feature_drafter(self, which: str) -> FeatureDrafter:
        """The drafter of a models.drafters kind that reads the features: 'medusa' (the heads kind) or 'eagle'."""
        sd = self.self_drafters()
        if sd is None:
            raise InputError(f"{self.name} has no self-drafters trained on its features")
        make = {"medusa": lambda: MedusaProposer(self.target, sd.medusa),
                "eagle": sd.eagle_proposer}[which]
        return FeatureDrafter("heads" if which == "medusa" else which, self, make)

    def tree_base(self, which: str):
        """Where a guess tree's rows come from on this pair (models.llm.tree): 'chain' (the draft model over each
        node's path), 'heads' (Medusa's head for each depth) or 'eagle' (EAGLE's layer along each path)."""
        if which == "chain":
            if self.draft is None:
                raise InputError(f"{self.name} has no draft model: a tree from chain needs one")
            return DraftModelTree(ModelProposer(self.draft))
        d = self.feature_drafter("medusa" if which == "heads" else which)
        return (MedusaTree if which == "heads" else EagleTree)(d.make_proposer(), d)

    @property
    def model_names(self) -> tuple[str, str]:
        return self.target.config.name, self.draft.config.name if self.draft is not None else "—"

    @property
    def max_run_tokens(self) -> int:
        return MAX_RUN_TOKENS_NEURAL      # two networks every pass: minutes, not seconds

    def drafter_for(self, kind):
        """A kind that drafts with a draft model, on a checkpoint without one, copies from the text instead (the
        lookup drafter): the lab still writes. None: the kind's own drafter."""
        if kind.draft_model and self.draft is None:
            return LookupDrafter()
        return None

    def check_drafter(self, kind) -> None:
        """InputError (one line) when this pair cannot draft with `kind`: the n-gram drafters, or a draft model's
        drafter on a checkpoint without one (the command line says so rather than switching)."""
        problem = kind.problem_on(self)
        if problem is not None:
            raise InputError(problem)
        if kind.draft_model and self.draft is None:
            raise InputError(f"{self.name} has no draft model: give a draft checkpoint, or use the lookup drafter")

    def sampler(self, settings: SamplerSettings | None = None, *, drafter=None, target_only: bool = False):
        """The torch samplers with KV rollback: the target alone, or speculative with `drafter` (None: the draft
        model)."""
        if target_only:
            return LlamaTargetSampler(self, settings)
        return LlamaSampler(self, settings, drafter=drafter)

    def long_run_tokens(self, settings, sampler: bool = True) -> int:
        return LONG_RUN_TOKENS_NEURAL

    def shipped_long_run(self, settings):
        """The long run counted once over tens of thousands of tokens and shipped (models.long_runs), when it is
        this pair's (same weights and dtype) at these settings."""
        return long_runs.shipped_for(self, settings, dtype=getattr(self.target, "format_name", "fp32"))

    def generated_run(self, settings, tokens: int):
        if int(tokens) > self.max_run_tokens:
            raise InputError(f"a neural pair's long run is at most {self.max_run_tokens} tokens, not {tokens}")
        return alpha_generated(self, settings, tokens=int(tokens))

    def alpha_corpus(self, settings) -> float:
        return float("nan")               # a network has no count table to average Σ min(p, q) over

    # --- the NGramPair surface ------------------------------------------------------------------------
    @property
    def tokens(self) -> str:
        return self.text.kind          # "char" | "bytes" | "other"

    @property
    def vocab(self) -> list[str]:
        return self.text.vocab

    def encode(self, text: str, strict: bool = True) -> list[int]:
        return self.text.encode(text, strict=strict)

    def decode(self, ids) -> str:
        return self.text.decode(ids)

    def display(self, token_id: int) -> str:
        return self.text.display(token_id)

    def draft_row(self, context_ids) -> tuple[np.ndarray, bool]:
        """q(·|context): (V,) float64 summing to 1 (the draft's softmax), and False (a network never backs off)."""
        if self.draft is None:
            raise InputError("this pair has no draft model")
        return self._row("draft", context_ids), False

    def target_row(self, context_ids) -> tuple[np.ndarray, bool]:
        return self._row("target", context_ids), False

    def _row(self, which: str, context_ids) -> np.ndarray:
        ids = self._model_ids(list(context_ids))[-self.window:]
        key = (which, tuple(ids))
        hit = self._rows.get(key)
        if hit is not None:
            return hit
        model = self.target if which == "target" else self.draft
        with self.lock, torch.no_grad():
            self.owner = "rows"
            logits = model(torch.tensor([ids], device=self.device), torch.arange(len(ids), device=self.device),
                           eager=True, last_only=True)[0, -1]
            row = torch.softmax(logits.double(), -1).cpu().numpy()
        row.setflags(write=False)
        self._rows[key] = row
        if len(self._rows) > 256:
            self._rows.popitem(last=False)
        return row

    def _model_ids(self, ids: list[int]) -> list[int]:
        """What the models read for a text: the text, or the start token for an empty one."""
        if ids:
            return ids
        if self.text.start_id is None:
            raise InputError("this checkpoint has no start token: give a prefix of at least one token")
        return [self.text.start_id]

    # --- whole-text scoring (evaluation) -------------------------------------------------------------------
    @torch.no_grad()
    def score(self, ids: list[int]) -> dict[str, np.ndarray]:
        """log p and log q of every token ids[1:] given those before it, and Σ min(p, q) at each of those positions.
        Windows of the model's length overlap by half, so every position sees at least half a window of context."""
        W = self.window
        n = len(ids)
        out = {"logp": np.zeros(n - 1), "logq": np.zeros(n - 1), "overlap": np.zeros(n - 1)}
        start = done = 0                                    # done: positions scored so far
        with self.lock:
            self.owner = "rows"
            while done < n - 1:
                chunk = ids[start:start + W]
                x = torch.tensor([chunk], device=self.device)
                pos = torch.arange(len(chunk), device=self.device)
                lp = torch.log_softmax(self.target(x, pos, eager=True)[0, :-1].double(), -1)
                lq = torch.log_softmax(self.draft(x, pos, eager=True)[0, :-1].double(), -1)
                first = done - start                           # rows already scored with more context are skipped
                nxt = torch.tensor(chunk[1:], device=self.device)
                rows = torch.arange(len(chunk) - 1, device=self.device)
                sl = slice(done, start + len(chunk) - 1)
                out["logp"][sl] = lp[rows, nxt][first:].cpu().numpy()
                out["logq"][sl] = lq[rows, nxt][first:].cpu().numpy()
                out["overlap"][sl] = torch.minimum(lp.exp(), lq.exp()).sum(-1)[first:].cpu().numpy()
                done = start + len(chunk) - 1
                start += W // 2
        return out


# --- the samplers ------------------------------------------------------------------------------------
class _LlamaBase(SamplerBase):
    """A network pair's sampler (models.sampler.Sampler): its stream a torch Generator, its text also in the
    models' KV caches, filled again when another sampler used them in between."""

    def reset(self, prefix_ids=()) -> None:
        super().reset(prefix_ids)
        ids = self.tokens
        self.lead = [] if ids else self.pair._model_ids([])   # the start token the models read before an empty text
        self._filled = False

    def _start_stream(self) -> None:
        self.gen = torch.Generator(device=self.pair.device).manual_seed(int(self.settings.seed))

    def _stream(self):
        return self.gen

    def _restore_stream(self, stream) -> None:
        self.gen = stream

    def _fill(self, room: int) -> None:
        """Make the caches hold the text (its last half-window when it is too long) before position `pos`."""
        text = self.lead + self.tokens
        W = self.pair.window
        if len(text) + room > W:
            text = text[-(W // 2):]
        self.window_start = max(0, len(self.tokens) - len(text))     # an index into the text (trace.context)
        dev = self.pair.device
        feats = None
        if len(text) > 1:
            out = prefill(self.pair.target, torch.tensor([text[:-1]], device=dev),
                          features=getattr(self, "proposer", None) is not None and
                          getattr(self.proposer, "wants_features", False))
            feats = out[1][0] if isinstance(out, tuple) else None
        self._fill_draft(text[:-1], feats)
        self.cur = torch.tensor([[text[-1]]], device=dev)
        self.pos = len(text) - 1
        self.pair.owner = self
        self._filled = True

    def _fill_draft(self, ids: list[int], features=None) -> None:
        pass

    def _ready(self, room: int) -> None:
        if not self._filled or self.pair.owner is not self or self.pos + room > self.pair.window:
            self._fill(room)


class LlamaSampler(_LlamaBase):
    """Speculative decoding on the neural pair: the interface of models.sampler.SpeculativeSampler."""

    def __init__(self, pair: LlamaPair, settings: SamplerSettings | None = None, proposer: Proposer | None = None,
                 drafter=None):
        """proposer: anything with the Proposer interface; drafter: a models.drafters drafter (chain = the draft
        model, lookup = copies from the text). Neither: the pair's draft model."""
        settings = settings or SamplerSettings()        # one object: the drafter's rows read the sampler's settings
        self.drafter_name = "chain" if drafter is None else drafter.name
        self.tree = drafter if isinstance(drafter, TreeDrafter) else None
        if proposer is None:
            if self.tree is not None:                      # the tree's base keeps the state between passes
                if not isinstance(drafter.base, NetworkTreeBase):
                    raise InputError(f"a tree from {drafter.base.name} runs on the counted pair")
                proposer = drafter.base.proposer
            elif isinstance(drafter, FeatureDrafter):        # Medusa's heads, EAGLE: from the target's features
                proposer = drafter.make_proposer()
            elif drafter is not None and not isinstance(drafter, ChainDrafter):   # the chain is the draft model
                pair.check_drafter(kind(drafter.name))
                proposer = DrafterProposer(drafter, Rows(pair, settings))
            else:
                if pair.draft is None:
                    raise InputError(f"{pair.name} has no draft model: give a draft checkpoint, or use the lookup "
                                     "drafter")
                proposer = ModelProposer(pair.draft)
        self.proposer = proposer
        self.drafter = drafter
        super().__init__(pair, settings)

    def reset(self, prefix_ids=()) -> None:
        super().reset(prefix_ids)
        if getattr(self, "drafter", None) is not None:
            self.drafter.reset()

    def _fill_draft(self, ids, features=None):
        if getattr(self.proposer, "wants_features", False):
            self.proposer.prefill(ids, features=features)
        else:
            self.proposer.prefill(ids)

    def step(self) -> StepTrace:
        return self._advance(record=True)

    def tally_step(self) -> PassTally:
        """One pass that keeps no trace, counted (a long run's α, with Σ min(p, q) at each tested position)."""
        return self._advance(record=False)

    @torch.inference_mode()
    def _advance(self, record: bool):
        if self.tree is not None:
            return self._tree_advance(record)
        s = self.settings
        s.validate()
        g = int(s.gamma)
        shape = _shaper(s)
        pair, dev = self.pair, self.pair.device
        with pair.lock:
            self._ready(g + 1)
            pos, cur = self.pos, self.cur
            u = torch.rand(2 * g + 1, dtype=torch.float64, generator=self.gen, device=dev)   # fixed count: replayable
            context = self.tokens if isinstance(self.proposer, DrafterProposer) else self.lead + self.tokens
            out = speculative_pass(pair.target, self.proposer, context, cur, pos, g, u, shape, s.lenience)
            q, p = out.q, out.p
            k = len(out.guess_ids)
            beta = torch.minimum(p[:k], q).sum(-1)
            n, final, fallback = out.n_accepted, out.final_token, out.residual_fallback
            self.pos = pos + n + 1                                              # rollback by position
            self.cur = torch.tensor([[final]], device=dev)
        guess_ids = out.guess_ids
        written = out.tokens
        ctx = list(self.tokens)
        self.tokens.extend(written)
        self.step_index += 1
        if not record:
            tested = min(n + 1, k)
            return PassTally(n, tested, tuple(beta[:tested].tolist()))
        p_np, q_np = p.cpu().numpy(), q.cpu().numpy()
        if n == k:
            row = p_np[k].astype(np.float64)
        elif fallback:
            row = p_np[n].astype(np.float64)
        else:
            row = np.maximum(p_np[n] - np.float32(s.lenience) * q_np[n], 0).astype(np.float64)
        uu = u.cpu().numpy()
        extra = {"u_guess": [float(x) for x in uu[:g]], "u_final": float(uu[2 * g]), "sampler": "speculative",
                 "overlap": [float(b) for b in beta.cpu()], "window_start": self.window_start, "pair": "neural"}
        span = None
        if isinstance(self.proposer, DrafterProposer):
            extra["gamma_setting"] = g
            span = self.proposer.last.source_span
        heads = getattr(self.proposer, "last_heads", None)       # Medusa: the head behind each guess
        return StepTrace.of(
            step_index=self.step_index - 1, context=ctx, guesses=guess_ids, q_rows=q_np, p_rows=p_np,
            ratios=out.ratios.cpu().tolist(), r=uu[g:g + k], n_accepted=n, final_token=final,
            final_row=row / row.sum(), residual_fallback=fallback, exact=s.exact, extra=extra,
            drafter=self.drafter_name, source_span=span, heads=list(heads[:k]) if heads else None)


    @torch.inference_mode()
    def _tree_advance(self, record: bool):
        """A guess tree checked in one target forward (models.llm.tree), the multi-candidate rule over it."""
        s = self.settings
        s.validate()
        if not s.exact:
            raise InputError("lenience < 1 is a rule for one guess per position; the tree runs the exact rule only")
        tree, g = self.tree, int(s.gamma)
        tree.validate(g)
        n = tree.guess_uniforms(g)
        depth = len(tree.widths_for(g))
        pair, dev = self.pair, self.pair.device
        with pair.lock:
            self._ready(n + 1 + depth)
            pos, cur = self.pos, self.cur
            u = torch.rand(2 * n + 1, dtype=torch.float64, generator=self.gen, device=dev).cpu().numpy()
            out = tree_pass(pair.target, tree, self.lead + self.tokens, cur, pos, g, u[:n], u[n:2 * n],
                            float(u[-1]), _shaper(s))
            self.pos = pos + out.n_accepted + 1
            self.cur = torch.tensor([[out.final_token]], device=dev)
        ctx = list(self.tokens)
        self.tokens.extend(out.tokens)
        self.step_index += 1
        tv = out.verdicts
        if not record:
            tested = len(tv.accepted_path) + (tv.final_kind == "replacement")
            return PassTally(out.n_accepted, tested, ())
        return tree_trace(self.step_index - 1, ctx, out.proposal, out.p_rows.astype(np.float64),
                          [False] * (out.nodes + 1), tv, u[:n], u[n:2 * n], float(u[-1]), g, tree.name,
                          extra={"window_start": self.window_start, "pair": "neural"})


class LlamaTargetSampler(_LlamaBase):
    """The target alone, one token a pass (models.sampler.TargetSampler's interface)."""

    @torch.inference_mode()
    def step(self) -> StepTrace:
        s = self.settings
        s.validate()
        pair, dev = self.pair, self.pair.device
        V = pair.V
        with pair.lock:
            self._ready(1)
            u = torch.rand(1, dtype=torch.float64, generator=self.gen, device=dev)
            p = _shaper(s)(decode_one_token(pair.target, self.cur, torch.arange(self.pos, self.pos + 1, device=dev)))
            # verify with no guesses is exactly "draw from p": the same rule as every other pass
            v = verify_on_device(torch.zeros(0, dtype=torch.long, device=dev), torch.zeros(0, V, device=dev), p,
                                 torch.zeros(0, dtype=torch.float64, device=dev), u[0])
            final = int(v.final_token)
            self.pos += 1
            self.cur = v.final_token.view(1, 1).clone()
        ctx = list(self.tokens)
        self.tokens.append(final)
        self.step_index += 1
        p_np = p.cpu().numpy()
        row = p_np[0].astype(np.float64)
        return StepTrace.of(
            step_index=self.step_index - 1, context=ctx, guesses=[], q_rows=np.zeros((0, V), np.float32),
            p_rows=p_np, ratios=[], r=[], n_accepted=0, final_token=final, final_row=row / row.sum(),
            extra={"u_final": float(u[0]), "sampler": "target", "window_start": self.window_start, "pair": "neural"})


# --- α on written text --------------------------------------------------------------------------------
def alpha_generated(pair: LlamaPair, settings: SamplerSettings | None = None, tokens: int = 2000,
                    prefix_ids=(), drafter=None) -> "GeneratedRun":
    """A seeded speculative run of about `tokens` tokens: α = accepted / tested guesses, tokens per pass counted,
    and α expected = the mean Σ min(p, q) over the tested positions (lower variance, same run). drafter: a
    models.drafters drafter (None: the draft model, or the lookup drafter on a checkpoint alone)."""
    s = settings or SamplerSettings()
    if not isinstance(tokens, int) or not 1 <= tokens <= 1_000_000:
        raise InputError(f"tokens must be between 1 and 1000000, got {tokens!r}")
    if drafter is None and pair.draft is None:   # a checkpoint alone: its guesses are copied from the text
        drafter = LookupDrafter()
    sampler = LlamaSampler(pair, s, drafter=drafter)
    sampler.reset(list(prefix_ids))
    acc = tested = passes = 0
    beta_sum = 0.0
    while len(sampler.written) < tokens:
        tally = sampler.tally_step()
        acc += tally.n_accepted
        tested += tally.tested
        beta_sum += sum(tally.overlap)
        passes += 1
    return GeneratedRun(alpha=acc / tested, alpha_expected=beta_sum / tested, tokens=len(sampler.written),
                        passes=passes, accepted=acc, tested=tested, gamma=s.gamma, seed=s.seed, method="decoder")
