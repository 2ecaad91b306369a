"""A streaming line parser of HLO text (``compiled.as_text()``, XLA's ``*after_optimizations.txt``).

The file is read one line at a time; each instruction line is cut with ``str.find`` at the few
places that matter (name, shape, opcode, operand list) and its attributes are split only when
asked for, so a module of a million instructions parses in well under a minute. What is kept
per instruction is its name, shape text, opcode, operand names and the raw attribute text.

Accepted outside computations: the ``HloModule`` header, the stack-frame tables JAX prints
(``FileNames``, ``FunctionNames``, ``FileLocations``, ``StackFrames`` and their numbered
rows), ``//`` comments and blank lines. Anything else is a :class:`TraceFormatError` naming the
file and the line.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterable

from chakra_core import TraceFormatError

from .shapes import ShapeError, arrays

__all__ = ["Instruction", "Computation", "HloModule", "parse_hlo_text", "parse_hlo_lines", "split_attrs",
           "tuple_index", "tuple_element"]

_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_STRUCT = re.compile(r'[{}()\[\]",\\]')
_OPERAND = re.compile(r"%([^\s,()]+)")
_BOUNDARY = re.compile(r",\s*(?=[A-Za-z_][\w.\-]*=)")
_SCALAR = re.compile(r"-?\d+")
_COMMENT = re.compile(r"/\*.*?\*/")
_BRACED = re.compile(r"\{(?:[^{}\"]|\{(?:[^{}\"]|\{[^{}\"]*\})*\})*\}")


class Instruction:
    """One HLO instruction: ``name = shape opcode(operands), attributes``."""

    __slots__ = ("name", "shape", "opcode", "operands", "attr_text", "line", "_attrs")

    def __init__(self, name: str, shape: str, opcode: str, operands: list[str], attr_text: str, line: int):
        self.name = name
        self.shape = shape
        self.opcode = opcode
        self.operands = operands
        self.attr_text = attr_text
        self.line = line
        self._attrs: dict[str, str] | None = None

    def attrs(self) -> dict[str, str]:
        """The attributes as ``{key: raw value text}`` (split on first use)."""
        if self._attrs is None:
            self._attrs = split_attrs(self.attr_text)
        return self._attrs

    def attr(self, key: str) -> str | None:
        """The raw text of attribute ``key``, or None (found without splitting the others)."""
        if self._attrs is not None:
            return self._attrs.get(key)
        text = self.attr_text
        if text.startswith(key + "="):
            start = len(key) + 1
        else:
            at = text.find(", " + key + "=")
            if at < 0:
                return None
            start = at + len(key) + 3
        return _value_at(text, start)

    def __repr__(self) -> str:
        return f"Instruction({self.name!r}, {self.opcode!r})"


class Computation:
    """A computation: its instructions in order (the schedule order in a scheduled module)."""

    __slots__ = ("name", "instructions", "by_name", "root", "line")

    def __init__(self, name: str, line: int):
        self.name = name
        self.line = line
        self.instructions: list[Instruction] = []
        self.by_name: dict[str, Instruction] = {}
        self.root: Instruction | None = None

    def operand_shape(self, name: str) -> str | None:
        """The shape text of operand ``name``: its producer's, or for ``base#k`` (the tuple-index
        shorthand of newer XLA text, like a get-tuple-element) element ``k`` of ``base``'s tuple."""
        producer = self.by_name.get(name)
        if producer is not None:
            return producer.shape
        base, index = tuple_index(name)
        producer = self.by_name.get(base) if index is not None else None
        return tuple_element(producer.shape, index) if producer is not None and index is not None else None


class HloModule:
    """A parsed module: header attributes, computations by name, the entry computation's name."""

    def __init__(self, name: str, header: dict[str, str], path: str):
        self.name = name
        self.header = header
        self.path = path
        self.computations: dict[str, Computation] = {}
        self.entry: str | None = None

    @property
    def entry_computation(self) -> Computation:
        """The ENTRY computation."""
        assert self.entry is not None
        return self.computations[self.entry]

    def header_int(self, key: str, default: int) -> int:
        """An integer header attribute (``num_partitions``, ``replica_count``)."""
        value = self.header.get(key)
        return int(value) if value is not None and value.isdigit() else default

    @property
    def is_scheduled(self) -> bool:
        """True when the module carries a schedule (instructions are in execution order)."""
        return self.header.get("is_scheduled") == "true"


def tuple_index(name: str) -> tuple[str, int | None]:
    """``("x", 2)`` for the operand ``x#2`` (element 2 of tuple ``x``); ``(name, None)`` otherwise."""
    base, sep, index = name.rpartition("#")
    return (base, int(index)) if sep and base and index.isdigit() else (name, None)


