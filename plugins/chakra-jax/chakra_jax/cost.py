"""Compute cost of HLO instructions from their shapes: FLOPs (``num_ops``) and bytes (``tensor_size``).

- ``dot``: 2 x output elements x the product of the lhs contracting dimensions;
- ``convolution``: 2 x output elements x the kernel's elements per output feature (the product
  of the rhs dimensions except its ``o`` dimension in ``dim_labels``);
- ``fft``: 5 n log2 n per transform of n = the product of ``fft_length`` points, times the
  transforms the operand holds (its elements over n);
- ``custom-call``s of known targets (:data:`KNOWN_TARGETS`): cuBLAS / cuBLASLt / rocBLAS GEMMs
  (``__cublas$gemm``, ``__cublas$lt$matmul``, any target containing ``gemm`` or ``matmul``) as a
  dot, from the ``dot_dimension_numbers`` of the backend config (else the last lhs dimension
  contracted); cuDNN convolutions (``__cudnn$conv*``: forward, backward input, backward
  filter, with bias and activation) as the forward convolution, 2 x output elements x kernel
  elements per output feature (``dim_labels``), the output being the result for the forward
  direction, operand 0 (the output gradient) for backward input and operand 1 for backward
  filter (whose result is the kernel); cuDNN fused attention (``__cudnn$fmha*``, forward and
  backward, :mod:`.attention`) as its GEMMs over the (query, key) pairs its mask keeps; FFT
  targets (``ducc_fft``, ``dynamic_ducc_fft``, ``__cufft*``) as an FFT over the last dimension
  of the operand. Other targets cost no FLOPs (their bytes are counted) and are reported by the
  lowering;
- ``fusion``: the sum over the instructions of its fused computation (nested fusions included);
- elementwise and other arithmetic ops: one operation per output element; ``reduce`` and
  ``reduce-window``: one per input element; data movement (copy, transpose, slice, pad,
  broadcast, gather, scatter, ...): none.

Bytes are what the instruction reads and writes at the top level: its operands' bytes plus its
output's bytes (a fusion reads each operand once, whatever it does inside).
"""

from __future__ import annotations

import json
import math
import re

from .attention import fmha_flops, is_fmha
from .hlo_text import Computation, HloModule, Instruction
from .shapes import arrays, elements, shape_bytes

__all__ = ["CostModel", "KNOWN_TARGETS", "custom_call_target", "is_known_target"]

_MOVES = frozenset({
    "copy", "transpose", "slice", "dynamic-slice", "dynamic-update-slice", "pad", "broadcast",
    "reshape", "bitcast", "concatenate", "gather", "scatter", "reverse", "iota", "constant",
    "parameter", "tuple", "get-tuple-element", "copy-start", "copy-done", "bitcast-convert",
    "partition-id", "replica-id", "after-all", "add-dependency", "optimization-barrier", "domain",
})
_REDUCES = frozenset({"reduce", "reduce-window", "select-and-scatter"})
_DIMS = re.compile(r"\d+")

#: custom-call targets the cost model prices (exact names, and prefixes ending in ``*``).
KNOWN_TARGETS = ("__cublas$gemm", "__cublas$lt$matmul*", "__cudnn$conv*", "__cudnn$fmha*", "ducc_fft",
                 "dynamic_ducc_fft", "__cufft*", "*gemm*", "*matmul*")
#: custom-call targets XLA uses for bookkeeping, which do no work.
_NO_WORK_TARGETS = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "MoveToHost",
                              "MoveToDevice", "AllocateBuffer", "LayoutConstraint"})


def custom_call_target(ins: Instruction) -> str:
    """The ``custom_call_target`` of a custom-call, without its quotes."""
    return (ins.attr("custom_call_target") or "").strip('"')


def is_known_target(target: str) -> bool:
    """True when the cost model prices custom-call ``target`` (or it is one that does no work)."""
    if target in _NO_WORK_TARGETS:
        return True
    low = target.lower()
    for pattern in KNOWN_TARGETS:
        core = pattern.strip("*")
        if (pattern.startswith("*") and core in low) or (pattern.endswith("*") and low.startswith(core)) \
                or low == pattern:
            return True
    return False


def fft_flops(points: int, transforms: int) -> int:
    """FLOPs of ``transforms`` FFTs of ``points`` points each: 5 n log2 n per transform."""
    if points < 2:
        return 0
    return int(round(5 * points * math.log2(points))) * transforms


def _dims(text: str | None) -> list[int]:
    return [int(x) for x in _DIMS.findall(text or "")]


