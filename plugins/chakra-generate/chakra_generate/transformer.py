"""The ``transformer`` generator: training steps of a GPT/Llama-like model (dense or MoE) under
tensor, sequence, context, data, expert and pipeline parallelism (docs/generate.md).

One template is built per pipeline stage (ranks of a stage differ only in groups and peers);
ranks are produced from it while they are written.  Before the set is returned, a reduced copy
(:func:`reduced`: fewer replicas of every group, the same schedule) is validated as a whole; an
error there is a bug of the generator and stops it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, replace
from typing import Any

from chakra_core import ConfigError, Generator, GlobalMetadata, Option, TraceSet, make_attr, validate
from chakra_core.system import get_device

from .build import Size, Template, build_stage, check_fits, check_nodes, op_sizes
from .emit import TemplateRank, segments
from .flops import backward_ops, embedding_op, optimizer_op, output_op
from .layout import ParallelLayout
from .model import GRAD_REDUCES, MLPS, NORMS, POSITIONS, SCHEDULES, Model, model_from_options
from .presets import PRESETS, with_preset

__all__ = ["TransformerGenerator", "generate_model", "assemble", "reduced", "SHAPE_OPTIONS"]


#: the options of the model's shape, which the ``inference`` generator shares
SHAPE_OPTIONS = ("layers", "hidden", "heads", "kv_heads", "ffn", "mlp", "norm", "bias", "positions", "preset",
                 "vocab", "dtype_bytes", "tp", "pp", "device", "devices", "check")


def _opt(kind: str, default: Any, help: str, **kw: Any) -> Option:
    return Option(kind, default, help, **kw)


class TransformerGenerator(Generator):
    """LLM training steps: tp x cp x dp x pp ranks in Megatron-LM order, with sp, ZeRO, MoE."""

    description = "LLM training steps (dense or MoE) under tp, sp, cp, dp, ep, pp"
    options = {
        "layers": _opt("int", 24, "transformer layers", minimum=1),
        "hidden": _opt("int", 2048, "hidden size", minimum=1),
        "heads": _opt("int", 16, "attention heads", minimum=1),
        "kv_heads": _opt("int", None, "key/value heads (grouped-query attention; default: heads)", minimum=1),
        "ffn": _opt("int", None, "MLP inner size (default 4 x hidden)", minimum=1),
        "mlp": _opt("str", "gelu", "MLP: gelu (two matrices) or swiglu (three)", choices=MLPS),
        "norm": _opt("str", "layernorm", "norm: layernorm (2h parameters) or rmsnorm (h)", choices=NORMS),
        "bias": _opt("bool", True, "linear layers have biases"),
        "positions": _opt("str", "learned", "positions: learned (a seq x h table) or rope (none)",
                          choices=POSITIONS),
        "preset": _opt("str", None, "a named shape whose values fill the options not given", choices=tuple(PRESETS)),
        "vocab": _opt("int", 51200, "vocabulary size", minimum=1),
        "seq": _opt("int", 2048, "sequence length (tokens)", minimum=1),
        "micro_batch": _opt("int", 1, "sequences per micro-batch", minimum=1),
        "micro_batches": _opt("int", 8, "micro-batches per step (per data-parallel replica)", minimum=1),
        "dtype_bytes": _opt("int", 2, "bytes per activation and parameter element", unit="B",
                            choices=(1, 2, 4, 8)),
        "grad_bytes": _opt("int", 4, "bytes per gradient element", unit="B", minimum=1),
        "tp": _opt("int", 1, "tensor-parallel size", minimum=1),
        "pp": _opt("int", 1, "pipeline-parallel size (stages)", minimum=1),
        "dp": _opt("int", 1, "data-parallel size", minimum=1),
        "cp": _opt("int", 1, "context-parallel size", minimum=1),
        "ep": _opt("int", 1, "expert-parallel size (inside dp)", minimum=1),
        "sp": _opt("bool", False, "sequence parallelism (with tp)"),
        "experts": _opt("int", 0, "experts per MoE layer (0: dense model)", minimum=0),
        "topk": _opt("int", 2, "experts per token", minimum=1),
        "moe_every": _opt("int", 1, "every n-th layer is a MoE layer (when experts > 0)", minimum=1),
        "schedule": _opt("str", "1f1b", "pipeline schedule", choices=SCHEDULES),
        "virtual_stages": _opt("int", 1, "model chunks per stage (schedule=interleaved)", minimum=1),
        "zero": _opt("int", 0, "ZeRO stage (0: gradient all-reduce)", choices=(0, 1, 2, 3)),
        "grad_reduce": _opt("str", "auto", "when gradients are reduced: per_microbatch (in every micro-batch's "
                            "backward: DeepSpeed stage 2 and 3, FSDP, DDP without no_sync) or per_step (at the "
                            "accumulation boundary: Megatron-LM, DeepSpeed stage 1, FSDP under no_sync); auto: "
                            "per_microbatch at zero 2 and 3, per_step at zero 0 and 1", choices=GRAD_REDUCES),
        "recompute": _opt("bool", False, "full activation recomputation before each layer's backward"),
        "bucket_bytes": _opt("int", 160_000_000, "gradient bucket size (Megatron-LM: 40M parameters of 4 B)",
                             unit="B", minimum=1),
        "tie_embeddings": _opt("bool", True, "the output layer shares the word embedding (gradient "
                               "all-reduced between first and last stage)"),
        "steps": _opt("int", 1, "training steps", minimum=1),
        "order": _opt("str", "tp-cp-dp-pp", "rank order, fastest dimension first (Megatron-LM: tp-cp-dp-pp)"),
        "device": _opt("str", "h100", "device whose roofline times compute (chakra_core.system.DEVICES)"),
        "devices": _opt("path", None, "YAML file adding devices to the table"),
        "check": _opt("bool", True, "validate a reduced copy of the set before returning it"),
    }

    def check_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """The options with defaults (under a ``preset``'s values), checked together (sizes that
        must divide, ...)."""
        out = super().check_options(with_preset(f"generator {self.name!r}", self.options, options))
        m = model_from_options(out)
        check_nodes(m, m.steps * m.micro_batches * 2 * (m.layers // m.pp), self.name,
                    "steps * micro_batches * 2 passes * layers / pp")
        check_fits(self.name, training_sizes(m))
        get_device(out["device"], out["devices"]).peak(m.dtype_name())
        return out

    def generate(self, options: Mapping[str, Any]) -> TraceSet:
        """The generated set (lazy), after the reduced copy passed validation."""
        model = model_from_options(options)
        if options["check"]:
            _check_reduced(model, options)
        return generate_model(model, options)


def training_sizes(m: Model) -> Iterator[Size]:
    """The largest sizes a rank's nodes get from ``m`` (for :func:`check_fits`): each backward
    node's FLOPs and bytes (twice its forward node's; an activation ``T h d``, an all-to-all and
    the keys and values are within the bytes of the qkv, experts and attention nodes), and
    bounds of a stage's optimizer step and gradient and parameter bytes (every layer of a stage
    the larger of a dense and a MoE layer, with the embedding and the output layer)."""
    symbols = {"T": "micro_batch, seq", "c": "seq", "P": "layers, hidden, ffn, vocab, experts"}
    moe = backward_ops(m, True) if m.experts else []
    yield from op_sizes([*backward_ops(m, False), *moe, embedding_op(m, True), output_op(m, True)], symbols)
    layers = m.layers // m.pp
    dense = layers * max(m.dense_layer_params(), m.moe_shared_params()) + m.embedding_params() + m.output_params()
    expert = layers * m.expert_params()
    shard = dense // m.group_size("dp") + expert // m.group_size("edp") if m.zero else dense + expert
    yield from op_sizes([optimizer_op(shard)], symbols)
    for what, per, option in (("gradient", m.grad_bytes, "grad_bytes"), ("parameter", m.dtype_bytes, "dtype_bytes")):
        yield (f"the {what} bytes of a stage (a bound of a {what} collective's comm_size)", (dense + expert) * per,
               f"{symbols['P']}, {option}")


def generate_model(model: Model, options: Mapping[str, Any]) -> TraceSet:
    """The lazily generated set of ``model`` (``options``: the generator's checked options)."""
    device = get_device(options["device"], options["devices"])
    templates = [build_stage(model, device, s) for s in range(model.pp)]
    workload = {**asdict(model), "order": "-".join(model.order), "device": device.name}
    return assemble(model, templates, "transformer", workload)


def assemble(model: Model, templates: list[Template], generator: str, workload: Mapping[str, Any]) -> TraceSet:
    """The set whose rank ``r`` runs the template of its stage with its own groups and peers;
    every rank's metadata records ``workload`` (JSON), the rank order, coordinates and groups."""
    layout = ParallelLayout(model)
    framed = [segments(t) for t in templates]
    text = json.dumps(workload, separators=(",", ":"))
    order = _order_formula(model.order)
    ranks = []
    for r in range(model.ranks):
        coords = layout.coords(r)
        groups = {k: layout.group_of[k][r] for k in layout.group_of if layout.group_of[k][r]}
        meta = GlobalMetadata(version="0.0.4")
        meta.attr.extend([
            make_attr("generator", f"chakra-generate:{generator}"), make_attr("workload", text),
            make_attr("rank_order", order), make_attr("parallel_coords", json.dumps(coords, separators=(",", ":"))),
            make_attr("parallel_groups", json.dumps(groups, separators=(",", ":"))),
        ])
        pp = coords["pp"]
        ranks.append(TemplateRank(r, meta, templates[pp], layout, framed[pp]))
    return TraceSet(ranks, process_groups=layout.groups, source=f"generator:{generator}")


def _order_formula(order: tuple[str, ...]) -> str:
    """``rank = tp_rank + tp*(cp_rank + cp*(dp_rank + dp*pp_rank))`` for ``order``."""
    text = f"{order[-1]}_rank"
    for d in reversed(order[:-1]):
        text = f"{d}_rank + {d}*({text})"
    return f"rank = {text}"


def reduced(model: Model) -> Model:
    """The model the generator validates: tp and cp cut to 2 (when even), dp to ``max(ep, 2)``,
    layers per model chunk to ``2 * moe_every``: every kind of node, group and peer of the full
    set, the same schedule, with fewer replicas of each."""
    def cut(size: int, to: int) -> int:
        return to if size > to and size % to == 0 else size

    lpc = min(model.layers_per_chunk, 2 * model.moe_every)
    return replace(model, tp=cut(model.tp, 2), cp=cut(model.cp, 2), dp=cut(model.dp, max(model.ep, 2)),
                   layers=lpc * model.pp * model.chunks)


def _check_reduced(model: Model, options: Mapping[str, Any]) -> None:
    """Validate the :func:`reduced` set as a whole; raise on any error."""
    small = reduced(model)
    findings = validate(generate_model(small, options))
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise ConfigError(f"generator 'transformer': the generated set fails validation ({len(errors)} "
                          f"finding(s); the first: {errors[0]}); this is a bug of chakra-generate")
