"""The model and its parallelism, checked, with the closed forms of sizes and counts.

Units: sizes in bytes, parameters and FLOPs as counts.  ``tokens`` is what one rank holds of a
micro-batch: ``micro_batch * seq / cp`` (context parallelism splits the sequence); with sequence
parallelism the norms, dropouts and residuals see ``tokens / tp``.  Parameters are split over
tensor-parallel ranks as Megatron-LM splits them: the QKV and first MLP matrices by columns
(weights and biases), the attention projection and second MLP matrices by rows (weights only,
biases replicated), norms replicated, the word embedding and output layer by vocabulary rows.

Shapes: queries take ``h`` columns, keys and values ``h * kv_heads / heads`` each (grouped-query
attention; ``kv_heads == heads`` is multi-head attention); a ``gelu`` MLP has two matrices
(``h x f``, ``f x h``), a ``swiglu`` MLP three (gate and up ``h x f`` each, fused as one
column-parallel ``h x 2f``, and down ``f x h``); a ``layernorm`` has ``2h`` parameters, an
``rmsnorm`` ``h``; ``bias`` false drops every linear bias; ``positions`` ``learned`` adds a
``seq x h`` table to the embedding, ``rope`` nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chakra_core import ConfigError, check_limit

__all__ = ["Model", "model_from_options", "check_shape", "check_model", "require", "SCHEDULES", "DIMS", "MLPS",
           "NORMS", "POSITIONS", "GRAD_REDUCES"]

SCHEDULES = ("gpipe", "1f1b", "interleaved")
MLPS = ("gelu", "swiglu")
NORMS = ("layernorm", "rmsnorm")
POSITIONS = ("learned", "rope")
#: when data-parallel gradients are reduced: ``auto`` (by ZeRO stage, :func:`resolve_grad_reduce`),
#: in every micro-batch's backward, or once per step at the accumulation boundary
GRAD_REDUCES = ("auto", "per_microbatch", "per_step")
#: the parallel dimensions a rank order permutes
DIMS = ("tp", "cp", "dp", "pp")


@dataclass(frozen=True)
class Model:
    """A checked configuration (see :func:`model_from_options` for the option names); ``auto`` in
    ``grad_reduce`` is resolved on construction (:func:`resolve_grad_reduce`)."""

    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int
    seq: int
    micro_batch: int
    micro_batches: int
    dtype_bytes: int
    grad_bytes: int
    tp: int
    pp: int
    dp: int
    cp: int
    ep: int
    sp: bool
    experts: int
    topk: int
    moe_every: int
    schedule: str
    virtual_stages: int
    zero: int
    recompute: bool
    bucket_bytes: int
    tie_embeddings: bool
    steps: int
    order: tuple[str, ...]
    kv_heads: int = 0
    mlp: str = "gelu"
    norm: str = "layernorm"
    bias: bool = True
    positions: str = "learned"
    grad_reduce: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "grad_reduce", resolve_grad_reduce(self.grad_reduce, self.zero))

    @property
    def groups(self) -> int:
        """Key/value heads (query groups): ``kv_heads``, or ``heads`` when it is 0."""
        return self.kv_heads or self.heads

    @property
    def kv_dim(self) -> int:
        """Width of the keys (and of the values): ``h * kv_heads / heads`` (``h`` without GQA)."""
        return self.hidden * self.groups // self.heads

    @property
    def qkv_out(self) -> int:
        """Output width of the fused QKV matrix: ``h + 2 * kv_dim``."""
        return self.hidden + 2 * self.kv_dim

    @property
    def fc1_out(self) -> int:
        """Output width of the first MLP matrix: ``2f`` for swiglu (gate and up), else ``f``."""
        return 2 * self.ffn if self.mlp == "swiglu" else self.ffn

    @property
    def norm_params(self) -> int:
        """Parameters of one norm: ``2h`` (layernorm: scale and shift) or ``h`` (rmsnorm)."""
        return 2 * self.hidden if self.norm == "layernorm" else self.hidden

    @property
    def grad_reductions(self) -> int:
        """Gradient reductions of every parameter per step: ``micro_batches`` with ``grad_reduce``
        ``per_microbatch``, else 1."""
        return self.micro_batches if self.grad_reduce == "per_microbatch" else 1

    @property
    def ranks(self) -> int:
        """World size: ``tp * cp * dp * pp``."""
        return self.tp * self.cp * self.dp * self.pp

    @property
    def chunks(self) -> int:
        """Model chunks per stage: ``virtual_stages`` for interleaved, else 1."""
        return self.virtual_stages if self.schedule == "interleaved" else 1

    @property
    def layers_per_chunk(self) -> int:
        """Layers of one model chunk: ``layers / (pp * chunks)``."""
        return self.layers // (self.pp * self.chunks)

    @property
    def tokens(self) -> int:
        """Tokens of one micro-batch on one rank: ``micro_batch * seq / cp``."""
        return self.micro_batch * self.seq // self.cp

    @property
    def sp_tokens(self) -> int:
        """Tokens seen by norms and residuals: ``tokens / tp`` with sp, else ``tokens``."""
        return self.tokens // self.tp if self.sp else self.tokens

    @property
    def activation_bytes(self) -> int:
        """A layer's input or output on one rank (the tp collectives' size): ``tokens * hidden * dtype_bytes``."""
        return self.tokens * self.hidden * self.dtype_bytes

    @property
    def p2p_bytes(self) -> int:
        """A pipeline send/recv: ``sp_tokens * hidden * dtype_bytes`` (sp sends the tp shard)."""
        return self.sp_tokens * self.hidden * self.dtype_bytes

    @property
    def a2a_bytes(self) -> int:
        """A MoE all-to-all (dispatch or combine): ``tokens * topk * hidden * dtype_bytes``."""
        return self.tokens * self.topk * self.hidden * self.dtype_bytes

    def group_size(self, kind: str) -> int:
        """Ranks of a rank's ``kind`` group (:mod:`chakra_generate.layout`; ``emb`` aside): ``tp``,
        ``cp``, ``dp * cp`` (``dp``: context-parallel ranks hold the same parameters), ``ep``,
        ``dp * cp / ep`` (``edp``, with experts); 1 where there is no such group."""
        sizes = {"tp": self.tp, "cp": self.cp, "dp": self.dp * self.cp, "ep": self.ep,
                 "edp": self.dp * self.cp // self.ep if self.experts else 1}
        return sizes[kind]

    def is_moe(self, layer: int) -> bool:
        """Whether global layer ``layer`` (from 0) is a MoE layer: every ``moe_every``-th, ending
        each group (layers moe_every-1, 2*moe_every-1, ...), when ``experts`` > 0."""
        return self.experts > 0 and (layer + 1) % self.moe_every == 0

    def attention_params(self) -> tuple[int, int]:
        """``(split, replicated)`` attention parameters: QKV ``h x qkv_out`` and projection
        ``h x h`` split by tp, the QKV bias split, the projection bias replicated."""
        h, b = self.hidden, self.bias
        return h * self.qkv_out + h * h + (self.qkv_out if b else 0), h if b else 0

    def mlp_params(self) -> tuple[int, int]:
        """``(split, replicated)`` parameters of one MLP (or one expert): ``h x fc1_out`` and
        ``f x h`` split by tp, the first bias split, the second replicated."""
        h, b = self.hidden, self.bias
        return h * self.fc1_out + self.ffn * h + (self.fc1_out if b else 0), h if b else 0

    def dense_layer_params(self) -> int:
        """Parameters of a dense layer on one tp rank: the split attention and MLP over tp plus the
        replicated biases and two norms; ``(4h^2 + 2h*ffn + 3h + ffn) / tp + 6h`` for the default
        GPT shape (12h^2 + 13h at tp = 1, ffn = 4h)."""
        (a, ar), (f, fr) = self.attention_params(), self.mlp_params()
        return (a + f) // self.tp + ar + fr + 2 * self.norm_params

    def moe_shared_params(self) -> int:
        """Non-expert parameters of a MoE layer on one tp rank (attention, norms, router):
        ``(4h^2 + 3h) / tp + 5h + h * experts`` for the default GPT shape."""
        a, ar = self.attention_params()
        return a // self.tp + ar + 2 * self.norm_params + self.hidden * self.experts

    def expert_params(self) -> int:
        """Expert parameters of a MoE layer on one rank: ``experts / ep`` MLPs, each split by tp
        (``(2h*ffn + ffn) / tp + h`` for the default GPT shape)."""
        f, fr = self.mlp_params()
        return self.experts // self.ep * (f // self.tp + fr)

    def layer_params(self, layer: int) -> tuple[int, int]:
        """``(dense, expert)`` parameters of global layer ``layer`` on one rank."""
        if self.is_moe(layer):
            return self.moe_shared_params(), self.expert_params()
        return self.dense_layer_params(), 0

    def embedding_params(self) -> int:
        """Input embedding on the first stage: ``vocab * h / tp`` (word rows split by tp) plus,
        with learned positions, ``seq * h`` (replicated)."""
        return self.vocab * self.hidden // self.tp + (self.seq * self.hidden if self.positions == "learned" else 0)

    def output_params(self) -> int:
        """Output side on the last stage: the final norm plus, unless it is the word embedding
        itself (one stage with tied embeddings), the output layer ``vocab * h / tp``."""
        tied_here = self.tie_embeddings and self.pp == 1
        return self.norm_params + (0 if tied_here else self.vocab * self.hidden // self.tp)

    def dtype_name(self) -> str:
        """The data type the roofline's peak is read for (from ``dtype_bytes``)."""
        from chakra_core.system import dtype_of_bytes

        return dtype_of_bytes(self.dtype_bytes)


