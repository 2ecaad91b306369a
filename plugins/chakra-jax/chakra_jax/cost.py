"""Compute cost of HLO instructions from their shapes: FLOPs (``num_ops``) and bytes (``tensor_size``).

- ``dot``: 2 x output elements x the product of the lhs contracting dimensions;
- ``convolution``: 2 x output elements x the kernel's elements per output feature (the product
  of the rhs dimensions except its ``o`` dimension in ``dim_labels``);
- a gemm ``custom-call`` (target containing ``gemm`` or ``matmul``): as a dot, from the
  ``dot_dimension_numbers`` of its backend config;
- ``fusion``: the sum over the instructions of its fused computation (nested fusions included);
- elementwise and other arithmetic ops: one operation per output element; ``reduce`` and
  ``reduce-window``: one per input element; data movement (copy, transpose, slice, pad,
  broadcast, gather, scatter, ...): none.

Bytes are what the instruction reads and writes at the top level: its operands' bytes plus its
output's bytes (a fusion reads each operand once, whatever it does inside).
"""

from __future__ import annotations

import json
import re

from .hlo_text import Computation, HloModule, Instruction
from .shapes import arrays, elements, shape_bytes

__all__ = ["CostModel"]

_MOVES = frozenset({
    "copy", "transpose", "slice", "dynamic-slice", "dynamic-update-slice", "pad", "broadcast",
    "reshape", "bitcast", "concatenate", "gather", "scatter", "reverse", "iota", "constant",
    "parameter", "tuple", "get-tuple-element", "copy-start", "copy-done", "bitcast-convert",
    "partition-id", "replica-id", "after-all", "add-dependency", "optimization-barrier", "domain",
})
_REDUCES = frozenset({"reduce", "reduce-window", "select-and-scatter"})
_DIMS = re.compile(r"\d+")


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
            producer = comp.by_name.get(name)
            if producer is not None:
                total += shape_bytes(producer.shape)
        return total

    def _operand_elements(self, comp: Computation, name: str) -> int:
        producer = comp.by_name.get(name)
        if producer is None:
            return 0
        return sum(elements(d) for _, d in arrays(producer.shape))

    def _operand_dims(self, comp: Computation, ins: Instruction, i: int) -> tuple[int, ...]:
        if i >= len(ins.operands):
            return ()
        producer = comp.by_name.get(ins.operands[i])
        shape = arrays(producer.shape) if producer is not None else ()
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
        labels = ins.attr("dim_labels") or ""
        kernel_labels = labels.split("_", 1)[1].split("->")[0] if "_" in labels else ""
        rhs = self._operand_dims(comp, ins, 1)
        out = arrays(ins.shape)
        per_output = elements(rhs)
        o = kernel_labels.find("o")
        if 0 <= o < len(rhs) and rhs[o]:
            per_output //= rhs[o]
        return 2 * (elements(out[0][1]) if out else 0) * per_output

    def _custom_call_flops(self, ins: Instruction, comp: Computation) -> int:
        target = (ins.attr("custom_call_target") or "").lower()
        if "gemm" not in target and "matmul" not in target:
            return 0
        config = ins.attr("backend_config") or ""
        try:
            data = json.loads(json.loads(config) if config.startswith('"') else config)
        except ValueError:
            return 0
        dims = _find_key(data, "dot_dimension_numbers") or {}
        contracting = [int(x) for x in dims.get("lhs_contracting_dimensions", [])]
        return self._dot_flops(ins, comp, contracting)


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
