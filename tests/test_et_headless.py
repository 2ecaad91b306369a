""".et files without a GlobalMetadata message: every reader path starts at the first message.

``tests/data/jsonizer_2023/all_reduce.{0,1}.et`` were written by MLCommons Chakra's text converter
of 2023-11-22 (see the README there), which wrote node messages only; ``all_reduce.{0,1}.json``
are that commit's jsonizer's output for them, which decoded every message as a Node.  The nodes
the jsonizer wrote are what each reader path must give.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from chakra_core import (
    EtReader,
    EtWriter,
    FileRank,
    TraceFormatError,
    TraceFormatWarning,
    node_columns,
    read_json,
    role_key,
)
from chakra_core.io._etruns import file_runs
from chakra_core.io._schema import GlobalMetadata, Node, NodeType
from chakra_core.io._varint import encode_varint

DATA = Path(__file__).parent / "data" / "jsonizer_2023"


def _expected(rank: int) -> list[Node]:
    """The nodes of ``all_reduce.RANK.et`` as the 2023 jsonizer wrote them."""
    return list(read_json(DATA / f"all_reduce.{rank}.json")[1])


def _read(reader_call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = reader_call()
    return out, [w for w in caught if issubclass(w.category, TraceFormatWarning)]


@pytest.mark.parametrize("rank", [0, 1])
def test_reader_starts_at_the_first_message(rank):
    path = DATA / f"all_reduce.{rank}.et"
    want = _expected(rank)
    assert len(want) == 19 and want[0].type == NodeType.COMM_COLL_NODE
    assert [n.id for n in want] == list(range(19 * rank, 19 * rank + 19))  # ids not restarted per rank
    reader = EtReader(path)
    nodes, said = _read(lambda: list(reader))
    assert nodes == want
    assert reader.metadata == GlobalMetadata() and not reader.has_metadata
    assert len(said) == 1 and str(path) in str(said[0].message) and "no GlobalMetadata" in str(said[0].message)
    compiled, _ = _read(lambda: [n for b in EtReader(path)._run_batches() for n in b])
    assert compiled == want
    raw, _ = _read(lambda: list(EtReader(path).raw()))
    assert raw == [n.SerializeToString() for n in want]
    assert b"".join(encode_varint(len(m)) + m for m in raw) == path.read_bytes()  # the whole file


@pytest.mark.parametrize("compile_it", [False, True])
def test_runs_and_columns_start_at_the_first_message(compile_it, tmp_path):
    if compile_it:
        pytest.importorskip("numba")
    path = DATA / "all_reduce.1.et"
    want = _expected(1)
    runs, _ = _read(lambda: list(file_runs(str(path), compile_it=compile_it)))
    got = [bytes(data[s:s + n]) for data, starts, sizes, _, _ in runs for s, n in zip(starts, sizes)]
    assert got == [n.SerializeToString() for n in want]
    cols, _ = _read(lambda: node_columns(FileRank(1, path), compile_it=compile_it))
    assert cols.ids.tolist() == [n.id for n in want]
    assert cols.types.tolist() == [n.type for n in want]


def test_gzipped_file_reads_the_same(tmp_path):
    path = DATA / "all_reduce.0.et"
    gz = tmp_path / "all_reduce.0.et.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    nodes, said = _read(lambda: list(EtReader(gz)))
    assert nodes == _expected(0) and len(said) == 1


def test_converted_set_carries_metadata_and_the_same_nodes(tmp_path, chakra_cli):
    (status, _, err), said = _read(lambda: chakra_cli("convert", str(DATA / "all_reduce.0.et"),
                                                      str(DATA / "all_reduce.1.et"), "-o", f"{tmp_path}/up/"))
    assert status == 0, err
    assert {str(w.message).split(":")[0] for w in said} == {str(DATA / f"all_reduce.{r}.et") for r in (0, 1)}
    for r in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("error", TraceFormatWarning)  # read back without the fallback
            reader = EtReader(tmp_path / "up" / f"trace.{r}.et")
            assert reader.has_metadata and list(reader) == _expected(r)


def test_role_key_is_that_of_the_same_nodes_with_metadata(tmp_path):
    src = DATA / "all_reduce.0.et"
    with EtWriter(tmp_path / "with.0.et", GlobalMetadata(version="0.0.4")) as w:
        w.write_many(_expected(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceFormatWarning)
        assert role_key(FileRank(0, src)).digest == role_key(FileRank(0, tmp_path / "with.0.et")).digest


def test_stats_of_a_headless_set_says_so(tmp_path):
    for r in (0, 1):
        shutil.copy(DATA / f"all_reduce.{r}.et", tmp_path)
    r = subprocess.run([sys.executable, "-m", "chakra_core.cli.main", "stats", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "38 nodes in 2 rank(s)" in r.stdout and "ALL_REDUCE                         38" in r.stdout
    lines = [x for x in r.stderr.splitlines() if "no GlobalMetadata" in x]
    assert len(lines) == 2 and all(x.startswith("chakra: warning: ") for x in lines), r.stderr


def _file(tmp_path: Path, first: bytes, nodes: list[Node]) -> Path:
    path = tmp_path / "t.0.et"
    body = b"".join(encode_varint(len(m)) + m for m in [first, *(n.SerializeToString() for n in nodes)])
    path.write_bytes(body)
    return path


def test_metadata_that_is_no_node_stays_metadata(tmp_path):
    node = Node(id=5, name="x", type=NodeType.COMP_NODE)
    for meta in (b"", b"\x0a\x00", GlobalMetadata(version="0.0.4").SerializeToString(), b"\x0a\x05hello"):
        path = _file(tmp_path, meta, [node])
        nodes, said = _read(lambda p=path: list(EtReader(p)))
        assert nodes == [node] and not said and EtReader(path).has_metadata
    # a node of no known type is no node: the message is read as metadata of unknown fields
    nodes, said = _read(lambda: list(EtReader(_file(tmp_path, b"\x18\x63", [node]))))
    assert nodes == [node] and not said


def test_first_message_of_a_known_node_type_read_as_metadata_is_a_node(tmp_path):
    # id and type only: protobuf reads it as a GlobalMetadata of unknown fields without error
    first = Node(id=7, type=NodeType.COMP_NODE)
    nodes, said = _read(lambda: list(EtReader(_file(tmp_path, first.SerializeToString(), [first]))))
    assert nodes == [first, first] and len(said) == 1


def test_first_message_that_is_neither_is_refused(tmp_path):
    path = _file(tmp_path, b"\x12\x03\xff\xff\xff", [])  # attr / name of bytes that are neither
    with pytest.raises(TraceFormatError, match="first message is not a GlobalMetadata"):
        list(EtReader(path))
