"""The core side by side with the MLCommons chakra tools (protolib, the jsonizer), when installed.

One rank of ``--nodes`` nodes (a chain of compute nodes with a data dependency on the previous
node, a control dependency 8 back and two attributes; an all-reduce every 1,000th node) is
written once; then, in this one process, each row times the project and the reference on the
same file: CPU seconds (``resource.getrusage``, so a loaded machine inflates wall time more than
these) and nodes per CPU second, and the ratio (reference CPU seconds / ours).

Rows: ``.et`` read, decode only (EtReader; protolib's ``decodeMessage`` loop); read touching
id, type and dependencies (EtReader, and the columnar ``node_columns``; protolib); write
(EtWriter; protolib's ``encodeMessage`` loop); jsonize (``write_json``; ``chakra_jsonizer``'s
``main``).

The reference is not on PyPI; install it from its repository into the same environment::

    git clone https://github.com/mlcommons/chakra && pip install ./chakra

Without it each row prints our figures alone and says that the reference was not found.

    .venv/bin/python benches/bench_reference.py [--nodes 1000000]
"""

from __future__ import annotations

import argparse
import importlib
import resource
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from chakra_core import (
    AttributeProto,
    CommType,
    EtReader,
    EtWriter,
    GlobalMetadata,
    Node,
    NodeType,
    node_columns,
    open_traceset,
    write_json,
)

#: (schema module, protolib module, jsonizer module) of the reference's package layouts
_LAYOUTS = (
    ("chakra.schema.protobuf.et_def_pb2", "chakra.src.third_party.utils.protolib", "chakra.src.jsonizer.jsonizer"),
    ("chakra.et_def.et_def_pb2", "chakra.third_party.utils.protolib", "chakra.jsonizer.jsonizer"),
)


def reference() -> tuple[ModuleType, ModuleType, ModuleType | None] | None:
    """The reference's schema, protolib and jsonizer modules (jsonizer None when absent), or
    None when the reference is not installed."""
    for schema, lib, jsonizer in _LAYOUTS:
        try:
            found = importlib.import_module(schema), importlib.import_module(lib)
        except ImportError:
            continue
        try:
            return found[0], found[1], importlib.import_module(jsonizer)
        except ImportError:
            return found[0], found[1], None
    return None


def nodes(count: int, schema: Any = None) -> Iterator[Any]:
    """The benchmark rank (see the module docstring), ids 1..count, as messages of ``schema``
    (a module with ``Node`` and ``AttributeProto``; ours by default)."""
    node, attr = (schema.Node, schema.AttributeProto) if schema else (Node, AttributeProto)
    cpu, ops = attr(name="is_cpu_op", bool_val=False), attr(name="num_ops", int64_val=1 << 20)
    coll = [attr(name="comm_type", int64_val=int(CommType.ALL_REDUCE)), attr(name="comm_size", int64_val=1 << 20)]
    for i in range(1, count + 1):
        is_coll = i % 1000 == 0
        n = node(id=i, name="allreduce" if is_coll else "aten::linear",
                 type=NodeType.COMM_COLL_NODE if is_coll else NodeType.COMP_NODE, duration_micros=i % 97)
        if i > 1:
            n.data_deps.append(i - 1)
        if i > 8:
            n.ctrl_deps.append(i - 8)
        n.attr.extend(coll if is_coll else (cpu, ops))
        yield n


def cpu_seconds(fn: Callable[[], Any]) -> float:
    """CPU seconds (user + system) of ``fn()``."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    fn()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def ours_decode(path: str) -> int:
    return sum(len(b) for b in EtReader(path).batches())


def ours_touch(path: str) -> int:
    total = 0
    for batch in EtReader(path).batches():
        for n in batch:
            total += n.id + n.type + len(n.data_deps) + len(n.ctrl_deps)
    return total


def ours_columns(path: str) -> int:
    cols = node_columns(open_traceset(path)[0])
    return int(cols.ids.sum()) + int(cols.types.sum()) + len(cols.dep_ids)


def theirs_decode(path: str, ref: tuple, touch: bool) -> int:
    schema, lib, _ = ref
    f = lib.openFileRd(path)
    lib.decodeMessage(f, schema.GlobalMetadata())
    n = schema.Node()
    total = 0
    while lib.decodeMessage(f, n):
        total += n.id + n.type + len(n.data_deps) + len(n.ctrl_deps) if touch else 1
    f.close()
    return total


def theirs_write(path: str, ref: tuple, count: int) -> None:
    schema, lib, _ = ref
    with open(path, "wb") as f:
        lib.encodeMessage(f, schema.GlobalMetadata(version="0.0.4"))
        for n in nodes(count, schema):
            lib.encodeMessage(f, n)


def theirs_jsonize(path: str, out: str, ref: tuple) -> None:
    argv = sys.argv
    sys.argv = ["chakra_jsonizer", "--input_filename", path, "--output_filename", out]
    try:
        ref[2].main()
    finally:
        sys.argv = argv


def row(name: str, count: int, ours: float, theirs: float | None) -> None:
    """Print one row: our CPU seconds and rate, the reference's, the ratio."""
    line = f"{name:<34} ours {ours:8.2f} s {count / ours:12,.0f} nodes/s"
    if theirs is None:
        print(line + "   reference: not measured")
    else:
        print(line + f"   reference {theirs:8.2f} s {count / theirs:12,.0f} nodes/s   ratio {theirs / ours:6.2f}x")


def main() -> int:
    """Write the rank, time every row, print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    args = ap.parse_args()
    ref = reference()
    if ref is None:
        print("the MLCommons chakra package is not installed here (git clone "
              "https://github.com/mlcommons/chakra && pip install ./chakra): our figures alone")
    n = args.nodes
    with tempfile.TemporaryDirectory() as tmp:
        ours_path, their_path = str(Path(tmp, "ours.0.et")), str(Path(tmp, "theirs.0.et"))

        def write() -> None:
            with EtWriter(ours_path, GlobalMetadata(version="0.0.4")) as w:
                w.write_many(nodes(n))
        t_write = cpu_seconds(write)
        row("write (incl. building the nodes)", n, t_write, cpu_seconds(lambda: theirs_write(their_path, ref, n))
            if ref else None)
        row(".et read, decode only", n, cpu_seconds(lambda: ours_decode(ours_path)),
            cpu_seconds(lambda: theirs_decode(ours_path, ref, False)) if ref else None)
        theirs_touch = cpu_seconds(lambda: theirs_decode(ours_path, ref, True)) if ref else None
        row(".et read, id/type/deps (EtReader)", n, cpu_seconds(lambda: ours_touch(ours_path)), theirs_touch)
        ours_columns(ours_path)  # the compiled walk loaded once, outside the timing
        row(".et read, id/type/deps (columns)", n, cpu_seconds(lambda: ours_columns(ours_path)), theirs_touch)
        meta, all_nodes = GlobalMetadata(version="0.0.4"), (lambda: (m for b in EtReader(ours_path).batches()
                                                                     for m in b))
        row("jsonize", n, cpu_seconds(lambda: write_json(str(Path(tmp, "ours.json")), meta, all_nodes(), rank=0)),
            cpu_seconds(lambda: theirs_jsonize(ours_path, str(Path(tmp, "theirs.json")), ref))
            if ref and ref[2] is not None else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
