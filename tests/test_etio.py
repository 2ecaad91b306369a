"""Streaming .et reader/writer: framing, gzip, atomic writes, and bad input."""

from __future__ import annotations

import gzip
import importlib.util
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chakra_core.base._errors import TraceFormatError
from chakra_core.io._etio import EtReader, EtWriter, frame_nodes, open_binary, read_et, write_et
from chakra_core.io._schema import GlobalMetadata, Node
from chakra_core.io._varint import encode_varint


def _nodes(n):
    out = []
    for i in range(1, n + 1):
        node = Node(id=i, name=f"n{i}" * (1 + i % 70), type=4, duration_micros=i)
        if i > 1:
            node.data_deps.append(i - 1)
        out.append(node)
    return out


def test_stream_many_nodes_in_batches(tmp_path):
    nodes = _nodes(10_000)
    p = tmp_path / "t.0.et"
    write_et(p, GlobalMetadata(version="1.0.0"), nodes)
    r = EtReader(p, batch_size=333)
    assert r.metadata.version == "1.0.0"
    got = list(r)
    assert got == nodes
    assert sum(1 for _ in r.raw()) == 10_000


def test_large_message_spanning_chunks(tmp_path):
    big = Node(id=1, name="x" * 3_000_000, type=4)
    p = tmp_path / "big.et"
    write_et(p, None, [big, Node(id=2, type=4)])
    assert [n.id for n in EtReader(p)] == [1, 2]
    assert next(iter(EtReader(p))).name == big.name


def test_gzip_chosen_by_name_and_detected_by_magic(tmp_path):
    nodes = _nodes(50)
    gz = tmp_path / "t.0.et.gz"
    write_et(gz, None, nodes)
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    plain = gzip.decompress(gz.read_bytes())
    renamed = tmp_path / "nogz.et"
    renamed.write_bytes(gz.read_bytes())  # gzip content without a .gz name is still detected
    assert list(EtReader(renamed)) == nodes
    write_et(tmp_path / "p.et", None, nodes)
    assert plain == (tmp_path / "p.et").read_bytes()


def test_open_binary_closes_the_file_under_a_gzip_stream(tmp_path):
    """Closing what open_binary returned for a gzip file closes the file itself (no fd left for
    the garbage collector, which warned "unclosed file" on a bad gzip profile read by chakra-jax)."""
    import gc
    import warnings

    p = tmp_path / "p.json.gz"
    p.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ResourceWarning)
        with open_binary(p) as f:
            assert f.read() == b'{"traceEvents": []}'
        del f
        gc.collect()
    assert [w for w in seen if issubclass(w.category, ResourceWarning)] == []


def test_never_writes_zero_length_message(tmp_path):
    p = tmp_path / "z.et"
    write_et(p, GlobalMetadata(), [Node()])
    data = p.read_bytes()
    assert data == b"\x02\x0a\x00" + b"\x02\x08\x00"
    meta, nodes = read_et(p)
    assert meta.version == "" and nodes == [Node()]


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    p = tmp_path / "keep.et"
    write_et(p, None, _nodes(3))
    before = p.read_bytes()

    def boom():
        yield Node(id=1, type=4)
        raise RuntimeError("producer failed")

    with pytest.raises(RuntimeError):
        with EtWriter(p) as w:
            w.write_many(boom())
    assert p.read_bytes() == before
    assert [f for f in os.listdir(tmp_path) if f != "keep.et"] == []


@pytest.mark.parametrize(
    "content, expect",
    [
        (b"", "empty file"),
        (b"\x05\x0a\x03a", "truncated message"),
        (b"\x02\x0a\x00\x10\x08\x01", "truncated message"),
        (b"\x02\x0a\x00\x03\xff\xff\xff", "not a Chakra node"),
        (b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "length"),
        (b"\x1f\x8b\x08\x00garbage-not-deflate", "bad gzip"),
    ],
)
def test_malformed_input_is_one_line_error(tmp_path, content, expect):
    p = tmp_path / "bad.et"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError) as e:
        list(EtReader(p))
    msg = str(e.value)
    assert expect in msg and str(p) in msg and "\n" not in msg


def test_truncated_gzip(tmp_path):
    p = tmp_path / "t.et.gz"
    write_et(p, None, _nodes(2000))
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match="gzip"):
        list(EtReader(p))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_random_bytes_never_traceback(tmp_path, data):
    p = tmp_path / "fuzz.et"
    p.write_bytes(data)
    try:
        r = EtReader(p)
        for n in r:
            n.SerializeToString()
    except TraceFormatError as e:
        assert "\n" not in str(e)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_random_gzip_bytes_never_traceback(tmp_path, data):
    p = tmp_path / "fuzz.et"
    p.write_bytes(b"\x1f\x8b" + data)
    try:
        list(EtReader(p))
    except TraceFormatError as e:
        assert "\n" not in str(e)


