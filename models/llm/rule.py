"""The acceptance rule on tensors: models/acceptance.py mirrored operation for operation, for a device that should
not wait for the host inside a pass (a GPU, a CUDA graph).

Ratios in fp32, comparisons and inverse-CDF draws in fp64, the same uniforms give the same verdicts and tokens as
the numpy rule (tests prove it); the inputs are checked as acceptance.verify checks them, the first violation
kept on the device until the pass's one host read. On a CPU the speculative pass runs models.acceptance.verify
itself on the rows (models.llm.speculative).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from corpus.errors import InputError
from models.acceptance import ROW_SUM_TOLERANCE, check_rule_shapes, violation_message


# --- turning logits into the rows the rule reads --------------------------------------------------
def sample_index(rows: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Mirror of acceptance.sample_index: inverse-CDF draw with uniform u from unnormalised rows (..., V).

    cdf in fp64; the first index whose cumulative mass exceeds u·total (so a zero-mass token is never
    chosen); if u·total rounds up to the total, the last positive entry.
    """
    cdf = rows.double().cumsum(-1)
    i = torch.searchsorted(cdf, (u.double() * cdf[..., -1]).unsqueeze(-1), right=True).squeeze(-1)
    V = rows.shape[-1]
    if rows.device.type == "cpu" and int(i.max()) < V:
        return i            # the usual case, read for free on a CPU: the fallback below is not needed
    last_positive = (V - 1) - (rows > 0).flip(-1).int().argmax(-1)
    return torch.where(i >= V, last_positive, i)


@dataclass
class DeviceVerdicts:
    """acceptance.Verdicts as device tensors (read them only when the pass is done)."""

    ratios: torch.Tensor             # (γ,) fp32 p_i(x_i) / q_i(x_i)
    accepted: torch.Tensor           # (γ,) bool
    n_accepted: torch.Tensor         # () int64
    final_token: torch.Tensor        # () int64: replacement or bonus
    residual_fallback: torch.Tensor  # () bool
    violation: torch.Tensor          # (2,) int64: [kind, position] of acceptance.VIOLATIONS, kind 0 = none


