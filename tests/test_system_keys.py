"""Every key of a system, network or memory file is one ASTRA-sim reads, or it is reported with
the closest known key (a warning; an error in strict mode).

The known keys are those ASTRA-sim's source reads (astra-sim/astra-sim 518bd51:
``Sys::initialize_sys``, ``CollectiveImplLookup::setup_collective_impl_from_config``; the
analytical network's ``NetworkParser``; the analytical remote memory's ``AnalyticalRemoteMemory``),
listed here by hand from that source; ASTRA-sim's own example files (chakra-simpy's
tests/data/astra_sim_example) must load without a report.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra_core import ConfigError
from chakra_core.system import load_system

ROOT = Path(__file__).resolve().parents[1]
ASTRA = ROOT / "plugins" / "chakra-simpy" / "tests" / "data" / "astra_sim_example" / "examples"

#: the keys Sys::initialize_sys reads, with a value of the type it reads
SYS_CC = {"scheduling-policy": "LIFO", "collective-optimization": "baseline", "local-reduction-delay": 1,
          "active-chunks-per-dimension": 1, "L": 0, "o": 0, "g": 0, "G": 0, "endpoint-delay": 10,
          "model-shared-bus": 0, "preferred-dataset-splits": 4, "peak-perf": 900, "local-mem-bw": 50,
          "roofline-enabled": 0, "trace-enabled": 0, "replay-only": 0, "track-local-mem": 0,
          "local-mem-trace-filename": "local_mem_trace"}
#: the native keys CollectiveImplLookup reads
NATIVE = {f"{k}-implementation": ["ring"] for k in ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")}
NETWORK = {"topology": ["Ring"], "npus_count": [8], "bandwidth": [50], "latency": [500]}
MEMORY = {"memory-type": "PER_NPU_MEMORY_EXPANSION", "remote-mem-latency": 100, "remote-mem-bw": 50,
          "num-nodes": 1, "num-npus-per-node": 8}

UNKNOWN = ("not an ASTRA-sim", "reads only")


def _write(tmp_path: Path, name: str, data: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if name.endswith(".json") else
                    "".join(f"{k}: {json.dumps(v)}\n" for k, v in data.items()))
    return path


def _reported(sd) -> list[str]:
    return [w for w in sd.warnings if any(u in w for u in UNKNOWN)]


def test_astra_sims_own_files_have_no_unknown_key(monkeypatch):
    monkeypatch.chdir(ASTRA.parent)
    for files in ((ASTRA / "system/native_collectives/HGX-H100-validated.json",
                   ASTRA / "network/analytical/HGX-H100-validated.yml",
                   ASTRA / "remote_memory/analytical/no_memory_expansion.json"),
                  (ASTRA / "system/custom_collectives/custom_collective.json",
                   ASTRA / "network/analytical/Ring_8npus.yml")):
        sd = load_system(*files)
        assert _reported(sd) == [], sd.warnings


def test_every_key_astra_sim_reads_is_known(tmp_path):
    et = tmp_path / "ar.0.et"
    et.write_bytes((ASTRA / "system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce.0.et")
                   .read_bytes())
    custom = {f"{k}-implementation-custom": [str(tmp_path / "ar")]
              for k in ("all-to-all", "all-gather", "reduce-scatter", "all-reduce")}
    per_node = _write(tmp_path, "per_node.yaml", {"7": str(tmp_path / "ar")})
    system = _write(tmp_path, "system.json", {**SYS_CC, **NATIVE, **custom,
                                              "per-node-custom-implementation": str(per_node)})
    sd = load_system(system, _write(tmp_path, "network.yml", NETWORK), _write(tmp_path, "memory.json", MEMORY),
                     strict=True)
    assert set(sd.custom_implementations) == {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"}
    # known, but not modelled: said so
    assert sd.warnings == [f"{system}: 'per-node-custom-implementation' ({str(per_node)!r}) is not modelled: "
                           "ASTRA-sim runs the collectives that file lists by their own ETs; here they run "
                           "as the others do"]


@pytest.mark.parametrize("name, data, key, closest", [
    ("system.json", {**SYS_CC, "all-reduce-implementaton": ["ring"]}, "all-reduce-implementaton",
     "all-reduce-implementation"),
    ("system.json", {**SYS_CC, "active-chunk-per-dimension": 2}, "active-chunk-per-dimension",
     "active-chunks-per-dimension"),
    ("network.yml", {**NETWORK, "latencies": [1]}, "latencies", "latency"),
    ("memory.json", {**MEMORY, "remote-mem-bandwith": 5}, "remote-mem-bandwith", "remote-mem-bw"),
])
def test_a_misspelt_key_is_named_with_the_closest_known_one(tmp_path, monkeypatch, name, data, key, closest):
    path = _write(tmp_path, name, data)
    what = {"system.json": "system", "network.yml": "network", "memory.json": "memory"}[name]
    sd = load_system(path)
    assert _reported(sd) == [f"{path}: key {key!r} is ignored: not an ASTRA-sim {what} key "
                             f"(did you mean {closest!r}?)"]
    with pytest.raises(ConfigError) as e:
        load_system(path, strict=True)
    assert str(e.value) == (f"{path}:key {key!r}: not an ASTRA-sim {what} key (did you mean {closest!r}?); "
                            "unknown keys are errors in strict mode (CHAKRA_STRICT_KEYS)")
    monkeypatch.setenv("CHAKRA_STRICT_KEYS", "1")
    with pytest.raises(ConfigError, match=f"key {key!r}"):
        load_system(path)
    monkeypatch.setenv("CHAKRA_STRICT_KEYS", "0")
    assert _reported(load_system(path))
    monkeypatch.setenv("CHAKRA_STRICT_KEYS", "maybe")
    with pytest.raises(ConfigError, match="CHAKRA_STRICT_KEYS must be 1 or 0"):
        load_system(path)


def test_the_other_separator_is_read_but_reported(tmp_path):
    """ASTRA-sim reads exact names: ``endpoint_delay`` in system.json is ignored there, read here."""
    data = {k: v for k, v in SYS_CC.items() if k != "endpoint-delay"}
    path = _write(tmp_path, "system.json", {**data, "endpoint_delay": 20})
    net = _write(tmp_path, "network.yml", {("npus-count" if k == "npus_count" else k): v for k, v in NETWORK.items()})
    sd = load_system(path, net)
    assert sd.endpoint_delay == 20 and sd.npus == 8
    assert _reported(sd) == [
        f"{path}: key 'endpoint_delay' is read here as 'endpoint-delay', but ASTRA-sim ignores it: it reads "
        "only 'endpoint-delay'",
        f"{net}: key 'npus-count' is read here as 'npus_count', but ASTRA-sim ignores it: it reads only "
        "'npus_count'"]
    with pytest.raises(ConfigError, match="key 'endpoint_delay': ASTRA-sim reads only 'endpoint-delay'; "
                                          "unknown keys are errors in strict mode"):
        load_system(path, net, strict=True)


def test_a_misspelt_required_key_is_pointed_at(tmp_path):
    net = _write(tmp_path, "network.yml", {("npus_cout" if k == "npus_count" else k): v for k, v in NETWORK.items()})
    with pytest.raises(ConfigError) as e:
        load_system(None, net)
    assert str(e.value) == (f"{net}:key 'npus_count': network key 'npus_count' is missing (one entry per "
                            "dimension) (the file has 'npus_cout': misspelt?)")
    mem = _write(tmp_path, "memory.json", {"memory-typ": "NO_MEMORY_EXPANSION"})
    with pytest.raises(ConfigError, match=r"unknown keys \['memory-typ'\] \(did you mean 'memory-type'\?\)"):
        load_system(memory=mem)


def test_our_yaml_refuses_unknown_keys_everywhere(tmp_path):
    """Our YAML (either separator) is checked as before: an unknown key is always an error."""
    bad = _write(tmp_path, "s.yaml", {"remote-memory": {"memory-type": "NO_MEMORY_EXPANSION", "remote_mem_bandwidth": 1}})
    with pytest.raises(ConfigError) as e:
        load_system(bad)
    assert str(e.value) == (f"{bad}:key 'remote-memory.remote_mem_bandwidth': unknown remote-memory key (did you "
                            "mean 'remote-mem-bw'?); accepted: memory-type, remote-mem-latency, remote-mem-bw, "
                            "num-nodes, num-npus-per-node")
    ok = _write(tmp_path, "ok.yaml", {"remote_memory": {"memory_type": "MEMORY_POOL", "remote_mem_bw": 5}})
    assert load_system(ok).remote_memory.remote_mem_bw == 5


def test_our_yaml_writes_the_current_custom_key(tmp_path):
    prefix = ASTRA / "system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce"
    sd = load_system({"all-reduce-implementation-chakra": str(prefix)})
    data = sd.to_dict()
    assert data["all_reduce_implementation_custom"] == str(prefix) and "all_reduce_implementation_chakra" not in data
    assert load_system(data).custom_implementations == {"all-reduce": str(prefix)}
    assert sd.warnings == []  # the old spelling is only worth a warning in ASTRA-sim's own files
