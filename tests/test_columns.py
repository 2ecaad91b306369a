"""node_columns against protobuf's own decoder: every column and attribute getter equals what
the C parser and the node getters give, on the recorded golden trace, on the text examples
and on seeded random nodes that use every attribute slot, repeated and oddly ordered fields,
unknown fields and long varints (all written through the wire format), with the loops run as
Python and compiled."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from chakra_core import (
    AttributeProto,
    EtReader,
    EtWriter,
    FileRank,
    GlobalMetadata,
    MemoryRank,
    Node,
    NodeType,
    get_attr,
    get_bool,
    get_int,
    get_str,
    load_traces,
    node_columns,
)

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("is_cpu_op", "comm_type", "comm_size", "pg_name", "comm_src", "tensor_size", "involved_dim", "x", "")
_SCALARS = {
    "int32_val": lambda r: r.randint(-2**31, 2**31 - 1), "int64_val": lambda r: r.randint(-2**63, 2**63 - 1),
    "uint32_val": lambda r: r.randint(0, 2**32 - 1), "uint64_val": lambda r: r.randint(0, 2**64 - 1),
    "sint32_val": lambda r: r.randint(-2**31, 2**31 - 1), "sint64_val": lambda r: r.randint(-2**63, 2**63 - 1),
    "fixed32_val": lambda r: r.randint(0, 2**32 - 1), "fixed64_val": lambda r: r.randint(0, 2**64 - 1),
    "sfixed32_val": lambda r: r.randint(-2**31, 2**31 - 1),
    "sfixed64_val": lambda r: r.randint(-2**63, 2**63 - 1), "bool_val": lambda r: r.random() < 0.5,
    "string_val": lambda r: r.choice(["", "0", "tp_3", "dp_12", "ünï"]), "bytes_val": lambda r: b"\x00\xff",
    "double_val": lambda r: r.random(), "float_val": lambda r: 0.5,
}


@pytest.fixture(autouse=True, params=["python", "compiled"])
def walk_form(request, monkeypatch):
    """Every test twice: the loops run as Python, then compiled (what ``node_columns`` chooses
    by default for every rank here)."""
    import chakra_core.trace._columns as columns

    compile_it = request.param == "compiled"
    if compile_it:
        pytest.importorskip("numba")
    monkeypatch.setattr(columns, "compiled_worthwhile", lambda *_args: compile_it)
    monkeypatch.setattr(columns, "INSTALLED", compile_it)
    return request.param


def _attr(rng: random.Random) -> AttributeProto:
    a = AttributeProto(name=rng.choice(NAMES))
    pick = rng.random()
    if pick < 0.8:
        slot = rng.choice(list(_SCALARS))
        setattr(a, slot, _SCALARS[slot](rng))
    elif pick < 0.9:
        a.bool_list.values.extend([rng.random() < 0.5 for _ in range(rng.randint(0, 3))])
    elif pick < 0.95:
        a.string_list.values.extend(["a", "b"])
    return a


def _random_node(rng: random.Random, i: int) -> bytes:
    n = Node(id=rng.choice([i, i, rng.randint(0, 2**64 - 1)]), name=f"n{i}",
             type=rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 9]), duration_micros=rng.choice([0, 7, 2**40, 2**64 - 1]))
    n.data_deps.extend(rng.randint(0, 2**64 - 1) if rng.random() < 0.1 else rng.randint(0, i)
                       for _ in range(rng.randint(0, 4)))
    n.ctrl_deps.extend(rng.randint(0, i) for _ in range(rng.randint(0, 2)))
    n.attr.extend(_attr(rng) for _ in range(rng.randint(0, 6)))
    data = n.SerializeToString()
    if rng.random() < 0.2:  # a repeated scalar (the last wins) and an unpacked dependency
        data += Node(id=i + 1, type=NodeType.COMP_NODE).SerializeToString() + b"\x28\x05"
    if rng.random() < 0.1:  # an unknown varint field and an unknown length-delimited field
        data += b"\xf8\x07\x96\x01" + b"\x82\x08\x02ab"
    if rng.random() < 0.05:  # a group-encoded unknown field (field 100)
        data += b"\xa3\x06\x08\x01\xa4\x06"
    return data


def _check(cols, nodes: list[Node]) -> None:
    assert len(cols) == len(nodes)
    assert cols.ids.tolist() == [n.id for n in nodes]
    assert cols.types.tolist() == [n.type for n in nodes]
    assert cols.duration_micros.tolist() == [n.duration_micros for n in nodes]
    deps = [list(n.data_deps) + list(n.ctrl_deps) for n in nodes]
    assert np.diff(cols.dep_ptr).tolist() == [len(d) for d in deps]
    assert cols.dep_ids.tolist() == [d for row in deps for d in row]
    assert [cols.name(i) for i in range(len(nodes))] == [n.name for n in nodes]
    order = np.arange(len(nodes))[::-1]
    ptr, flat = cols.names_in(order)
    assert [flat[ptr[k]:ptr[k + 1]].tobytes().decode() for k in range(len(nodes))] == [nodes[i].name for i in order]
    for name, col in cols.attrs.items():
        for i, n in enumerate(nodes):
            assert col.get(i, "absent") == get_attr(n, name, "absent"), (name, i, n)
            assert col.get_int(i, "absent") == get_int(n, name, "absent"), (name, i, n)  # type: ignore[call-overload]
            assert col.get_str(i, "absent") == get_str(n, name, "absent"), (name, i, n)
            assert col.get_bool(i, None) == get_bool(n, name, None), (name, i, n)
            assert bool(col.present[i]) == any(a.name == name for a in n.attr)


def test_random_nodes_through_the_wire_format(tmp_path):
    rng = random.Random(17)
    messages = [_random_node(rng, i) for i in range(3000)]
    path = tmp_path / "r.0.et"
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        for m in messages:
            w.write_raw(m)
    nodes = [Node.FromString(m) for m in messages]
    cols = node_columns(FileRank(0, path), NAMES)
    _check(cols, nodes)
    mem = node_columns(MemoryRank(0, GlobalMetadata(), nodes), NAMES)
    _check(mem, nodes)


def test_nodes_with_more_dependencies_and_attributes_than_the_first_buffers_hold(tmp_path):
    """The walk's first buffers hold 4 dependencies and 4 attributes a node; these nodes have
    12 dependencies and an attribute of each of the 9 names, so the walk runs again with room
    for all (the answers must not change)."""
    rng = random.Random(3)
    nodes = []
    for i in range(2000):
        n = Node(id=i, name=f"n{i}", type=NodeType.COMP_NODE, data_deps=list(range(max(0, i - 8), i)))
        n.ctrl_deps.extend(rng.randint(0, i) for _ in range(4))
        for name in NAMES:
            a = _attr(rng)
            a.name = name
            n.attr.append(a)
        nodes.append(n)
    path = tmp_path / "many.0.et"
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        w.write_many(nodes)
    _check(node_columns(FileRank(0, path), NAMES), nodes)


def test_runs_are_joined(tmp_path, monkeypatch):
    import chakra_core.trace._columns as columns

    monkeypatch.setattr(columns, "_RUN", 700)
    rng = random.Random(5)
    nodes = [Node.FromString(_random_node(rng, i)) for i in range(2500)]
    _check(node_columns(MemoryRank(0, GlobalMetadata(), nodes), NAMES), nodes)


def test_recorded_and_text_traces():
    rank = FileRank(0, ROOT / "tests" / "data" / "golden.0.et")
    _check(node_columns(rank, NAMES), list(rank.nodes()))
    traces = load_traces(str(ROOT / "examples" / "text" / "gpt3_like.txt"), "text", {"npus": 16, "mp_group": 8})
    for r in (0, 9):
        _check(node_columns(traces[r], NAMES), list(traces[r].nodes()))


def test_empty_rank():
    cols = node_columns(MemoryRank(0, GlobalMetadata(), []), ["comm_type"])
    assert len(cols) == 0 and cols.dep_ptr.tolist() == [0] and not cols.attrs["comm_type"].present.any()


@pytest.mark.parametrize("dup", [b"\x08\x05", b"\x08\x05\x08\x09"])
def test_graph_of_columns(dup):
    nodes = [Node.FromString(Node(id=1).SerializeToString() + dup), Node(id=2, data_deps=[9, 5])]
    g = node_columns(MemoryRank(0, GlobalMetadata(), nodes)).graph()
    assert g.ids.tolist() == [nodes[0].id, 2]
    assert g.missing == [(2, d) for d in (9, 5) if d != nodes[0].id]



@pytest.mark.parametrize("tail, what", [
    (b"\x52\x05\x0a\x01", "runs past the end"),  # an attribute longer than the node
    (b"\x2a\x02\x81\x82", "packed dependency"),  # a dependency varint cut by its list's end
    (b"\x0f\x01", "wire type 7"),  # no such wire type
    (b"\x12\x01\xff", "name"),  # a name that is not UTF-8
    (b"\x80\x80\x80\x80\x10\x00", "field 536870912"),  # past protobuf's last field number, 2**29 - 1
    (b"\x88\x80\x80\x80\x80\x00\x07", "key over 5 bytes"),  # field 1's key padded to 6 bytes
])
def test_bad_wire_data_names_the_file_and_node(tmp_path, tail, what):
    from chakra_core import TraceFormatError

    path = tmp_path / "bad.0.et"
    good = Node(id=1, name="a", type=NodeType.COMP_NODE).SerializeToString()
    bad = Node(id=2, type=NodeType.COMP_NODE).SerializeToString() + tail
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        w.write_raw(good)
        w.write_raw(bad)
    with pytest.raises(TraceFormatError) as e:
        node_columns(FileRank(0, path), ["is_cpu_op"])
    assert str(path) in str(e.value) and "node #1" in str(e.value) and what in str(e.value)


def test_the_last_field_number_is_an_unknown_field(tmp_path):
    """Field 2**29 - 1, protobuf's last, is read as protobuf reads it: an unknown field."""
    path = tmp_path / "last.0.et"
    raw = Node(id=7, type=NodeType.COMP_NODE).SerializeToString() + b"\xf8\xff\xff\xff\x0f\x00"
    assert Node.FromString(raw).id == 7
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        w.write_raw(raw)
    assert node_columns(FileRank(0, path), ["is_cpu_op"]).ids.tolist() == [7]


