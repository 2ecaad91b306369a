"""The fast paths of the conversion keep what the general ones keep: the Kineto reader's CPU ops
of the common shape (taken in one step, counted at the end), the spans' extents and the
topological order's lane chains."""

from __future__ import annotations

import dataclasses
import heapq
import json
import operator
import random

import pytest

from chakra_core import TraceFormatError
from chakra_pytorch import kineto
from chakra_pytorch.outnode import OutNode, toposort
from chakra_pytorch.spantable import SpanTable, extents_of


def _op(rf, ext=None, *, ts=10.5, dur=2.25, pid=100, tid=1, name="aten::mm", cat="cpu_op", **args) -> dict:
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
          "args": {"External id": rf if ext is None else ext, "Record function id": rf, **args}}
    return {k: v for k, v in ev.items() if v is not None}


#: CPU ops of the common shape among every odd one the general path reads (and other kinds):
#: processes that change and tie, ids repeated and far, threads and times of other types
_EVENTS = [
    {"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python"}},
    _op(1, pid=200, ts=5),  # an integer time: the general path
    _op(2), _op(3, tid=2), _op(4, pid=300), _op(5, pid=100),
    _op(6, cat="user_annotation", pid=200),
    _op(7, ext=3), _op(3, ts=11.0, dur=1.0),  # an External id again, a Record function id again
    _op(8, tid=None), _op(9, tid="main"), _op(10, tid=1.5), _op(11, pid=7.0), _op(12, pid=-1),  # 9, 10 unwanted
    _op(13, name="ProfilerStep#1", dur=100.0), _op(14, finished=False), _op(15, finished=True),
    _op(2**62), _op(16, ext=2**62 + 5), {**_op(17), "args": {"External id": 40, "Sequence number": 9}},
    {**_op(18), "args": []}, _op(19, name=None), _op(20, ts=-0.0, dur=-0.0), _op(21, ext=-4), _op(22, name=5), _op(-3, ext=23),
    {"ph": "s", "id": 1, "pid": 100, "tid": 1, "ts": 1.0, "cat": "fwdbwd", "name": "fwdbwd"},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1, "ts": 12.0, "dur": 1.0,
     "args": {"External id": 2, "correlation": 50}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 13.0, "dur": 4.0,
     "args": {"External id": 2, "correlation": 50, "device": 0, "stream": 7}},
]


def _write(tmp_path, events, indent) -> str:
    p = tmp_path / f"kineto_{indent}.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=indent))
    return str(p)


def _read(path, wanted, monkeypatch, plain: bool):
    """The trace read with its CPU ops of the common shape taken by the fast path, or not."""
    with monkeypatch.context() as m:
        if not plain:  # no event has the fields the fast path takes: every one takes the general path
            m.setattr(kineto, "_OP_FIELDS", operator.itemgetter("no such field"))
        return kineto.read_kineto(path, wanted)


def _kept(kt) -> dict:
    """What a read keeps, comparable: the tables as dicts (an IntMap as its entries)."""
    fields = {f.name: getattr(kt, f.name) for f in dataclasses.fields(kt)}
    fields["ops"] = dict(kt.ops)
    fields["ext_rf"] = {k: kt.ext_rf.get(k) for k in range(64)} | {k: kt.ext_rf.get(k) for k in (2**62, 2**62 + 5)}
    return fields


@pytest.mark.parametrize("indent", [2, None])
@pytest.mark.parametrize("wanted", [None, frozenset({2, 3, 5, 8, 13, 20, 2**62})])
@pytest.mark.parametrize("first_pid", [100, 200])
def test_fast_cpu_ops_keep_what_the_general_path_keeps(tmp_path, monkeypatch, indent, wanted, first_pid):
    events = [dict(e, pid=first_pid) if i == 1 else e for i, e in enumerate(_EVENTS)]
    if wanted is None:  # a thread that is not an integer is refused where the op's timing is kept
        events = [e for e in events if e.get("tid") not in ("main", 1.5)]
    path = _write(tmp_path, events, indent)
    fast, general = _read(path, wanted, monkeypatch, True), _read(path, wanted, monkeypatch, False)
    assert fast.rf_events > 10 and fast.used == general.used
    assert _kept(fast) == _kept(general)


