"""The JSON form written from an ``.et`` file's wire bytes (the compiled transcoder) is byte for
byte the one written from Node objects, and each node it writes itself is what ``json.dumps``
gives of protobuf's ``MessageToDict``: on the golden trace, on recorded PyTorch sets, on nodes
holding every attribute kind and edge values, and on wire forms protobuf accepts but our writer
never makes (repeated scalars, unpacked dependencies, unknown fields)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import json_format

from chakra_core.base._errors import TraceFormatError
from chakra_core.base._kernels import compiled
from chakra_core.io import _jsonkernel
from chakra_core.io._etio import EtReader, EtWriter
from chakra_core.io._jsonform import write_json
from chakra_core.io._schema import AttributeProto, GlobalMetadata, IOInfo, Node
from chakra_core.io._varint import encode_varint
from chakra_core.io._wirekernels import PAD

pytest.importorskip("numba")
from chakra_core.io._etruns import file_runs  # noqa: E402  (needs numba)

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden.0.et"


def _reference(n: Node) -> str:
    return json.dumps(json_format.MessageToDict(n, preserving_proto_field_name=True))


def _both(src: Path, tmp: Path, lines: bool) -> tuple[bytes, bytes]:
    """The JSON form of ``src`` written from its wire bytes and from Node objects."""
    ext = ".jsonl" if lines else ".json"
    meta = EtReader(str(src)).metadata
    assert write_json(tmp / f"wire{ext}", meta, EtReader(str(src)), rank=2) == \
        write_json(tmp / f"objects{ext}", meta, iter(EtReader(str(src))), rank=2)
    return (tmp / f"wire{ext}").read_bytes(), (tmp / f"objects{ext}").read_bytes()


def _transcoded(src: Path, plain: bool = False) -> tuple[list[bytes], list[bytes | None]]:
    """Every node message of ``src`` and the JSON the transcoder writes for it (None: left); by
    its compiled form, or as Python (``plain``)."""
    kernel = _jsonkernel.transcode if plain else compiled(_jsonkernel.transcode)
    messages: list[bytes] = []
    written: list[bytes | None] = []
    for data, start, sizes, _, _ in file_runs(str(src)):
        buf = np.frombuffer(data + PAD, np.uint8)
        out = np.empty(_jsonkernel.room(len(data)) + _jsonkernel.room(int(sizes.max())), np.uint8)
        done, ends = np.zeros(len(start), np.uint8), np.zeros(len(start), np.int64)
        nxt, k = kernel(buf, start, start + sizes, 0, out, np.zeros(0, np.uint8),
                        np.frombuffer(b"\n", np.uint8).copy(), done, ends)
        assert nxt == len(start)
        at = 0
        for i, (s, z) in enumerate(zip(start.tolist(), sizes.tolist())):
            messages.append(data[s:s + z])
            written.append(out[at:ends[i] - 1].tobytes() if done[i] else None)
            at = int(ends[i])
    return messages, written


def _check_nodes(src: Path) -> int:
    """Each node the transcoder writes is protobuf's JSON of it; the count written."""
    messages, written = _transcoded(src)
    for m, w in zip(messages, written):
        if w is not None:
            assert w.decode() == _reference(Node.FromString(m))
    return sum(w is not None for w in written)


def _raw_et(path: Path, messages: list[bytes]) -> Path:
    with EtWriter(str(path), GlobalMetadata(version="0.0.4")) as w:
        for m in messages:
            w.write_raw(m)
    return path


def _every_kind() -> list[Node]:
    """Nodes holding each attribute kind, edge values, and what the transcoder leaves."""
    n = Node(id=(1 << 64) - 1, name='a "q" \\ \t\n\r\b\f\x01\x1f\x7f ~', type=7, start_time_micros=5,
             duration_micros=(1 << 64) - 1, data_deps=[1, 1 << 40], ctrl_deps=[3],
             inputs=IOInfo(values="[1]", shapes="[[2]]", types="['int']"), outputs=IOInfo(types="x"))
    n.attr.extend([
        AttributeProto(name="a", int64_val=-(1 << 63)), AttributeProto(name="b", uint64_val=(1 << 64) - 1),
        AttributeProto(name="c", int32_val=0), AttributeProto(name="c2", int32_val=-(1 << 31)),
        AttributeProto(name="d", bool_val=False), AttributeProto(name="d2", bool_val=True),
        AttributeProto(name="e", string_val=""), AttributeProto(name="h", doc_string="doc"),
        AttributeProto(name="i", sint64_val=-(1 << 63)), AttributeProto(name="i2", sint32_val=-(1 << 31)),
        AttributeProto(name="i3", sint32_val=(1 << 31) - 1), AttributeProto(name="j", fixed32_val=(1 << 32) - 1),
        AttributeProto(name="j2", fixed64_val=(1 << 64) - 1), AttributeProto(name="j3", sfixed32_val=-7),
        AttributeProto(name="j4", sfixed64_val=-(1 << 63)), AttributeProto(name="u", uint32_val=(1 << 32) - 1),
        AttributeProto(), AttributeProto(doc_string="only a doc"),
    ])
    lists = {"int32_list": [-1, 5], "int64_list": [1, -2], "uint32_list": [(1 << 32) - 1], "uint64_list": [1 << 63],
             "sint32_list": [-3, 3], "sint64_list": [-(1 << 62)], "fixed32_list": [0, 9], "fixed64_list": [1 << 50],
             "sfixed32_list": [-9], "sfixed64_list": [-(1 << 40)], "bool_list": [True, False],
             "string_list": ["p", "", '"']}
    for slot, values in lists.items():
        getattr(n.attr.add(name=slot), slot).values.extend(values)
    n.attr.add(name="empty").bool_list.SetInParent()
    # decimal widths at each power of ten (one digit written at once, the others counted)
    n.attr.add(name="widths").uint64_list.values.extend([p + d for k in range(20) for p in [10 ** k]
                                                         for d in (-1, 0) if p + d < 1 << 64])
    left = [AttributeProto(name="f", float_val=0.5), AttributeProto(name="g", double_val=0.1),
            AttributeProto(name="y", bytes_val=b"\x00\xff"), AttributeProto(name="é", int64_val=1)]
    plain = [Node(), Node(id=1), Node(id=2, type=4, inputs=IOInfo()), Node(id=3, name="ü"), Node(id=4, type=99)]
    return [n, *plain, *(Node(id=10 + k, attr=[a]) for k, a in enumerate(left))]


