"""The ASTRA-sim output parser and the ``astrasim-run`` backend.

ASTRA-sim is not installed here, so its output is written by hand in the format of the spec
(../../shared/spec/astra-sim.md, "Output"), and the binary is replaced by a small fake script
that prints that format for every rank of the export it is given (documented below).
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from chakra_astrasim_runner import AstraSimRunner, binary_mode, find_binary, parse_output
from chakra_core import (
    ChakraError,
    CommType,
    ConfigError,
    GlobalMetadata,
    MemoryRank,
    Node,
    NodeType,
    TraceSet,
    set_attr,
)

# The spec's reference run (1 MiB all-reduce, Ring of 8, 117780 cycles), as spdlog prints it.
REFERENCE = "\n".join(
    [f"[2026-11-30 10:00:00.{r:03d}] [workload] [info] sys[{r}] finished, 117780 cycles, "
     f"exposed communication 117780 cycles." for r in range(8)]
    + [f"[2026-11-30 10:00:00.100] [statistics] [info] sys[{r}], Wall time: 117780" for r in range(8)]
    + [f"[2026-11-30 10:00:00.100] [statistics] [info] sys[{r}], Comm time: 117780" for r in range(8)]
    + ["[2026-11-30 10:00:00.100] [statistics] [info] sys[3], GPU time: 5000",
       "[2026-11-30 10:00:00.100] [statistics] [info] sys[3], Total compute-communication overlap: 250",
       "[2026-11-30 10:00:00.100] [statistics] [info] sys[3]. Post statistics processing end."])


def test_parse_reference_run():
    ranks = parse_output(REFERENCE, 8)
    assert [r["rank"] for r in ranks] == list(range(8))
    assert all(r["finish_ns"] == 117780 and r["exposed_comm_ns"] == 117780 for r in ranks)
    assert ranks[3] == {"rank": 3, "finish_ns": 117780, "exposed_comm_ns": 117780, "wall_ns": 117780,
                        "comm_ns": 117780, "compute_ns": 5000, "overlap_ns": 250}


def test_parse_plain_lines_and_older_format():
    text = ("sys[1] finished, 2000 cycles, exposed communication 500 cycles.\n"
            "sys[0] finished, 1500 cycles\n")  # older releases print no exposed communication
    assert parse_output(text, 2) == [{"rank": 0, "finish_ns": 1500},
                                     {"rank": 1, "finish_ns": 2000, "exposed_comm_ns": 500}]


def test_parse_missing_rank_names_it():
    text = "sys[0] finished, 10 cycles, exposed communication 0 cycles.\n[critical] Node 7 did not finish"
    with pytest.raises(ChakraError, match="rank 1 did not finish.*Node 7 did not finish"):
        parse_output(text, 2, "run")


FAKE = '''#!{python}
# A stand-in for ASTRA-sim (not installed here): checks the arguments the spec requires and
# prints the spec's per-rank line; rank r "finishes" at 1000 * (number of nodes in its file).
import os, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
for key in ("workload-configuration", "system-configuration", "network-configuration",
            "remote-memory-configuration"):
    if not os.path.exists(args.get(key, "") if key != "workload-configuration" else args[key] + ".0.et"):
        print("missing", key); sys.exit(3)
if os.path.exists("groups.json") != ("comm-group-configuration" in args):
    print("groups.json not passed"); sys.exit(3)
sys.path[:0] = {path!r}
from chakra_core import read_et
r = 0
while os.path.exists(f"{{args['workload-configuration']}}.{{r}}.et"):
    n = sum(1 for _ in read_et(f"{{args['workload-configuration']}}.{{r}}.et")[1])
    print(f"[info] sys[{{r}}] finished, {{1000 * n}} cycles, exposed communication {{r}} cycles.")
    r += 1
'''


@pytest.fixture
def fake_binary(tmp_path):
    path = tmp_path / "fake_astrasim"
    path.write_text(FAKE.format(python=sys.executable, path=sys.path))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _set(ranks=3):
    out = []
    for r in range(ranks):
        nodes = [Node(id=1, name="meta", type=NodeType.METADATA_NODE)]
        for i in range(r + 1):
            c = Node(id=10 + i, name="ar", type=NodeType.COMM_COLL_NODE)
            set_attr(c, "comm_type", int(CommType.ALL_REDUCE))
            set_attr(c, "comm_size", 64)
            nodes.append(c)
        out.append(MemoryRank(r, GlobalMetadata(), nodes))
    return TraceSet(out)


def test_backend_runs_binary_from_env(tmp_path, fake_binary, monkeypatch):
    monkeypatch.setenv("CHAKRA_ASTRASIM_BIN", fake_binary)
    backend = AstraSimRunner()
    net = tmp_path / "net.yml"
    net.write_text("topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    res = backend.run(_set(3), backend.check_options({"network": str(net)}), tmp_path / "out")
    # rank r has r+1 collectives (METADATA removed); rank 3 pads the network and is not listed
    assert res.ranks == [{"rank": r, "finish_ns": 1000 * (r + 1), "exposed_comm_ns": r} for r in range(3)]
    assert res.summary["finish_ns"] == 3000 and res.kind == "simulator"
    assert res.summary["time_unit"] == "ns"  # the key the simpy backend states its unit under
    assert (tmp_path / "out" / "astrasim.log").read_text().count("finished") == 4
    assert any("idle rank" in n for n in res.notes)


def test_backend_without_output_uses_temporary_dir(fake_binary):
    backend = AstraSimRunner()
    res = backend.run(_set(2), backend.check_options({"binary": fake_binary}), None)
    assert [r["finish_ns"] for r in res.ranks] == [1000, 2000] and res.files == []


def test_failing_binary_is_reported(tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("#!/bin/sh\necho 'No dependancy free nodes found' >&2\nexit 1\n")
    bad.chmod(0o755)
    backend = AstraSimRunner()
    with pytest.raises(ChakraError, match="status 1: No dependancy free nodes found"):
        backend.run(_set(2), backend.check_options({"binary": str(bad)}), tmp_path / "o")


def _script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("body,said", [
    ("echo 'sys[0] finished, 100 cycles, exposed communication 5 cycles.'\necho 'partial run'\n",
     "rank 1 did not finish"),
    ("echo 'sys[0] finished, 100 cycles, exposed communication 5 cycles.'\necho 'heap damaged' >&2\nexit 6\n",
     "exited with status 6"),
    ("echo 'sys[0] started'\nexec sleep 30\n", "did not finish within 0.5 s"),
])
def test_a_failed_run_names_the_output_and_keeps_its_whole_log(tmp_path, body, said):
    # the error named the hidden staging directory, deleted with the run, and the log went with it
    binary = _script(tmp_path, "astra", body)
    backend = AstraSimRunner()
    out = tmp_path / "o"
    with pytest.raises(ChakraError) as e:
        backend.run(_set(2), backend.check_options({"binary": binary, "timeout_s": 0.5}), out)
    assert said in e.value.message and e.value.where == str(out) and not out.exists()
    log = Path(e.value.message.rsplit(": ", 1)[1].rstrip(")"))
    try:
        assert "sys[0]" in log.read_text()
    finally:
        log.unlink()
    with pytest.raises(ChakraError) as e:  # without an output directory: the binary is named
        backend.run(_set(2), backend.check_options({"binary": binary, "timeout_s": 0.5}), None)
    assert e.value.where == binary
    Path(e.value.message.rsplit(": ", 1)[1].rstrip(")")).unlink()


def test_a_timeout_of_zero_is_refused():
    with pytest.raises(ConfigError, match="timeout_s"):
        AstraSimRunner().check_options({"timeout_s": 0})


def test_no_binary_is_refused_before_writing(tmp_path, monkeypatch):
    monkeypatch.delenv("CHAKRA_ASTRASIM_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_binary() is None
    backend = AstraSimRunner()
    with pytest.raises(ConfigError, match="CHAKRA_ASTRASIM_BIN.*run.sh"):
        backend.run(_set(2), backend.check_options({}), tmp_path / "o")
    assert not (tmp_path / "o").exists()
    with pytest.raises(ConfigError, match="not found"):
        find_binary(str(tmp_path / "nope"))


def test_aware_refused_for_two_dimensions(tmp_path, fake_binary):
    net = tmp_path / "net.yml"
    net.write_text("topology: [ Ring, Ring ]\nnpus_count: [ 2, 2 ]\nbandwidth: [ 50, 50 ]\nlatency: [ 5, 5 ]\n")
    backend = AstraSimRunner()
    opts = backend.check_options({"binary": fake_binary, "congestion": "aware", "network": str(net)})
    with pytest.raises(ConfigError, match="1-D"):
        backend.run(_set(2), opts, tmp_path / "o")


def test_registered_as_simulator(chakra_host):
    impl = chakra_host.registry.get("backend", "astrasim-run")
    assert impl.kind == "simulator" and "binary" in impl.options


def test_one_pipeline_compares_with_simpy(tmp_path, fake_binary, monkeypatch, chakra_pipeline):
    """simpy and astrasim-run side by side; relative file options resolve from the pipeline file."""
    pytest.importorskip("chakra_simpy")
    import json

    monkeypatch.setenv("CHAKRA_ASTRASIM_BIN", fake_binary)
    ranks = []
    for r in range(2):
        c = Node(id=1, name="ar", type=NodeType.COMM_COLL_NODE)
        set_attr(c, "comm_type", int(CommType.ALL_REDUCE))
        set_attr(c, "comm_size", 1 << 20)
        ranks.append(MemoryRank(r, GlobalMetadata(), [c]))
    TraceSet(ranks).write(tmp_path / "in" / "trace")
    (tmp_path / "net.yml").write_text("topology: [ Ring ]\nnpus_count: [ 2 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    spec = tmp_path / "p.yaml"
    spec.write_text("input: {paths: [in/trace]}\nbackends:\n"
                    "  - {name: simpy, output: sim, options: {network: net.yml}}\n"
                    "  - {name: astrasim-run, output: astra, options: {network: net.yml}}\n")
    chakra_pipeline(str(spec))
    sim = json.loads((tmp_path / "sim" / "result.json").read_text())
    astra = json.loads((tmp_path / "astra" / "result.json").read_text())
    assert [r["rank"] for r in sim["ranks"]] == [r["rank"] for r in astra["ranks"]] == [0, 1]
    for row in sim["ranks"] + astra["ranks"]:
        assert isinstance(row["finish_ns"], int) and isinstance(row["exposed_comm_ns"], int)
    assert [r["finish_ns"] for r in astra["ranks"]] == [1000, 1000]  # the stand-in's rule


def _named(tmp_path, name: str, extra: str = "") -> str:
    """The fake binary under another file name, optionally with ``extra`` bytes in a comment
    (as the analytical backends' namespaces appear in their binaries' RTTI strings)."""
    path = tmp_path / name
    path.write_text(FAKE.format(python=sys.executable, path=sys.path) + (f"# {extra}\n" if extra else ""))
    path.chmod(0o755)
    return str(path)


def test_binary_of_the_other_mode_is_refused_before_writing(tmp_path, monkeypatch):
    unaware = _named(tmp_path, "AstraSim_Analytical_Congestion_Unaware")
    monkeypatch.setenv("CHAKRA_ASTRASIM_BIN", unaware)
    assert binary_mode(unaware) == "unaware"
    net = tmp_path / "net.yml"
    net.write_text("topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    backend = AstraSimRunner()
    opts = backend.check_options({"congestion": "aware", "network": str(net)})
    with pytest.raises(ConfigError, match="congestion-unaware analytical binary but congestion=aware"):
        backend.run(_set(2), opts, tmp_path / "o")
    assert not (tmp_path / "o").exists()
    res = backend.run(_set(2), backend.check_options({"network": str(net)}), tmp_path / "o")
    assert res.summary["binary_mode"] == "unaware" and not any("could not tell" in n for n in res.notes)


def test_binary_mode_read_from_its_contents(tmp_path):
    aware = _named(tmp_path, "astra_custom_build", "N32NetworkAnalyticalCongestionAware8TopologyE")
    assert binary_mode(aware) == "aware"
    assert binary_mode(_named(tmp_path, "other", "NetworkAnalyticalCongestionUnaware")) == "unaware"
    both = _named(tmp_path, "both", "NetworkAnalyticalCongestionAware NetworkAnalyticalCongestionUnaware")
    assert binary_mode(both) is None
    net = tmp_path / "net.yml"
    net.write_text("topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    backend = AstraSimRunner()
    with pytest.raises(ConfigError, match="congestion-aware analytical binary but congestion=unaware"):
        backend.run(_set(2), backend.check_options({"binary": aware, "network": str(net)}), tmp_path / "o")
    res = backend.run(_set(2), backend.check_options({"binary": aware, "congestion": "aware",
                                                      "network": str(net)}), tmp_path / "o")
    assert res.summary["binary_mode"] == "aware" and [r["finish_ns"] for r in res.ranks] == [1000, 2000]
    res = backend.run(_set(2), backend.check_options({"binary": both, "network": str(net)}), tmp_path / "o2")
    assert res.summary["binary_mode"] is None and any("could not tell" in n for n in res.notes)