@pytest.mark.parametrize("first", ["general", "fast"])
def test_processes_with_as_many_events_are_taken_in_the_order_they_came(tmp_path, monkeypatch, first):
    # two events of process 200 read by the general path, two of process 100 by the fast one:
    # a tie, which the process seen first wins
    general = [_op(1, pid=200, ts=5), _op(2, pid=200, cat="user_annotation")]
    fast = [_op(3, pid=100), _op(4, pid=100)]
    events = general[:1] + fast + general[1:] if first == "general" else fast[:1] + general + fast[1:]
    path = _write(tmp_path, events, 2)
    kts = [_read(path, None, monkeypatch, plain) for plain in (True, False)]
    assert kts[0].pid == kts[1].pid == (200 if first == "general" else 100)


def test_ops_of_a_negative_process_name_none(tmp_path, monkeypatch):
    path = _write(tmp_path, [_op(1, pid=-5), _op(2, pid=-5)], 2)
    kts = [_read(path, None, monkeypatch, plain) for plain in (True, False)]
    assert kts[0].pid is kts[1].pid is None and kts[0].used == kts[1].used == 2


@pytest.mark.parametrize("bad, message", [({"dur": -1.0}, "dur -1.0 is negative"),
                                          ({"ts": 1e300}, "ts 1e+300 is not a time in microseconds")])
def test_a_bad_event_after_fast_ones_is_named_by_its_place(tmp_path, monkeypatch, bad, message):
    path = _write(tmp_path, [_op(1), _op(2), _op(3, **bad), _op(4)], 2)
    for plain in (True, False):
        with pytest.raises(TraceFormatError) as e:
            _read(path, None, monkeypatch, plain)
        assert e.value.location == "event 3" and message in e.value.message


def test_extents_of_a_span_table_are_those_of_the_dict_it_replaces():
    table, want = SpanTable(), {}
    for key, *span in [(3, 1.5, 2.0, 7, "a"), (9, 0.25, 1.0, 8, "b"), (3, 4.0, 0.5, 7, "c"), (2**62, 9.0, 1.0, 1, "d")]:
        table.put(key, *span)
        want[key] = tuple(span)
    keys = [3, 9, 4, 2**62, -1, 2**62 + 1, 0]
    got = extents_of(table, keys)
    assert [list(c) for c in got] == [list(c) for c in extents_of(want, keys)]
    assert got[0] == [True, True, False, True, False, False, False] and list(got[1]) == [4.0, 0.25, 9.0]


def _reference_order(nodes: list[OutNode]) -> list[int]:
    """Kahn's order with a heap keyed by (issue time, id): the order toposort promises."""
    deps = {n.id: set(n.ctrl) | set(n.data) for n in nodes}
    issue = {n.id: n.issued if n.issued >= 0 else max(n.start, 0) for n in nodes}
    kids: dict[int, list[int]] = {n.id: [] for n in nodes}
    for nid, ds in deps.items():
        for d in ds:
            kids[d].append(nid)
    ready = [(issue[nid], nid) for nid, ds in deps.items() if not ds]
    heapq.heapify(ready)
    order = []
    while ready:
        _, nid = heapq.heappop(ready)
        order.append(nid)
        for k in kids[nid]:
            deps[k].discard(nid)
            if not deps[k]:
                heapq.heappush(ready, (issue[k], k))
    return order


@pytest.mark.parametrize("seed", range(20))
def test_toposort_is_the_order_by_issue_time_then_id(seed):
    rng = random.Random(seed)
    nodes, lanes = [], [[] for _ in range(rng.randint(1, 4))]
    for nid in rng.sample(range(1, 1000), 120):
        lane = rng.choice(lanes)
        node = OutNode(nid, "n", 4, start=rng.choice([-1, rng.randint(0, 50)]),
                       issued=rng.choice([-1, -1, rng.randint(0, 50)]))
        node.ctrl = [lane[-1].id] if lane else []
        if nodes and rng.random() < 0.2:
            node.ctrl.append(rng.choice(nodes).id)
        lane.append(node)
        nodes.append(node)
    want = _reference_order(nodes)
    assert [n.id for n in toposort({n.id: n for n in nodes})] == want
