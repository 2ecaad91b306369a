"""ASTRA-sim's own custom-collective example exported as it lies in ASTRA-sim's repository.

The files (chakra-simpy's tests/data/astra_sim_example, with their attribution) are exported by
``chakra export`` run from the example's root, where the system file's relative ET prefix
resolves as in ASTRA-sim.  The export names the custom ETs with the key's current spelling
(``*-implementation-custom``) unless asked for the old one, and simulated from the exported
directory it gives ASTRA-sim's 90,174 cycles on every rank; when an ASTRA-sim binary is found
(``CHAKRA_ASTRASIM_BIN`` or the PATH) the binary runs the export and must give the same.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "chakra-simpy" / "tests" / "data" / "astra_sim_example"
ARGS = ("examples/workload/microbenchmarks/all_reduce/8npus_1MB/all_reduce",
        "--system", "examples/system/custom_collectives/custom_collective.json",
        "--network", "examples/network/analytical/Ring_8npus.yml",
        "--memory", "examples/remote_memory/analytical/no_memory_expansion.json")
#: ASTRA-sim's analytical binary on the example: every rank finishes at 90,174 cycles (ns)
ASTRA_SIM_CYCLES = 90_174


def _export(chakra_cli, monkeypatch, out: Path, *options: str) -> dict:
    monkeypatch.chdir(EXAMPLE)
    status, stdout, stderr = chakra_cli("export", *ARGS, "--to", "astrasim", "-o", out, *options)
    assert status == 0, stderr
    return json.loads((out / "system.json").read_text())


def test_the_export_writes_the_current_key_and_the_old_one_on_request(tmp_path, chakra_cli, monkeypatch,
                                                                      astrasim_check):
    system = _export(chakra_cli, monkeypatch, tmp_path / "new")
    configs = json.loads((tmp_path / "new" / "report.json").read_text())["report"]["configs"]
    assert ("custom all-reduce: 8 ET files copied to custom/all-reduce.<rank>.et (ASTRA-sim times them with the "
            "message sizes they hold), named by 'all-reduce-implementation-custom' in system.json (ASTRA-sim "
            "since June 2025; for an older one export with -O custom_keys=chakra)") in configs
    astrasim_check(tmp_path / "new", "trace")
    assert system["all-reduce-implementation-custom"] == ["custom/all-reduce"]
    assert not any(k.endswith("-chakra") for k in system)
    source = EXAMPLE / "examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce"
    for r in range(8):
        assert (tmp_path / "new" / "custom" / f"all-reduce.{r}.et").read_bytes() == \
            Path(f"{source}.{r}.et").read_bytes()
    old = _export(chakra_cli, monkeypatch, tmp_path / "old", "-O", "custom_keys=chakra")
    assert old == {k.replace("-implementation-custom", "-implementation-chakra"): v for k, v in system.items()}


def test_a_misspelt_key_is_reported_by_the_export(tmp_path, chakra_cli, monkeypatch):
    bad = tmp_path / "system.json"
    bad.write_text((EXAMPLE / ARGS[2]).read_text().replace("implementation-custom", "implementaton-custom"))
    monkeypatch.chdir(EXAMPLE)
    args = (ARGS[0], "--system", bad, *ARGS[3:], "--to", "astrasim")
    warning = (f"{bad}: key 'all-reduce-implementaton-custom' is ignored: not an ASTRA-sim system key "
               "(did you mean 'all-reduce-implementation-custom'?)")
    status, stdout, stderr = chakra_cli("export", *args, "-o", tmp_path / "out")
    assert status == 0, stderr
    assert f"note: config: system description: {warning}" in stdout.splitlines()
    assert "all-reduce-implementation-custom" not in json.loads((tmp_path / "out" / "system.json").read_text())
    monkeypatch.setenv("CHAKRA_STRICT_KEYS", "1")
    status, stdout, stderr = chakra_cli("export", *args, "-o", tmp_path / "strict")
    assert status == 2 and len(stderr.strip().splitlines()) == 1
    assert stderr.strip() == (f"chakra export: error: {bad}:key 'all-reduce-implementaton-custom': not an "
                              "ASTRA-sim system key (did you mean 'all-reduce-implementation-custom'?); unknown "
                              "keys are errors in strict mode (CHAKRA_STRICT_KEYS)")
    assert not any((tmp_path / "strict").glob("*"))


def test_the_export_simulates_to_astra_sims_cycles(tmp_path, chakra_cli, monkeypatch):
    pytest.importorskip("chakra_simpy")
    out = tmp_path / "out"
    _export(chakra_cli, monkeypatch, out)
    monkeypatch.chdir(out)  # as run.sh runs ASTRA-sim: the custom prefix is relative to the export
    status, stdout, stderr = chakra_cli("simulate", "workload/trace", "--system", "system.json", "--network",
                                        "network.yml", "--memory", "memory.json", "--json")
    assert status == 0, stderr
    assert [r["finish_ns"] for r in json.loads(stdout)["ranks"]] == [ASTRA_SIM_CYCLES] * 8


@pytest.mark.parametrize("mode", ["unaware", "aware"])
def test_the_export_runs_in_astrasim_with_its_cycles(tmp_path, chakra_cli, monkeypatch, astrasim_binary, mode):
    binary = astrasim_binary(mode)
    out = tmp_path / "out"
    _export(chakra_cli, monkeypatch, out)
    args = json.loads((out / "report.json").read_text())["commands"][f"congestion_{mode}"]
    proc = subprocess.run([binary, *args[1:]], cwd=out, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    cycles = {int(m.group(1)): int(m.group(2))
              for m in re.finditer(r"sys\[(\d+)\] finished, (\d+) cycles", proc.stdout + proc.stderr)}
    assert cycles == {r: ASTRA_SIM_CYCLES for r in range(8)}


# Custom ETs that the simulator refuses are refused by the export too, before it writes anything:
# rank 3 of the example's custom all-reduce edited through its JSON form (jsonize, edit, convert).
PREFIX = EXAMPLE / "examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce"


def _set_comm_dst(nodes: list[dict]) -> None:
    """Node 3 (a send) sends to rank 99, outside the 8 NPUs."""
    for attr in nodes[3]["attr"]:
        if attr["name"] == "comm_dst":
            attr["int32_val"] = 99


#: edit of rank 3's JSON nodes -> (node named, what the one-line error says)
BAD_RANK_3 = {
    "cycle": (lambda nodes: nodes[0].update(data_deps=["4"]), "node 1",
              "[cycle] dependency cycle: 1 -> 2 -> 3 -> 4 -> 0 -> 1"),
    "peer": (_set_comm_dst, "node 3", "[bad-peer] comm_dst = 99 (rank 3 of 8)"),
    "duration": (lambda nodes: nodes[2].update(duration_micros=str(9 * 10**18)), "node 2",
                 "[bad-duration] duration_micros = 9000000000000000000 us, more than 2^40 us (12.7 days)"),
}


def _edited_custom(chakra_edited_rank, tmp_path: Path, edit) -> Path:
    """The example's custom all-reduce copied to ``tmp_path/cc`` with rank 3's file edited by
    ``edit(nodes)`` (through its JSON form); returns a system.json naming the copy."""
    (tmp_path / "cc").mkdir()
    for r in range(8):
        shutil.copyfile(f"{PREFIX}.{r}.et", tmp_path / "cc" / f"custom_allreduce.{r}.et")
    chakra_edited_rank(f"{PREFIX}.3.et", edit, tmp_path / "cc" / "custom_allreduce.3.et")
    system = tmp_path / "system.json"
    system.write_text(json.dumps({**json.loads((EXAMPLE / ARGS[2]).read_text()),
                                  "all-reduce-implementation-custom": [str(tmp_path / "cc" / "custom_allreduce")]}))
    return system


def _refused(chakra_cli, *args: str | Path) -> str:
    """The one-line error of ``chakra ARGS...``, which must refuse its input."""
    status, stdout, stderr = chakra_cli(*args)
    assert status == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1, stderr
    return stderr.strip()


def _export_refused(chakra_cli, tmp_path: Path, workload: str | Path, system: str | Path,
                    network: str | Path) -> str:
    """The one-line error of an export that must refuse its input, leaving its output directory
    (one file written there beforehand) as it was."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep").write_text("earlier")
    err = _refused(chakra_cli, "export", workload, "--system", system, "--network", network, "--to", "astrasim",
                   "-o", out)
    assert [p.name for p in out.iterdir()] == ["keep"] and (out / "keep").read_text() == "earlier"
    return err