class CostModel:
    """FLOPs and bytes of the instructions of one module (fused computations cached)."""

    def __init__(self, module: HloModule):
        self._module = module
        self._fused: dict[str, int] = {}

    def flops(self, ins: Instruction, comp: Computation) -> int:
        """Floating-point (or integer) operations of ``ins``, an instruction of ``comp``."""
        op = ins.opcode
        if op == "fusion":
            called = (ins.attr("calls") or "").lstrip("%")
            return self._fusion_flops(called)
        if op == "dot":
            return self._dot_flops(ins, comp, _dims(ins.attr("lhs_contracting_dims")))
        if op == "convolution":
            return self._conv_flops(ins, comp)
        if op == "custom-call":
            return self._custom_call_flops(ins, comp)
        if op == "fft":
            return self._fft_flops(ins, comp, _dims(ins.attr("fft_length")))
        if op in _MOVES:
            return 0
        if op in _REDUCES:
            return sum(self._operand_elements(comp, n) for n in ins.operands[:max(1, len(ins.operands) // 2)])
        out = arrays(ins.shape)
        return elements(out[0][1]) if out else 0

    def bytes(self, ins: Instruction, comp: Computation) -> int:
        """Bytes ``ins`` reads (its operands) and writes (its output)."""
        total = shape_bytes(ins.shape)
        for name in ins.operands:
            shape = comp.operand_shape(name)
            if shape is not None:
                total += shape_bytes(shape)
        return total

    def _operand_elements(self, comp: Computation, name: str) -> int:
        shape = comp.operand_shape(name)
        if shape is None:
            return 0
        return sum(elements(d) for _, d in arrays(shape))

    def _operand_dims(self, comp: Computation, ins: Instruction, i: int) -> tuple[int, ...]:
        if i >= len(ins.operands):
            return ()
        text = comp.operand_shape(ins.operands[i])
        shape = arrays(text) if text is not None else ()
        return shape[0][1] if shape else ()

    def _fusion_flops(self, name: str) -> int:
        cached = self._fused.get(name)
        if cached is not None:
            return cached
        comp = self._module.computations.get(name)
        self._fused[name] = 0
        total = 0 if comp is None else sum(self.flops(i, comp) for i in comp.instructions)
        self._fused[name] = total
        return total

    def _dot_flops(self, ins: Instruction, comp: Computation, contracting: list[int]) -> int:
        lhs = self._operand_dims(comp, ins, 0)
        out = arrays(ins.shape)
        k = 1
        for d in contracting:
            if d < len(lhs):
                k *= lhs[d]
        return 2 * (elements(out[0][1]) if out else 0) * k

    def _conv_flops(self, ins: Instruction, comp: Computation) -> int:
        out = arrays(ins.shape)
        return _conv(ins.attr("dim_labels") or "", out[0][1] if out else (), self._operand_dims(comp, ins, 1))

    def _fft_flops(self, ins: Instruction, comp: Computation, lengths: list[int]) -> int:
        points = elements(tuple(lengths))
        data = self._operand_dims(comp, ins, 0)
        out = arrays(ins.shape)
        larger = max(elements(data), elements(out[0][1]) if out else 0)
        return fft_flops(points, larger // points) if points else 0

    def _custom_call_flops(self, ins: Instruction, comp: Computation) -> int:
        target = custom_call_target(ins).lower()
        if target.startswith("__cudnn$conv"):
            return self._cudnn_conv_flops(ins, comp, target)
        if is_fmha(target):
            config = _find_key(_backend_config(ins), "cudnn_fmha_backend_config") or {}
            return fmha_flops(target, config, self._operand_dims(comp, ins, 0), self._operand_dims(comp, ins, 1))
        if "fft" in target and (target.startswith(("ducc", "dynamic_ducc", "__cufft"))):
            operand = self._operand_dims(comp, ins, 0)
            return self._fft_flops(ins, comp, [operand[-1]] if operand else [])
        if "gemm" not in target and "matmul" not in target:
            return 0
        dims = _find_key(_backend_config(ins), "dot_dimension_numbers")
        if dims is None:
            lhs = self._operand_dims(comp, ins, 0)
            return self._dot_flops(ins, comp, [len(lhs) - 1] if lhs else [])
        contracting = [int(x) for x in dims.get("lhs_contracting_dimensions", [])]
        return self._dot_flops(ins, comp, contracting)

    def _cudnn_conv_flops(self, ins: Instruction, comp: Computation, target: str) -> int:
        """A cuDNN convolution as its forward convolution: output = the forward output, kernel =
        the forward kernel, whichever of operands and result they are in this direction."""
        out = arrays(ins.shape)
        result = out[0][1] if out else ()
        if "backwardinput" in target:
            output, kernel = self._operand_dims(comp, ins, 0), self._operand_dims(comp, ins, 1)
        elif "backwardfilter" in target:
            output, kernel = self._operand_dims(comp, ins, 1), result
        else:
            output, kernel = result, self._operand_dims(comp, ins, 1)
        return _conv(ins.attr("dim_labels") or "", output, kernel)


def _backend_config(ins: Instruction) -> object:
    """The instruction's ``backend_config`` as JSON (None when it is absent or not JSON)."""
    config = ins.attr("backend_config") or ""
    try:
        return json.loads(json.loads(config) if config.startswith('"') else config)
    except ValueError:
        return None


def _conv(labels: str, output: tuple[int, ...], kernel: tuple[int, ...]) -> int:
    """2 x output elements x the kernel's elements per output feature (its ``o`` dimension in
    the kernel part of ``dim_labels``, e.g. ``b01f_01io->b01f``)."""
    kernel_labels = labels.split("_", 1)[1].split("->")[0] if "_" in labels else ""
    per_output = elements(kernel)
    o = kernel_labels.find("o")
    if 0 <= o < len(kernel) and kernel[o]:
        per_output //= kernel[o]
    return 2 * elements(output) * per_output


def _find_key(data: object, key: str) -> dict | None:
    """The first dict value named ``key`` anywhere in a JSON document."""
    if isinstance(data, dict):
        if isinstance(data.get(key), dict):
            return data[key]
        for v in data.values():
            found = _find_key(v, key)
            if found is not None:
                return found
    elif isinstance(data, list):
        for v in data:
            found = _find_key(v, key)
            if found is not None:
                return found
    return None
