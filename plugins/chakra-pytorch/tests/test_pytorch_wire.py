"""The bytes the writer makes of a converted node (:meth:`OutNode.serialized`) are protobuf's own
(``to_node().SerializeToString()``): on every node of every recorded set, and on hand-made nodes
with the values a recording rarely has (negative and 64-bit integers, empty and non-ASCII text,
awkward inputs/outputs); a value protobuf refuses gives protobuf's error."""

from __future__ import annotations

import warnings
from pathlib import Path

import orjson
import pytest

from chakra_core import Node, NodeType
from chakra_pytorch import PyTorchTraceWarning, open_pytorch
from chakra_pytorch.hostet import KEEP_ATTRS
from chakra_pytorch.iotext import dump_io, io_texts
from chakra_pytorch.outnode import IDLE_ATTRS, OutNode, attr_records, pg_init_node

DATA = Path(__file__).resolve().parent / "data"
SETS = sorted(str(p.relative_to(DATA)) for p in [*DATA.glob("*/"), *DATA.glob("public/*/")]
              if p.is_dir() and p.name != "public")
#: the attributes of a node that the writer encodes itself (others: protobuf writes the node)
_WIRED = {"is_cpu_op", "idle", *KEEP_ATTRS}


def _protobuf_bytes(node: OutNode) -> bytes | Exception:
    try:
        return node.to_node().SerializeToString()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return e


def _written(node: OutNode, records: dict) -> bytes | Exception:
    try:
        return node.serialized(records)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return e


def _same(got: bytes | Exception, want: bytes | Exception) -> bool:
    if isinstance(want, Exception):
        return type(got) is type(want) and str(got) == str(want)
    return got == want


def test_every_recorded_set_is_listed():
    assert {"mlp", "ddp", "moe", "public/pt2", "public/cpu_only"} <= set(SETS)


