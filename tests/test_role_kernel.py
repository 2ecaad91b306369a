"""role_key as a compiled walk of the wire bytes: the same roles as the per-node relabelling it
replaced, however the nodes are cut into runs, and the same keys from its plain-Python stand-in.

Inputs: the golden trace, the GPT-3-like text workload at 64 NPUs, the recorded PyTorch
pipeline-parallel set (its ranks, groups and peers as the previous implementation labelled them),
and hand-built ranks whose groups and peers are held in every slot a writer may use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chakra_core import (
    FileRank,
    GlobalMetadata,
    MemoryRank,
    Node,
    NodeType,
    RoleHasher,
    TraceFormatError,
    add_attr,
    load_traces,
    open_traceset,
    role_key,
    role_keys,
    write_et,
)
from chakra_core.trace import _roles

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden.0.et"
PIPELINE = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / "pipeline_dp"


def _classes(keys):
    by: dict[bytes, list[int]] = {}
    for r, k in enumerate(keys):
        by.setdefault(k.digest, []).append(r)
    return sorted(by.values())


def test_golden_rank_names_its_peer():
    key = role_key(FileRank(0, GOLDEN))
    assert key.groups == () and key.peers == (1,)
    assert len(key.digest) == 20


def test_gpt3_like_ranks_are_one_role(tmp_path):
    pytest.importorskip("chakra_text")
    ts = load_traces([str(ROOT / "examples" / "text" / "gpt3_like.txt")], "text", {"npus": 64})
    keys = [role_key(rt) for rt in ts]
    assert _classes(keys) == [list(range(64))]
    assert [k.groups for k in keys[:4]] == [("1", "9"), ("1", "10"), ("1", "11"), ("1", "12")]
    assert all(k.peers == () for k in keys)


def test_recorded_pipeline_ranks():
    pytest.importorskip("chakra_pytorch")
    keys = [role_key(rt) for rt in load_traces([str(PIPELINE)])]
    assert _classes(keys) == [[0], [1], [2], [3]]
    assert [(k.groups, k.peers) for k in keys] == [(("1",), (1,)), (("2",), (0,)), (("1",), (3,)),
                                                   (("2",), (2,))]


def _node(i, kind, *attrs):
    n = Node(id=i, name=f"n{i}", type=kind)
    if i > 1:
        n.data_deps.append(i - 1)
    for name, value, slot in attrs:
        add_attr(n, name, value, slot)
    return n


def _ring_nodes(r, n, slot="int64_val", pg_slot="string_val", size=64):
    """Rank ``r`` of a ring of ``n``: an all-reduce of ``size`` bytes on its pair's group, a send
    to the next rank, a receive from the previous one, an all-reduce on the whole set ("0")."""
    group = f"pair{r // 2}" if pg_slot == "string_val" else 100 + r // 2
    return [
        _node(1, NodeType.COMM_COLL_NODE, ("comm_size", size, None), ("pg_name", group, pg_slot)),
        _node(2, NodeType.COMM_SEND_NODE, ("comm_dst", (r + 1) % n, slot), ("comm_size", 8, None)),
        _node(3, NodeType.COMM_RECV_NODE, ("comm_src", (r - 1) % n, slot), ("comm_size", 8, None)),
        _node(4, NodeType.COMM_COLL_NODE, ("pg_name", "0", None), ("comm_size", 64, None)),
    ]


def _ring_rank(r, n, slot="int64_val", pg_slot="string_val", size=64):
    return MemoryRank(r, GlobalMetadata(version="0.0.4"), _ring_nodes(r, n, slot, pg_slot, size))


@pytest.mark.parametrize("slot", ["int64_val", "int32_val", "uint32_val", "uint64_val", "sint32_val",
                                  "sint64_val", "fixed64_val"])
def test_ring_ranks_are_one_role_in_every_peer_slot(slot):
    keys = [role_key(_ring_rank(r, 4, slot)) for r in range(4)]
    assert _classes(keys) == [[0, 1, 2, 3]]
    assert [k.peers for k in keys] == [(1, 3), (2, 0), (3, 1), (0, 2)]
    assert [k.groups for k in keys] == [("pair0",), ("pair0",), ("pair1",), ("pair1",)]


def test_group_held_as_an_integer_is_labelled_by_its_decimal_form():
    keys = [role_key(_ring_rank(r, 4, pg_slot="int64_val")) for r in range(4)]
    assert _classes(keys) == [[0, 1, 2, 3]]
    assert [k.groups for k in keys] == [("100",), ("100",), ("101",), ("101",)]


def test_rank_itself_and_other_contents_tell_roles_apart():
    self_send = MemoryRank(0, GlobalMetadata(), [_node(1, NodeType.COMM_SEND_NODE, ("comm_dst", 0, None))])
    other_send = MemoryRank(0, GlobalMetadata(), [_node(1, NodeType.COMM_SEND_NODE, ("comm_dst", 5, None))])
    other_rank = MemoryRank(5, GlobalMetadata(), [_node(1, NodeType.COMM_SEND_NODE, ("comm_dst", 0, None))])
    keys = [role_key(rt) for rt in (self_send, other_send, other_rank)]
    assert [k.peers for k in keys] == [(), (5,), (0,)]
    assert _classes(keys) == [[0], [1, 2]]
    assert _classes([role_key(_ring_rank(0, 4)), role_key(_ring_rank(2, 4, size=65))]) == [[0], [1]]


def test_key_does_not_depend_on_how_the_nodes_are_cut(tmp_path):
    nodes = [n for k in range(8000) for n in _ring_nodes(k % 4, 4)]
    for i, n in enumerate(nodes):
        n.id = i + 1
        del n.data_deps[:]
    path = tmp_path / "big.0.et"
    write_et(path, GlobalMetadata(version="0.0.4"), nodes)
    whole = role_key(FileRank(0, path))
    raws = [n.SerializeToString() for n in nodes]
    for step in (1, 7, 5000):
        hasher = RoleHasher(0)
        for at in range(0, len(raws), step):
            hasher.add(raws[at:at + step])
        assert hasher.key() == whole
    assert role_key(MemoryRank(0, GlobalMetadata(), nodes)) == whole
    assert whole.groups == ("pair0", "pair1") and whole.peers == (1, 3, 2)



def test_runs_naming_no_group_or_peer_give_the_same_key_as_python():
    nodes = []
    for k in range(300):
        nodes += [Node(name=f"c{k}", type=NodeType.COMP_NODE, duration_micros=k), Node(name="d", type=NodeType.COMP_NODE)]
        nodes += _ring_nodes(k % 4, 4)
    for i, n in enumerate(nodes):
        n.id = i + 1
    raws = [n.SerializeToString() for n in nodes]
    compiled = RoleHasher(0)  # compiled where numba is installed
    compiled.add(raws)
    whole = compiled.key()
    for step in (1, 2, 3, 500):  # runs of 1 and 2 nodes: some hold only compute nodes
        hasher = RoleHasher(0, compile_it=False)
        for at in range(0, len(raws), step):
            hasher.add(raws[at:at + step])
        assert hasher.key() == whole
    assert whole.groups == ("pair0", "pair1") and whole.peers == (1, 3, 2)


def _unreadable_attribute_node(i):
    """A compute node whose attribute does not read: its first field's key is made wire type 7,
    which no protobuf writer emits (hand-made: no framework here writes a broken node)."""
    raw = bytearray(_node(i, NodeType.COMP_NODE, ("num_ops", 7, None)).SerializeToString())
    at = raw.index(b"\x0a\x07num_ops")  # the attribute's name field, inside its record
    raw[at] = 0x0F
    return bytes(raw)


@pytest.mark.parametrize("with_peers", [False, True])
def test_a_node_naming_no_group_or_peer_is_keyed_alike_when_it_does_not_read(with_peers):
    # the compiled walk stops at the unreadable attribute; the interpreted one never walks a node
    # that names no group or peer: both hash its bytes as they are
    raws = [n.SerializeToString() for n in _ring_nodes(0, 4)] if with_peers else []
    raws += [_unreadable_attribute_node(9), _node(10, NodeType.COMP_NODE).SerializeToString()]
    keys = []
    for compile_it in (True, False):
        hasher = RoleHasher(0, compile_it=compile_it)
        hasher.add(raws)
        keys.append(hasher.key())
    assert keys[0] == keys[1]
    assert keys[0].peers == ((1, 3) if with_peers else ())


_PLAIN = """
import json, sys
sys.modules["numba"] = None
from chakra_core.base._kernels import INSTALLED as COMPILED
from chakra_core import FileRank, role_key
assert not COMPILED
keys = [role_key(FileRank(r, p)) for r, p in enumerate(sys.argv[1:])]
print(json.dumps([[k.digest.hex(), list(k.groups), list(k.peers)] for k in keys]))
"""


def test_plain_python_stand_in_gives_the_same_keys(tmp_path):
    paths = []
    for r in range(4):
        paths.append(str(tmp_path / f"ring.{r}.et"))
        write_et(paths[-1], GlobalMetadata(version="0.0.4"),
                 _ring_nodes(r, 4, "sint64_val" if r % 2 else "fixed64_val", "int64_val" if r == 3 else "string_val"))
    paths.append(str(GOLDEN))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _PLAIN, *paths], capture_output=True, text=True, env=env,
                         check=True, timeout=300).stdout
    compiled = [role_key(FileRank(r, p)) for r, p in enumerate(paths)]
    assert json.loads(out) == [[k.digest.hex(), list(k.groups), list(k.peers)] for k in compiled]


def test_group_or_peer_that_is_not_a_name_or_rank_is_kept_as_it_is():
    ranks = [MemoryRank(0, GlobalMetadata(), [_node(1, NodeType.COMM_COLL_NODE, ("pg_name", flag, "bool_val"))])
             for flag in (False, True, True)]
    keys = [role_key(rt) for rt in ranks]
    assert _classes(keys) == [[0], [1, 2]]
    assert all(k.groups == () for k in keys)


@pytest.mark.parametrize("compile_it", [False, True])
def test_group_names_that_are_not_utf8_are_told_apart(tmp_path, compile_it):
    """A ``pg_name`` whose bytes are not UTF-8 (a file protobuf refuses; hand-made bytes, as no
    writer here makes them) is written with U+FFFD, as is a valid name holding U+FFFD: the two
    ranks are still two roles, and two bad names differing only in bytes the replacement hides
    too, so a rank that does not load is never stood for by one that does."""
    from chakra_core.io._etio import EtWriter

    def rank(r, name: bytes) -> FileRank:
        msg = _node(1, NodeType.COMM_COLL_NODE, ("comm_size", 64, None), ("pg_name", "QQQQ", None))
        path = tmp_path / f"t.{r}.et"
        with EtWriter(str(path), GlobalMetadata(version="0.0.4")) as w:
            w.write_raw(msg.SerializeToString().replace(b"QQQQ", name))
        return FileRank(r, str(path))

    names = ["\ufffdA".encode(), b"\xf0\x9f\x98A", b"\xf0\x9f\x98A", b"\xf0\x9f\x99A"]  # 4 bytes each
    keys = [role_key(rank(r, name), compile_it=compile_it) for r, name in enumerate(names)]
    assert [k.groups for k in keys] == [("\ufffdA",)] * 4
    assert _classes(keys) == [[0], [1, 2], [3]]
    with pytest.raises(TraceFormatError):
        list(FileRank(1, str(tmp_path / "t.1.et")).nodes())


@pytest.mark.parametrize("compile_it", [False, True])
def test_a_group_attribute_named_twice_is_read_by_protobuf(tmp_path, compile_it):
    """An attribute holding two names, the first one not UTF-8 and the last ``pg_name`` (the
    last wins), or a group attribute whose value's key is padded to 6 bytes (files protobuf
    refuses; hand-made bytes, as no writer here makes them), is not the group attribute of a
    valid rank: before, the walk kept the last name only and read the padded key, and the ranks
    were one role (reviewers' cases: validation then read one of them for all)."""
    from chakra_core.io._etio import EtWriter

    head = Node(id=1, name="ar", type=NodeType.COMM_COLL_NODE).SerializeToString()
    group = b"\x0a\x07pg_name\xea\x01\x01a"
    padded = b"\x0a\x07pg_name\xea\x81\x80\x80\x80\x00\x01a"  # the value's key in 6 bytes
    tails = [b"\x52" + bytes([len(group)]) + group, b"\x52" + bytes([len(group) + 3]) + b"\x0a\x01\xff" + group,
             b"\x52" + bytes([len(padded)]) + padded]
    ranks = []
    for r, tail in enumerate(tails):
        path = tmp_path / f"t.{r}.et"
        with EtWriter(str(path), GlobalMetadata(version="0.0.4")) as w:
            w.write_raw(head + tail)
        ranks.append(FileRank(r, str(path)))
    keys = [role_key(rt, compile_it=compile_it) for rt in ranks]
    assert keys[0].groups == ("a",)
    assert _classes(keys) == [[0], [1], [2]]
    for rt in ranks[1:]:
        with pytest.raises(TraceFormatError):
            list(rt.nodes())


def test_rewritten_file_gets_a_new_key(tmp_path):
    path = tmp_path / "ring.0.et"
    write_et(path, GlobalMetadata(version="0.0.4"), _ring_nodes(0, 4))
    first = role_key(FileRank(0, path))
    assert role_key(FileRank(0, path)) == first
    write_et(path, GlobalMetadata(version="0.0.4"), _ring_nodes(0, 4, size=65))
    assert role_key(FileRank(0, path)).digest != first.digest


def test_same_bytes_at_other_ranks_are_keyed_as_each_ranks_own_walk(tmp_path):
    """A small file naming no peer is keyed once by its bytes (its key depends on no rank); a
    file naming a peer is keyed per rank (the rank itself is no peer)."""
    grouped = [_node(1, NodeType.COMM_COLL_NODE, ("pg_name", "tp1", None), ("comm_size", 64, None)),
               _node(2, NodeType.COMP_NODE)]
    sending = [_node(1, NodeType.COMM_SEND_NODE, ("comm_dst", 0, None), ("comm_size", 8, None))]
    for name, nodes in (("grouped", grouped), ("sending", sending)):
        for r in (0, 5):
            write_et(tmp_path / f"{name}.{r}.et", GlobalMetadata(version="0.0.4"), nodes)
    walked = []
    for r in (0, 5):
        hasher = RoleHasher(r)
        hasher.add([n.SerializeToString() for n in grouped])
        walked.append(hasher.key())
    keys = [role_key(FileRank(r, tmp_path / f"grouped.{r}.et")) for r in (0, 5)]
    assert keys == walked and keys[0].groups == ("tp1",) and keys[0].peers == ()
    sends = [role_key(FileRank(r, tmp_path / f"sending.{r}.et")) for r in (0, 5)]
    assert [k.peers for k in sends] == [(), (0,)]
    assert sends[0].digest != sends[1].digest
    write_et(tmp_path / "grouped.5.et", GlobalMetadata(version="0.0.4"), grouped[:1])
    assert role_key(FileRank(5, tmp_path / "grouped.5.et")).digest != keys[1].digest


def _outcome(get):
    """A rank's key as comparable values, or the error its key raises."""
    try:
        k = get()
    except TraceFormatError as e:
        return ("error", str(e))
    return (k.digest, k.groups, k.peers)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_keys_taken_ahead_on_threads_are_each_ranks_own(tmp_path, workers):
    """role_keys hands each rank with its own key, in the set's order, however many threads take
    them (one, two or three), a rank that does not read with its own error
    and the ranks after it with theirs; compared with role_key one rank after the other."""
    pytest.importorskip("numba")
    pytest.importorskip("chakra_text")
    load_traces([str(ROOT / "examples" / "text" / "gpt3_like.txt")], "text", {"npus": 16}).write(
        str(tmp_path / "trace"))
    (tmp_path / "trace.5.et").write_bytes((tmp_path / "trace.5.et").read_bytes()[:-3])  # cut short
    ranks = list(open_traceset(str(tmp_path)))
    _roles._KEPT.clear()
    expected = [(rt.rank, _outcome(lambda rt=rt: role_key(rt, True))) for rt in ranks]
    assert expected[5][1][0] == "error" and "truncated" in expected[5][1][1]
    assert len({o[0] for _, o in expected if o[0] != "error"}) == 1  # one role: the labels differ
    _roles._KEPT.clear()  # each key taken anew, on the threads
    got = [(rt.rank, _outcome(get)) for rt, get in role_keys(ranks, True, workers)]
    assert got == expected


def test_keys_not_yet_taken_are_dropped_when_the_caller_stops(monkeypatch):
    """Closing role_keys after the first key cancels the keys queued behind the two being taken
    (held on an event here, so that none finishes early): three keys are taken, not five."""
    import threading

    pytest.importorskip("numba")
    started = []
    release = threading.Event()

    def held_key(rt, compile_it=None):
        started.append(rt.rank)
        if rt.rank:
            release.wait(10)
        return role_key(rt, compile_it)

    monkeypatch.setattr(_roles, "role_key", held_key)
    ranks = [_ring_rank(r, 4) for r in range(4)] * 2
    ahead = role_keys(ranks, True, 2)
    rt, get = next(ahead)
    assert rt is ranks[0] and get() == role_key(ranks[0], True)
    for _ in range(1000):  # the thread that took rank 0's key takes the next one (rank 2)
        if len(started) >= 3:
            break
        threading.Event().wait(0.01)
    threading.Timer(0.3, release.set).start()
    ahead.close()  # returns once the two keys being taken are done
    assert sorted(started) == [0, 1, 2]


def test_a_run_cut_inside_a_node_naming_a_group_keys_as_per_node(tmp_path):
    """A rank of several 1 MiB runs whose collectives hold their group as an integer (a node the
    compiled walk hands back to Python) and whose runs end inside such a node: keyed as the
    per-node relabelling keys the same nodes (the search for group names ran past a run's last
    whole message, an internal error of ``validate`` and ``simulate``)."""
    from chakra_core.io._etruns import file_runs

    nodes = [_node(i + 1, NodeType.COMM_COLL_NODE, ("pg_name", 7, "int64_val"), ("comm_size", 1024, None))
             for i in range(40_000)]
    path = tmp_path / "g.0.et"
    write_et(path, GlobalMetadata(version="0.0.4"), nodes)
    tails = [data[int(start[-1] + size[-1]):] for data, start, size, _, _ in file_runs(str(path))]
    assert any(b"pg_name" in tail for tail in tails)  # the case: a run cut after a group's name
    key = role_key(FileRank(0, str(path)), compile_it=True)
    assert key == role_key(MemoryRank(0, GlobalMetadata(version="0.0.4"), nodes))
    assert key.groups == ("7",)
