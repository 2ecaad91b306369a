"""The system description: both file formats, ASTRA-sim's defaults and pitfalls, sniffing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra_core.base._errors import ConfigError
from chakra_core.system import (
    Dimension,
    RemoteMemory,
    SystemDescription,
    algorithm_base,
    load_system,
)

EX = Path(__file__).resolve().parents[1] / "examples" / "system"


def _json(tmp_path: Path, name: str, data) -> str:
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return str(p)


def _yaml(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_astra_files_and_our_yaml_describe_the_same_machine():
    astra = load_system(EX / "astra/system.json", EX / "astra/network.yml", EX / "astra/memory.json",
                        EX / "astra/groups.json")
    ours = load_system(EX / "system.yaml")
    assert astra.dimensions == ours.dimensions == (Dimension("Ring", 8, 50.0, 500.0),)
    for sd in (astra, ours):
        assert sd.all_reduce_implementation == ("ring",)
        assert sd.preferred_dataset_splits == 4
        assert sd.active_chunks_per_dimension == 1
        assert sd.endpoint_delay == 10
        assert sd.local_mem_bw == 50.0
        assert sd.collective_optimization == "localBWAware"
        assert sd.compute_model == "replay"
        assert sd.remote_memory == RemoteMemory()
        assert sd.npus == 8
    assert astra.comm_groups == {"1": (0, 1, 2, 3), "2": (4, 5, 6, 7)}
    assert astra.sources["network"].endswith("network.yml")
    assert astra.warnings == []


def test_files_are_recognised_by_content_not_by_argument(tmp_path):
    sd = load_system(network=EX / "astra/system.json", system=EX / "astra/network.yml",
                     memory=EX / "astra/groups.json")
    assert sd.npus == 8 and sd.comm_groups["2"] == (4, 5, 6, 7)
    assert sd.sources["system"].endswith("system.json")


def test_bandwidth_units_and_hops():
    d = Dimension("Switch", 4, 50, 500)
    assert d.bytes_per_ns == 50 * 2**30 / 1e9
    assert d.hops == 2 and Dimension("Ring", 4, 1, 1).hops == 1


def test_coordinates_dimension_zero_innermost():
    sd = SystemDescription(dimensions=(Dimension("Ring", 4, 1, 1), Dimension("Switch", 3, 1, 1)))
    assert sd.npus == 12
    assert sd.coords(7) == (3, 1)
    assert all(sd.rank_of(sd.coords(r)) == r for r in range(12))
    # outside the network: an error, not coordinates of another rank (12 read as rank 0's)
    for rank in (12, -1):
        with pytest.raises(ConfigError, match=f"rank {rank} is outside the network's 12 NPUs"):
            sd.coords(rank)
    for coords in ((4, 0), (0, -1), (1,), (0, 0, 0)):
        with pytest.raises(ConfigError, match="outside the network's dimensions"):
            sd.rank_of(coords)


def test_astra_defaults(tmp_path):
    sys_json = _json(tmp_path, "s.json", {"preferred-dataset-splits": 2, "all-reduce-implementation": ["ring"]})
    sd = load_system(sys_json)
    assert sd.endpoint_delay == 10 and sd.active_chunks_per_dimension == 1
    assert sd.local_mem_bw == 0.0 and sd.collective_optimization == "baseline"
    text = " ".join(sd.warnings)
    assert "scheduling-policy" in text and "collective-optimization" in text and "local-mem-bw" in text


@pytest.mark.parametrize("data, key, words", [
    ({"endpoint-delay": 10}, "preferred-dataset-splits", "divides by zero"),
    ({"preferred-dataset-splits": 4, "endpoint-delay": 0}, "endpoint-delay", "aborts"),
    ({"preferred-dataset-splits": 4, "all-gather-implementation": ["doubleBinaryTree"]},
     "all-gather-implementation", "all-reduce only"),
    ({"preferred-dataset-splits": 4, "all-reduce-implementation": ["Ring"]}, "all-reduce-implementation",
     "unknown implementation"),
    ({"preferred-dataset-splits": 4, "scheduling-policy": "lifo"}, "scheduling-policy", "did you mean 'LIFO'"),
    ({"preferred-dataset-splits": 4, "roofline-enabled": 1, "local-mem-bw": 50}, "peak-perf", "TFLOPS"),
])
def test_astra_system_pitfalls_name_file_and_key(tmp_path, data, key, words):
    path = _json(tmp_path, "system.json", data)
    with pytest.raises(ConfigError) as e:
        load_system(path)
    assert e.value.where == path and key in e.value.location and words in str(e.value)


def test_network_pitfalls(tmp_path):
    bad = _yaml(tmp_path, "n.yml", "topology: [Ring, Ring]\nnpus_count: [4]\nbandwidth: [1, 1]\nlatency: [1, 1]\n")
    with pytest.raises(ConfigError, match="one entry per dimension") as e:
        load_system(network=bad)
    assert "npus_count" in e.value.location
    one = _yaml(tmp_path, "n1.yml", "topology: [Ring]\nnpus_count: [1]\nbandwidth: [1]\nlatency: [1]\n")
    with pytest.raises(ConfigError, match="more than one NPU"):
        load_system(network=one)
    topo = _yaml(tmp_path, "n2.yml", "topology: [Torus]\nnpus_count: [4]\nbandwidth: [1]\nlatency: [1]\n")
    with pytest.raises(ConfigError, match="Ring, FullyConnected, Switch"):
        load_system(network=topo)


def test_comm_group_pitfalls(tmp_path):
    with pytest.raises(ConfigError, match="number groups from 1"):
        load_system(comm_groups=_json(tmp_path, "g.json", {"0": [0, 1]}))
    with pytest.raises(ConfigError, match="rank 9 but the network has 8"):
        load_system(EX / "astra/network.yml", comm_groups=_json(tmp_path, "g2.json", {"1": [0, 9]}))
    sd = load_system(comm_groups=_json(tmp_path, "g3.json", {"1": {"ranks": [2, 3], "dimensions": [2]}}))
    assert sd.comm_groups == {"1": (2, 3)}
    # a key that is not a number: the file was called "not a system description", naming the
    # good keys among the unknown ones
    for i, groups in enumerate(({"1": [0, 1], "foo": [2, 3]}, {"1": [0, 1], "1 ": [2, 3]}, {"": [0, 1]},
                                {"x": {"ranks": [0, 1]}})):
        bad = next(k for k in groups if not k.isdigit())
        with pytest.raises(ConfigError, match=f"group key {bad!r} must be a whole number") as e:
            load_system(comm_groups=_json(tmp_path, f"k{i}.json", groups))
        assert e.value.location == f"key {bad!r}"


def test_short_implementation_list_warns(tmp_path):
    sys_json = _json(tmp_path, "s.json", {
        "preferred-dataset-splits": 4, "scheduling-policy": "LIFO", "collective-optimization": "baseline",
        "local-mem-bw": 50, "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring", "ring"],
        "reduce-scatter-implementation": ["ring", "ring"], "all-to-all-implementation": ["ring", "ring"]})
    net = _yaml(tmp_path, "n.yml", "topology: [Ring, Switch]\nnpus_count: [4, 2]\nbandwidth: [1, 1]\nlatency: [1, 1]\n")
    sd = load_system(sys_json, net)
    assert len(sd.warnings) == 1 and "first 1 dimension" in sd.warnings[0]


def test_memory_models(tmp_path):
    sd = load_system(memory=_json(tmp_path, "m.json", {"memory-type": "MEMORY_POOL", "remote-mem-latency": 100,
                                                        "remote-mem-bw": 10}))
    assert sd.remote_memory == RemoteMemory("MEMORY_POOL", 100.0, 10.0)
    with pytest.raises(ConfigError, match="remote-mem-bw"):
        load_system(memory=_json(tmp_path, "m2.json", {"memory-type": "PER_NPU_MEMORY_EXPANSION"}))
    with pytest.raises(ConfigError, match="num-npus-per-node"):
        load_system(memory=_json(tmp_path, "m3.json", {"memory-type": "PER_NODE_MEMORY_EXPANSION",
                                                       "remote-mem-bw": 1}))


def test_our_yaml_roofline_and_unknown_keys(tmp_path):
    sd = load_system(EX / "system_2d.yaml")
    assert sd.compute_model == "roofline" and sd.peak_perf == 400 and sd.local_mem_bw == 1600
    assert sd.npus == 1024 and sd.all_reduce_implementation == ("direct", "ring")
    bad = _yaml(tmp_path, "s.yaml", "endpoint-dela: 5\n")
    with pytest.raises(ConfigError, match="did you mean 'endpoint-delay'") as e:
        load_system(bad)
    assert e.value.where == bad
    with pytest.raises(ConfigError, match="b.yaml:line 3: malformed YAML"):
        load_system(_yaml(tmp_path, "b.yaml", "network:\n  - [\n"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_system(tmp_path / "missing.yaml")


def test_our_yaml_round_trips_through_to_dict():
    sd = load_system(EX / "system_2d.yaml")
    again = load_system(sd.to_dict())
    assert again.dimensions == sd.dimensions and again.to_dict() == sd.to_dict()


def test_default_network_and_two_system_files_rejected(tmp_path):
    sd = load_system()
    assert sd.dimensions == () and sd.npus == 0
    d = sd.with_default_network(16)
    assert d.npus == 16 and d.all_to_all_implementation == ("ring",)
    with pytest.raises(ConfigError, match="two system descriptions"):
        load_system(EX / "system.yaml", EX / "astra/system.json")


def test_algorithm_names():
    assert algorithm_base("direct8") == ("direct", 8)
    assert algorithm_base("oneDirect") == ("direct", None)
    assert algorithm_base("oneHalvingDoubling") == ("halvingDoubling", None)
    assert algorithm_base("doubleBinaryTree") == ("doubleBinaryTree", None)


def test_one_implementation_name_means_every_dimension(tmp_path):
    text = ("all-reduce-implementation: direct\nall-gather-implementation: [ring]\n"
            "network:\n  - {topology: Ring, npus_count: 4, bandwidth: 1, latency: 1}\n"
            "  - {topology: Switch, npus_count: 2, bandwidth: 1, latency: 1}\n")
    sd = load_system(_yaml(tmp_path, "s.yaml", text))
    assert sd.all_reduce_implementation == ("direct", "direct")
    assert sd.all_gather_implementation == ("ring",)  # a list is taken as given (ASTRA-sim's rule)
    assert any("all-gather-implementation' lists 1 of 2" in w for w in sd.warnings)
    assert not any("all-reduce" in w for w in sd.warnings)


def test_our_yaml_in_separate_files(tmp_path):
    sysf = _yaml(tmp_path, "s.yaml", "all-reduce-implementation: halvingDoubling\nendpoint-delay: 20\n")
    netf = _yaml(tmp_path, "n.yaml", "network:\n  - {topology: Switch, npus: 4, bandwidth: 10, latency: 5}\n"
                                     "  - {topology: Ring, npus: 2, bandwidth: 10, latency: 5}\n")
    sd = load_system(sysf, netf)
    assert sd.npus == 8 and sd.endpoint_delay == 20
    assert sd.all_reduce_implementation == ("halvingDoubling", "halvingDoubling")
    assert sd.sources == {"system": sysf, "network": netf}
    with pytest.raises(ConfigError, match="two network descriptions"):
        load_system(netf, EX / "astra/network.yml")


@pytest.mark.parametrize("text, key", [
    ("network:\n  - {topology: Ring, npus_count: 8, bandwidth: .nan, latency: 500}\n", "bandwidth"),
    ("network:\n  - {topology: Ring, npus_count: 8, bandwidth: 50, latency: .inf}\n", "latency"),
    ("local-mem-bw: .inf\n", "local-mem-bw"),
    ("compute: {model: roofline, peak-perf: .inf, local-mem-bw: 50}\n", "peak-perf"),
])
def test_non_finite_numbers_are_refused(tmp_path, text, key):
    # YAML spells infinity and NaN; a simulator would otherwise fail deep inside with a traceback
    path = _yaml(tmp_path, "s.yaml", text)
    with pytest.raises(ConfigError, match="finite number") as e:
        load_system(path)
    assert key in e.value.location


def test_our_yaml_defaults_unnamed_implementations_to_ring_everywhere(tmp_path):
    # docs/system.md: our YAML's default is ring on every dimension, so leaving a kind out is not
    # ASTRA-sim's "short list" pitfall (it used to warn "lists 0 of 2 dimensions")
    text = ("all-reduce-implementation: direct\n"
            "network:\n  - {topology: Ring, npus_count: 4, bandwidth: 1, latency: 1}\n"
            "  - {topology: Switch, npus_count: 2, bandwidth: 1, latency: 1}\n")
    sd = load_system(_yaml(tmp_path, "s.yaml", text))
    assert sd.all_reduce_implementation == ("direct", "direct")
    assert sd.all_gather_implementation == sd.all_to_all_implementation == ("ring", "ring")
    assert sd.warnings == []
    # the same with the network in a file of its own
    sysf = _yaml(tmp_path, "s2.yaml", "endpoint-delay: 20\n")
    sd = load_system(sysf, EX / "astra/network.yml")
    assert sd.reduce_scatter_implementation == ("ring",) and sd.warnings == []
    # ASTRA-sim's system.json has no such default: the warning stays
    sys_json = _json(tmp_path, "s.json", {"preferred-dataset-splits": 4, "scheduling-policy": "LIFO",
                                          "collective-optimization": "baseline", "local-mem-bw": 50,
                                          "all-reduce-implementation": ["ring"]})
    sd = load_system(sys_json, EX / "astra/network.yml")
    assert any("'all-gather-implementation' lists 0 of 1" in w for w in sd.warnings)


def test_exponent_numbers_that_pyyaml_reads_as_strings(tmp_path):
    # YAML 1.1 (PyYAML) wants a dot in an exponent float: 1e-30 arrives as the string '1e-30'
    import yaml

    text = ("network:\n  - {topology: Ring, npus_count: 8e0, bandwidth: 1e-3, latency: 5E2}\n"
            "local-mem-bw: 5e1\nendpoint-delay: 1e1\n")
    assert yaml.safe_load(text)["local-mem-bw"] == "5e1"
    sd = load_system(_yaml(tmp_path, "s.yaml", text))
    assert sd.dimensions == (Dimension("Ring", 8, 1e-3, 500.0),)
    assert sd.local_mem_bw == 50.0 and sd.endpoint_delay == 10 and isinstance(sd.endpoint_delay, int)
    with pytest.raises(ConfigError, match="finite number") as e:
        load_system(_yaml(tmp_path, "b.yaml", "local-mem-bw: 1e400\n"))
    assert e.value.location == "key 'local-mem-bw'"
    with pytest.raises(ConfigError) as e:
        load_system(_yaml(tmp_path, "c.yaml", "local-mem-bw: fifty\n"))
    assert str(e.value) == (f"{tmp_path / 'c.yaml'}:key 'local-mem-bw': wants a number, got 'fifty' "
                            "(write numbers unquoted, e.g. 50, 2.5 or 1.0e-3)")


def test_system_options_are_declared_once_and_load_the_files():
    from chakra_core import get_host
    from chakra_core.system import SYSTEM_OPTIONS, load_system, system_from_options

    for name in ("simpy", "astrasim"):
        impl = get_host().registry.get("backend", name)
        assert {k: impl.options[k] for k in SYSTEM_OPTIONS} == SYSTEM_OPTIONS
    astra = EX / "astra"
    opts = {"system": str(astra / "system.json"), "network": str(astra / "network.yml"), "memory": None}
    assert system_from_options(opts) == load_system(astra / "system.json", astra / "network.yml")


@pytest.mark.parametrize("text, key", [
    ("network:\n  - {topology: Ring, npus_count: 8, bandwidth: 1.0e-300, latency: 500}\n", "network[0].bandwidth"),
    ("local-mem-bw: 1.0e-300\n", "local-mem-bw"),
])
def test_bandwidth_too_low_to_simulate_names_the_file_and_key(tmp_path, text, key):
    """A bandwidth at which one byte takes past 2**63-1 ns failed in the simulator, naming a trace node."""
    path = _yaml(tmp_path, "s.yaml", text)
    with pytest.raises(ConfigError, match="1e-300 GB/s is too low: one byte would take past 2\\*\\*63-1 ns") as e:
        load_system(system=path)
    assert e.value.where == path and e.value.location == f"key {key!r}"


@pytest.mark.parametrize("name, text, key", [
    ("s.yaml", "network:\n  - {topology: Ring, npus_count: 8, bandwidth: 50, latency: 1.0e+308}\n", "network[0].latency"),
    ("m.json", '{"memory-type": "PER_NPU_MEMORY_EXPANSION", "remote-mem-latency": 1e308}', "remote-mem-latency"),
])
def test_latency_past_the_clock_names_the_file_and_key(tmp_path, name, text, key):
    """A latency past 2**63-1 ns was taken, and the simulation failed at a trace node."""
    path = _yaml(tmp_path, name, text)
    with pytest.raises(ConfigError, match="1e\\+308 ns is past 2\\*\\*63-1 ns, the simulated clock's range") as e:
        load_system(**{"system" if name == "s.yaml" else "memory": path})
    assert e.value.where == path and e.value.location == f"key {key!r}"


def test_memory_bandwidth_too_low_to_simulate_names_the_key(tmp_path):
    path = _json(tmp_path, "m.json", {"memory-type": "PER_NPU_MEMORY_EXPANSION", "remote-mem-bw": 1e-300})
    with pytest.raises(ConfigError, match="too low") as e:
        load_system(memory=path)
    assert e.value.where == path and e.value.location == "key 'remote-mem-bw'"