def test_the_compiled_walk_reads_a_run_in_place_unless_its_last_messages_are_refused(walk_form):
    """The compiled walk reads a run's own bytes (no padded copy of the rank) once the messages
    near their end walk without error; a refused one there gets the padded copy (whose walk
    then names it)."""
    if walk_form != "compiled":
        pytest.skip("the compiled walk's buffer")
    from chakra_core.io._wirekernels import PAD
    from chakra_core.trace._columns import _in_place, _name_table

    flat, ptr = _name_table(("is_cpu_op",))
    for last in (b"", b"\x08\x07", Node(id=3, name="x" * 40).SerializeToString()):
        msgs = [Node(id=i, name="n", type=NodeType.COMP_NODE, data_deps=[i - 1] if i else []).SerializeToString()
                for i in range(40)] + ([last] if last else [])
        data = b"".join(msgs)
        sizes = np.array([len(m) for m in msgs], np.int64)
        start = np.cumsum(sizes) - sizes
        buf = _in_place(data, start, start + sizes, flat, ptr)
        assert buf.base is data and len(buf) == len(data)
        bad = data + Node(id=99).SerializeToString() + b"\x52\x05\x0a\x01"  # an attribute past its node's end
        at = np.append(start, len(data))
        buf = _in_place(bad, at, np.append(start + sizes, len(bad)), flat, ptr)
        assert buf.base is not bad and buf.tobytes() == bad + PAD


