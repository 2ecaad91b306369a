"""Expressions of a sweep's ``constraints`` and ``derive``: arithmetic over a point's values.

``"tp * pp * dp == input.options.npus"``: names are the last key of each swept parameter
(``npus`` for ``input.options.npus``, when no two parameters share it) and the top-level keys of
the resolved pipeline, read with dotted paths and ``[i]`` as in the sweep's paths
(``system.network[0].bandwidth``, ``backends.simpy.options.streams``).  Allowed: numbers, strings,
lists, ``+ - * / // % **``, comparisons, ``and or not``, ``x if c else y`` and the functions
``min max abs round int float len``.  Nothing else is evaluated (no attribute of a Python object,
no import, no call of another function).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
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


def evaluate(text: str, names: Mapping[str, Any], where: str) -> Any:
    """The value of expression ``text`` with ``names`` bound; raises ConfigError naming ``where``."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ConfigError(f"{where}: {text!r} is not an expression ({e.msg})") from None
    try:
        return _Evaluator(names, text, where).visit(tree.body)
    except ConfigError:
        raise
    except (ArithmeticError, TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {text!r}: {type(e).__name__}: {e}") from None


class _Evaluator(ast.NodeVisitor):
    def __init__(self, names: Mapping[str, Any], text: str, where: str):
        self.names, self.text, self.where = names, text, where

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
        return fn(left, right)

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
        return _FUNCTIONS[node.func.id](*[self.visit(a) for a in node.args])