def test_a_gzip_input_closes_its_file(tmp_path):
    """Closing what open_binary returned for a gzip file closes the file under the stream too."""
    from chakra_core.io._etio import open_binary

    path = tmp_path / "x.et.gz"
    path.write_bytes(gzip.compress(b"abc"))
    with open_binary(path) as f:
        raw = f.fileobj  # type: ignore[attr-defined]
        assert f.read() == b"abc"
    assert raw.closed


def _read_both(monkeypatch, path, batch_size=4096):
    """What EtReader gives for ``path`` with the Python cut and with the compiled one: the nodes
    or the error's message, each."""
    from chakra_core.io import _etio

    out = []
    for compiled in (False, True):
        monkeypatch.setattr(_etio, "_compiled_cut", lambda _path, c=compiled: c)
        try:
            out.append([n.SerializeToString() for n in EtReader(path, batch_size=batch_size)])
        except TraceFormatError as e:
            out.append(str(e))
    return out


def _damaged(tmp_path):
    """A recorded-style rank of 3,000 nodes, then copies damaged at a node deep inside it."""
    good = tmp_path / "good.0.et"
    write_et(good, GlobalMetadata(version="0.0.4"), _nodes(3000))
    data = good.read_bytes()
    mid = data.index(Node(id=1700, name="n1700" * (1 + 1700 % 70), type=4, duration_micros=1700,
                          data_deps=[1699]).SerializeToString())
    yield good
    for name, body in [("bad_utf8", data[:mid + 4] + b"\xff" + data[mid + 5:]),
                       ("bad_wire", data[:mid] + b"\xff\xff" + data[mid + 2:]),
                       ("empty", data[:mid - 2] + b"\x00" + data[mid - 2:]),
                       ("cut", data[:mid + 5])]:
        p = tmp_path / f"{name}.0.et"
        p.write_bytes(body)
        yield p


def test_compiled_cut_reads_as_the_python_cut(tmp_path, monkeypatch):
    """The compiled frame cut (large files, numba) gives the same nodes, and the same located
    errors for damaged files, as the Python one, at several batch sizes."""
    pytest.importorskip("numba")
    for path in _damaged(tmp_path):
        for size in (1, 333, 4096):
            python, compiled = _read_both(monkeypatch, path, size)
            assert python == compiled
            if path.name == "good.0.et":
                assert len(python) == 3000
            else:
                assert isinstance(python, str) and "byte " in python and "\n" not in python


@pytest.mark.parametrize("content", [b"", b"\x05\x0a\x03a", b"\x02\x0a\x00\x10\x08\x01", b"\x02\x0a\x00\x03\xff\xff\xff",
                                     b"\xff" * 11, b"\x02\x0a\x00\x02\x08\x01\x80", b"\x02\x0a\x00\x00\x02\x08\x01"])
def test_compiled_cut_words_bad_input_as_the_python_cut(tmp_path, monkeypatch, content):
    pytest.importorskip("numba")
    p = tmp_path / "bad.et"
    p.write_bytes(content)
    python, compiled = _read_both(monkeypatch, p)
    assert python == compiled


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_compiled_cut_agrees_on_random_bytes(tmp_path, monkeypatch, data):
    pytest.importorskip("numba")
    p = tmp_path / "fuzz.et"
    p.write_bytes(b"\x02\x0a\x00" + data)
    python, compiled = _read_both(monkeypatch, p, 3)
    assert python == compiled


def test_write_many_frames_every_length_as_one_at_a_time(tmp_path):
    """Batches of short, two-byte-prefix, long (16 KiB and more) and all-default nodes are framed
    as the format says: each message behind its varint length, ``id = 0`` for an empty one."""
    from chakra_core.io._varint import encode_varint

    nodes = [Node(id=i, name="x" * (i * 37 % 20_000), type=4) for i in range(1, 9000)]
    nodes[5000] = Node()
    p = tmp_path / "many.0.et"
    with EtWriter(p, GlobalMetadata(version="0.0.4")) as w:
        w.write_many(nodes[:20])
        w.write(nodes[20])
        w.write_many(iter(nodes[21:]))
    meta = GlobalMetadata(version="0.0.4").SerializeToString()
    body = [n.SerializeToString() or b"\x08\x00" for n in nodes]
    assert p.read_bytes() == b"".join(encode_varint(len(m)) + m for m in [meta, *body])
    assert w.count == len(nodes)
    assert list(EtReader(p))[:5000] == nodes[:5000]


def test_write_many_frames_short_nodes_behind_one_length_byte(tmp_path):
    """A batch of messages of 1 to 127 bytes each is framed as one length byte then the message,
    by EtWriter and by frame_nodes alike."""
    nodes = [Node(id=i, name="n" * (i % 100), type=4) for i in range(1, 5000)]
    msgs = [n.SerializeToString() for n in nodes]
    assert 0 < min(map(len, msgs)) and max(map(len, msgs)) < 0x80
    body = b"".join(bytes((len(m),)) + m for m in msgs)
    p = tmp_path / "short.0.et"
    with EtWriter(p, GlobalMetadata(version="0.0.4")) as w:
        w.write_many(nodes)
    assert p.read_bytes() == b"\x07\x0a\x050.0.4" + body
    assert frame_nodes(msgs) == body


