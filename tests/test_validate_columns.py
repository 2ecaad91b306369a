"""The columnar rank scan of validation (:mod:`chakra_core.validation._colscan`) against the
per-node one, on recorded and converted traces: the same record, or no record where a rule has
something to say."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra_core import CommType, EtWriter, GlobalMetadata, Node, NodeType, TraceFormatError, encode_varint, make_attr
from chakra_core.pipeline._pipeline import load_traces
from chakra_core.trace._traceset import MemoryRank, TraceSet, open_traceset
from chakra_core.validation._colscan import scan_columns
from chakra_core.validation._rank_rules import RankCheck
from chakra_core.validation._validate import validate

ROOT = Path(__file__).resolve().parents[1]
ALL_REDUCE = ROOT / "plugins/chakra-simpy/tests/data/astra_sim_example/examples/workload/microbenchmarks/all_reduce"


def _checks(rt, nranks):
    names: list[list[str]] = [[""], [""]]

    def numbering(k):
        number = {"": 0}

        def group_number(pg):
            if pg not in number:
                number[pg] = len(number)
                names[k].append(pg)
            return number[pg]
        return group_number

    made = [RankCheck(rt.rank, rt.label, nranks, None, numbering(k), rt.rank_known) for k in (0, 1)]
    return made, names


def _same_as_per_node(traces, same_scan):
    nranks = max(traces.ranks) + 1
    for rt in traces:
        (fast, slow), names = _checks(rt, nranks)
        same_scan(rt, fast, slow)
        assert names[0] == names[1] and list(fast.colls) == list(slow.colls)


def test_astra_sim_all_reduce_example(same_scan):
    traces = open_traceset(str(ALL_REDUCE / "8npus_1MB" / "all_reduce"))
    _same_as_per_node(traces, same_scan)
    assert validate(traces) == []


@pytest.mark.parametrize("model", ["gpt3_like", "dlrm_like", "resnet50_like"])
def test_converted_text_models(model, tmp_path, same_scan):
    load_traces(str(ROOT / "examples" / "text" / f"{model}.txt"), options={"npus": 16}).write(tmp_path / "t")
    _same_as_per_node(open_traceset(str(tmp_path / "t")), same_scan)


def test_repeated_attribute_is_left_to_the_per_node_path(tmp_path):
    """A collective whose comm_size is given twice, a bad one first: the per-node rules read the
    first one, as ``get_attr`` and the simulator's columns do."""
    src = open_traceset(str(ALL_REDUCE / "8npus_1MB" / "all_reduce"))
    ranks = []
    for rt in src:
        nodes = list(rt.nodes())
        if rt.rank == 3:
            coll = next(n for n in nodes if n.type == 7)
            kept = [type(a).FromString(a.SerializeToString()) for a in coll.attr]
            del coll.attr[:]
            coll.attr.add(name="comm_size", int64_val=-1)
            coll.attr.extend(kept)
        ranks.append(MemoryRank(rt.rank, rt.metadata(), nodes))
    TraceSet(ranks).write(tmp_path / "t")
    traces = open_traceset(str(tmp_path / "t"))
    (fast, _), _ = _checks(traces[3], 8)
    assert scan_columns(traces[3], fast) is None
    found = [f for f in validate(traces) if f.rule == "bad-size"]
    assert [(f.rank, f.message) for f in found] == [(3, "comm_size = -1 bytes")]


@pytest.mark.parametrize("step", [1, 3])
def test_rank_of_several_runs(step, tmp_path, same_scan):
    """60,000 nodes (more than one 1 MiB run), ids consecutive or every third one."""
    coll = [make_attr("comm_type", int(CommType.ALL_REDUCE)), make_attr("comm_size", 1 << 20)]
    for rank, count in ((0, 60_000), (1, 60)):
        with EtWriter(str(tmp_path / f"t.{rank}.et"), GlobalMetadata(version="0.0.4")) as w:
            for i in range(1, count + 1):
                is_coll = rank == 1 or i % 1000 == 0
                n = Node(id=i * step, name="allreduce" if is_coll else "aten::linear" * 4,
                         type=NodeType.COMM_COLL_NODE if is_coll else NodeType.COMP_NODE, duration_micros=i % 97)
                n.data_deps.extend([(i - 1) * step] if i > 1 else [])
                n.ctrl_deps.extend([(i - 8) * step] if i > 8 else [])
                n.attr.extend(coll if is_coll else [make_attr("is_cpu_op", False)])
                w.write(n)
    assert (tmp_path / "t.0.et").stat().st_size > 2 << 20
    traces = open_traceset(str(tmp_path / "t"))
    _same_as_per_node(traces, same_scan)
    assert validate(traces) == []


def test_nested_message_that_does_not_decode(tmp_path):
    """A node whose ``inputs`` message is cut short: the columnar scan leaves the rank to the
    per-node read, which names the file."""
    src = ALL_REDUCE / "8npus_1MB" / "all_reduce.0.et"
    data = src.read_bytes()
    reader_nodes = list(open_traceset(str(src))[0].nodes())
    first = reader_nodes[0].SerializeToString() + bytes([0x42, 4, 0x0A, 5, 0x61, 0x62])
    head_len = len(data) - sum(len(_framed(n.SerializeToString())) for n in reader_nodes)
    body = _framed(first) + b"".join(_framed(n.SerializeToString()) for n in reader_nodes[1:])
    (tmp_path / "t.0.et").write_bytes(data[:head_len] + body)
    rank = open_traceset(str(tmp_path / "t.0.et"))[0]
    (fast, _), _ = _checks(rank, 0)
    assert scan_columns(rank, fast) is None
    with pytest.raises(TraceFormatError, match="t.0.et"):
        validate(open_traceset(str(tmp_path / "t.0.et")))


def _framed(message: bytes) -> bytes:
    return encode_varint(len(message)) + message
