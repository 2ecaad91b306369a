"""FLOPs and bytes of each compute node, and where the communication sits around it.

Per rank and micro-batch, with ``T = tokens`` (``micro_batch * seq / cp``), ``Ts = sp_tokens``
(``T / tp`` with sp), ``h`` hidden, ``f`` ffn, ``t`` tp, ``a`` heads, ``d`` dtype_bytes, ``E``
experts, ``k`` topk, ``q = h + 2 kv`` the QKV width (``kv = h * kv_heads / heads``), ``f1`` the
first MLP matrix's width (``f``, or ``2f`` for swiglu), ``c`` the keys attended (``seq``; an
inference step's context); a matrix product of ``(M x K) @ (K x N)`` is ``2 M K N`` FLOPs and
reads and writes its three operands once:

=============  =======================================  ==========================================
node           FLOPs                                    bytes
=============  =======================================  ==========================================
ln1            5 Ts h                                   2 Ts h d
qkv            2 T h (q/t)                              (T h + h q/t + T q/t) d
attention      4 T c h/t + 5 (a/t) T c                  (2 T h/t + 2 mb c kv/t) d
proj           2 T (h/t) h                              (T h/t + h^2/t + T h) d
ln2            6 Ts h                                   3 Ts h d
fc1            2 T h f1/t                               (T h + h f1/t + T f1/t) d
gelu           8 T f/t                                  2 T f/t d
swiglu         5 T f/t (SiLU 4, product 1)              3 T f/t d
fc2            2 T (f/t) h                              (T f/t + f h/t + T h) d
residual       Ts h                                     3 Ts h d
router (MoE)   2 T h E                                  (T h + h E + T E) d
experts (MoE)  2 k T h (f1+f)/t + x k T f/t             (2 k T h + (E/ep) h (f1+f)/t + k T (f1+f)/t) d
embedding      T h                                      3 T h d
output_loss    2 T h V/t + 5 T V/t                      (T h + V h/t + T V/t) d
optimizer      12 P                                     30 P (Adam: fp32 param, grad, moments; bf16 copy)
=============  =======================================  ==========================================

A backward node is twice its forward node (input and weight gradients).  Attention reads keys
and values of the whole sequence (``c = seq``, gathered over context parallelism).  ``x`` is the
activation's FLOPs per element (gelu 8, swiglu 5).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Model

__all__ = ["Op", "forward_ops", "backward_ops", "embedding_op", "output_op", "optimizer_op", "GROWS_WITH"]

#: the sizes each node's FLOPs and bytes grow with, in the symbols of the table above (``P``: the
#: parameters it updates); a backward node (``..._bwd``) grows with its forward node's
GROWS_WITH = {"ln1": "T h", "qkv": "T h q", "attention": "T c h", "proj": "T h", "ln2": "T h", "fc1": "T h f",
              "gelu": "T f", "swiglu": "T f", "fc2": "T h f", "residual": "T h", "router": "T h E",
              "experts": "T h f E k", "embedding": "T h", "output_loss": "T h V", "optimizer": "P"}


@dataclass(frozen=True)
class Op:
    """A compute node's work and the communication markers before and after it.

    Markers: ``tp_gather`` (before a column-parallel matrix), ``tp_reduce`` (after a row-parallel
    one), ``cp_gather`` (keys and values over context parallelism, ``comm_bytes``), ``a2a``
    (MoE dispatch before the experts, combine after); ``tp_regather`` (before the backward of a
    column-parallel matrix: with sp, Megatron-LM all-gathers its input again for the weight
    gradient) is added by :func:`backward_ops` where ``column`` is set.
    """

    name: str
    flops: int
    bytes: int
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    comm_bytes: int = 0
    column: bool = False


def forward_ops(m: Model, moe: bool, context: int | None = None) -> list[Op]:
    """The compute nodes of one layer's forward, in order; ``context``: keys attended per
    sequence (default ``seq``; an inference step's KV-cache length)."""
    T, Ts, h, t, d = m.tokens, m.sp_tokens, m.hidden, m.tp, m.dtype_bytes
    ht, qt = h // t, m.qkv_out // t
    keys = m.seq if context is None else context
    kv = 2 * m.micro_batch * keys * (m.kv_dim // t)
    ops = [
        Op("ln1", 5 * Ts * h, 2 * Ts * h * d),
        Op("qkv", 2 * T * h * qt, (T * h + h * qt + T * qt) * d, before=("tp_gather",), column=True),
        Op("attention", 4 * T * keys * ht + 5 * (m.heads // t) * T * keys, (2 * T * ht + kv) * d,
           before=("cp_gather",), comm_bytes=kv * d),
        Op("proj", 2 * T * ht * h, (T * ht + h * ht + T * h) * d, after=("tp_reduce",)),
        Op("ln2", 6 * Ts * h, 3 * Ts * h * d),
    ]
    return ops + (_moe_ops(m) if moe else _mlp_ops(m)) + [Op("residual", Ts * h, 3 * Ts * h * d)]


def _activation(m: Model) -> tuple[str, int, int]:
    """The MLP's activation: name, FLOPs and elements moved per element of its output."""
    return ("swiglu", 5, 3) if m.mlp == "swiglu" else ("gelu", 8, 2)


def _mlp_ops(m: Model) -> list[Op]:
    """A dense MLP: first matrix (column-parallel), activation, second matrix (row-parallel)."""
    T, h, d = m.tokens, m.hidden, m.dtype_bytes
    ft, f1t = m.ffn // m.tp, m.fc1_out // m.tp
    name, flops, moved = _activation(m)
    return [
        Op("fc1", 2 * T * h * f1t, (T * h + h * f1t + T * f1t) * d, before=("tp_gather",), column=True),
        Op(name, flops * T * ft, moved * T * ft * d),
        Op("fc2", 2 * T * ft * h, (T * ft + ft * h + T * h) * d, after=("tp_reduce",)),
    ]


def _moe_ops(m: Model) -> list[Op]:
    """A MoE block: the router, then the experts between dispatch and combine."""
    T, h, d, k, E = m.tokens, m.hidden, m.dtype_bytes, m.topk, m.experts
    ft, f1t = m.ffn // m.tp, m.fc1_out // m.tp
    _, flops, _ = _activation(m)
    return [
        Op("router", 2 * T * h * E, (T * h + h * E + T * E) * d, before=("tp_gather",)),
        Op("experts", 2 * k * T * h * (f1t + ft) + flops * k * T * ft,
           (2 * k * T * h + (E // m.ep) * h * (f1t + ft) + k * T * (f1t + ft)) * d,
           before=("a2a",), after=("a2a", "tp_reduce")),
    ]


def backward_ops(m: Model, moe: bool) -> list[Op]:
    """The compute nodes of one layer's backward: the forward's in reverse, each twice the work,
    with its markers mirrored (what came after a forward node comes before its backward), and a
    column-parallel matrix's input gathered again (``tp_regather``) before its backward."""
    return [Op(f"{op.name}_bwd", 2 * op.flops, 2 * op.bytes,
               before=("tp_regather",) * op.column + op.after[::-1], after=op.before[::-1],
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
