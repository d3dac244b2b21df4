"""The hardware model's weight formats: int8 and int4 variants of each model read fewer bytes for the same
arithmetic, so the memory roofline moves and the arithmetic does not; the KV cache stays bf16."""
from __future__ import annotations

import pytest

from models import hardware
from models.llm import formats as quant


@pytest.mark.parametrize("base", ["llama-3.1-8b", "llama-3.2-1b"])
def test_quantised_weights_move_the_roofline_not_the_arithmetic(base):
    bf16 = hardware.roofline("h100-sxm", base, 1, 4096)
    for fmt in ("int8", "int4"):
        model = hardware.with_weights(base, fmt)
        m = hardware.get_model(model)
        assert m.weights == fmt and m.base == base and hardware.with_weights(model, "bf16") == base
        r = hardware.roofline("h100-sxm", model, 1, 4096)
        assert r.weight_bytes == int(m.params * quant.BITS_PER_WEIGHT[fmt] / 8)
        assert r.kv_bytes_per_token == bf16.kv_bytes_per_token           # the cache is not quantised
        assert r.ops_per_step == bf16.ops_per_step
        ratio = bf16.ms_per_step / r.ms_per_step
        weights_share = bf16.weight_bytes / bf16.bytes_per_step
        expected = 1 / (weights_share * quant.BITS_PER_WEIGHT[fmt] / 16 + (1 - weights_share))
        assert ratio == pytest.approx(expected, rel=1e-6)
        assert hardware.get_model(model).ops_per_byte == pytest.approx(16 / quant.BITS_PER_WEIGHT[fmt])


def test_every_variant_is_a_legal_lab_model():
    from app.settings import FIELDS
    assert set(FIELDS["model"].legal()) == set(hardware.MODELS)
    assert {hardware.get_model(m).weights for m in hardware.MODELS} == set(hardware.WEIGHT_FORMATS)