def tuple_element(shape: str, index: int) -> str | None:
    """The shape text of element ``index`` of tuple shape ``(a, b, ...)``; None when out of range."""
    if not shape.startswith("("):
        return None
    items = [_COMMENT.sub("", item).strip() for item in _split_items(shape[1:-1])]
    return items[index] if index < len(items) else None


def split_attrs(text: str) -> dict[str, str]:
    """Split ``a=1, b={x, y}, c="s, t"`` at its top-level commas into ``{key: value text}``."""
    out: dict[str, str] = {}
    depth = 0
    start = 0
    pos = 0
    n = len(text)
    while pos < n:
        m = _STRUCT.search(text, pos)
        if m is None:
            break
        c = m.group()
        pos = m.end()
        if c == '"':
            pos = _string_end(text, pos)
        elif c in "{([":
            depth += 1
        elif c in "})]":
            depth -= 1
        elif c == "," and depth == 0:
            _add_attr(out, text[start:m.start()])
            start = pos
    _add_attr(out, text[start:])
    return out


def _value_at(text: str, start: int) -> str:
    """The attribute value starting at ``start``: a balanced ``{...}``, a string, or the text up
    to the next ``, key=``."""
    first = text[start:start + 1]
    if first == "{":
        m = _BRACED.match(text, start)
        if m is not None:
            return m.group()
        end = _matching(text, start, "{", "}")
        return text[start:end + 1] if end >= 0 else text[start:]
    if first == '"':
        return text[start:_string_end(text, start + 1)]
    m = _BOUNDARY.search(text, start)
    return (text[start:m.start()] if m else text[start:]).strip()


def _string_end(text: str, pos: int) -> int:
    """Position after the closing quote of a string starting before ``pos``."""
    while True:
        q = text.find('"', pos)
        if q < 0:
            return len(text)
        backslashes = 0
        while q - 1 - backslashes >= 0 and text[q - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return q + 1
        pos = q + 1


def _add_attr(out: dict[str, str], item: str) -> None:
    item = item.strip()
    eq = item.find("=")
    if eq > 0:
        out[item[:eq].strip()] = item[eq + 1:].strip()


def _matching(text: str, start: int, opening: str, closing: str) -> int:
    """Index of the bracket closing the one at ``start`` (quotes are not special), or -1."""
    depth = 0
    pos = start
    while True:
        o = text.find(opening, pos)
        c = text.find(closing, pos)
        if c < 0:
            return -1
        if 0 <= o < c:
            depth += 1
            pos = o + 1
        else:
            depth -= 1
            if depth == 0:
                return c
            pos = c + 1


def _operand_names(text: str) -> list[str]:
    if "%" in text:
        return _OPERAND.findall(text)
    names = []
    for item in _split_items(text):
        token = item.split()[-1] if item.split() else ""
        if token:
            names.append(token)
    return names


def _split_items(text: str) -> list[str]:
    """``text`` cut at its top-level commas (the operand list of the old, %-less syntax)."""
    items: list[str] = []
    depth = 0
    start = 0
    for m in _STRUCT.finditer(text):
        c = m.group()
        if c in "{([":
            depth += 1
        elif c in "})]":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:m.start()].strip())
            start = m.end()
    items.append(text[start:].strip())
    return [i for i in items if i]


def _parse_instruction(text: str, lineno: int, where: str) -> tuple[Instruction, bool]:
    s = text.strip()
    root = s.startswith("ROOT ")
    if root:
        s = s[5:]
    eq = s.find(" = ")
    if eq <= 0:
        raise TraceFormatError(f"not an HLO instruction: {s[:60]!r}", where, f"line {lineno}")
    name = s[:eq].strip().lstrip("%")
    rest = s[eq + 3:].lstrip()
    if rest.startswith("("):
        end = _matching(rest, 0, "(", ")")
        if end < 0:
            raise TraceFormatError("unbalanced parentheses in the shape", where, f"line {lineno}")
        shape, rest = rest[:end + 1], rest[end + 1:].lstrip()
    else:
        sp = rest.find(" ")
        if sp < 0:
            raise TraceFormatError(f"instruction {name!r} has no opcode", where, f"line {lineno}")
        shape, rest = rest[:sp], rest[sp + 1:].lstrip()
    paren = rest.find("(")
    if paren <= 0 or not rest[:paren].replace("-", "").replace("_", "").isalnum():
        raise TraceFormatError(f"instruction {name!r}: expected opcode(operands) after the shape",
                               where, f"line {lineno}")
    opcode = rest[:paren]
    try:
        arrays(shape)
    except ShapeError as e:
        raise TraceFormatError(f"instruction {name!r}: {e}", where, f"line {lineno}") from None
    close = _matching(rest, paren, "(", ")")
    if close < 0:
        raise TraceFormatError(f"instruction {name!r}: unbalanced parentheses in the operand list",
                               where, f"line {lineno}")
    operand_text = rest[paren + 1:close]
    operands = [] if opcode in ("constant", "parameter", "iota") else _operand_names(operand_text)
    attr_text = rest[close + 1:].lstrip().removeprefix(",").strip()
    if opcode == "parameter" or (opcode == "constant" and _SCALAR.fullmatch(operand_text.strip())):
        key = "number" if opcode == "parameter" else "value"
        attr_text = f"{key}={operand_text.strip()}" + (", " + attr_text if attr_text else "")
    return Instruction(name, shape, opcode, operands, attr_text, lineno), root