def test_write_many_keeps_the_nodes_before_a_failing_producer(tmp_path):
    def some():
        yield Node(id=1, type=4)
        yield Node(id=2, type=4)
        raise RuntimeError("producer failed")

    p = tmp_path / "part.0.et"
    with EtWriter(p) as w:
        with pytest.raises(RuntimeError):
            w.write_many(some())
    assert [n.id for n in EtReader(p)] == [1, 2]


def test_write_many_takes_any_object_that_serializes(tmp_path):
    class Wrapped:
        def __init__(self, node):
            self.node = node

        def SerializeToString(self):
            return self.node.SerializeToString()

    nodes = _nodes(5)
    p = tmp_path / "wrapped.0.et"
    with EtWriter(p) as w:
        w.write_many([nodes[0], Wrapped(nodes[1]), *nodes[2:]])
    assert list(EtReader(p)) == nodes


def test_reader_keeps_the_python_cut_when_the_compiled_loop_cannot_load(tmp_path, monkeypatch):
    from chakra_core.base import _kernels, _need
    from chakra_core.io import _etio

    p = tmp_path / "t.0.et"
    write_et(p, None, _nodes(100))
    monkeypatch.setattr(_etio, "COMPILED_FROM", 0)

    def broken(name):
        raise ImportError(f"no {name}")

    monkeypatch.setattr(_kernels, "_COMPILED", {})  # no kernel compiled in this process yet
    monkeypatch.setattr(_need.importlib, "import_module", broken)
    assert not _etio._compiled_cut(str(p))
    assert list(EtReader(p)) == _nodes(100)
    monkeypatch.undo()
    monkeypatch.setattr(_etio, "COMPILED_FROM", 0)
    assert _etio._compiled_cut(str(p)) == (importlib.util.find_spec("numba") is not None)


def test_compiled_cut_reads_gzip_as_the_python_cut(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    gz = tmp_path / "t.0.et.gz"
    write_et(gz, GlobalMetadata(version="0.0.4"), _nodes(3000))
    python, compiled = _read_both(monkeypatch, gz, 333)
    assert python == compiled and len(python) == 3000
    cut = tmp_path / "cut.0.et.gz"
    cut.write_bytes(gz.read_bytes()[:-40])
    python, compiled = _read_both(monkeypatch, cut, 333)
    assert python == compiled and "gzip" in python


def test_a_cut_gzip_read_in_many_chunks_is_named_by_both_cuts(tmp_path, monkeypatch):
    """A gzip stream cut short after the first chunk: both cuts raise the reader's one-line
    error (the compiled one raised gzip's own EOFError)."""
    pytest.importorskip("numba")
    from chakra_core.io import _etio

    gz = tmp_path / "t.0.et.gz"
    write_et(gz, GlobalMetadata(version="0.0.4"), _nodes(3000))
    cut = tmp_path / "cut.0.et.gz"
    cut.write_bytes(gz.read_bytes()[:-40])
    monkeypatch.setattr(_etio, "_CHUNK", 4096)
    python, compiled = _read_both(monkeypatch, cut, 333)
    assert python == compiled and "bad gzip data" in python and str(cut) in python


def test_frame_cut_as_python_is_the_compiled_one(tmp_path):
    """The reader's cut (:func:`._etcut.frame_chunk`) run as Python rewrites the frames as its
    compiled form does: each whole frame behind the key 0x0A, stopping at the empty one."""
    pytest.importorskip("numba")
    import numpy as np

    from chakra_core.base._kernels import compiled
    from chakra_core.io._etcut import frame_chunk

    frames = [encode_varint(len(m)) + m for m in (n.SerializeToString() for n in _nodes(50))]
    body = b"".join(frames) + b"\x00" + frames[0]
    buf = np.frombuffer(body, np.uint8)
    plain, fast = frame_chunk(buf, 0, len(body), 1 << 20), compiled(frame_chunk)(buf, 0, len(body), 1 << 20)
    assert [a.tolist() if hasattr(a, "tolist") else a for a in plain] == \
        [a.tolist() if hasattr(a, "tolist") else a for a in fast]
    assert plain[0].tobytes() == b"".join(b"\x0a" + f for f in frames)
    assert plain[2].tolist() == np.cumsum([0] + [len(f) for f in frames[:-1]]).tolist()
    assert plain[3] == len(b"".join(frames))


@pytest.mark.parametrize("size", [10, 8 << 10, (8 << 10) + 1, 300 << 10])
@pytest.mark.parametrize("gz", [False, True])
def test_metadata_of_any_length_is_read_alone_and_before_the_nodes(tmp_path, size, gz):
    # the metadata alone is read from a short first read, longer metadata by reading on
    from chakra_core.trace._attrs import make_attr

    meta = GlobalMetadata(version="0.0.4")
    meta.attr.append(make_attr("note", "x" * size))
    path = tmp_path / ("t.0.et.gz" if gz else "t.0.et")
    write_et(path, meta, _nodes(30))
    assert EtReader(path).metadata == meta
    reader = EtReader(path)
    assert list(reader) == _nodes(30) and reader.metadata == meta
