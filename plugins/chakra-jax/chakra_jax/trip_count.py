"""The trip count of a ``while`` whose backend config has no ``known_trip_count``.

XLA annotates ``known_trip_count`` late in its pipeline, so a module dumped before (or just
after) SPMD partitioning lacks it. The canonical counter loop it would have annotated is read
here: the condition's root is ``compare(i, constant(N)), direction=LT``, the body's root tuple
sets ``i`` to ``add(i, constant(1))`` and the loop's initial tuple gives ``i`` as
``constant(c0)``; its trip count is ``max(0, N - c0)``. ``i`` is element ``k`` of the loop state,
written ``param#k`` or ``get-tuple-element(param), index=k``. Any other loop is unknown (None).
"""

from __future__ import annotations

from .hlo_text import Computation, HloModule, Instruction, tuple_index

__all__ = ["counted_trip_count"]


def counted_trip_count(ins: Instruction, comp: Computation, module: HloModule) -> int | None:
    """Iterations of ``while`` instruction ``ins`` (in ``comp``) when it is a counter loop, else None."""
    cond, body = (module.computations.get(_called(ins, key)) for key in ("condition", "body"))
    init = comp.by_name.get(ins.operands[0]) if ins.operands else None
    if cond is None or body is None or init is None or init.opcode != "tuple":
        return None
    root = cond.root
    if root is None or root.opcode != "compare" or "direction=LT" not in root.attr_text or len(root.operands) != 2:
        return None
    k, limit = _state_element(cond, root.operands[0]), _int_constant(cond, root.operands[1])
    if k is None or limit is None or k >= len(init.operands) or not _increments(body, k):
        return None
    start = _int_constant(comp, init.operands[k])
    return None if start is None else max(0, limit - start)


def _called(ins: Instruction, key: str) -> str:
    return (ins.attr(key) or "").strip().lstrip("%")


def _increments(body: Computation, k: int) -> bool:
    """True when the body's root tuple sets state element ``k`` to ``element k + 1``."""
    root = body.root
    if root is None or root.opcode != "tuple" or k >= len(root.operands):
        return False
    step = body.by_name.get(root.operands[k])
    if step is None or step.opcode != "add" or len(step.operands) != 2:
        return False
    a, b = step.operands
    return ((_state_element(body, a) == k and _int_constant(body, b) == 1)
            or (_state_element(body, b) == k and _int_constant(body, a) == 1))


def _state_element(comp: Computation, name: str) -> int | None:
    """``k`` when ``name`` is element ``k`` of the computation's parameter 0, else None."""
    base, index = tuple_index(name)
    if index is not None:
        return index if _is_state(comp, base) else None
    ins = comp.by_name.get(name)
    if ins is None or ins.opcode != "get-tuple-element" or not ins.operands or not _is_state(comp, ins.operands[0]):
        return None
    text = ins.attr("index")
    return int(text) if text is not None and text.isdigit() else None


def _is_state(comp: Computation, name: str) -> bool:
    ins = comp.by_name.get(name)
    return ins is not None and ins.opcode == "parameter" and ins.attr("number") == "0"


def _int_constant(comp: Computation, name: str) -> int | None:
    ins = comp.by_name.get(name)
    text = ins.attr("value") if ins is not None and ins.opcode == "constant" else None
    return int(text) if text is not None else None
