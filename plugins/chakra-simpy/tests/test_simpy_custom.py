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
import shutil
from pathlib import Path

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


@pytest.mark.parametrize("congestion", ["unaware", "aware"])
def test_a_part_that_ends_before_the_last_member_issues_is_held_until_it_does(kit, tmp_path, congestion):
    """A custom all-reduce on 2 ranks whose rank 1 only sends 1,000 bytes to rank 0, which
    receives them and computes 5 us; two of them back to back.  Rank 1 ends the first after the
    send, issues the second and ends its part again before rank 0 issues it: rank 1 is held until
    then (an internal error before: a negative delay).  Rank 0: the first message at net(1000),
    5 us, the second (long arrived) at its issue, 5 us."""
    TraceSet([r for r in kit.traces({0: [kit.p2p(1, False, 1, 1000), kit.comp(2, 5, deps=[1])],
                                     1: [kit.p2p(1, True, 0, 1000)]})]).write(tmp_path / "cc" / "ar")
    sysd = kit.system([("Ring", 2, 50, 500)], **{"preferred-dataset-splits": 1})
    sysd["all-reduce-implementation-custom"] = [str(tmp_path / "cc" / "ar")]
    work = kit.same(2, lambda: [kit.coll(1, 4096), kit.coll(2, 4096, deps=[1])])
    res = kit.run(work, sysd, tmp_path, congestion=congestion)
    first = kit.net(1000, 1, 500, 50) + 5000
    assert [r["finish_ns"] for r in res.ranks] == [first + 5000, first]
    assert any("ended when it did" in n for n in res.notes)


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



# ASTRA-sim's own custom-collective example, its files as they lie in its repository (see
# data/astra_sim_example/README.md): run from the repository's root, as ASTRA-sim's run script
# does, its relative ET prefix is found from the working directory.
EXAMPLE = Path(__file__).resolve().parent / "data" / "astra_sim_example"
WORKLOAD = "examples/workload/microbenchmarks/all_reduce/8npus_1MB/all_reduce"
SYSTEM = "examples/system/custom_collectives/custom_collective.json"
NETWORK = "examples/network/analytical/Ring_8npus.yml"
MEMORY = "examples/remote_memory/analytical/no_memory_expansion.json"
#: ASTRA-sim's analytical binary on these files: every rank finishes at 90,174 cycles (ns)
ASTRA_SIM_CYCLES = 90_174
#: the built-in ring on the same network (what the run gave while the current key was ignored)
BUILT_IN_RING = 96_365
PREFIX = "examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce"


def _simulate(chakra_cli, system, *more: str) -> tuple[int, str, str]:
    return chakra_cli("simulate", WORKLOAD, "--system", system, "--network", NETWORK, "--memory", MEMORY, *more)


def _finish(out: str) -> list[int]:
    return [r["finish_ns"] for r in json.loads(out)["ranks"]]


def _variant(tmp_path, change) -> Path:
    """The example's system.json with ``change`` applied, written under ``tmp_path``."""
    data = json.loads((EXAMPLE / SYSTEM).read_text())
    change(data)
    path = tmp_path / "system.json"
    path.write_text(json.dumps(data))
    return path


def test_astra_sims_custom_collective_example_from_its_root(chakra_cli, monkeypatch):
    monkeypatch.chdir(EXAMPLE)
    status, out, err = _simulate(chakra_cli, SYSTEM, "--json")
    assert status == 0, err
    assert _finish(out) == [ASTRA_SIM_CYCLES] * 8
    notes = json.loads(out)["notes"]
    assert not any("not an ASTRA-sim" in n for n in notes)
    assert any(f"custom implementation (all-reduce: {EXAMPLE / PREFIX})" in n for n in notes)


def test_the_old_spelling_gives_the_same_cycles_and_says_it_is_old(chakra_cli, monkeypatch, tmp_path):
    def rename(d):
        d["all-reduce-implementation-chakra"] = d.pop("all-reduce-implementation-custom")

    monkeypatch.chdir(EXAMPLE)
    status, out, err = _simulate(chakra_cli, _variant(tmp_path, rename), "--json")
    assert status == 0, err
    assert _finish(out) == [ASTRA_SIM_CYCLES] * 8
    assert any("spelling before June 2025" in n and "all-reduce-implementation-custom" in n
               for n in json.loads(out)["notes"])


def test_without_the_custom_key_the_built_in_ring_runs(chakra_cli, monkeypatch, tmp_path):
    def built_in(d):
        del d["all-reduce-implementation-custom"]
        d["all-reduce-implementation"] = ["ring"]

    monkeypatch.chdir(EXAMPLE)
    status, out, err = _simulate(chakra_cli, _variant(tmp_path, built_in), "--json")
    assert status == 0, err
    assert _finish(out) == [BUILT_IN_RING] * 8


