"""A new collective algorithm is one module plus its registration: a toy one, defined here,
registered through the registry and picked by a system's implementation list, times a
simulation by its own closed form (lockstep), its own per-member phase (staggered members) and
its own messages (congestion-aware)."""

from __future__ import annotations

import pytest
import yaml

import chakra_core
from chakra_core import ConfigError
from chakra_core.system import load_system
from chakra_simpy import algorithms
from chakra_simpy.algorithms.base import Algorithm, StepMessages, numbered
from chakra_simpy.backend import SimpyBackend
from chakra_simpy.formulas import link_net
from chakra_simpy.member_timing import Phase, Step

MIB = 1 << 20


class Relay(Algorithm):
    """Toy: every member sends the whole chunk once to the next member of its ring and is done
    one endpoint delay later than its message arrives: ``e + floor(L + d / b)`` (one hop)."""

    name = "toyRelay"

    def cost(self, kind, impl, p, link, d, e, local_mem_bw):
        dim, hops = link(1)
        return e + link_net((dim, hops), d)

    def member_phase(self, kind, data, lay, queue, e, local_mem_bw, turn):
        members = range(len(lay.index))
        pred = [lay.offset(j, -1) for j in members]
        nets = [link_net(lay.link(j, -1), data) for j in members]
        return Phase(queue, e, [Step(pred, nets, 0)])

    def messages(self, kind, data, lay, e, local_mem_bw):
        return StepMessages([[numbered(e, [((lay.offset(j, 1),), (lay.offset(j, -1),), data, 0)])
                              for j in range(len(lay.index))]])


@pytest.fixture
def relay(kit):
    """The toy registered, and a 4-NPU Ring whose system file names the toy as its all-reduce
    implementation."""
    algorithms.register(Relay())
    system = kit.system([("Ring", 4, 50, 500)])
    system["all-reduce-implementation"] = ["toyRelay"]
    yield system
    algorithms.REGISTRY.pop("toyRelay")


def test_a_registered_toy_algorithm_times_the_simulation(kit, tmp_path, relay):
    chunk = MIB // 4  # preferred-dataset-splits 4
    per_chunk = 10 + int(500 + chunk / kit.bpns(50))
    res = kit.run(kit.same(4, lambda: [kit.coll(1, MIB)]), relay, tmp_path)
    assert [r["finish_ns"] for r in res.ranks] == [4 * per_chunk] * 4
    assert res.summary["collectives"][0]["phases"] == ["all-reduce on dim 0 (toyRelay)"]
    aware = kit.run(kit.same(4, lambda: [kit.coll(1, MIB)]), relay, tmp_path, congestion="aware")
    assert [r["finish_ns"] for r in aware.ranks] == [4 * per_chunk] * 4


def test_a_toy_algorithm_times_staggered_members_by_its_own_phase(kit, tmp_path, relay):
    # rank 2 issues 40 us late; no barrier: each member's chunk waits for its predecessor's
    # message of the same chunk, and a member's chunks go one after the other
    net = int(500 + (MIB // 4) / kit.bpns(50))
    issue = [0, 0, 40_000, 0]
    done = list(issue)
    for _chunk in range(4):
        send = [t + 10 for t in done]
        done = [max(send[(j - 1) % 4] + net, send[j]) for j in range(4)]

    def make(r):
        return [kit.coll(1, MIB)] if r != 2 else [kit.comp(1, 40), kit.coll(2, MIB, deps=[1])]

    res = kit.run(kit.traces([make(r) for r in range(4)]), relay, tmp_path)
    assert [r["finish_ns"] for r in res.ranks] == done
    assert len(set(done)) == 4  # every member finishes at its own time
    assert any("timed per rank" in n for n in res.notes)


def test_only_a_backend_that_models_the_toy_accepts_a_system_naming_it(kit, tmp_path, relay):
    path = tmp_path / "system.yaml"
    path.write_text(yaml.safe_dump(relay))
    with pytest.raises(ConfigError, match="unknown implementation 'toyRelay'"):
        load_system(path)  # ASTRA-sim's names only: what the exporter accepts
    assert "toyRelay" in SimpyBackend().algorithms()
    assert load_system(path, algorithms=SimpyBackend().algorithms()).all_reduce_implementation == ("toyRelay",)


def test_a_pipeline_names_the_toy_in_its_inline_system(kit, tmp_path, relay):
    kit.same(4, lambda: [kit.coll(1, MIB)]).write(tmp_path / "et" / "trace")
    per_chunk = 10 + int(500 + (MIB // 4) / kit.bpns(50))
    pipeline = {"input": {"format": "et", "paths": [str(tmp_path / "et")]}, "system": relay,
                "backends": [{"name": "simpy", "output": str(tmp_path / "sim")}]}
    out = chakra_core.run_pipeline(pipeline)
    assert out["backends"][0]["result"]["summary"]["finish_ns"] == 4 * per_chunk
    with pytest.raises(ConfigError, match="unknown implementation 'toyRelay'"):
        chakra_core.load_pipeline(dict(pipeline, backends=[{"name": "et", "output": str(tmp_path / "x")}]))


def test_an_algorithm_taken_out_of_the_registry_is_no_longer_found():
    algorithms.register(Relay())
    try:
        found = algorithms.find("toyRelay")
        assert found is not None and found.algorithm.name == "toyRelay" and algorithms.find("toyRelay") is found
    finally:
        algorithms.REGISTRY.pop("toyRelay")
    assert algorithms.find("toyRelay") is None
    algorithms.register(Relay())  # registered again: the new one is found
    try:
        assert algorithms.find("toyRelay").algorithm is algorithms.REGISTRY["toyRelay"]
    finally:
        algorithms.REGISTRY.pop("toyRelay")