_TAILS = (b"\x80", b"\x80" * 9, b"\x80" * 10, b"\xff" * 11, b"\x52\x05\x0a\x01", b"\x2a\x02\x81\x82",
          b"\x0a", b"\x11\x01\x02", b"\x55\x01", b"\x52\x03\x0a\x01\x80", b"\x52\x02\x38\x80")


def test_the_walk_never_reads_past_a_run_it_walks_in_place(walk_form):
    """Whenever ``_in_place`` lets the compiled walk read a run's own bytes, the walk's Python
    form over those bare bytes (a read past them raises IndexError) reads none past them: random
    runs whose last messages are whole, cut short, or end in long varints and fields running past
    their end, some followed by bytes that continue a varint and a few small whole messages."""
    if walk_form != "compiled":
        pytest.skip("the compiled walk's buffer")
    from chakra_core.io import _wirekernels as wire
    from chakra_core.trace._columns import _KIND, _SLOT_OF_KEY, _in_place, _name_table

    rng = random.Random(33)
    flat, ptr = _name_table(NAMES)
    in_place = 0
    for _ in range(400):
        msgs = [_random_node(rng, i) for i in range(rng.randint(1, 4))]
        for k in range(len(msgs) - rng.randint(1, len(msgs)), len(msgs)):
            if rng.random() < 0.6:
                msgs[k] = msgs[k][:rng.randint(0, len(msgs[k]))] + rng.choice(_TAILS)
        if rng.random() < 0.5:  # more after them, so that a damaged one ends just before the end:
            if rng.random() < 0.5:  # bytes that continue any varint read into them
                msgs.append(b"\xff" * rng.randint(1, 6))
            msgs += rng.choices([b"\x08\x01", Node(id=2**64 - 1).SerializeToString()], k=rng.randint(1, 9))
        msgs = [m for m in msgs if m] or [b"\x08\x01"]
        data = b"".join(msgs)
        sizes = np.array([len(m) for m in msgs], np.int64)
        start = np.cumsum(sizes) - sizes
        if _in_place(data, start, start + sizes, flat, ptr).base is not data:
            continue
        in_place += 1
        wire.walk_nodes(memoryview(data), start.tolist(), (start + sizes).tolist(), flat.data, ptr.tolist(),
                        _SLOT_OF_KEY.tolist(), _KIND.tolist())
    assert in_place > 100


