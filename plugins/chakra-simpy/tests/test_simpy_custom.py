"""Custom collectives: a ring all-reduce written as a custom-collective ET (one per rank, as
ASTRA-sim's Collective API reads them) gives the built-in ring's cycles.

The ET is hand-made (no tool here writes MSCCL-style collective ETs): per rank, an endpoint
delay, then 2(P-1) steps of (send m bytes to the next rank, receive m from the previous one,
an endpoint delay plus, in the first P-1 steps, the reduction of m bytes). The system is chosen
so that endpoint delays and reductions are whole microseconds (ET durations are us): endpoint
delay 1,000 ns, m = 50,000 bytes reduced in 3 * floor(m / 50) = 3,000 ns.
"""

from __future__ import annotations

import json

import pytest

from chakra_core import ConfigError, TraceFormatError, TraceSet
from chakra_core.system import load_system

P = 4
M = 50_000  # bytes per ring step: the all-reduce's 200,000 bytes over 4 ranks
E_US, RED_US = 1, 3


def ring_et(kit, rank: int, steps_with_reduction: int = P - 1):
    """Rank ``rank``'s part of a ring all-reduce (see the module docstring)."""
    nodes = [kit.comp(1, E_US)]
    prev, nid = 1, 1
    for s in range(2 * (P - 1)):
        send = kit.p2p(nid + 1, True, (rank + 1) % P, M, tag=s, deps=[prev])
        recv = kit.p2p(nid + 2, False, (rank - 1) % P, M, tag=s, deps=[prev])
        add = kit.comp(nid + 3, E_US + (RED_US if s < steps_with_reduction else 0), deps=[nid + 1, nid + 2])
        nodes += [send, recv, add]
        prev, nid = nid + 3, nid + 3
    return nodes


def _system(kit, tmp_path, custom: str | None):
    sysd = kit.system([("Ring", P, 50, 500)], **{"preferred-dataset-splits": 1, "endpoint-delay": 1000})
    if custom:
        sysd["all-reduce-implementation-chakra"] = [custom]
    return sysd


def _workload(kit):
    return kit.same(P, lambda: [kit.comp(1, 7), kit.coll(2, P * M, deps=[1]), kit.comp(3, 2, deps=[2])])


def _write_ring(kit, tmp_path, **kw) -> str:
    TraceSet([r for r in kit.traces({r: ring_et(kit, r, **kw) for r in range(P)})]).write(tmp_path / "ring" / "ar")
    return str(tmp_path / "ring" / "ar")


def test_ring_as_custom_collective_equals_the_built_in_ring(kit, tmp_path):
    prefix = _write_ring(kit, tmp_path)
    builtin = kit.run(_workload(kit), _system(kit, tmp_path, None), tmp_path)
    custom = kit.run(_workload(kit), _system(kit, tmp_path, prefix), tmp_path)
    # the spec's ring: (2P-1) endpoint delays, 2(P-1) steps of net(m), P-1 reductions
    net = kit.net(M, 1, 500, 50)
    ring = (2 * P - 1) * 1000 + 2 * (P - 1) * net + (P - 1) * 3000
    assert [r["finish_ns"] for r in builtin.ranks] == [7000 + ring + 2000] * P
    assert [r["finish_ns"] for r in custom.ranks] == [r["finish_ns"] for r in builtin.ranks]
    assert any("custom implementation" in n for n in custom.notes)
    st = custom.summary["collectives"][0]
    assert st["phases"] == [f"custom all-reduce ({prefix})"] and st["max_ns"] == ring


def test_a_different_algorithm_gives_other_cycles(kit, tmp_path):
    """The ET decides: the same ring without its reductions is 3 x 3 us faster."""
    prefix = _write_ring(kit, tmp_path, steps_with_reduction=0)
    builtin = kit.run(_workload(kit), _system(kit, tmp_path, None), tmp_path)
    custom = kit.run(_workload(kit), _system(kit, tmp_path, prefix), tmp_path)
    assert custom.ranks[0]["finish_ns"] == builtin.ranks[0]["finish_ns"] - (P - 1) * 3000


def test_custom_keys_are_read_and_checked(kit, tmp_path):
    prefix = _write_ring(kit, tmp_path)
    path = tmp_path / "system.json"
    path.write_text(json.dumps({"preferred-dataset-splits": 1, "scheduling-policy": "LIFO",
                                "collective-optimization": "baseline", "local-mem-bw": 50,
                                "all-reduce-implementation": ["ring"],
                                "all-reduce-implementation-chakra": ["ring/ar"]}))
    sd = load_system(str(path))
    assert sd.custom_implementations == {"all-reduce": prefix}  # relative to the file
    assert not any("not an ASTRA-sim system key" in w for w in sd.warnings)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"preferred-dataset-splits": 1, "all-reduce-implementation-chakra": ["nope/x"]}))
    with pytest.raises(ConfigError, match=r"no file .*nope/x\.0\.et"):
        load_system(str(bad))


def test_a_custom_et_with_a_collective_is_refused(kit, tmp_path):
    kit.traces({r: [kit.coll(1, 64)] for r in range(P)}).write(tmp_path / "bad" / "ar")
    sysd = _system(kit, tmp_path, str(tmp_path / "bad" / "ar"))
    with pytest.raises(TraceFormatError, match="only sends, receives and compute"):
        kit.run(_workload(kit), sysd, tmp_path)