def _first_true(flag: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(any, index of the first True) of a bool vector, also when it is empty (γ = 0): no host read."""
    f = torch.cat([flag, flag.new_zeros(1)])
    return f.any(), f.int().argmax()


def find_violation_on_device(guesses, q_rows, p_rows, r, u_final) -> tuple[torch.Tensor, torch.Tensor]:
    """acceptance.check_guesses + find_row_violation on tensors, the same tests in the same order
    (acceptance.VIOLATIONS): ([kind, position], guesses with the out-of-range ones replaced by 0 so the rule's
    gathers stay in bounds; on CUDA an out-of-range index would be a device-side assert, not an error)."""
    V = p_rows.shape[1]
    outside = (guesses < 0) | (guesses >= V)
    safe = torch.where(outside, torch.zeros_like(guesses), guesses)
    idx = torch.arange(guesses.shape[0], device=guesses.device)
    flags = [
        outside,
        ~(q_rows[idx, safe] > 0),
        ~(torch.isfinite(q_rows) & (q_rows >= 0)).all(1),
        ~(torch.isfinite(p_rows) & (p_rows >= 0)).all(1),
        (q_rows.double().sum(1) - 1.0).abs() > ROW_SUM_TOLERANCE,
        (p_rows.double().sum(1) - 1.0).abs() > ROW_SUM_TOLERANCE,
        ~((r >= 0) & (r <= 1)),
        ~((u_final >= 0) & (u_final <= 1)).view(1),
    ]
    anys, firsts = zip(*(_first_true(f) for f in flags))
    anys, firsts = torch.stack(anys), torch.stack(firsts)
    k = anys.int().argmax()
    has = anys.any()
    kind = torch.where(has, k + 1, torch.zeros_like(k))
    return torch.stack([kind, torch.where(has, firsts[k], torch.zeros_like(k))]), safe


def suspect_on_device(guesses, q_rows, p_rows, r, u_final) -> torch.Tensor:
    """A cheap flag that is True whenever find_violation_on_device would find something (never False then): a
    few reductions instead of the full check's forty operations. The full check runs only when it is raised, so
    the verdict and its message are the full check's. Row sums are flagged at half the tolerance in fp32, far
    wider than fp32's summation error, so a row the fp64 check refuses is always flagged."""
    V = p_rows.shape[1]
    tol = ROW_SUM_TOLERANCE / 2
    parts = [(guesses < 0) | (guesses >= V), ~((r >= 0) & (r <= 1)), ~((u_final >= 0) & (u_final <= 1)).view(1)]
    for rows in (q_rows, p_rows):
        if rows.numel():
            parts.append(~(rows.amin() >= 0).view(1))                  # a negative entry or a NaN
            # summed in fp32 whatever the rows' dtype: a bf16 sum rounds to 1/128 and would hide a row the fp64
            # check refuses
            parts.append(~((rows.sum(1, dtype=torch.float32) - 1.0).abs() <= tol))     # off by more, or infinite
    if guesses.numel():
        safe = guesses.clamp(0, V - 1)
        parts.append(~(q_rows.gather(1, safe.view(-1, 1)).view(-1) > 0))
    return torch.cat([p.view(-1) for p in parts]).any()


def raise_on_violation(violation, guesses, V: int) -> None:
    """The host side of the check: the InputError acceptance.verify raises for the same inputs."""
    kind, i = (int(x) for x in violation)
    if kind:
        raise InputError(violation_message(kind, i, list(guesses), V))


def _is_integer(dtype: torch.dtype) -> bool:
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


def verify_on_device(guesses: torch.Tensor, q_rows: torch.Tensor, p_rows: torch.Tensor, r: torch.Tensor,
                     u_final: torch.Tensor, lenience: float = 1.0, check: bool = True) -> DeviceVerdicts:
    """acceptance.verify on tensors: guesses (γ,), q_rows (γ, V) fp32, p_rows (γ+1, V) fp32, r (γ,) fp64.

    The inputs are checked as acceptance.verify checks them: shapes and lenience at once, the data on the
    device into `violation`. check=True reads it and raises the same InputError; the decoder passes
    check=False and reads it with the pass's one host read (a CUDA graph cannot stop to raise)."""
    gamma = guesses.shape[0] if guesses.dim() else -1
    check_rule_shapes(gamma, guesses.dim(), _is_integer(guesses.dtype),
                      q_rows.dtype.is_floating_point and p_rows.dtype.is_floating_point, q_rows.shape, p_rows.shape,
                      r.shape, u_final.dim(), lenience)
    if guesses.device.type == "cpu" and not bool(suspect_on_device(guesses, q_rows, p_rows, r, u_final)):
        # On a CPU a flag is read for free: the full check runs only when something looks wrong.
        violation, safe = torch.zeros(2, dtype=torch.long), guesses
    else:
        violation, safe = find_violation_on_device(guesses, q_rows, p_rows, r, u_final)
    idx = torch.arange(gamma, device=guesses.device)
    ratios = p_rows[idx, safe] / q_rows[idx, safe]              # acceptance_ratio = p / q, fp32 as numpy
    passes = r.double() < (ratios / lenience).double()      # strict, as acceptance.verify: r ~ U[0, 1)
    n = passes.long().cumprod(0).sum()                                # leading passes = first rejection (γ if none)
    accepted = idx < n
    # Past the last guess q is zero, so the residual formula gives the bonus row too: max(0, p - 0) = p.
    p_n = p_rows.index_select(0, n.view(1))[0]
    if guesses.device.type == "cpu":           # n read for free: no padded copy of the q rows
        k = int(n)
        res = torch.clamp_min(p_n - lenience * q_rows[k], 0.0) if k < gamma else torch.clamp_min(p_n, 0.0)
    else:
        q_pad = torch.cat([q_rows, q_rows.new_zeros(1, q_rows.shape[1])])
        q_n = q_pad.index_select(0, n.view(1))[0]
        res = torch.clamp_min(p_n - lenience * q_n, 0.0)              # residual: max(0, p - q)
    has_mass = (res > 0).any()
    # Zero residual (p <= q everywhere, i.e. p == q up to rounding): draw from p, as acceptance.py does.
    row = torch.where(has_mass, res, p_n)
    token = sample_index(row, u_final)
    verdicts = DeviceVerdicts(ratios=ratios, accepted=accepted, n_accepted=n, final_token=token,
                              residual_fallback=(n < gamma) & ~has_mass, violation=violation)
    if check:
        raise_on_violation(violation.tolist(), guesses.tolist(), p_rows.shape[1])
    return verdicts
