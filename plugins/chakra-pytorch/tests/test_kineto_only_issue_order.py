"""The issue order of a Kineto trace's communication events where its ``Record function id``s
say none: HTA's ``cpu_only`` trace (rank 34 of a 300-rank gloo job, tests/data/public) gives every
event id 0, so the order comes from the timestamps (``ts``, then the longer first, then the
order in the file), as it does for the gloo recordings with their ids set to 0 the same way."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import pytest

from chakra_core import NodeType
from chakra_pytorch import open_pytorch
from chakra_pytorch.kineto_graph import convert_kineto_rank, kineto_host
from chakra_pytorch.kineto_only import find_kineto_ranks

DATA = Path(__file__).resolve().parent / "data"
CPU_ONLY = DATA / "public" / "cpu_only" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
COMM_TYPES = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)


def _events(path: Path) -> list[dict]:
    return [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]


def test_cpu_only_ids_are_all_0_and_the_order_is_the_timestamps():
    events = _events(CPU_ONLY)
    assert {e["args"]["Record function id"] for e in events} == {0}
    _host, _kt, cpu = kineto_host(str(CPU_ONLY), 300)
    works = [k for k, name in enumerate(cpu.events.names) if name.startswith("gloo:")]
    starts = sorted((e["ts"], -e["dur"]) for e in events if e["name"].startswith("gloo:"))
    assert len(works) == len(starts) == 10
    # issue order = start order (two annotations per round, one on each worker thread)
    by_issue = sorted(works, key=cpu.order_id)
    assert [(cpu.events.ts[k], -cpu.events.dur[k]) for k in by_issue] == starts
    assert len({cpu.order_id(k) for k in works}) == 10


def test_cpu_only_nodes_follow_the_timestamps():
    (kr,), world = find_kineto_ranks([str(CPU_ONLY)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = convert_kineto_rank(kr.path, kr.rank, world, {}, kr.distributed)
    ops = sorted((n for n in g.nodes if n.name != "[idle]"), key=lambda n: n.id)
    expected = sorted((e for e in _events(CPU_ONLY) if not e["name"].startswith("ProfilerStep")),
                      key=lambda e: (e["ts"], -e["dur"]))
    assert [(n.name, dict(n.attrs())["tid"]) for n in ops] == [(e["name"], e["tid"]) for e in expected]
    assert all(a.start <= b.start for a, b in zip(ops, ops[1:]))


def _without_ids(src: Path, dst: Path, zero: bool) -> Path:
    """The Kineto traces of recording ``src`` with every ``Record function id`` 0 (as cpu_only's)
    or, not ``zero``, none (as before PyTorch 2.1: ``External id`` only, numbered by Kineto in
    blocks per thread, 1.. on the main thread, 513.. and 1025.. on gloo's workers)."""
    dst.mkdir()
    for path in sorted(src.glob("kineto.*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        for e in doc["traceEvents"]:
            if "Record function id" in e.get("args", {}):
                if zero:
                    e["args"]["Record function id"] = 0
                else:
                    del e["args"]["Record function id"]
        (dst / path.name.removesuffix(".gz")).write_text(json.dumps(doc))
    return dst


def _comms(paths: list[str]) -> list[tuple]:
    """(rank, name, comm_type, comm_size, duration) of each communication node."""
    ts = open_pytorch(paths)
    out = []
    for r in range(len(ts)):
        for n in ts[r].nodes():
            if n.type in COMM_TYPES:
                a = {x.name: x.int64_val for x in n.attr}
                out.append((r, n.name, a.get("comm_type"), a.get("comm_size"), n.duration_micros))
    return out


@pytest.mark.parametrize("zero", [True, False], ids=["ids_0", "no_ids"])
@pytest.mark.parametrize("folder", ["collectives", "ddp", "pipeline_dp"])
def test_gloo_annotations_join_their_op_by_start_order_without_usable_ids(folder, zero, tmp_path):
    # ids 0: every gloo annotation became a collective of its own beside its op's (collectives:
    # 60 nodes instead of 34); External ids: an annotation was tied to the op before its number
    # in another thread's block; by start order each does its op's work again
    src = DATA / folder
    edited = _without_ids(src, tmp_path / folder, zero)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        recorded = _comms(sorted(str(p) for p in src.glob("kineto.*.json.gz")))
        from_zeros = _comms([str(edited)])
    assert from_zeros == recorded
    assert not any(n.startswith("gloo:") for _r, n, *_ in from_zeros)
    assert not any("with no communication op in the trace" in str(w.message) for w in got)
