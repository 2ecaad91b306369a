"""Expressions of a sweep's ``constraints`` and ``derive``: arithmetic over a point's values.

``"tp * pp * dp == input.options.npus"``: names are the last key of each swept parameter
(``npus`` for ``input.options.npus``, when no two parameters share it) and the top-level keys of
the resolved pipeline, read with dotted paths and ``[i]`` as in the sweep's paths
(``system.network[0].bandwidth``, ``backends.simpy.options.streams``).  Allowed: numbers, strings,
lists, ``+ - * / // % **``, comparisons, ``and or not``, ``x if c else y`` and the functions
``min max abs round int float len``.  Nothing else is evaluated (no attribute of a Python object,
no import, no call of another function).

Every value an expression makes is bounded before it is made: an integer to :data:`MAX_INT_BITS`
bits, a string or a list to :data:`MAX_ITEMS` characters or items (nested lists counted whole),
so ``(10**10000)**10000``, ``'a' * 10**10`` or ``[0] * 10**9`` are refused at once.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chakra_core.base._docpath import child
from chakra_core.base._errors import ConfigError

__all__ = ["evaluate"]

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min, "max": max, "abs": abs, "round": round, "int": int, "float": float, "len": len,
}
_MAX_POWER = 10_000
#: the most bits of an integer an expression makes (below Python's 4,300-digit limit on int <-> str)
MAX_INT_BITS = 12_000
#: the most characters of a string, or items of a list (nested ones counted), an expression makes
MAX_ITEMS = 1_000_000
#: the most digits ``round`` may keep or drop
_MAX_ROUND_DIGITS = 400


def evaluate(text: str, names: Mapping[str, Any], where: str,
             shared: Mapping[str, Sequence[str]] | None = None) -> Any:
    """The value of expression ``text`` with ``names`` bound; raises ConfigError naming ``where``
    (``shared``: short names that several paths end in, each with those paths, named when used)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ConfigError(f"{where}: {text!r} is not an expression ({e.msg})") from None
    except (ValueError, RecursionError, MemoryError) as e:  # a literal past int's digit limit, deep nesting
        raise ConfigError(f"{where}: {text!r} is not an expression ({type(e).__name__}: {e})") from None
    try:
        return _Evaluator(names, text, where, shared or {}).visit(tree.body)
    except ConfigError:
        raise
    except (ArithmeticError, TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {text!r}: {type(e).__name__}: {e}") from None


class _Evaluator(ast.NodeVisitor):
    def __init__(self, names: Mapping[str, Any], text: str, where: str, shared: Mapping[str, Sequence[str]]):
        self.names, self.text, self.where, self.shared = names, text, where, shared

    def generic_visit(self, node: ast.AST) -> Any:
        raise ConfigError(f"{self.where}: {self.text!r}: {type(node).__name__} is not allowed in an expression")

    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_List(self, node: ast.List) -> Any:
        return [self.visit(e) for e in node.elts]

    def visit_Tuple(self, node: ast.Tuple) -> Any:
        return [self.visit(e) for e in node.elts]

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id in self.names:
            return self.names[node.id]
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        if node.id in self.shared:
            raise ConfigError(f"{self.where}: {self.text!r}: {node.id!r} is ambiguous: the last key of "
                              f"{' and '.join(self.shared[node.id])}; write the full path")
        known = ", ".join(sorted(self.names))
        raise ConfigError(f"{self.where}: {self.text!r}: unknown name {node.id!r}; known: {known}")

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        return child(self.visit(node.value), node.attr, f"{self.where}: {self.text!r}")

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        key = self.visit(node.slice)
        if not isinstance(key, (int, str)) or isinstance(key, bool):
            raise ConfigError(f"{self.where}: {self.text!r}: an index is a number or a name, got {key!r}")
        return child(self.visit(node.value), key, f"{self.where}: {self.text!r}")

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        fn = _BINARY.get(type(node.op))
        if fn is None:
            return self.generic_visit(node.op)
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > _MAX_POWER:
            raise ConfigError(f"{self.where}: {self.text!r}: exponent {right} is too large")
        if isinstance(node.op, ast.Mod) and isinstance(left, str):
            raise ConfigError(f"{self.where}: {self.text!r}: % formats no string in an expression")
        self._check_size(_result_size(node.op, left, right))
        return fn(left, right)

    def _check_size(self, size: tuple[str, int] | None) -> None:
        """Refuse a value of ``size`` (``("bits", n)`` or ``("items", n)``) past the bounds."""
        if size is None:
            return
        what, n = size
        most = MAX_INT_BITS if what == "bits" else MAX_ITEMS
        if n > most:
            shown = "an integer of" if what == "bits" else "a string or list of"
            raise ConfigError(f"{self.where}: {self.text!r}: the result would be {shown} about {n} {what}, "
                              f"more than the {most} an expression may make")

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        fn = _UNARY.get(type(node.op))
        return fn(self.visit(node.operand)) if fn else self.generic_visit(node.op)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        if isinstance(node.op, ast.And):
            value: Any = True
            for v in node.values:
                value = self.visit(v)
                if not value:
                    return value
            return value
        value = False
        for v in node.values:
            value = self.visit(v)
            if value:
                return value
        return value

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            fn = _COMPARE.get(type(op))
            if fn is None:
                return self.generic_visit(op)
            right = self.visit(right_node)
            if not fn(left, right):
                return False
            left = right
        return True

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)

    def visit_Call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS or node.keywords:
            raise ConfigError(f"{self.where}: {self.text!r}: only {', '.join(_FUNCTIONS)} may be called")
        args = [self.visit(a) for a in node.args]
        if node.func.id == "round" and len(args) == 2 and isinstance(args[1], int) \
                and abs(args[1]) > _MAX_ROUND_DIGITS:
            raise ConfigError(f"{self.where}: {self.text!r}: round to {args[1]} digits is too many")
        return _FUNCTIONS[node.func.id](*args)


def _items(value: Any, most: int = MAX_ITEMS) -> int:
    """Characters of a string, items of a list (nested ones counted, stopping past ``most``)."""
    if isinstance(value, str):
        return len(value)
    if not isinstance(value, list):
        return 1
    total, stack = 0, [value]
    while stack and total <= most:
        item = stack.pop()
        total += len(item)
        stack.extend(x for x in item if isinstance(x, list))
        total += sum(len(x) for x in item if isinstance(x, str))
    return total


def _result_size(op: ast.operator, left: Any, right: Any) -> tuple[str, int] | None:
    """The size the result of ``left op right`` would have, before it is computed: ``("bits", n)``
    for an integer, ``("items", n)`` for a string or a list, None for anything small (floats)."""
    if isinstance(left, int) and isinstance(right, int):
        a, b = abs(int(left)).bit_length(), abs(int(right)).bit_length()
        if isinstance(op, ast.Pow):
            return ("bits", a * int(right)) if right > 0 else None
        if isinstance(op, ast.Mult):
            return "bits", a + b
        return "bits", max(a, b) + 1
    if isinstance(op, ast.Mult):
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, (str, list)) and isinstance(times, int):
                return "items", _items(seq) * max(int(times), 0)
    if isinstance(op, ast.Add) and isinstance(left, (str, list)) and isinstance(right, (str, list)):
        return "items", _items(left) + _items(right)
    return None
