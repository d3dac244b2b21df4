"""No second model: drafting from the target's own features (the exhibit's 不要第二个模型).

The features at a position are what the target's output layer reads there: its last hidden state after the final
norm (Transformer.forward(features=True)). Both drafters turn features into guesses through the target's own,
frozen output layer, and both keep the distribution with the one rule (the row a guess was drawn from is its q).

    Medusa-1 (Cai et al. 2024)  heads 2..K+1 on the features f_t of the position whose row the target last drew
                                from: head k guesses the k-th token after that position, f_t + SiLU(W_k f_t) read by
                                the output layer (head 1 is the output layer itself: the target's own next token).
                                The base stays frozen; the heads never see the token the target drew.
    EAGLE (Li et al. 2024)      one decoder layer that pushes the features forward one position at a time: from
                                [f_t, embedding of x_{t+1}] (the token drawn one step before) it predicts f_{t+1},
                                whose row through the output layer is the next guess; its own KV cache holds the
                                target's true features for the text so far, its guesses' features while drafting.

Weights: assets/models/nahan-selfdraft/ (models.llm.train_selfdraft trains them on the shipped target).
"""
from __future__ import annotations

import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from corpus.errors import InputError
from corpus.resources import ASSETS
from corpus.validate import mapping, read_json, whole
from models.llm.formats import linear, weight_operand
from models.llm.model import LlamaConfig, Transformer, rms_norm
from models.llm.rule import sample_index
from models.llm.steps import prefill
from models.llm.speculative import RowShaper
from models.drafters.base import DraftCost, Drafter, FirstGuess
from corpus.atomic import atomic_path, write_text_atomic
from models.llm import onnx_step

SHIPPED_DIR = ASSETS / "models" / "nahan-selfdraft"
MEDUSA_FILE, EAGLE_FILE, RECORD_FILE = "medusa.safetensors", "eagle.safetensors", "training.json"
MAX_RECORD_BYTES = 1 << 20


class MedusaHeads(nn.Module):
    """Heads 2..K+1: head k's features are f + SiLU(W_k f + b_k), read by the target's output layer. W_k starts at
    zero, so every head starts as the target's own next-token guess (Medusa's initialisation)."""

    def __init__(self, dim: int, extra_heads: int):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(dim, dim) for _ in range(extra_heads))
        for b in self.blocks:
            nn.init.zeros_(b.weight)
            nn.init.zeros_(b.bias)

    @property
    def last_head(self) -> int:
        return len(self.blocks) + 1

    def head_features(self, f: torch.Tensor, count: int | None = None) -> torch.Tensor:
        """f (..., dim) -> (K, ..., dim): each head's features, in head order 2..K+1 (the first `count` heads)."""
        blocks = self.blocks[:count] if count is not None else self.blocks
        if self.training or f.dim() != 1:
            return torch.stack([f + F.silu(b(f)) for b in blocks])
        if getattr(self, "_fused", None) is None:    # drafting: the heads' blocks as one matrix product
            self._fused = (torch.cat([b.weight for b in self.blocks]).detach(),
                           torch.cat([b.bias for b in self.blocks]).detach())
        d = f.shape[-1]
        w, b = self._fused
        n = len(blocks) * d
        return f + F.silu(torch.addmv(b[:n], w[:n], f).view(len(blocks), d))


def eagle_config(target: LlamaConfig) -> LlamaConfig:
    """One decoder layer of the target's width (its attention heads and SwiGLU), no vocabulary of its own: the
    target's embedding reads the tokens and its output layer the predicted features."""
    return replace(target, name=f"{target.name}-eagle", n_layers=1, vocab_size=1, tie_embeddings=False)


class EagleDrafter(Transformer):
    """One decoder layer over [features, token embedding] -> the next position's features (a Transformer of one
    layer: its KV cache, rotary tables and CPU layers are the target's kind)."""

    def __init__(self, config: LlamaConfig):
        super().__init__(config)
        self.fc = nn.Linear(2 * config.dim, config.dim, bias=True)

    def next_features(self, features: torch.Tensor, token_embeddings: torch.Tensor, start: int) -> torch.Tensor:
        """features, token_embeddings (B, T, dim) at positions start.. -> the predicted features of the following
        positions (B, T, dim), the inputs written to the layer's cache."""
        x = self.fc(torch.cat([features, token_embeddings], -1))
        return rms_norm(self._layers_cpu(x, start), self.norm.weight, self.config.rms_norm_eps)


