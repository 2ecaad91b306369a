"""The abstract execution of validate (``deadlock``, ``never-reached``) against the simulator.

Every set here is hand-made (a few nodes per rank, written out below); each one that validate
calls a deadlock must also make the simpy simulator report a deadlock, and each one it passes
must simulate to the end.  The recorded PyTorch sets must pass both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra_core.base._errors import ChakraError
from chakra_core.host._plugins import get_host
from chakra_core.io._schema import CommType, GlobalMetadata, Node, NodeType
from chakra_core.pipeline._pipeline import load_traces
from chakra_core.trace._attrs import set_attr
from chakra_core.trace._traceset import MemoryRank, TraceSet
from chakra_core.validation._validate import validate

RECORDED = Path(__file__).resolve().parents[1] / "plugins" / "chakra-pytorch" / "tests" / "data"


def comp(i, deps=(), us=5):
    n = Node(id=i, name=f"comp{i}", type=NodeType.COMP_NODE, duration_micros=us)
    n.data_deps.extend(deps)
    return n


def coll(i, pg=None, deps=(), size=1024):
    n = Node(id=i, name=f"allreduce{i}", type=NodeType.COMM_COLL_NODE)
    set_attr(n, "comm_type", int(CommType.ALL_REDUCE))
    set_attr(n, "comm_size", size)
    if pg is not None:
        set_attr(n, "pg_name", pg)
    n.data_deps.extend(deps)
    return n


def p2p(i, send, peer, deps=(), tag=0, size=64):
    n = Node(id=i, name=f"{'send' if send else 'recv'}{i}",
             type=NodeType.COMM_SEND_NODE if send else NodeType.COMM_RECV_NODE)
    set_attr(n, "comm_dst" if send else "comm_src", peer)
    set_attr(n, "comm_tag", tag)
    set_attr(n, "comm_size", size)
    n.data_deps.extend(deps)
    return n


def traceset(per_rank, groups=None):
    return TraceSet([MemoryRank(r, GlobalMetadata(), nodes) for r, nodes in enumerate(per_rank)], groups)


def simulate(ts, **options):
    """Run the simpy backend (from the registry, as the CLI does): None, or its deadlock report."""
    backend = get_host().registry.get("backend", "simpy")
    try:
        backend.run(ts, backend.check_options(options), None)
    except ChakraError as e:
        assert "deadlock" in str(e), str(e)
        return str(e)
    return None


def _errors(ts):
    return [f for f in validate(ts) if f.severity == "error"]


GROUPS = {"A": [0, 1], "B": [0, 1]}
DEADLOCKS = {
    # rank 0 issues its collective on A then B, rank 1 on B then A; each holds its slot
    "cross-group order": (lambda: [[coll(1, "A"), coll(2, "B")], [coll(1, "B"), coll(2, "A")]], GROUPS),
    # the same with the order forced by dependencies through compute
    "cross-group order via deps": (lambda: [[coll(1, "A"), comp(2, [1]), coll(3, "B", [2])],
                                            [coll(1, "B"), comp(2, [1]), coll(3, "A", [2])]], GROUPS),
    # each rank receives before it sends
    "recv-before-send cross": (lambda: [[p2p(1, False, 1), p2p(2, True, 1, [1])],
                                        [p2p(1, False, 0), p2p(2, True, 0, [1])]], None),
    # three ranks in a ring, each receiving from the previous one before sending to the next
    "recv-before-send ring": (lambda: [[p2p(1, False, (r - 1) % 3), comp(2, [1]), p2p(3, True, (r + 1) % 3, [2])]
                                       for r in range(3)], None),
    # rank 1 reaches the collective only after a receive whose send waits behind the collective
    "collective behind a receive": (lambda: [[coll(1), p2p(2, True, 1, [1])],
                                             [p2p(1, False, 0), coll(2, deps=[1])]], None),
    # a send (id 2) that is ready waits while the slot holds collective 1, which rank 1 reaches
    # only after receiving it
    "send behind the slot": (lambda: [[coll(1), p2p(2, True, 1)], [p2p(1, False, 0), coll(2, deps=[1])]], None),
}
FINISHING = {
    "same group order": (lambda: [[coll(1, "A"), coll(2, "B")], [coll(1, "A"), coll(2, "B")]], GROUPS),
    "send before recv on one side": (lambda: [[p2p(1, True, 1), p2p(2, False, 1, [1])],
                                              [p2p(1, False, 0), p2p(2, True, 0, [1])]], None),
    "receives need no slot": (lambda: [[p2p(1, False, 1), p2p(2, True, 1)], [p2p(1, False, 0), p2p(2, True, 0)]],
                              None),
    "disjoint groups in any order": (lambda: [[coll(1, "A"), coll(2, "B")], [coll(1, "A")], [coll(1, "B")]],
                                     {"A": [0, 1], "B": [0, 2]}),
    "ring exchange after a collective": (lambda: [[coll(1), p2p(2, True, (r + 1) % 3, [1]),
                                                   p2p(3, False, (r - 1) % 3, [1]), coll(4, deps=[3])]
                                                  for r in range(3)], None),
    # rank 0 may start its second collective on A (two streams) before rank 1 reaches its first
    "a group's next sequence started early": (lambda: [[coll(1, "A"), coll(2, "A")],
                                                       [coll(1, "A"), comp(2, [1]), coll(3, "A", [2])]],
                                              {"A": [0, 1]}),
}


@pytest.mark.parametrize("case", sorted(DEADLOCKS))
def test_deadlock_found_and_the_simulator_agrees(case):
    make, groups = DEADLOCKS[case]
    ts = traceset(make(), groups)
    found = _errors(ts)
    assert [f.rule for f in found] == ["deadlock"], [str(f) for f in found]
    f = found[0]
    ranks = sorted({r for r, _ in f.involved})
    assert ranks == (list(range(3)) if "ring" in case else [0, 1])
    assert f.node_id == f.involved[0][1] and f.rank == f.involved[0][0]
    for r, nid in f.involved:  # each named node is on its rank and says whom it waits for
        assert f"rank {r} node {nid} (" in f.message
    assert simulate(ts) is not None


def test_deadlock_message_names_the_waits():
    ts = traceset(DEADLOCKS["cross-group order"][0](), GROUPS)
    (f,) = _errors(ts)
    assert f.message == ("ranks 0, 1 wait on each other: rank 0 node 1 (ALL_REDUCE #1 on group 'A') waits "
                         "for rank 1; rank 1 node 1 (ALL_REDUCE #1 on group 'B') waits for rank 0")
    assert f.involved == [(0, 1), (1, 1)]
    ts = traceset(DEADLOCKS["recv-before-send cross"][0]())
    (f,) = _errors(ts)
    assert "rank 0 node 1 (receive from rank 1, tag 0, 64 bytes) waits for rank 1" in f.message


@pytest.mark.parametrize("case", sorted(FINISHING))
@pytest.mark.parametrize("streams", [1, 2])
def test_no_deadlock_and_the_simulator_finishes(case, streams):
    make, groups = FINISHING[case]
    ts = traceset(make(), groups)
    assert [f for f in validate(ts, streams=streams) if f.severity == "error"] == []
    assert simulate(ts, streams=streams) is None


def test_collective_a_rank_never_reaches():
    # rank 2 is in the default group but never issues the collective
    ts = traceset([[coll(1)], [coll(1)], [comp(1)]])
    found = _errors(ts)
    assert sorted(f.rule for f in found) == ["coll-order", "never-reached", "never-reached"]
    nr = [f for f in found if f.rule == "never-reached"]
    assert [(f.rank, f.node_id) for f in nr] == [(0, 1), (1, 1)]
    assert "waits for rank(s) 2, which finish without reaching it" in nr[0].message
    assert simulate(ts) is not None


def test_abstract_execution_skipped_on_unclear_sets():
    # a receive without its tag: p2p-attrs; what it would match is unknown, so no deadlock rule
    bad = p2p(1, False, 1)
    del bad.attr[1]
    ts = traceset([[bad, p2p(2, True, 1, [1])], [p2p(1, False, 0), p2p(2, True, 0, [1])]])
    assert {f.rule for f in _errors(ts)} == {"p2p-attrs", "unmatched-p2p"}


def test_forward_dependencies_take_the_graph_path():
    # ids out of file order (and a dependency on a later node): the rank is read twice, same answer
    rank0 = [p2p(2, True, 1, [1]), p2p(1, False, 1)]
    rank1 = [p2p(5, True, 0, [3]), p2p(3, False, 0)]
    (f,) = _errors(traceset([rank0, rank1]))
    assert f.rule == "deadlock" and sorted(f.involved) == [(0, 1), (1, 3)]


@pytest.mark.parametrize("name", ["collectives", "ddp", "ddp_buckets", "nccl"])
def test_recorded_sets_do_not_deadlock(name):
    pytest.importorskip("chakra_pytorch")
    ts = load_traces([str(RECORDED / name)], "pytorch")
    assert _errors(ts) == []
    assert simulate(ts) is None


def test_cli_reports_the_deadlock(tmp_path, chakra_cli):
    import json

    make, groups = DEADLOCKS["recv-before-send cross"]
    traceset(make(), groups).write(tmp_path / "t")
    status, out, _ = chakra_cli("validate", tmp_path / "t", "--json")
    doc = json.loads(out)
    assert status == 2 and [f["rule"] for f in doc["findings"]] == ["deadlock"]
    assert doc["findings"][0]["involved"] == [[0, 1], [1, 1]]
    assert doc["findings"][0]["file"].endswith("t.0.et") and doc["findings"][0]["node_id"] == 1


def test_more_streams_let_independent_collectives_pass():
    # with two collectives in flight per rank, each rank starts both and both complete
    ts = traceset(DEADLOCKS["cross-group order"][0](), GROUPS)
    assert [f.rule for f in _errors(ts)] == ["deadlock"]
    assert [f.rule for f in validate(ts, streams=2)] == []
    assert simulate(ts, streams=2) is None
    # a dependency orders them whatever the streams
    ts = traceset(DEADLOCKS["cross-group order via deps"][0](), GROUPS)
    assert [f.rule for f in validate(ts, streams=2)] == ["deadlock"]
    assert simulate(ts, streams=2) is not None


def test_groups_given_beside_the_set(tmp_path):
    import json

    ts = traceset([[coll(1, "7")], [coll(1, "7")], [comp(1)]])
    # undefined, the group is taken for all ranks: rank 2 then lacks the collective too
    assert sorted((f.rule, f.rank) for f in _errors(ts)) == [("coll-order", 0), ("pg-undefined", 0),
                                                             ("pg-undefined", 1)]
    assert [f.rule for f in validate(ts, groups={"7": [0, 1]})] == []
    path = tmp_path / "groups.json"
    path.write_text(json.dumps({"7": [0, 1]}))
    assert simulate(ts, comm_groups=str(path)) is None
    # a group given beside the set is checked like the set's own
    assert [f.rule for f in validate(ts, groups={"7": [0, 3]})] == ["pg-bad-rank", "coll-not-member"]


def test_graph_path_finds_the_same_skeleton_as_the_stream():
    # a recorded rank read in file order (one pass) and reversed (the dependency-graph path)
    pytest.importorskip("chakra_pytorch")
    from chakra_core.validation._skeleton import scan_rank

    rt = load_traces([str(RECORDED / "collectives")], "pytorch")[0]
    nodes = list(rt.nodes())

    def skeleton(order):
        ids = []
        scan = scan_rank(lambda: [order], lambda n: n.type in (5, 6, 7) and not ids.append(n.id))
        assert scan.skel_ptr is not None and scan.skel_preds is not None
        return {ids[k]: sorted(ids[p] for p in scan.skel_preds[scan.skel_ptr[k]:scan.skel_ptr[k + 1]])
                for k in range(len(ids))}

    forward = skeleton(nodes)
    assert len(forward) > 10 and any(forward.values())
    assert skeleton(nodes[::-1]) == forward


@pytest.mark.parametrize("name", ["recv-before-send cross", *[n for n in DEADLOCKS if "coll" in n][:1]])
def test_the_search_runs_interpreted_without_numba(tmp_path, name):
    """Without the ``fast`` extra the same loops run as Python and find the same deadlock."""
    import json
    import subprocess
    import sys

    make, groups = DEADLOCKS[name]
    traceset(make(), groups).write(tmp_path / "t")
    hide = ("import sys\nsys.modules['numba'] = None\nfrom chakra_core.cli.main import main\n"
            "raise SystemExit(main(sys.argv[1:]))")
    bare = subprocess.run([sys.executable, "-c", hide, "validate", str(tmp_path / "t"), "--json"],
                          capture_output=True, text=True, timeout=120)
    compiled = subprocess.run([sys.executable, "-m", "chakra_core.cli.main", "validate", str(tmp_path / "t"),
                               "--json"], capture_output=True, text=True, timeout=120)
    assert bare.returncode == compiled.returncode == 2, bare.stderr
    assert json.loads(bare.stdout)["findings"] == json.loads(compiled.stdout)["findings"]
    assert any(f["rule"] == "deadlock" for f in json.loads(bare.stdout)["findings"])


def _searched(ts, monkeypatch, streams=1):
    """The deadlock search's inputs for ``ts`` as validate builds them: (skeletons, members)."""
    from chakra_core.validation import _deadlock

    seen = []
    real = _deadlock.run_abstract

    def keep(skels, members, *args, **kwargs):
        seen.append((skels, members))
        return real(skels, members, *args, **kwargs)

    monkeypatch.setattr(_deadlock, "run_abstract", keep)
    validate(ts, streams=streams)
    return seen


