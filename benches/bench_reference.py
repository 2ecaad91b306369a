"""The core side by side with the MLCommons chakra tools, when installed, in one process tree.

One rank of ``--nodes`` nodes (a chain of compute nodes with a data dependency on the previous
node, a control dependency 8 back and two attributes; an all-reduce every 1,000th node) is
written once; then each row runs the project and the reference on the same file, each side in
a fresh child process of this one (the two ``et_def.proto`` schemas cannot share one protobuf
descriptor pool, so one process cannot hold both).  A row prints CPU seconds (user + system,
``resource.getrusage``: on a loaded machine wall time is inflated more than these), nodes per
CPU second, the child's peak RSS, and the ratio (reference CPU seconds / ours).

Rows, timed inside the child after its imports and set-up:

- write: ``EtWriter.write_many`` / protolib's ``encodeMessage`` loop, of nodes built before the
  timing (a list of 10,000 nodes written over and over, so that building them is not counted);
- ``.et`` read, decode only: ``EtReader.batches`` / protolib's ``decodeMessage`` loop;
- read touching id, type and dependencies: the same loops reading ``id``, ``type`` and the
  lengths of ``data_deps`` and ``ctrl_deps`` of every node; and ``node_columns`` (our columnar
  read, numpy arrays) against the same reference loop;

Our compiled loops (numba) are loaded before the timing, once per process, as a long-running
program has them; the time that takes is printed.  Rows timed from outside (the child's whole
life, start-up included, from ``os.wait4``):

- jsonize: ``chakra jsonize`` / ``chakra_jsonizer``, on ranks of ``--jsonize`` nodes (default
  410 and 200,000);
- PyTorch host ET + Kineto -> ``.et`` (``--pytorch``, or ``--recorded DIR``): a 24-layer
  transformer encoder step recorded with torch (about 24k host-ET nodes, as ``bench_pytorch.py``
  records it; needs torch and ``adapters/chakra-collect``), converted by ``chakra convert`` /
  ``chakra_trace_link`` then ``chakra_converter PyTorch`` (CPU summed, peak RSS the larger);
  both read the same plain JSON; then the node count of each ``.et`` written.
  ``chakra_trace_link`` imports ``et_replay`` (PARAM's, from its git repository only; install
  steps below); without it the bench says so and adds a row converting the host ET alone
  (``chakra convert`` / ``chakra_converter PyTorch``);
- memory at ``--memory`` node counts (default 1 M and 5 M): peak RSS of ``chakra validate`` and
  ``chakra stats`` of a rank of that many nodes, and the growth per node between the counts.

The reference (github.com/mlcommons/chakra) is not on PyPI under that name, and its
``pyproject.toml`` pins HolisticTraceAnalysis to a git commit.  What worked (Python 3.11, in a
virtual environment of its own, outside the repository)::

    python3.11 -m venv ~/chakra-reference
    ~/chakra-reference/bin/pip install HolisticTraceAnalysis protobuf graphviz networkx pydot
    git clone https://github.com/mlcommons/chakra /tmp/chakra-ref   # or any copy of its tree
    ~/chakra-reference/bin/pip install --no-deps /tmp/chakra-ref    # builds with setuptools-grpc
                                                                    # and grpcio-tools from PyPI

(HolisticTraceAnalysis from PyPI, 0.5.0 here, in place of the pinned git commit.)  For the
PyTorch row with ``chakra_trace_link``, PARAM's ``et_replay`` too.  Its ``et_replay/pyproject.toml``
maps the package to ``et_replay/`` below itself (the layout of meta-pytorch/chakra_replay), so
``pip install`` of param's ``et_replay`` folder fails ("package directory 'et_replay' does not
exist"); install it from a folder that holds that file and the package beside it::

    git clone https://github.com/facebookresearch/param /tmp/param   # or any copy of its tree
    mkdir /tmp/et-replay && cp /tmp/param/et_replay/pyproject.toml /tmp/et-replay/
    cp -r /tmp/param/et_replay /tmp/et-replay/et_replay
    ~/chakra-reference/bin/pip install intervaltree                  # its one dependency missing
    ~/chakra-reference/bin/pip install --no-deps /tmp/et-replay      # (numpy, pydot: above)

Then give that interpreter to the bench: ``--reference-python ~/chakra-reference/bin/python`` or
``CHAKRA_REFERENCE_PYTHON``; by default the bench's own interpreter is tried.  Without the
reference each row prints our figures alone and says how to install it.

    python benches/bench_reference.py [--nodes 1000000] [--reference-python PY] [--pytorch]
                                      [--recorded DIR] [--jsonize 410,200000]
                                      [--memory 1000000,5000000] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from pycache import compile_project  # this script's folder (benches/) is on sys.path

ROOT = Path(__file__).resolve().parents[1]
#: the reference's modules (package layout of chakra @21585d8)
_SCHEMA, _PROTOLIB, _JSONIZER = ("chakra.schema.protobuf.et_def_pb2", "chakra.src.third_party.utils.protolib",
                                 "chakra.src.jsonizer.jsonizer")
_TRACE_LINK, _CONVERTER = "chakra.src.trace_link.trace_link", "chakra.src.converter.converter"
#: NodeType.COMP_NODE, NodeType.COMM_COLL_NODE, CollectiveCommType.ALL_REDUCE of et_def.proto
_COMP, _COLL, _ALL_REDUCE = 4, 7, 0
#: nodes built once for the write rows
_CHUNK = 10_000
_INSTALL = ("install it outside the repository (see this bench's docstring: HolisticTraceAnalysis from "
            "PyPI, then pip install --no-deps of the chakra tree) and pass --reference-python")


def nodes(count: int, schema: Any, first: int = 1) -> Iterator[Any]:
    """The benchmark rank (see the module docstring), ids ``first``.. ``first + count - 1``, as
    messages of ``schema`` (a module with ``Node`` and ``AttributeProto``)."""
    node, attr = schema.Node, schema.AttributeProto
    cpu, ops = attr(name="is_cpu_op", bool_val=False), attr(name="num_ops", int64_val=1 << 20)
    coll = [attr(name="comm_type", int64_val=_ALL_REDUCE), attr(name="comm_size", int64_val=1 << 20)]
    for i in range(first, first + count):
        is_coll = i % 1000 == 0
        n = node(id=i, name="allreduce" if is_coll else "aten::linear", type=_COLL if is_coll else _COMP,
                 duration_micros=i % 97)
        if i > 1:
            n.data_deps.append(i - 1)
        if i > 8:
            n.ctrl_deps.append(i - 8)
        n.attr.extend(coll if is_coll else (cpu, ops))
        yield n


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---- the child tasks: each prints one JSON line {"cpu": s, "peak_mb": MB, "base_mb": MB, ...}


def _ours_schema() -> Any:
    import chakra_core

    return chakra_core


def _warm() -> float:
    """Load our compiled loops (numba) the reader uses once numba is loaded in the process (the
    cut of its chunks, the rewrite of a run of frames); returns the CPU seconds it took."""
    import numpy as np

    from chakra_core.base._kernels import compiled
    from chakra_core.io import _wirekernels as wire
    from chakra_core.io._etcut import frame_chunk

    t = _cpu()
    read_only = np.frombuffer(bytes(2), np.uint8)  # the type of what the reader passes: a view of bytes
    compiled(frame_chunk)(read_only, 0, 2, 2)
    compiled(wire.as_repeated_field)(read_only, np.zeros(1, np.int64), np.zeros(1, np.int64))
    return _cpu() - t


def _task(name: str, args: list[str]) -> dict:
    """Run child task ``name``; the figures to print."""
    base = _peak_mb()
    setup, timed = _TASKS[name](args)
    extra = setup() if setup else {}
    t = _cpu()
    value = timed()
    return {"cpu": _cpu() - t, "peak_mb": _peak_mb(), "base_mb": base, "value": value, **(extra or {})}


def _write_task(side: str, args: list[str]) -> tuple:
    path, count = args[0], int(args[1])
    if side == "ours":
        from chakra_core import EtWriter, GlobalMetadata

        chunk = list(nodes(min(count, _CHUNK), _ours_schema()))

        def run() -> int:
            with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
                for start in range(0, count, len(chunk)):
                    w.write_many(chunk[: count - start])
            return w.count
        return None, run
    import importlib

    schema, lib = importlib.import_module(_SCHEMA), importlib.import_module(_PROTOLIB)
    chunk = list(nodes(min(count, _CHUNK), schema))

    def theirs() -> int:
        with open(path, "wb") as f:
            lib.encodeMessage(f, schema.GlobalMetadata(version="0.0.4"))
            for start in range(0, count, len(chunk)):
                for n in chunk[: count - start]:
                    lib.encodeMessage(f, n)
        return count
    return None, theirs


def _read_task(side: str, touch: bool, args: list[str]) -> tuple:
    path = args[0]
    if side == "ours":
        from chakra_core import EtReader

        def decode() -> int:
            return sum(len(b) for b in EtReader(path).batches())

        def touched() -> int:
            total = 0
            for batch in EtReader(path).batches():
                for n in batch:
                    total += n.id + n.type + len(n.data_deps) + len(n.ctrl_deps)
            return total
        return (lambda: {"warm_cpu": _warm()}), (touched if touch else decode)
    import importlib

    schema, lib = importlib.import_module(_SCHEMA), importlib.import_module(_PROTOLIB)

    def theirs() -> int:
        f = lib.openFileRd(path)
        lib.decodeMessage(f, schema.GlobalMetadata())
        n = schema.Node()
        total = 0
        while lib.decodeMessage(f, n):
            total += n.id + n.type + len(n.data_deps) + len(n.ctrl_deps) if touch else 1
        f.close()
        return total
    return None, theirs


def _columns_task(args: list[str]) -> tuple:
    from chakra_core import node_columns, open_traceset

    path = args[0]

    def run() -> int:
        cols = node_columns(open_traceset(path)[0])
        return int(cols.ids.sum()) + int(cols.types.sum()) + len(cols.dep_ids)

    def setup() -> dict:
        t = _cpu()
        node_columns(open_traceset(args[1])[0], compile_it=True)  # the compiled walk loaded on a small rank
        return {"warm_cpu": _cpu() - t}
    return setup, run


def _make_task(args: list[str]) -> tuple:
    from chakra_core import EtWriter, GlobalMetadata

    path, count = args[0], int(args[1])

    def run() -> int:
        with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
            w.write_many(nodes(count, _ours_schema()))
        return w.count
    return None, run


_TASKS: dict[str, Callable[[list[str]], tuple]] = {
    "make": _make_task,
    "ours-write": lambda a: _write_task("ours", a), "theirs-write": lambda a: _write_task("theirs", a),
    "ours-decode": lambda a: _read_task("ours", False, a), "theirs-decode": lambda a: _read_task("theirs", False, a),
    "ours-touch": lambda a: _read_task("ours", True, a), "theirs-touch": lambda a: _read_task("theirs", True, a),
    "ours-columns": _columns_task,
}


# ---- the parent: runs the children, prints the rows


def child(python: str, task: str, *args: str) -> dict:
    """Run this bench's ``task`` in a fresh ``python`` process; its figures."""
    out = subprocess.run([python, __file__, "--task", task, *args], capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"{task} failed: {out.stderr.strip().splitlines()[-1:] or out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def command(argv: list[str], env: dict | None = None) -> dict:
    """Run ``argv`` to its end: CPU seconds (user + system), peak RSS in MB, wall seconds (whole
    process, start-up included; ``os.wait4``)."""
    with tempfile.TemporaryFile() as log:
        t = time.perf_counter()
        p = subprocess.Popen(argv, stdout=log, stderr=log, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t
        if p.returncode:
            log.seek(0)
            tail = log.read().decode(errors="replace").strip().splitlines()[-1:]
            raise RuntimeError(f"{argv[:4]} failed ({p.returncode}): {tail}")
    return {"cpu": ru.ru_utime + ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024, "wall": wall}


def reference_python(given: str | None) -> str | None:
    """The interpreter that has the reference installed (``given``, ``CHAKRA_REFERENCE_PYTHON``,
    or this one), or None."""
    for python in (given, os.environ.get("CHAKRA_REFERENCE_PYTHON"), sys.executable):
        if python and subprocess.run([python, "-c", f"import {_SCHEMA}, {_PROTOLIB}"], capture_output=True,
                                     check=False).returncode == 0:
            return python
    return None


def row(name: str, count: int | None, ours: dict, theirs: dict | None) -> None:
    """Print one row: our CPU seconds, rate and peak RSS, the reference's, the ratios."""
    def side(f: dict) -> str:
        rate = f"{count / f['cpu']:12,.0f} /s" if count else " " * 14
        return f"{f['cpu']:8.2f} s {rate} {f['peak_mb']:7.1f} MB"
    line = f"{name:<38} ours {side(ours)}"
    if theirs is None:
        print(line + "   reference: not measured")
    else:
        print(line + f"   reference {side(theirs)}   {theirs['cpu'] / ours['cpu']:6.2f}x CPU, "
              f"{theirs['peak_mb'] / ours['peak_mb']:5.2f}x memory")


def _best(runs: int, ours: Callable[[], dict], theirs: Callable[[], dict] | None) -> tuple[dict, dict | None]:
    """Each side ``runs`` times, taking turns; the run of least CPU of each."""
    mine: list[dict] = []
    others: list[dict] = []
    for _ in range(runs):
        mine.append(ours())
        if theirs:
            others.append(theirs())
    return min(mine, key=lambda f: f["cpu"]), min(others, key=lambda f: f["cpu"]) if others else None


def io_rows(n: int, ref: str | None, tmp: Path, jsonize: list[int], runs: int = 1) -> None:
    """The write, read and jsonize rows (each side the best of ``runs``)."""
    py = sys.executable
    made = child(py, "make", str(tmp / "rank.0.et"), str(n))
    child(py, "make", str(tmp / "small.0.et"), "2000")
    print(f"(the rank written once, building its nodes included: {made['cpu']:.2f} s, "
          f"{n / made['cpu']:,.0f} nodes/s)")
    rank, small = str(tmp / "rank.0.et"), str(tmp / "small.0.et")
    row("write (nodes built before)", n, *_best(
        runs, lambda: child(py, "ours-write", str(tmp / "ours_w.0.et"), str(n)),
        (lambda: child(ref, "theirs-write", str(tmp / "theirs_w.0.et"), str(n))) if ref else None))
    ours, theirs = _best(runs, lambda: child(py, "ours-decode", rank),
                         (lambda: child(ref, "theirs-decode", rank)) if ref else None)
    warm = ours["warm_cpu"]
    row(".et read, decode only", n, ours, theirs)
    ours, theirs = _best(runs, lambda: child(py, "ours-touch", rank),
                         (lambda: child(ref, "theirs-touch", rank)) if ref else None)
    row(".et read, id/type/deps (EtReader)", n, ours, theirs)
    cols, _ = _best(runs, lambda: child(py, "ours-columns", rank, small), None)
    row(".et read, id/type/deps (columns)", n, cols, theirs)
    for count in jsonize:
        path = rank if count == n else str(tmp / f"json{count}.0.et")
        if count != n:
            child(py, "make", path, str(count))
        ours, theirs = _best(runs, partial(command, [py, "-m", "chakra_core.cli.main", "jsonize", path, "-o",
                                                    str(tmp / "ours.json")]),
                             partial(command, [ref, "-m", _JSONIZER, "--input_filename", path, "--output_filename",
                                               str(tmp / "theirs.json")]) if ref else None)
        row(f"jsonize, {count:,} nodes (whole command)", count, ours, theirs)
    print(f"(our compiled loops loaded before the timing: {warm:.2f} s for the reader's, "
          f"{cols['warm_cpu']:.2f} s for node_columns, once per process)")


def pytorch_row(ref: str | None, tmp: Path, recorded: str | None, runs: int = 1) -> None:
    """Record the 24k-node transformer step (or take ``recorded``), convert it with both tool chains
    (each side the best of ``runs``)."""
    import gzip
    import shutil

    from bench_pytorch import _count_host_nodes, record_real

    if recorded:
        rec = Path(recorded)
    else:
        rec = tmp / "recorded"
        rec.mkdir()
        record_real(rec, 24)
    host, kineto = tmp / "host.0.json", tmp / "kineto.0.json"
    for src, dst in ((rec / "pytorch_et.0.json.gz", host), (rec / "kineto.0.json.gz", kineto)):
        with gzip.open(src, "rb") as f, open(dst, "wb") as g:
            shutil.copyfileobj(f, g)
    host_nodes = _count_host_nodes(host)
    linked = ref is not None and subprocess.run([ref, "-c", "import et_replay"], capture_output=True,
                                                check=False).returncode == 0
    ours, theirs = _best(runs, lambda: _convert([str(host), str(kineto)], tmp / "ours_pt"),
                         (lambda: _their_link_convert(ref, host, kineto, tmp)) if ref is not None and linked else None)
    row(f"PyTorch host ET + Kineto -> .et ({host_nodes:,} host nodes)", None, ours, theirs)
    if ref is not None and linked:
        print(f"(nodes written: ours {child(sys.executable, 'ours-decode', str(tmp / 'ours_pt.0.et'))['value']:,}, "
              f"reference {child(ref, 'theirs-decode', str(tmp / 'theirs_pt.0.et'))['value']:,})")
    if ref is not None and not linked:
        print("(chakra_trace_link needs et_replay, from github.com/facebookresearch/param, not installed (steps: "
              "this bench's docstring): the reference's converter alone on the host ET instead, and ours on the same)")
        row("PyTorch host ET alone -> .et", None, _convert([str(host)], tmp / "ours_host"),
            _their_convert(ref, host, tmp))


def _their_link_convert(ref: str, host: Path, kineto: Path, tmp: Path) -> dict:
    """``chakra_trace_link`` then ``chakra_converter PyTorch``: the figures of the two together."""
    link = command([ref, "-m", _TRACE_LINK, "--rank", "0", "--chakra-host-trace", str(host),
                    "--chakra-device-trace", str(kineto), "--output-file", str(tmp / "linked.json")])
    conv = _their_convert(ref, tmp / "linked.json", tmp)
    return {"cpu": link["cpu"] + conv["cpu"], "peak_mb": max(link["peak_mb"], conv["peak_mb"]),
            "wall": link["wall"] + conv["wall"]}


def _convert(inputs: list[str], out: Path) -> dict:
    """``chakra convert`` of ``inputs`` into the prefix ``out``; its figures."""
    return command([sys.executable, "-m", "chakra_core.cli.main", "convert", *inputs, "-o", str(out)])


def _their_convert(ref: str, source: Path, tmp: Path) -> dict:
    """``chakra_converter PyTorch`` of ``source``; its figures."""
    return command([ref, "-m", _CONVERTER, "--log-filename", str(tmp / "conv.log"), "PyTorch", "--input",
                    str(source), "--output", str(tmp / "theirs_pt.0.et")])


def memory_rows(counts: list[int], tmp: Path) -> None:
    """Peak RSS of ``chakra validate`` and ``chakra stats`` at each node count, and the growth."""
    peaks: dict[str, list[float]] = {"validate": [], "stats": []}
    for n in counts:
        path = tmp / f"mem{n}.0.et"
        child(sys.executable, "make", str(path), str(n))
        for cmd in peaks:
            f = command([sys.executable, "-m", "chakra_core.cli.main", cmd, str(path)])
            peaks[cmd].append(f["peak_mb"])
            print(f"{'chakra ' + cmd:<18} {n:>10,} nodes  {f['cpu']:7.2f} s CPU  {n / f['cpu']:12,.0f} nodes/s  "
                  f"{f['peak_mb']:7.1f} MB peak")
        path.unlink()
    if len(counts) > 1:
        for cmd, mb in peaks.items():
            grow = (mb[-1] - mb[0]) * (1 << 20) / (counts[-1] - counts[0])
            print(f"chakra {cmd}: {grow:.1f} bytes per node from {counts[0]:,} to {counts[-1]:,} nodes")


def main() -> int:
    """Run the rows, print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--jsonize", default="410,200000", help="node counts of the jsonize rows ('' for none; "
                    "the reference took 253 s for 1 M nodes)")
    ap.add_argument("--reference-python", help="an interpreter with the reference installed")
    ap.add_argument("--pytorch", action="store_true", help="record a 24k-node PyTorch step and convert it")
    ap.add_argument("--recorded", help="a folder with pytorch_et.0.json.gz and kineto.0.json.gz to convert "
                    "instead of recording (implies --pytorch)")
    ap.add_argument("--memory", default="1000000,5000000", help="node counts of the memory rows ('' for none)")
    ap.add_argument("--runs", type=int, default=1, help="run each side of every row but the memory rows this "
                    "many times, taking turns, and print the best of each (the machine's noise)")
    ap.add_argument("--task", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.task:
        print(json.dumps(_task(args.task[0], args.task[1:])))
        return 0
    compile_project()
    ref = reference_python(args.reference_python)
    if ref is None:
        print(f"the MLCommons chakra tools are not installed here: our figures alone ({_INSTALL})")
    else:
        print(f"reference: {ref}")
    print(f"load average {os.getloadavg()[0]:.1f}; CPU seconds of each child, peak RSS of each child")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        io_rows(args.nodes, ref, tmp, [int(c) for c in args.jsonize.split(",") if c.strip()], args.runs)
        if args.pytorch or args.recorded:
            pytorch_row(ref, tmp, args.recorded, args.runs)
        counts = [int(c) for c in args.memory.split(",") if c.strip()]
        if counts:
            memory_rows(counts, tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