def test_truncated_file(tmp_path):
    from chakra_core import TraceFormatError

    path = tmp_path / "t.0.et"
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        w.write(Node(id=1, name="abc"))
    path.write_bytes(path.read_bytes()[:-2])
    with pytest.raises(TraceFormatError, match="truncated"):
        node_columns(FileRank(0, path))


@pytest.mark.parametrize("names", [["grüße", ""], ["", "ü", "", ""], ["a", "", "ß"]])
def test_non_ascii_names_beside_empty_ones_read_as_protobuf_reads_them(tmp_path, names):
    """Names with bytes past ASCII beside nodes without a name, the last ones among them: read as
    the nodes' own names (an empty last name made the check of the others an internal error)."""
    path = tmp_path / "u.0.et"
    nodes = [Node(id=i + 1, name=n, type=NodeType.COMP_NODE) for i, n in enumerate(names)]
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        w.write_many(nodes)
    cols = node_columns(FileRank(0, path))
    assert [cols.name(i) for i in range(len(cols))] == [n.name for n in EtReader(path)]


def test_a_name_not_utf8_after_empty_ones_names_its_own_node(tmp_path):
    from chakra_core import TraceFormatError

    path = tmp_path / "v.0.et"
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        w.write_many([Node(id=1, name="ü"), Node(id=2), Node(id=3)])
        w.write_raw(Node(id=4).SerializeToString() + b"\x12\x01\xff")  # a name that is not UTF-8
        w.write_many([Node(id=5)])
    with pytest.raises(TraceFormatError, match="node #3"):
        node_columns(FileRank(0, path))