def test_a_misspelt_key_is_named_with_the_closest_known_one(chakra_cli, monkeypatch, tmp_path):
    def misspell(d):
        d["all-reduce-implementaton-custom"] = d.pop("all-reduce-implementation-custom")

    monkeypatch.chdir(EXAMPLE)
    system = _variant(tmp_path, misspell)
    warning = (f"{system}: key 'all-reduce-implementaton-custom' is ignored: not an ASTRA-sim system key "
               "(did you mean 'all-reduce-implementation-custom'?)")
    status, out, err = _simulate(chakra_cli, system)
    assert status == 0, err
    assert f"note: {warning}" in out.splitlines()
    status, out, err = _simulate(chakra_cli, system, "--json")
    assert warning in json.loads(out)["notes"]
    assert _finish(out) == [BUILT_IN_RING] * 8  # as ASTRA-sim, which ignores the key
    monkeypatch.setenv("CHAKRA_STRICT_KEYS", "1")
    status, out, err = _simulate(chakra_cli, system)
    assert status == 2 and out == ""
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert f"{system}:key 'all-reduce-implementaton-custom'" in err
    assert "did you mean 'all-reduce-implementation-custom'?" in err and "CHAKRA_STRICT_KEYS" in err


def test_a_relative_prefix_is_looked_for_in_the_working_directory_then_beside_the_file(
        chakra_cli, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    status, out, err = chakra_cli("simulate", EXAMPLE / WORKLOAD, "--system", EXAMPLE / SYSTEM,
                                  "--network", EXAMPLE / NETWORK)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    folder = EXAMPLE / SYSTEM.rsplit("/", 1)[0]
    assert err.strip() == (
        f"chakra simulate: error: {EXAMPLE / SYSTEM}:key 'all-reduce-implementation-custom': no file "
        f"{PREFIX}.0.et from the working directory ({tmp_path / PREFIX}.0.et) nor from the folder of "
        f"custom_collective.json ({folder / PREFIX}.0.et): the custom all-reduce needs one Chakra ET "
        "per rank, PREFIX.<rank>.et")
    # named from the system file's folder, the ETs are found from any working directory
    beside = tmp_path / "elsewhere"
    (beside / "ets").mkdir(parents=True)
    for r in range(8):
        shutil.copyfile(f"{EXAMPLE / PREFIX}.{r}.et", beside / "ets" / f"ar.{r}.et")
    system = _variant(beside, lambda d: d.update({"all-reduce-implementation-custom": ["ets/ar"]}))
    assert load_system(system).custom_implementations == {"all-reduce": str(beside / "ets" / "ar")}
    # ... but the working directory comes first, as in ASTRA-sim
    (tmp_path / "ets").mkdir()
    shutil.copyfile(beside / "ets" / "ar.0.et", tmp_path / "ets" / "ar.0.et")
    assert load_system(system).custom_implementations == {"all-reduce": str(tmp_path / "ets" / "ar")}


def test_both_spellings_must_agree():
    both = {"preferred-dataset-splits": 1, "all-reduce-implementation-custom": [str(EXAMPLE / PREFIX)],
            "all-reduce-implementation-chakra": [str(EXAMPLE / PREFIX)]}
    assert load_system(both).custom_implementations == {"all-reduce": str(EXAMPLE / PREFIX)}
    both["all-reduce-implementation-chakra"] = ["elsewhere/x"]
    with pytest.raises(ConfigError, match="'all-reduce-implementation-chakra': names another ET than "
                                          "'all-reduce-implementation-custom'"):
        load_system(both)


def _edited_example(chakra_edited_rank, tmp_path, edit) -> Path:
    """The example's custom all-reduce copied to ``tmp_path/cc`` with rank 3's file edited by
    ``edit(nodes)`` (through its JSON form); returns a system.json naming it."""
    (tmp_path / "cc").mkdir()
    for r in range(8):
        shutil.copyfile(f"{EXAMPLE / PREFIX}.{r}.et", tmp_path / "cc" / f"ar.{r}.et")
    chakra_edited_rank(f"{EXAMPLE / PREFIX}.3.et", edit, tmp_path / "cc" / "ar.3.et")
    return _variant(tmp_path, lambda d: d.update({"all-reduce-implementation-custom": [str(tmp_path / "cc" / "ar")]}))


def _send_to_99(nodes: list[dict]) -> None:
    """Node 3 (a send) sends to rank 99, outside the 8 NPUs."""
    for attr in nodes[3]["attr"]:
        if attr["name"] == "comm_dst":
            attr["int32_val"] = 99


@pytest.mark.parametrize("edit, says", [
    (lambda nodes: nodes[0].update(data_deps=["4"]), "node 1: the custom all-reduce (8 ranks): [cycle] dependency "
                                                     "cycle: 1 -> 2 -> 3 -> 4 -> 0 -> 1"),
    (_send_to_99, "node 3: the custom all-reduce (8 ranks): [bad-peer] comm_dst = 99 (rank 3 of 8)"),
], ids=["cycle", "peer"])
def test_a_bad_custom_et_is_reported_in_its_own_file(edit, says, chakra_cli, chakra_edited_rank, monkeypatch,
                                                     tmp_path):
    """A cycle in rank 3's file is that file's error (not rank 4's wait for a message rank 3's
    stuck nodes never send); the checks are chakra_core.custom_collective's."""
    system = _edited_example(chakra_edited_rank, tmp_path, edit)
    monkeypatch.chdir(EXAMPLE)
    status, out, err = _simulate(chakra_cli, system)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.strip() == f"chakra simulate: error: {tmp_path / 'cc' / 'ar.3.et'}:{says}"