def _wire_forms() -> list[bytes]:
    """Node messages protobuf reads that our writer never makes."""
    def field(number: int, wire: int, payload: bytes) -> bytes:
        return encode_varint(number << 3 | wire) + payload

    def string(number: int, data: bytes) -> bytes:
        return field(number, 2, encode_varint(len(data)) + data)

    attr_twice = string(1, b"x") + field(9, 0, b"\x05") + field(7, 0, b"\x06")
    return [
        field(1, 0, b"\x05") + field(1, 0, b"\x07") + string(2, b"first") + string(2, b"last"),  # last one wins
        field(1, 0, b"\x01") + field(5, 0, b"\x09") + string(5, b"\x0a\x0b") + field(4, 0, b"\x02"),  # unpacked
        field(1, 0, b"\x02") + string(10, string(1, b"n") + string(1, b"m") + field(9, 0, b"\x03")),
        field(1, 0, b"\x03") + string(10, string(8, field(1, 0, b"\x01") + string(1, b"\x02\x03"))),
        field(1, 0, b"\x04") + string(10, string(20, field(1, 5, bytes(4)) + string(1, bytes(8)))),
        field(1, 0, b"\x05") + string(10, attr_twice),  # two value fields: left
        field(1, 0, b"\x06") + field(99, 0, b"\x01"),  # an unknown field: left
        field(1, 0, b"\x07") + string(10, string(1, b"z") + field(40, 0, b"\x01")),  # unknown in an attribute
        field(1, 0, b"\x08") + string(8, b"") + string(8, string(1, b"v")),  # inputs twice: left
        field(3, 0, b"\xff" * 9 + b"\x01"),  # a negative type number: left
    ]


@pytest.mark.parametrize("lines", [False, True])
def test_golden_trace_same_bytes(tmp_path, lines):
    wire, objects = _both(GOLDEN, tmp_path, lines)
    assert wire == objects
    assert wire.count(b"\n") == 9 + (1 if lines else 2)


def test_golden_trace_nodes():
    assert _check_nodes(GOLDEN) == 8  # the last node holds doubles, floats and bytes


@pytest.mark.parametrize("name", ["ddp", "transformer", "pipeline_dp"])
def test_recorded_pytorch_sets(tmp_path, name):
    pytest.importorskip("chakra_pytorch")
    from chakra_core.pipeline._pipeline import load_traces

    traces = load_traces([str(ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / name)], "pytorch")
    written = 0
    for rt in traces:
        src = tmp_path / f"{name}.{rt.rank}.et"
        with EtWriter(str(src), rt.metadata()) as w:
            w.write_many(rt.nodes())
        for lines in (False, True):
            wire, objects = _both(src, tmp_path, lines)
            assert wire == objects
        written += _check_nodes(src)
    assert written > 80


def test_every_attribute_kind(tmp_path):
    nodes = _every_kind()
    src = _raw_et(tmp_path / "kinds.0.et", [n.SerializeToString() for n in nodes])
    for lines in (False, True):
        wire, objects = _both(src, tmp_path, lines)
        assert wire == objects
    messages, written = _transcoded(src)
    assert [w is not None for w in written] == [True] * 4 + [False] * 6
    for m, w in zip(messages, written):
        if w is not None:
            assert w.decode() == _reference(Node.FromString(m))


def test_wire_forms(tmp_path):
    src = _raw_et(tmp_path / "forms.0.et", _wire_forms())
    for lines in (False, True):
        wire, objects = _both(src, tmp_path, lines)
        assert wire == objects
    messages, written = _transcoded(src)
    assert [w is not None for w in written] == [True] * 5 + [False] * 5
    first = json.loads(written[0])
    assert first == {"id": "7", "name": "last"}
    assert json.loads(written[1])["ctrl_deps"] == ["2"] and json.loads(written[1])["data_deps"] == ["9", "10", "11"]
    for m, w in zip(messages, written):
        if w is not None:
            assert w.decode() == _reference(Node.FromString(m))