@pytest.mark.parametrize("wide", [b"\x68\x00", b"\xa9\x01" + bytes(8)])  # uint64_val 0, fixed64_val 0
def test_a_value_written_twice_in_a_64_bit_unsigned_slot_reads_as_an_integer(tmp_path, wide):
    """An attribute whose value is written twice (int64_val 5, then a uint64 or fixed64 0; the
    last wins, as protobuf reads it; hand-made bytes): an integer column value, as a single
    value there is (it was kept aside, and the simulator refused the collective's comm_type)."""
    body = b"\x0a\x09comm_type" + b"\x48\x05" + wide
    raw = Node(id=1, type=NodeType.COMM_COLL_NODE).SerializeToString() + b"\x52" + bytes([len(body)]) + body
    path = tmp_path / "w.0.et"
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        w.write_raw(raw)
    col = node_columns(FileRank(0, path), ["comm_type"]).attrs["comm_type"]
    assert get_int(Node.FromString(raw), "comm_type") == 0
    assert col.is_int.tolist() == [True] and col.ints.tolist() == [0]


def test_string_attribute_not_utf8_names_its_node(tmp_path):
    """Distinct string values are decoded once: a bad one still names the first node holding it."""
    from chakra_core import TraceFormatError

    path = tmp_path / "s.0.et"
    attr = b"\x0a\x07pg_name" + b"\xea\x01\x01\xff"  # name, then string_val of one byte that is not UTF-8
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        for i in range(3):
            node = Node(id=i + 1, type=NodeType.COMM_COLL_NODE)
            node.attr.add(name="pg_name", string_val="tp_0")
            w.write_raw(node.SerializeToString())
        w.write_raw(Node(id=4).SerializeToString() + b"\x52" + bytes([len(attr)]) + attr)
        w.write_raw(Node(id=5).SerializeToString() + b"\x52" + bytes([len(attr)]) + attr)
    with pytest.raises(TraceFormatError) as e:
        node_columns(FileRank(0, path), ["pg_name"])
    assert "node #3" in str(e.value) and "attribute" in str(e.value)
    assert node_columns(FileRank(0, path), ["comm_type"]).attrs["comm_type"].present.sum() == 0


def test_varints_past_64_bits_keep_their_low_64_bits_as_protobuf(tmp_path):
    """A 10-byte varint whose last byte holds more than bit 63 (a dependency, a duration) reads
    as protobuf reads it: its low 64 bits."""
    path = tmp_path / "v.0.et"
    messages = [Node(id=1, name="a").SerializeToString() + b"\x28" + b"\xff" * 9 + b"\x7f",
                Node(id=2, name="b").SerializeToString() + b"\x38" + b"\x80" * 9 + b"\x7e"]
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        for m in messages:
            w.write_raw(m)
    cols = node_columns(FileRank(0, path), NAMES)
    _check(cols, [Node.FromString(m) for m in messages])
    assert cols.dep_ids.tolist() == [2**64 - 1] and cols.duration_micros.tolist() == [0, 0]


def test_a_key_past_int64_is_no_field(tmp_path):
    from chakra_core import TraceFormatError

    path = tmp_path / "k.0.et"
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        w.write_raw(Node(id=1, name="a").SerializeToString() + b"\x80" * 9 + b"\x01\x00")
    with pytest.raises(TraceFormatError) as e:
        node_columns(FileRank(0, path), ["is_cpu_op"])
    assert "node #0" in str(e.value) and "wire type 0" in str(e.value)