def _header(line: str) -> tuple[str, dict[str, str]]:
    body = line[len("HloModule"):].strip()
    comma = body.find(",")
    name = body if comma < 0 else body[:comma]
    return name.strip(), split_attrs(body[comma + 1:]) if comma >= 0 else {}


def _computation_name(s: str) -> tuple[str, bool]:
    entry = s.startswith("ENTRY ")
    if entry:
        s = s[6:].lstrip()
    name = s.split(None, 1)[0].rstrip("{").strip().lstrip("%")
    return name, entry


def parse_hlo_lines(lines: Iterable[str], where: str) -> HloModule:
    """Parse HLO text given as lines (with or without their newlines); ``where`` names the file."""
    module: HloModule | None = None
    comp: Computation | None = None
    lineno = 0
    for lineno, raw in enumerate(lines, 1):
        s = raw.strip()
        if comp is not None:
            if s == "}":
                _close(comp)
                comp = None
            elif s and not s.startswith("//"):
                _add_instruction(comp, s, lineno, where)
        elif s and not s.startswith("//"):
            if module is None:
                module = _start_module(s, lineno, where)
            else:
                comp = _outside_computation(module, s, lineno, where)
    return _finished(module, comp, lineno, where)


def _close(comp: Computation) -> None:
    """The end of a computation: without a ROOT, its last instruction is the root."""
    if comp.root is None and comp.instructions:
        comp.root = comp.instructions[-1]


def _add_instruction(comp: Computation, s: str, lineno: int, where: str) -> None:
    """Parse the instruction on line ``lineno`` into ``comp``; a name defined twice is an error."""
    ins, is_root = _parse_instruction(s, lineno, where)
    if ins.name in comp.by_name:
        raise TraceFormatError(f"instruction {ins.name!r} defined twice in {comp.name}",
                               where, f"line {lineno}")
    comp.instructions.append(ins)
    comp.by_name[ins.name] = ins
    if is_root:
        comp.root = ins


def _start_module(s: str, lineno: int, where: str) -> HloModule:
    """The module of the first line, which must be its ``HloModule`` header."""
    if not s.startswith("HloModule"):
        raise TraceFormatError("not HLO text: the first line should start with 'HloModule'",
                               where, f"line {lineno}")
    return HloModule(*_header(s), path=where)


def _outside_computation(module: HloModule, s: str, lineno: int, where: str) -> Computation | None:
    """A line between computations: the computation it opens (added to ``module``), or None for
    a table or number line XLA writes there; anything else is an error."""
    if s.endswith("{") and " = " not in s.split("(", 1)[0]:
        name, entry = _computation_name(s)
        comp = Computation(name, lineno)
        if name in module.computations:
            raise TraceFormatError(f"computation {name!r} defined twice", where, f"line {lineno}")
        module.computations[name] = comp
        if entry:
            module.entry = name
        return comp
    if s in _TABLES or s[0].isdigit():
        return None
    raise TraceFormatError(f"unexpected text outside a computation: {s[:60]!r}", where,
                           f"line {lineno}")


def _finished(module: HloModule | None, comp: Computation | None, lineno: int, where: str) -> HloModule:
    """The module at the end of the text, which must be there, closed and have an ENTRY."""
    if module is None:
        raise TraceFormatError("empty HLO file", where, "line 1")
    if comp is not None:
        raise TraceFormatError(f"computation {comp.name!r} is not closed (file truncated?)", where,
                               f"line {lineno}")
    if module.entry is None:
        raise TraceFormatError("the module has no ENTRY computation", where, f"line {lineno}")
    return module


def parse_hlo_text(path: str | os.PathLike) -> HloModule:
    """Parse an HLO text file (UTF-8; gzip-compressed files are read transparently)."""
    from chakra_core import open_binary

    where = str(path)
    try:
        with open_binary(where) as f:
            lines = (b.decode("utf-8", "replace") for b in f)
            return parse_hlo_lines(lines, where)
    except OSError as e:
        raise TraceFormatError(f"cannot read: {e.strerror or e}", where) from None
    except (zlib.error, EOFError) as e:
        raise TraceFormatError(f"damaged gzip stream ({str(e)[:200]})", where) from None