@pytest.mark.parametrize("bad", sorted(BAD_RANK_3))
def test_the_export_refuses_a_bad_custom_et_naming_its_file_and_node(bad, tmp_path, chakra_cli, chakra_edited_rank,
                                                                      monkeypatch):
    edit, node, says = BAD_RANK_3[bad]
    system = _edited_custom(chakra_edited_rank, tmp_path, edit)
    monkeypatch.chdir(EXAMPLE)
    err = _export_refused(chakra_cli, tmp_path, ARGS[0], system, ARGS[4])
    assert err == (f"chakra export: error: {tmp_path / 'cc' / 'custom_allreduce.3.et'}:{node}: "
                   f"the custom all-reduce (8 ranks): {says}")


@pytest.mark.parametrize("bad", sorted(BAD_RANK_3))
def test_the_export_and_the_simulator_refuse_a_bad_custom_et_alike(bad, tmp_path, chakra_cli, chakra_edited_rank,
                                                                   monkeypatch):
    pytest.importorskip("chakra_simpy")
    system = _edited_custom(chakra_edited_rank, tmp_path, BAD_RANK_3[bad][0])
    monkeypatch.chdir(EXAMPLE)
    exported = _export_refused(chakra_cli, tmp_path, ARGS[0], system, ARGS[4])
    simulated = _refused(chakra_cli, "simulate", ARGS[0], "--system", system, "--network", ARGS[4])
    assert exported.removeprefix("chakra export: ") == simulated.removeprefix("chakra simulate: ")


def test_the_8_rank_custom_et_on_a_4_npu_network_is_refused(tmp_path, chakra_cli, monkeypatch):
    """The example's ETs name peers up to rank 7: on 4 NPUs, rank 0 receives from rank 7."""
    (tmp_path / "wl").mkdir()
    for r in range(4):
        shutil.copyfile(EXAMPLE / f"{ARGS[0]}.{r}.et", tmp_path / "wl" / f"all_reduce.{r}.et")
    ring4 = tmp_path / "ring4.yml"
    ring4.write_text("topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    monkeypatch.chdir(EXAMPLE)
    err = _export_refused(chakra_cli, tmp_path, tmp_path / "wl" / "all_reduce", ARGS[2], ring4)
    assert err == (f"chakra export: error: {PREFIX}.0.et:node 1: the custom all-reduce (4 ranks): "
                   "[bad-peer] comm_src = 7 (rank 0 of 4)")