def require(cond: bool, message: str, generator: str = "transformer") -> None:
    """Raise :class:`ConfigError` with ``message``, naming ``generator``, unless ``cond``."""
    if not cond:
        raise ConfigError(f"generator {generator!r}: {message}")


def _order(text: str) -> tuple[str, ...]:
    dims = tuple(d.strip() for d in text.replace(",", "-").split("-"))
    require(sorted(dims) == sorted(DIMS), f"order {text!r} must name tp, cp, dp and pp once each, "
            "fastest first (default tp-cp-dp-pp)")
    return dims


def resolve_grad_reduce(grad_reduce: str, zero: int) -> str:
    """``grad_reduce`` with ``auto`` resolved for ZeRO stage ``zero``: ``per_microbatch`` at stages 2
    and 3 (DeepSpeed partitions the gradients and reduce-scatters them in every micro-batch's
    backward), ``per_step`` at 0 and 1 (Megatron-LM's DDP and distributed optimizer, DeepSpeed
    stage 1: once, at the accumulation boundary)."""
    if grad_reduce != "auto":
        return grad_reduce
    return "per_microbatch" if zero >= 2 else "per_step"


def model_from_options(o: Mapping[str, Any]) -> Model:
    """Build and check a :class:`Model` from the generator's checked options."""
    m = Model(
        layers=o["layers"], hidden=o["hidden"], heads=o["heads"], ffn=o["ffn"] or 4 * o["hidden"],
        vocab=o["vocab"], seq=o["seq"], micro_batch=o["micro_batch"], micro_batches=o["micro_batches"],
        dtype_bytes=o["dtype_bytes"], grad_bytes=o["grad_bytes"], tp=o["tp"], pp=o["pp"], dp=o["dp"],
        cp=o["cp"], ep=o["ep"], sp=o["sp"], experts=o["experts"], topk=o["topk"], moe_every=o["moe_every"],
        schedule=o["schedule"], virtual_stages=o["virtual_stages"], zero=o["zero"], recompute=o["recompute"],
        bucket_bytes=o["bucket_bytes"], tie_embeddings=o["tie_embeddings"], steps=o["steps"],
        order=_order(o["order"]), kv_heads=o["kv_heads"] or o["heads"], mlp=o["mlp"], norm=o["norm"],
        bias=o["bias"], positions=o["positions"], grad_reduce=o["grad_reduce"])
    check_model(m)
    return m