class SelfDrafters:
    """The shipped pair's self-drafters, loaded beside its target: Medusa's heads and EAGLE's layer."""

    def __init__(self, target: Transformer, medusa: MedusaHeads, eagle: EagleDrafter, record: dict, folder: Path):
        self.target, self.medusa, self.eagle, self.record, self.folder = target, medusa, eagle, record, folder

    @classmethod
    def load(cls, target: Transformer, folder: Path | None = None) -> "SelfDrafters":
        folder = Path(folder) if folder is not None else SHIPPED_DIR
        try:
            record = mapping(read_json(folder / RECORD_FILE, "the self-drafters' record", MAX_RECORD_BYTES),
                             str(folder / RECORD_FILE))
        except FileNotFoundError:
            raise InputError(f"no self-drafters beside this target: {folder / RECORD_FILE} is missing (train them "
                             "with python tools/train_selfdraft.py)") from None
        cfg = target.config
        extra = whole(record.get("medusa_extra_heads"), f"{folder / RECORD_FILE}: medusa_extra_heads", 1, 16)
        if record.get("target_dim") != cfg.dim or record.get("target_vocab") != cfg.vocab_size:
            raise InputError(f"{folder}: the self-drafters were trained for another target (dim "
                             f"{record.get('target_dim')}, vocabulary {record.get('target_vocab')})")
        medusa = MedusaHeads(cfg.dim, extra)
        eagle = EagleDrafter(eagle_config(cfg))
        for module, name in ((medusa, MEDUSA_FILE), (eagle, EAGLE_FILE)):
            try:
                state = load_file(str(folder / name))
            except (OSError, ValueError) as exc:
                raise InputError(f"{folder / name} is not a readable safetensors file: {exc}") from None
            want = {k: v.shape for k, v in module.state_dict().items() if not k.startswith(("tok_embeddings",
                                                                                              "output"))}
            got = {k: v.shape for k, v in state.items()}
            if got != want:
                raise InputError(f"{folder / name} does not hold the tensors a {type(module).__name__} of this "
                                 "target needs")
            for k, v in state.items():
                if not torch.isfinite(v).all():
                    raise InputError(f"{folder / name}: {k} holds NaN or infinity")
            module.load_state_dict(state, strict=False)
        return cls(target, medusa.eval(), eagle.eval(), record, folder)

    def eagle_proposer(self) -> "EagleProposer":
        """EAGLE's proposer, its step as one ONNX Runtime graph where that was measured faster here (once)."""
        if not hasattr(self, "eagle_step"):
            self.eagle_graph, self.eagle_step = choose_eagle_step(self.target, self.eagle)
        return EagleProposer(self.target, self.eagle, self.eagle_graph)


@torch.inference_mode()
def choose_eagle_step(target: Transformer, eagle: EagleDrafter, reps: int = 15) -> tuple[object | None, dict]:
    """EAGLE's draft step (the layer, the row through the target's output layer, the draw) eager and as one ONNX
    Runtime graph, timed in turns on this computer: (the graph or None, {"eager": µs, "graph": µs, "chosen": ...})."""

    if eagle.max_seq_length < target.max_seq_length:
        eagle.setup_caches(1, target.max_seq_length)
    why = onnx_step.available(eagle.config) if target.device.type == "cpu" else "not on a CPU"
    if why is not None:
        return None, {"chosen": "eager", "why": why}
    try:
        graph = onnx_step.OnnxStep(eagle, torch.get_num_threads(), reads_features_of=target)
    except RuntimeError as exc:
        return None, {"chosen": "eager", "why": str(exc).splitlines()[0][:160]}
    f = target.norm.weight.detach().float().clone()
    tok, u = torch.zeros(1, 1, dtype=torch.long), torch.tensor(0.5, dtype=torch.float64)
    w = weight_operand(target.output)

    def eager():
        h = eagle.next_features(f.view(1, 1, -1), target.tok_embeddings(tok), 0)[0, 0]
        sample_index(torch.softmax(linear(h[None], w)[0], -1), u)

    def in_graph():
        graph.guess(tok, 0, u, 1.0, features=f)
    times = {"eager": [], "graph": []}
    for _ in range(reps):
        for name, fn in (("eager", eager), ("graph", in_graph)):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    us = {k: statistics.median(v[2:]) * 1e6 for k, v in times.items()}
    chosen = min(us, key=us.get)
    return (graph if chosen == "graph" else None), {**us, "chosen": chosen}