def test_plain_python_kernel_same_output(tmp_path):
    """The transcoder run as Python (the kernel itself) writes the bytes of its compiled form
    and leaves the same nodes."""
    assert not hasattr(_jsonkernel.transcode, "py_func") and hasattr(compiled(_jsonkernel.transcode), "py_func")
    src = _raw_et(tmp_path / "all.0.et", [n.SerializeToString() for n in _every_kind()] + _wire_forms())
    for path in (src, GOLDEN):
        assert _transcoded(path, plain=True) == _transcoded(path)


def test_large_node(tmp_path):
    """A node whose JSON might pass the transcoder's buffer (64 MiB, 16 bytes a wire byte) is
    written from its Node object, between transcoded ones."""
    big = Node(id=2, name="big", inputs=IOInfo(values="[" + "1, " * 1_500_000 + "]"))
    src = _raw_et(tmp_path / "big.0.et", [Node(id=1, name="a").SerializeToString(), big.SerializeToString(),
                                          Node(id=3, name="c").SerializeToString()])
    wire, objects = _both(src, tmp_path, False)
    assert wire == objects and wire.count(b"\n") == 5


@pytest.mark.parametrize("damage", [b"\x12\x02\xc3\x28", b"\x0a\x05ab", b"\x38\x80", b"\x20\xff\xff",
                                    b"\x88\x80\x80\x80\x80\x00\x07"])
def test_bad_node_same_error(tmp_path, damage):
    """A node that does not decode (a name that is not UTF-8, a field past its message, a
    varint cut by the end of its message: the duration's, a dependency's; a key padded past the
    5 bytes protobuf reads) gives the error of the node-by-node path, naming the node."""
    _same_error(_raw_et(tmp_path / "bad.0.et", [Node(id=1).SerializeToString(), b"\x08\x02" + damage]), 1)


def _same_error(src: Path, node: int) -> None:
    """Writing ``src`` from its wire bytes fails as writing it from Node objects does, naming node
    #``node``, and leaves no output."""
    errors = []
    for nodes in (EtReader(str(src)), iter(EtReader(str(src)))):
        with pytest.raises(TraceFormatError) as e:
            write_json(src.parent / "out.json", GlobalMetadata(), nodes)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and f"node #{node}" in errors[0]
    assert not (src.parent / "out.json").exists()


def _many_runs(monkeypatch, ahead: int | None = None) -> None:
    """Files read in runs of 4 KiB (1 MiB otherwise), so that a small file spans many runs:
    several transcoded by the worker threads at once, and their buffers used again; ``ahead``:
    the most bytes of runs held at once (4 MiB otherwise)."""
    from chakra_core.io import _etruns, _jsonwire

    monkeypatch.setattr(_etruns, "_CHUNK", 4096)
    if ahead is not None:
        monkeypatch.setattr(_jsonwire, "_AHEAD_BYTES", ahead)


def _mixed(count: int) -> list[bytes]:
    """``count`` node messages: plain ones with the nodes the transcoder writes and leaves of
    :func:`_every_kind` and :func:`_wire_forms` among them."""
    special = [n.SerializeToString() for n in _every_kind()] + _wire_forms()
    plain = [Node(id=i, name=f"op{i}", type=4, duration_micros=i * 7, data_deps=[i - 1] if i else []).SerializeToString()
             for i in range(count)]
    for k, m in enumerate(special):
        plain.insert(1 + k * count // len(special), m)
    return plain


@pytest.mark.parametrize(("lines", "ahead"), [(False, None), (True, None), (False, 10_000)])
def test_many_runs_written_in_order(tmp_path, monkeypatch, lines, ahead):
    """Runs transcoded ahead by the worker threads are written in the file's order, with the nodes
    the transcoder leaves (and a node too large for its buffer, its run held alone) written in
    their places; so too when only about two runs may be held at once."""
    _many_runs(monkeypatch, ahead)
    big = Node(id=2, name="big", inputs=IOInfo(values="[" + "1, " * 1_500_000 + "]")).SerializeToString()
    messages = _mixed(3000)
    messages.insert(2500, big)
    src = _raw_et(tmp_path / "runs.0.et", messages)
    assert sum(1 for _ in file_runs(str(src))) > 10
    wire, objects = _both(src, tmp_path, lines)
    assert wire == objects
    assert wire.count(b"\n") == len(messages) + (1 if lines else 2)


def test_bad_node_in_a_late_run(tmp_path, monkeypatch):
    """A node that does not decode, runs after the first: the node-by-node path's error naming
    it, and nothing written."""
    _many_runs(monkeypatch)
    messages = _mixed(3000)
    messages.insert(2900, b"\x08\x02\x12\x02\xc3\x28")  # a name that is not UTF-8
    _same_error(_raw_et(tmp_path / "bad.0.et", messages), 2900)