def check_shape(m: Model, generator: str = "transformer") -> None:
    """Raise :class:`ConfigError` (naming ``generator``) unless the model's shape splits over
    its tp and pp, and its world (``tp * cp * dp * pp``) is within the NPU limit (``CHAKRA_MAX_NPUS``)."""
    check_limit("npus", m.ranks, f"generator {generator!r}: ranks tp * cp * dp * pp =", error=ConfigError)
    require(m.hidden % m.heads == 0, f"hidden {m.hidden} is not a multiple of heads {m.heads}", generator)
    require(m.heads % m.tp == 0, f"heads {m.heads} is not a multiple of tp {m.tp}", generator)
    require(m.heads % m.groups == 0, f"heads {m.heads} is not a multiple of kv_heads {m.groups}", generator)
    require(m.groups % m.tp == 0, f"kv_heads {m.groups} is not a multiple of tp {m.tp} (Megatron-LM "
            "splits the key/value heads over tensor-parallel ranks)", generator)
    require(m.ffn % m.tp == 0 and m.vocab % m.tp == 0,
            f"ffn {m.ffn} and vocab {m.vocab} must be multiples of tp {m.tp}", generator)


def check_model(m: Model) -> None:
    """Raise :class:`ConfigError` unless the training configuration is consistent."""
    check_shape(m)
    require(m.seq % m.cp == 0, f"seq {m.seq} is not a multiple of cp {m.cp}")
    require(not m.sp or m.tokens % m.tp == 0,
            f"with sp, micro_batch * seq / cp = {m.tokens} must be a multiple of tp {m.tp}")
    require(m.layers % (m.pp * m.chunks) == 0,
            f"layers {m.layers} is not a multiple of pp * virtual_stages = {m.pp * m.chunks}")
    require(m.schedule != "interleaved" or m.pp > 1, "the interleaved schedule needs pp > 1")
    require(m.schedule != "interleaved" or m.micro_batches % m.pp == 0,
            f"the interleaved schedule needs micro_batches ({m.micro_batches}) to be a multiple of pp ({m.pp}), "
            "as in Megatron-LM")
    require(m.schedule == "interleaved" or m.virtual_stages == 1,
            "virtual_stages applies to schedule=interleaved only")
    require(m.dp % m.ep == 0, f"ep {m.ep} does not divide dp {m.dp} (experts are split inside data parallelism)")
    require(m.ep == 1 or m.experts > 0, "ep > 1 needs experts > 0")
    require(m.experts == 0 or m.experts % m.ep == 0, f"experts {m.experts} is not a multiple of ep {m.ep}")
    require(m.experts == 0 or 1 <= m.topk <= m.experts, f"topk {m.topk} must be between 1 and experts {m.experts}")
