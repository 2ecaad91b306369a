"""Collectives the simulator does not time on the network: a broadcast with a recorded duration
replays it (as ASTRA-sim), one without is mapped to two all-gathers.  On the recorded DDP set
(plugins/chakra-pytorch/recording/record_ddp.py: 2 gloo ranks, two c10d::broadcast_ each) the
result names them in a note and lists them in ``summary.collectives`` with their comm_size."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chakra_core import CommType, NodeType, get_int, load_traces

ROOT = Path(__file__).resolve().parents[3]
DDP = ROOT / "plugins/chakra-pytorch/tests/data/ddp"
SYSTEM = ROOT / "examples/system/any_size.yaml"


def _broadcasts(path: Path) -> dict[int, list[tuple[int, int]]]:
    """Per rank, ``(comm_size, duration ns)`` of its BROADCAST nodes in id order."""
    ts = load_traces(str(path))
    return {r: [(get_int(n, "comm_size"), n.duration_micros * 1000) for n in sorted(ts[r].nodes(), key=lambda n: n.id)
                if n.type == NodeType.COMM_COLL_NODE and get_int(n, "comm_type") == CommType.BROADCAST]
            for r in ts.ranks}


@pytest.fixture(scope="module")
def ddp_set(tmp_path_factory) -> Path:
    """The recorded DDP set converted as ``chakra convert --help``'s example does."""
    pytest.importorskip("chakra_pytorch")
    from chakra_core import convert

    out = tmp_path_factory.mktemp("ddp") / "ddp"
    convert([str(DDP)], str(out))
    return out


def test_replayed_broadcasts_are_listed_with_their_bytes_and_noted(ddp_set, chakra_cli):
    calls = _broadcasts(ddp_set)
    assert [len(c) for c in calls.values()] == [2, 2] and all(ns > 0 for c in calls.values() for _, ns in c)
    code, out, err = chakra_cli("simulate", ddp_set, "--system", SYSTEM, "--json")
    assert code == 0, err
    res = json.loads(out)
    rows = [c for c in res["summary"]["collectives"] if c["collective"] == "BROADCAST"]
    assert rows == [{"collective": "BROADCAST", "group": "all", "count": 2,
                     "bytes": sum(size for size, _ in calls[0]),  # 20 + 4: one comm_size per broadcast
                     "total_ns": sum(max(a[1], b[1]) for a, b in zip(calls[0], calls[1])),
                     "max_ns": max(ns for c in calls.values() for _, ns in c), "sync_wait_ns": 0, "chunks": 0,
                     "phases": ["recorded duration"], "replayed": True}]
    assert rows[0]["bytes"] == 24
    assert [c["replayed"] for c in res["summary"]["collectives"] if c["collective"] == "ALL_REDUCE"] == [False]
    notes = [n for n in res["notes"] if n.startswith("collectives replayed their recorded duration_micros")]
    assert len(notes) == 1 and "(BROADCAST: 4 node(s))" in notes[0]


def test_simulate_prints_the_broadcasts_and_the_note(ddp_set, chakra_cli):
    code, out, err = chakra_cli("simulate", ddp_set, "--system", SYSTEM)
    assert code == 0, err
    assert re.search(r"^  BROADCAST +1 +2 +24 B +1\.57 ms$", out, re.M), out
    assert "note: collectives replayed their recorded duration_micros, not timed by the network " \
           "(BROADCAST: 4 node(s))" in out


def test_replay_of_every_communication_maps_nothing(ddp_set, chakra_cli):
    """With comm=replay every broadcast is matched and replayed: no mapping, no mapping note."""
    code, out, err = chakra_cli("simulate", ddp_set, "--system", SYSTEM, "-O", "comm=replay", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert not any("documented mappings" in n or n.startswith("collectives replayed") for n in res["notes"])
    assert {c["collective"]: c["replayed"] for c in res["summary"]["collectives"]} == \
        {"ALL_REDUCE": True, "BROADCAST": True}


def test_a_broadcast_without_duration_is_mapped_and_noted(kit, tmp_path):
    """No duration: a scatter and an all-gather of ceil(S/P) pieces on the network, counted as a
    modelled collective; one with a duration beside it on the same group has a row of its own."""
    def nodes():
        first = kit.coll(1, 1000, ct=CommType.BROADCAST)
        timed = kit.coll(2, 64, ct=CommType.BROADCAST, deps=[1])
        timed.duration_micros = 5
        return [first, timed]

    res = kit.run(kit.same(4, nodes), kit.system([("Ring", 4, 50, 500)]), tmp_path)
    rows = {c["replayed"]: c for c in res.summary["collectives"] if c["collective"] == "BROADCAST"}
    assert rows[False]["bytes"] == 1000 and rows[False]["count"] == 1 and rows[False]["total_ns"] > 0
    assert rows[False]["phases"] == ["all-gather on dim 0 (ring)"] * 2
    assert rows[True]["bytes"] == 64 and rows[True]["total_ns"] == 5000 and rows[True]["count"] == 1
    assert any("ASTRA-sim does not model (BROADCAST)" in n for n in res.notes)
    assert any("(BROADCAST: 4 node(s))" in n for n in res.notes)
