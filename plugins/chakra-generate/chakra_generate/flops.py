"""FLOPs and bytes of each compute node, and where the communication sits around it.

Per rank and micro-batch, with ``T = tokens`` (``micro_batch * seq / cp``), ``Ts = sp_tokens``
(``T / tp`` with sp), ``h`` hidden, ``f`` ffn, ``t`` tp, ``a`` heads, ``d`` dtype_bytes, ``E``
experts, ``k`` topk; a matrix product of ``(M x K) @ (K x N)`` is ``2 M K N`` FLOPs and reads
and writes its three operands once:

=============  =======================================  ==========================================
node           FLOPs                                    bytes
=============  =======================================  ==========================================
ln1            5 Ts h                                   2 Ts h d
qkv            2 T h (3h/t)                             (T h + 3h^2/t + 3 T h/t) d
attention      4 T seq h/t + 5 (a/t) T seq              (2 T h/t + 2 mb seq h/t) d
proj           2 T (h/t) h                              (T h/t + h^2/t + T h) d
ln2            6 Ts h                                   3 Ts h d
fc1            2 T h f/t                                (T h + h f/t + T f/t) d
gelu           8 T f/t                                  2 T f/t d
fc2            2 T (f/t) h                              (T f/t + f h/t + T h) d
residual       Ts h                                     3 Ts h d
router (MoE)   2 T h E                                  (T h + h E + T E) d
experts (MoE)  4 k T h f/t + 8 k T f/t                  (2 k T h + 2 (E/ep) h f/t + 2 k T f/t) d
embedding      T h                                      3 T h d
output_loss    2 T h V/t + 5 T V/t                      (T h + V h/t + T V/t) d
optimizer      12 P                                     30 P (Adam: fp32 param, grad, moments; bf16 copy)
=============  =======================================  ==========================================

A backward node is twice its forward node (input and weight gradients).  Attention reads keys
and values of the whole sequence (``seq``, gathered over context parallelism).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Model

__all__ = ["Op", "forward_ops", "backward_ops", "embedding_op", "output_op", "optimizer_op"]


@dataclass(frozen=True)
class Op:
    """A compute node's work and the communication markers before and after it.

    Markers: ``tp_gather`` (before a column-parallel matrix), ``tp_reduce`` (after a row-parallel
    one), ``cp_gather`` (keys and values over context parallelism, ``comm_bytes``), ``a2a``
    (MoE dispatch before the experts, combine after).
    """

    name: str
    flops: int
    bytes: int
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    comm_bytes: int = 0


def forward_ops(m: Model, moe: bool) -> list[Op]:
    """The compute nodes of one layer's forward, in order."""
    T, Ts, h, f, t, d = m.tokens, m.sp_tokens, m.hidden, m.ffn, m.tp, m.dtype_bytes
    ht, ft = h // t, f // t
    kv = 2 * m.micro_batch * m.seq * ht
    ops = [
        Op("ln1", 5 * Ts * h, 2 * Ts * h * d),
        Op("qkv", 2 * T * h * 3 * ht, (T * h + 3 * h * ht + 3 * T * ht) * d, before=("tp_gather",)),
        Op("attention", 4 * T * m.seq * ht + 5 * (m.heads // t) * T * m.seq, (2 * T * ht + kv) * d,
           before=("cp_gather",), comm_bytes=kv * d),
        Op("proj", 2 * T * ht * h, (T * ht + h * ht + T * h) * d, after=("tp_reduce",)),
        Op("ln2", 6 * Ts * h, 3 * Ts * h * d),
    ]
    if moe:
        k, E = m.topk, m.experts
        ops += [
            Op("router", 2 * T * h * E, (T * h + h * E + T * E) * d, before=("tp_gather",)),
            Op("experts", 4 * k * T * h * ft + 8 * k * T * ft,
               (2 * k * T * h + 2 * (E // m.ep) * h * ft + 2 * k * T * ft) * d,
               before=("a2a",), after=("a2a", "tp_reduce")),
        ]
    else:
        ops += [
            Op("fc1", 2 * T * h * ft, (T * h + h * ft + T * ft) * d, before=("tp_gather",)),
            Op("gelu", 8 * T * ft, 2 * T * ft * d),
            Op("fc2", 2 * T * ft * h, (T * ft + ft * h + T * h) * d, after=("tp_reduce",)),
        ]
    return ops + [Op("residual", Ts * h, 3 * Ts * h * d)]


def backward_ops(m: Model, moe: bool) -> list[Op]:
    """The compute nodes of one layer's backward: the forward's in reverse, each twice the work,
    with its markers mirrored (what came after a forward node comes before its backward)."""
    return [Op(f"{op.name}_bwd", 2 * op.flops, 2 * op.bytes, before=op.after[::-1], after=op.before[::-1],
               comm_bytes=op.comm_bytes) for op in reversed(forward_ops(m, moe))]


def embedding_op(m: Model, backward: bool = False) -> Op:
    """The input embedding (word lookup plus positions) of one micro-batch."""
    T, h, d = m.tokens, m.hidden, m.dtype_bytes
    return Op("embedding_bwd" if backward else "embedding", T * h, 3 * T * h * d)


def output_op(m: Model, backward: bool = False) -> Op:
    """The output layer and the cross-entropy loss of one micro-batch (backward: twice)."""
    T, h, d, vt = m.tokens, m.hidden, m.dtype_bytes, m.vocab // m.tp
    factor = 2 if backward else 1
    return Op("output_loss", factor * (2 * T * h * vt + 5 * T * vt), factor * (T * h + vt * h + T * vt) * d)


def optimizer_op(params: int) -> Op:
    """An Adam step over ``params`` parameters."""
    return Op("optimizer", 12 * params, 30 * params)