def save(folder: Path, medusa: MedusaHeads, eagle: EagleDrafter, record: dict) -> None:
    """The two drafters' weights (without the target's embedding or output layer, which they read) and the
    training record, each file written atomically."""

    folder.mkdir(parents=True, exist_ok=True)
    for module, name in ((medusa, MEDUSA_FILE), (eagle, EAGLE_FILE)):
        state = {k: v.detach().contiguous().float() for k, v in module.state_dict().items()
                 if not k.startswith(("tok_embeddings", "output"))}
        with atomic_path(folder / name) as tmp:
            save_file(state, str(tmp), metadata={"format": "pt"})
    write_text_atomic(folder / RECORD_FILE, json.dumps(record, ensure_ascii=False, indent=1) + "\n")


# --- the proposers: what speculative_pass asks for guesses (models.llm.speculative.Proposer, with features) ------
class MedusaProposer:
    """Guesses from Medusa's heads on the features of the position the target last drew from: guess i (the i-th
    token after the one it drew) is sampled from head i + 1's row, which is that guess's q. The heads never see
    the token the target drew, so all γ come from one set of features, with no sequential draft run."""

    wants_features = True

    def __init__(self, target: Transformer, heads: MedusaHeads):
        self.target, self.heads = target, heads
        self.f = None
        self.last_heads: list[int] = []

    def prefill(self, ids, features=None) -> None:
        self.f = None if features is None or not len(features) else features[-1]

    @torch.inference_mode()
    def propose(self, context, cur, pos, g, u, shape):
        V = self.target.config.vocab_size
        if g > self.heads.last_head - 1:
            raise InputError(f"Medusa's heads are heads 2..{self.heads.last_head}: γ must be at most "
                             f"{self.heads.last_head - 1} with them, got {g}")
        if self.f is None or g == 0:                  # nothing computed yet (an empty text): no guesses
            self.last_heads = []
            return torch.zeros(0, dtype=torch.long), torch.zeros(0, V)
        q = shape(linear(self.heads.head_features(self.f, g), weight_operand(self.target.output)))
        xs = sample_index(q, u[:g])                  # the g draws at once, each from its head's row
        self.last_heads = list(range(2, g + 2))
        return xs, q.float()

    def commit(self, n_accepted: int, g: int, features=None) -> None:
        self.f = features[n_accepted]


