"""FLOPs of cuDNN's fused (flash) attention custom-calls, ``__cudnn$fmha*``.

One call computes, per batch entry and query head, ``S = Q K^T`` and ``O = softmax(S) V``: two
GEMMs of ``2 x pairs x D`` FLOPs each, where ``pairs`` is the number of (query, key) positions
the mask keeps and ``D`` the head dimension.  The backward call (``...Backward``) recomputes
``S`` and forms ``dV = P^T dO``, ``dP = dO V^T``, ``dQ = dS K`` and ``dK = dS^T Q``: five GEMMs
(FlashAttention's 2.5x the forward).  Softmax, scale, bias and dropout are elementwise on the
``pairs`` scores and are not counted.

Dimensions come from the backend config's ``intermediate_tensor_shape`` (``[B, H, Sq, Sk]``,
the score tensor; ``D`` = the query's elements over ``B H Sq``), else from the forward call's
``bmm1_dot_dimension_numbers`` on the query and key operands, else from the query and key in
XLA's default ``[B, S, H, D]`` layout.  Masks: ``CAUSAL`` and ``PADDING_CAUSAL`` keep
``Sq (Sq + 1) / 2`` pairs when ``Sq == Sk`` (bottom-right aligned otherwise), and a
``sliding_window_length`` ``w`` keeps at most ``w`` keys per query.  Padding masks are taken as
full: the sequence lengths are runtime operands.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import prod

__all__ = ["is_fmha", "fmha_flops"]

#: GEMMs of one call: forward S = QK^T and O = PV; backward recomputes S, then dV, dP, dQ, dK.
_FORWARD_GEMMS = 2
_BACKWARD_GEMMS = 5


def is_fmha(target: str) -> bool:
    """True for a cuDNN fused-attention custom-call target (``__cudnn$fmha...``)."""
    return target.lower().startswith("__cudnn$fmha")


def fmha_flops(target: str, config: Mapping, q: tuple[int, ...], k: tuple[int, ...]) -> int:
    """FLOPs of one fused-attention call of ``target`` with its backend ``config`` (the
    ``cudnn_fmha_backend_config`` object, possibly empty), query dims ``q`` and key dims ``k``."""
    dims = _dims(config, q, k)
    if dims is None:
        return 0
    heads, sq, sk, d = dims
    gemms = _BACKWARD_GEMMS if "backward" in target.lower() else _FORWARD_GEMMS
    return gemms * 2 * heads * _pairs(config, sq, sk) * d


def _dims(config: Mapping, q: tuple[int, ...], k: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """(batch x query heads, Sq, Sk, D), or None when the operands do not say."""
    score = _ints((config.get("intermediate_tensor_shape") or {}).get("dimensions"))
    if len(score) == 4 and prod(score) > 0 and q:
        heads, sq, sk = score[0] * score[1], score[2], score[3]
        return heads, sq, sk, prod(q) // (heads * sq)
    bmm1 = config.get("bmm1_dot_dimension_numbers")
    if isinstance(bmm1, Mapping) and len(q) == len(k) == 4:
        batch, contracting = _ints(bmm1.get("lhs_batch_dimensions")), _ints(bmm1.get("lhs_contracting_dimensions"))
        k_used = set(_ints(bmm1.get("rhs_batch_dimensions")) + _ints(bmm1.get("rhs_contracting_dimensions")))
        q_free = [i for i in range(4) if i not in batch and i not in contracting]
        k_free = [i for i in range(4) if i not in k_used]
        if len(q_free) == len(k_free) == 1 and len(contracting) == 1 and all(i < 4 for i in batch):
            return prod(q[i] for i in batch), q[q_free[0]], k[k_free[0]], q[contracting[0]]
    if len(q) == len(k) == 4:
        return q[0] * q[2], q[1], k[1], q[3]
    return None


def _pairs(config: Mapping, sq: int, sk: int) -> int:
    """(query, key) positions the mask keeps: all, at most ``w`` keys per query with a sliding
    window, and with a causal mask query ``i`` sees ``min(i + Sk - Sq + 1, w)`` keys (none when
    that is negative)."""
    window = _ints([config.get("sliding_window_length", 0)])
    w = min(window[0], sk) if window and window[0] > 0 else sk
    if "CAUSAL" not in str(config.get("mask_type", "")).upper():
        return sq * w
    first, last = sk - sq + 1, sk  # keys seen by the first and the last query before clamping
    ramp = _sum_range(max(first, 1), min(last, w))
    return ramp + w * max(0, last - max(first, w + 1) + 1)


def _sum_range(lo: int, hi: int) -> int:
    """lo + (lo + 1) + ... + hi (0 when hi < lo)."""
    return 0 if hi < lo else (lo + hi) * (hi - lo + 1) // 2


def _ints(values: object) -> list[int]:
    """A JSON list of integers (XLA writes 64-bit integers as strings) as ints; [] when not one."""
    if not isinstance(values, list):
        return []
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError):
        return []