@pytest.mark.parametrize("case", sorted(DEADLOCKS) + sorted(FINISHING))
@pytest.mark.parametrize("streams", [1, 2])
def test_compiled_search_finds_what_the_interpreted_one_does(case, streams, monkeypatch):
    # the loop compiled by numba (its tables in arrays sized by the most collectives a rank has
    # on a group) and run as Python: the same waits and finished ranks
    pytest.importorskip("numba")
    from chakra_core.validation._deadlock import run_abstract

    make, groups = {**DEADLOCKS, **FINISHING}[case]
    searched = _searched(traceset(make(), groups), monkeypatch, streams)
    assert searched
    for skels, members in searched:
        compiled = run_abstract(skels, members, streams, compile_it=True)
        assert compiled == run_abstract(skels, members, streams, compile_it=False)


def _sequence_tables_of(kinds, group, counts, ngroups):
    import numpy as np

    from chakra_core.validation._deadlock import _sequence_tables

    return _sequence_tables(np.array(counts, np.int64), np.array(kinds, np.uint8), np.array(group, np.int32), ngroups)


def test_sequence_tables_size_each_group_by_its_busiest_rank():
    # 3 ranks: rank 0 has 2 collectives on group 1, rank 1 has 3 on group 1 and 1 on group 0,
    # rank 2 one on group 0 (and a send): group 0's sequences take 1 slot, group 1's 3
    kinds = [0, 0, 1, 0, 0, 0, 0, 0, 1]
    group = [1, 1, 0, 1, 1, 1, 0, 0, 0]
    counts = [3, 4, 2]
    for ngroups in (2, 70_000):  # a table of counts, then the distinct pairs (ranks x groups large)
        pair, npairs, off = _sequence_tables_of(kinds, group, counts, ngroups)
        assert off[:3].tolist() == [0, 1, 4] and off[-1] == 4
        coll = [p for p, k in zip(pair.tolist(), kinds) if k == 0]
        # one number per (rank, group): rank 0 group 1; rank 1 group 1 (three), group 0; rank 2 group 0
        assert coll[0] == coll[1] and coll[2] == coll[3] == coll[4] and len({coll[0], coll[2], coll[5], coll[6]}) == 4
        assert max(coll) < npairs


@pytest.mark.parametrize("compile_it", [False, True])
def test_a_completed_sequence_slot_starts_empty_again(compile_it):
    # a group of members 0 and 1 (member_count 2) on which ranks 2 and 3 also start a collective
    # once 0 and 1 completed it: those two arrivals make a second full count in the same slot,
    # so every rank finishes (the search never sees such a set from validate, which reports
    # coll-not-member and skips it; this is the loop's own contract)
    import numpy as np

    from chakra_core.base._kernels import chosen
    from chakra_core.validation._deadkernel import run_compiled

    if compile_it:
        pytest.importorskip("numba")
    pair, npairs, off = _sequence_tables_of([0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], 1)
    done, state, seq_of = chosen(run_compiled, compile_it)(
        np.arange(5, dtype=np.int64), np.ones(4, np.uint64), np.zeros(4, np.uint8), np.zeros(4, np.int32),
        np.zeros(4, np.int32), 0, np.zeros(5, np.int64), np.zeros(0, np.int64), np.array([2], np.int64), 1,
        pair, npairs, off)
    assert done.tolist() == [1, 1, 1, 1] and state.tolist() == [1, 1, 1, 1] and seq_of.tolist() == [0, 0, 0, 0]