class EagleProposer:
    """Guesses from EAGLE's layer: from the target's features before the token it drew and that token's embedding
    it predicts the next position's features, whose row through the target's output layer is guess 1's q; then
    from its own predicted features and guess 1, guess 2; and so on. Its cache holds the target's true features
    for the text so far: after each pass the kept guesses are fed again with the features the target computed."""

    wants_features = True

    def __init__(self, target: Transformer, eagle: EagleDrafter, graph=None):
        """graph: the layer as one ONNX Runtime graph (models.llm.onnx_step.OnnxStep(reads_features_of=target)),
        where SelfDrafters measured it faster than the eager layer."""
        self.target, self.eagle, self.graph = target, eagle, graph
        self.f = None
        self.guesses = None
        self.pos = 0
        self.pending = None          # the kept guesses with the target's features, fed with the next first step

    def _ready(self) -> None:
        if self.eagle.max_seq_length < self.target.max_seq_length:
            self.eagle.setup_caches(1, self.target.max_seq_length)

    def _feed(self, feats: torch.Tensor, tokens: torch.Tensor, start: int) -> torch.Tensor:
        if self.graph is not None:
            return self.graph.push(feats.view(1, -1, feats.shape[-1]), tokens.view(1, -1), start)[0]
        emb = self.target.tok_embeddings(tokens.view(1, -1))
        return self.eagle.next_features(feats.view(1, -1, feats.shape[-1]), emb, start)[0]

    def flush(self) -> None:
        """Feed the kept guesses now (a tree's steps start from a cache that holds the text)."""
        if self.pending is not None:
            feats, toks, start = self.pending
            self.pending = None
            self._feed(feats, toks, start)

    @torch.inference_mode()
    def prefill(self, ids, features=None) -> None:
        self._ready()
        self.pending = None
        if features is None or not len(ids):
            self.f = None
            return
        if len(ids) > 1:             # position t holds [f_t, e(x_{t+1})]: the text's own, the target's features
            self._feed(features[:-1], torch.as_tensor(ids[1:]), 0)
        self.f = features[-1]

    @torch.inference_mode()
    def propose(self, context, cur, pos, g, u, shape):
        V = self.target.config.vocab_size
        self.pos, self.guesses = pos, None
        if self.f is None or g == 0:
            return torch.zeros(0, dtype=torch.long), torch.zeros(0, V)
        f, tok, rows, xs = self.f, cur.view(1), [], []
        in_graph = self.graph is not None and getattr(shape, "plain", False)
        start, feats = pos - 1, f.view(1, -1)
        if self.pending is not None:       # the last pass's kept guesses, fed in the same run as the first step
            pf, pt, start = self.pending
            self.pending = None
            feats, tok = torch.cat([pf, feats]), torch.cat([pt, tok])
        for i in range(g):
            # the features at pos + i predicted from [features at pos + i - 1, the token at pos + i]
            if in_graph:                   # the step, its row and the draw from it, in one graph run
                q, x, f = self.graph.guess(tok.view(1, -1), start, u[i], shape.temperature, features=feats)
            else:
                f = self._feed(feats, tok, start)[-1]
                q = shape(linear(f[None], weight_operand(self.target.output))[0])
                x = sample_index(q, u[i])
            rows.append(q.float())
            xs.append(x)
            tok = x.view(1)
            start, feats = pos + i, f.view(1, -1)
        self.guesses = torch.stack(xs)
        return self.guesses, torch.stack(rows)

    @torch.inference_mode()
    def commit(self, n_accepted: int, g: int, features=None) -> None:
        # the kept guesses again, now with the target's own features before each: fed with the next first step
        self.pending = (features[:n_accepted], self.guesses[:n_accepted], self.pos) if n_accepted else None
        self.f = features[n_accepted]


# --- the drafters a network pair offers for the registry's kinds (models.drafters: heads, eagle) -----------------
class FeatureDrafter(Drafter):
    """A drafter of the models.drafters kinds that reads the target's features: it runs as a proposer of the torch
    pass (make_proposer), not on numpy rows. kind 'heads' on a network pair is Medusa's heads; 'eagle' is EAGLE."""

    def __init__(self, name: str, pair, make):
        self.name, self.pair, self._make = name, pair, make

    def make_proposer(self):
        return self._make()

    def validate(self, gamma: int) -> None:
        last = self.pair.self_drafters().medusa.last_head
        if isinstance(self._make(), MedusaProposer) and gamma + 1 > last:
            raise InputError(f"Medusa's heads are heads 2..{last}: γ must be at most {last - 1} with them, got {gamma}")

    def propose(self, rows, context, gamma, u):
        raise InputError(f"the {self.name} drafter drafts from a network's features: it runs in the network's pass")

    @torch.inference_mode()
    def first_guess(self, rows, context) -> FirstGuess:
        """The row the first guess after `context` is drawn from (the test tubes): the target's features before the
        last token, then the proposer's first step."""
        pair = self.pair
        ids = list(context)
        if len(ids) < 2:
            return FirstGuess(None)
        with pair.lock:
            pair.owner = None                  # the caches are refilled by the next sampler that runs
            logits, h = prefill(pair.target, torch.tensor([ids[:-1]]), features=True)
            proposer = self._make()
            proposer.prefill(ids[:-1], features=h[0])
            s = rows.settings
            g, q = proposer.propose(ids, torch.tensor([[ids[-1]]]), len(ids) - 1, 1,
                                    torch.zeros(1, dtype=torch.float64), RowShaper(s.temperature, s.top_k, s.top_p))
        return FirstGuess(q[0].double().numpy() if len(g) else None)

    def cost(self, gamma: int) -> DraftCost:
        if isinstance(self._make(), MedusaProposer):
            return DraftCost(heads=gamma, note="γ heads on the target's features, inside the target's pass")
        return DraftCost(draft_runs=gamma, note="γ applications of EAGLE's one layer on the target's features")

    def describe(self) -> dict:
        return {"drafter": self.name, "from": "the target's features", "record": str(self.pair.self_drafters().folder)}
