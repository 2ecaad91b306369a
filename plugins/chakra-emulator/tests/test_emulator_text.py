"""An 8-rank ASTRA-sim text workload (examples/text/resnet50_like.txt, data parallel) replayed
on this machine: accelerator compute nodes as calibrated kernels, every all-reduce on 8 ranks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import chakra_core

WORKLOAD = Path(__file__).resolve().parents[3] / "examples" / "text" / "resnet50_like.txt"


def _layers():
    """(forward, input-grad, weight-grad) comm type and size per layer, read from the file."""
    rows = []
    for line in WORKLOAD.read_text().splitlines()[2:]:
        cols = line.split()
        if len(cols) >= 12:
            rows.append([(cols[3], int(cols[4])), (cols[6], int(cols[7])), (cols[9], int(cols[10]))])
    return rows


@pytest.fixture(scope="module")
def resnet():
    return chakra_core.emulate(str(WORKLOAD), input_options={"npus": 8}, options={"warmup": 0})


def test_every_node_of_eight_ranks_ran(resnet):
    s = resnet.summary
    assert s["ranks"] == 8 and s["coverage"] == 1.0
    assert [r["rank"] for r in resnet.ranks] == list(range(8))
    assert s["real_ops"] == 0.0
    assert {n["how"] for n in s["nodes"] if n["kind"] == "compute"} == {"kernel"}


def test_every_all_reduce_ran_on_all_eight_ranks_with_its_size(resnet):
    comms = [(kind, size) for layer in _layers() for kind, size in layer if kind != "NONE"]
    assert {k for k, _ in comms} == {"ALLREDUCE"}
    assert resnet.summary["collectives"] == {"ALL_REDUCE": {"count": 8 * len(comms),
                                                             "bytes": 8 * sum(size for _, size in comms)}}
    groups = {tuple(n["observed"]["group"]) for n in resnet.summary["nodes"] if "observed" in n}
    assert groups == {tuple(range(8))}


def test_the_kernel_calibration_is_cached_per_machine_and_device(resnet):
    cal = resnet.summary["calibration"]
    assert cal["matmul_n"] == 128 and cal["matmul_ns"] > 0
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "chakra" / "emulator-calibration.json"
    stored = json.loads(cache.read_text())
    assert stored[cal["key"]]["matmul_ns"] == cal["matmul_ns"]
    assert "|cpu|" in cal["key"]
