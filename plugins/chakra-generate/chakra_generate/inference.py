"""The ``inference`` generator: LLM serving steps (a prefill, then decode steps reading a KV
cache) under tensor and pipeline parallelism (docs/generate.md#inference).

Each step is one forward pass of every sequence of the batch: the prefill over the ``prompt``
tokens, a decode step over one new token per sequence, its attention reading the keys and
values of every earlier token from the cache.  The batch goes through the pipeline in
``micro_batches`` parts; the last stage sends each part's sampled token ids back to the first
stage, which embeds them in the next step (Megatron-LM's copy from the last to the first
pipeline stage).  Ranks are ``tp_rank + tp * pp_rank``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from chakra_core import CommType, ConfigError, Generator, Option, TraceSet, validate
from chakra_core.system import Device, get_device

from .build import Builder, Size, Template, check_fits, check_nodes, op_sizes
from .flops import embedding_op, forward_ops, output_op
from .model import Model, check_shape, require
from .presets import with_preset
from .transformer import SHAPE_OPTIONS, TransformerGenerator, assemble

__all__ = ["InferenceGenerator", "Step", "inference_steps", "TOKEN_BYTES"]

#: bytes of one sampled token id (int64, as Megatron-LM and vLLM hold them)
TOKEN_BYTES = 8


@dataclass(frozen=True)
class Step:
    """One forward pass of the batch: ``tokens`` new tokens per sequence attending to
    ``context`` keys (the cache and themselves)."""

    label: str
    tokens: int
    context: int


def inference_steps(prompt: int, decode: int, prefill: bool) -> list[Step]:
    """The prefill (when ``prefill``) over ``prompt`` tokens, then ``decode`` steps; decode step
    ``i`` (from 1) attends to ``prompt + i`` keys."""
    steps = [Step("prefill", prompt, prompt)] if prefill else []
    return steps + [Step(f"decode{i}", 1, prompt + i) for i in range(1, decode + 1)]


class InferenceGenerator(Generator):
    """LLM inference steps: prefill and decode with a KV cache, tp x pp ranks."""

    description = "LLM inference (prefill and decode steps with a KV cache) under tp, pp"
    options = {
        **{k: TransformerGenerator.options[k] for k in SHAPE_OPTIONS},
        "batch": Option("int", 8, "sequences served at once", minimum=1),
        "prompt": Option("int", 1024, "prompt tokens per sequence (the prefill; the cache before decoding)",
                         minimum=1),
        "decode": Option("int", 16, "decode steps (one new token per sequence each)", minimum=0),
        "prefill": Option("bool", True, "run the prefill step (false: decode steps over a cache of prompt tokens)"),
        "micro_batches": Option("int", 1, "parts of the batch in flight through the pipeline", minimum=1),
    }

    def check_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """The options with defaults (under a ``preset``'s values), checked together."""
        out = super().check_options(with_preset(f"generator {self.name!r}", self.options, options))
        m = inference_model(out)
        steps = int(out["prefill"]) + out["decode"]
        check_nodes(m, steps * m.micro_batches * (m.layers // m.pp), self.name,
                    "(prefill + decode) * micro_batches * layers / pp")
        check_fits(self.name, serving_sizes(m, out))
        get_device(out["device"], out["devices"]).peak(m.dtype_name())
        return out

    def generate(self, options: Mapping[str, Any]) -> TraceSet:
        """The generated set (lazy), after a reduced copy passed validation."""
        if options["check"]:
            small = {**options, "tp": min(options["tp"], 2) if options["tp"] % 2 == 0 else options["tp"],
                     "layers": options["pp"], "decode": min(options["decode"], 2)}
            errors = [f for f in validate(generate_inference(small)) if f.severity == "error"]
            if errors:
                raise ConfigError(f"generator 'inference': the generated set fails validation ({len(errors)} "
                                  f"finding(s); the first: {errors[0]}); this is a bug of chakra-generate")
        return generate_inference(options)


def inference_model(o: Mapping[str, Any]) -> Model:
    """The :class:`Model` of the checked options: one micro-batch is ``batch / micro_batches``
    sequences; ``seq`` is the longest context (``prompt + decode``)."""
    require(o["batch"] % o["micro_batches"] == 0,
            f"batch {o['batch']} is not a multiple of micro_batches {o['micro_batches']}", "inference")
    require(o["prefill"] or o["decode"] > 0, "nothing to run: prefill is false and decode is 0", "inference")
    require(o["layers"] % o["pp"] == 0, f"layers {o['layers']} is not a multiple of pp {o['pp']}", "inference")
    m = Model(
        layers=o["layers"], hidden=o["hidden"], heads=o["heads"], ffn=o["ffn"] or 4 * o["hidden"],
        vocab=o["vocab"], seq=o["prompt"] + o["decode"], micro_batch=o["batch"] // o["micro_batches"],
        micro_batches=o["micro_batches"], dtype_bytes=o["dtype_bytes"], grad_bytes=o["dtype_bytes"], tp=o["tp"],
        pp=o["pp"], dp=1, cp=1, ep=1, sp=False, experts=0, topk=1, moe_every=1, schedule="1f1b",
        virtual_stages=1, zero=0, recompute=False, bucket_bytes=1, tie_embeddings=False, steps=1,
        order=("tp", "cp", "dp", "pp"), kv_heads=o["kv_heads"] or o["heads"], mlp=o["mlp"], norm=o["norm"],
        bias=o["bias"], positions=o["positions"])
    check_shape(m, "inference")
    return m


def serving_sizes(m: Model, o: Mapping[str, Any]) -> Iterator[Size]:
    """The largest sizes a rank's nodes get (for :func:`check_fits`): the FLOPs and bytes of each
    node of the prefill and of the last decode step (the longest cache), which bound the
    activations and the logits' all-gather, and the sampled tokens sent back."""
    steps = inference_steps(o["prompt"], o["decode"], o["prefill"])
    for step in (steps[0], steps[-1]):
        sm = replace(m, seq=step.tokens)
        symbols = {"T": "batch, prompt" if step.tokens > 1 else "batch", "c": "prompt, decode"}
        ops = [*forward_ops(sm, False, context=step.context), embedding_op(sm), output_op(replace(sm, seq=1))]
        yield from op_sizes(ops, symbols)
    yield "the sampled tokens' bytes (a message's comm_size)", TOKEN_BYTES * m.micro_batch, "batch"


def generate_inference(options: Mapping[str, Any]) -> TraceSet:
    """The lazily generated set of the checked ``options``."""
    model = inference_model(options)
    device = get_device(options["device"], options["devices"])
    steps = inference_steps(options["prompt"], options["decode"], options["prefill"])
    templates = [_stage(model, device, s, steps) for s in range(model.pp)]
    workload = {**asdict(model), "order": "-".join(model.order), "device": device.name,
                **{k: options[k] for k in ("batch", "prompt", "decode", "prefill")}}
    return assemble(model, templates, "inference", workload)


def _tag(m: Model, step: int, micro_batch: int, sender: int, kind: int) -> int:
    """The tag of a pipeline message (kind 0: activation, 1: token ids) from stage ``sender``."""
    return 1 + 2 * ((step * m.micro_batches + micro_batch) * m.pp + sender) + kind


def _stage(m: Model, device: Device, stage: int, steps: list[Step]) -> Template:
    """The template of pipeline stage ``stage``: every step, its micro-batches in order."""
    b = Builder(m, device, stage)
    for k, step in enumerate(steps):
        sm = replace(m, seq=step.tokens)
        for mb in range(m.micro_batches):
            pre = f"{step.label}.mb{mb}"
            _stage_input(b, sm, stage, k, mb, pre)
            for layer in range(stage * m.layers // m.pp, (stage + 1) * m.layers // m.pp):
                for op in forward_ops(sm, False, context=step.context):
                    b.comp(f"{pre}.L{layer}.{op.name}", op)
                    if "tp_reduce" in op.after:
                        _all_reduce(b, sm, f"{pre}.L{layer}.{op.name}")
            _stage_output(b, sm, stage, k, mb, pre, last_step=k == len(steps) - 1)
    return b.t


def _stage_input(b: Builder, sm: Model, stage: int, k: int, mb: int, pre: str) -> None:
    """The first stage embeds the tokens (after step 0, those the last stage sampled); the
    others receive the activation of the stage before."""
    if stage:
        b.recv(f"{pre}.recv_activation", sm.activation_bytes, _tag(sm, k, mb, stage - 1, 0), "prev")
        return
    if k and sm.pp > 1:
        b.recv(f"{pre}.recv_tokens", TOKEN_BYTES * sm.micro_batch, _tag(sm, k - 1, mb, sm.pp - 1, 1), "prev")
    b.comp(f"{pre}.embedding", embedding_op(sm))
    _all_reduce(b, sm, f"{pre}.embedding")


def _stage_output(b: Builder, sm: Model, stage: int, k: int, mb: int, pre: str, last_step: bool) -> None:
    """A stage sends its activation on; the last computes the logits of each sequence's last
    token, gathers them over tp and sends the sampled token ids to the first stage."""
    if stage < sm.pp - 1:
        b.send(f"{pre}.send_activation", sm.activation_bytes, _tag(sm, k, mb, stage, 0), "next")
        return
    b.comp(f"{pre}.logits", output_op(replace(sm, seq=1)))
    if sm.tp > 1:
        b.all_gather(f"{pre}.logits.tp_all_gather", sm.micro_batch * sm.vocab * sm.dtype_bytes, "tp")
    if not last_step and sm.pp > 1:
        b.send(f"{pre}.send_tokens", TOKEN_BYTES * sm.micro_batch, _tag(sm, k, mb, stage, 1), "next")


def _all_reduce(b: Builder, sm: Model, name: str) -> None:
    """The tensor-parallel all-reduce of ``name``'s output (``tokens * h * d`` bytes)."""
    if sm.tp > 1:
        b.coll(f"{name}.tp_all_reduce", CommType.ALL_REDUCE, sm.activation_bytes, "tp")