@pytest.mark.parametrize("name", SETS)
def test_every_recorded_node_is_written_as_protobuf_writes_it(monkeypatch, name):
    # the writer's bytes (LazyRank.raw, the nodes serialized one by one with one table for the
    # rank) against protobuf's of the same nodes (nodes(): to_node()); the writer leaves to
    # protobuf only the nodes with attributes of their own (a GPU kernel's stream, a
    # communication's group and sizes)
    real, by_protobuf_calls = OutNode.to_node, []
    monkeypatch.setattr(OutNode, "to_node", lambda self, printed=None: by_protobuf_calls.append(1) or real(self, printed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyTorchTraceWarning)
        for rank in open_pytorch([str(DATA / name)]):
            by_protobuf = [n.SerializeToString() for n in rank.nodes()]
            own = sum(1 for n in map(Node.FromString, by_protobuf) if {a.name for a in n.attr} - _WIRED)
            by_protobuf_calls.clear()
            written = list(rank.raw())
            assert written == by_protobuf
            assert len(by_protobuf_calls) == own < len(written)


def _host(rf=7, fw_parent=1, seq_id=3, scope=0, tid=1, fw_tid=2, schema="aten::add(Tensor self) -> Tensor"):
    return (rf, fw_parent, seq_id, scope, tid, fw_tid, schema)


_IO_PLAIN = dump_io(([[1, 2, 0, 4096, 4, "cpu"], -3, [2, 3]], [[2, 3], [], []], ["Tensor(float)", "Int", "Int[]"],
                     [[5, 6, 0, 24, 4, "cuda:0"]], [[2, 3]], ["Tensor(float)"]))
_IO_AWKWARD = dump_io((["a,b", "it's", 'say "hi"', "é", "日本", "\u2028", "", 0.1, 1e-05, True, None, {"k": [1]}],
                       [[]], ["Tensor(float)"], [[(1 << 63) - 1, -(1 << 63)], "[1,2]", "-", "0"], [], []))

ODD_NODES = [
    OutNode(1, "aten::add", NodeType.COMP_NODE, start=10, dur=5, ctrl=[0], host=_host(), io=_IO_PLAIN),
    OutNode(0, "", NodeType.INVALID_NODE, start=0, dur=0, host=_host(rf=0, schema="")),  # defaults: nothing written
    OutNode(2, "é日本\u2028", NodeType.COMP_NODE, start=-1, dur=-4, cpu=False, host=_host(schema="ü → ÿ")),
    OutNode((1 << 64) - 1, "big", NodeType.COMM_COLL_NODE, start=(1 << 64) - 1, dur=(1 << 64) - 1,
            ctrl=[(1 << 64) - 1, 1, 1 << 35], data=[3, 1 << 20], host=_host(rf=(1 << 63) - 1, fw_parent=-1,
                                                                          seq_id=-(1 << 63), scope=1 << 40)),
    OutNode(3, "none set", NodeType.COMP_NODE, host=(None, None, None, None, None, None, None), io=_IO_AWKWARD),
    OutNode(4, "bools are not ints", NodeType.COMP_NODE, host=(True, False, 5, None, 2, None, 17)),
    OutNode(5, "[idle]", NodeType.COMP_NODE, start=3, dur=2, ctrl=[4, 2], extra=IDLE_ATTRS),
    OutNode(6, "[idle] with a host op", NodeType.COMP_NODE, host=_host(rf=-2), extra=IDLE_ATTRS, io=_IO_PLAIN),
    OutNode(7, "kernel", NodeType.COMP_NODE, start=1, dur=1, cpu=False, extra=[("stream", 7), ("device", 0)]),
    OutNode(8, "empty extra list", NodeType.COMP_NODE, extra=[]),
    pg_init_node(9, {"1": [0, 1], "2": [1]}, 2),
    *(OutNode(10 + t, f"type {t}", t, start=t) for t in [*NodeType, -1, 99]),
]

REFUSED = [  # values protobuf refuses: its error, whichever way the node is written
    OutNode(-1, "negative id", NodeType.COMP_NODE),
    OutNode(1 << 64, "id past 64 bits", NodeType.COMP_NODE),
    OutNode(1, "negative dependency", NodeType.COMP_NODE, ctrl=[-1]),
    OutNode(1, "start past 64 bits", NodeType.COMP_NODE, start=1 << 64),
    OutNode(1, "rf_id past int64", NodeType.COMP_NODE, host=_host(rf=1 << 63)),
    OutNode(1, "seq_id past int64", NodeType.COMP_NODE, host=_host(seq_id=-(1 << 63) - 1)),
    OutNode(1, "\ud800", NodeType.COMP_NODE),
    OutNode(1, "surrogate schema", NodeType.COMP_NODE, host=_host(schema="\udc00")),
    OutNode(1, "type past int32", 1 << 31),
]


@pytest.mark.parametrize("kept", [True, False])
def test_odd_values_are_written_as_protobuf_writes_them(monkeypatch, kept):
    # one table for all (kept records and printed lists), or nothing kept
    if not kept:
        from chakra_pytorch import iotext, outnode

        monkeypatch.setattr(outnode, "_MAX_RECORDS", 0)
        monkeypatch.setattr(iotext, "_MAX_PRINTED", 0)
    records = attr_records()
    for _ in range(2):  # the second time from the table
        for node in ODD_NODES + REFUSED:
            want, got = _protobuf_bytes(node), _written(node, records)
            assert _same(got, want), node.name
    assert all(isinstance(_protobuf_bytes(n), Exception) for n in REFUSED)
    assert not any(isinstance(_protobuf_bytes(n), Exception) for n in ODD_NODES)


PLAIN_LISTS = [
    [], [[]], [[], [[]]], [0, -1, 1, (1 << 63) - 1, -(1 << 63), (1 << 64) - 1], [[1, 2, 0, 4096, 4, "cpu"], 3],
    ["cuda:0", "", "a_b.c:d", "0", "A9"], [[["x"]], [-7]],
]
NOT_PLAIN_LISTS = [
    ["a,b"], ["[1,2]"], ["-1"], ["a b"], ["it's"], ['q"q'], ["back\\slash"], ["é"], ["tab\tx"], ["<None>"],
    [0.1], [1e-05], [1e16], [-0.0], [True, False, None], [{"k": 1}], [1, "cpu", 2.5],
]


@pytest.mark.parametrize("value", PLAIN_LISTS + NOT_PLAIN_LISTS, ids=ascii)
def test_each_printed_list_is_pythons_repr(monkeypatch, value):
    # plain lists (integers, lists, strings of letters, digits and ``_.:``) are printed from
    # their JSON text, not read, the others from their value: both as ``repr`` prints the value
    io = dump_io((value, [], [], value, [], []))
    if value in PLAIN_LISTS:
        monkeypatch.setattr(orjson, "loads", None)
    assert io_texts(io, {}) == (repr(value), "[]", "[]", repr(value), "[]", "[]")
