"""The sets the simulator is checked against, replayed on this machine: ASTRA-sim's published
microbenchmark runs (one 1 MiB collective per rank on 8 or 16 NPUs; inputs and recorded cycles in
plugins/chakra-simpy/tests/data/astra_sim_microbenchmarks.json, provenance in that plugin's
test_simpy_recorded.py).

Each set is written as an ASTRA-sim 1.0 ``MICRO`` text workload (one layer whose weight-gradient
pass is the collective, as that format describes a microbenchmark) and replayed with the
published system and network, so that ``expected_ns`` is the simulator's time for the published
run and must equal the cycles the real binary printed. What ran is read from inside the workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chakra_core

DATA = Path(__file__).resolve().parents[2] / "chakra-simpy" / "tests" / "data"
PUBLISHED = json.loads((DATA / "astra_sim_microbenchmarks.json").read_text())
#: the text format's name of each kind
TEXT_KIND = {"ALL_REDUCE": "ALLREDUCE", "ALL_GATHER": "ALLGATHER", "REDUCE_SCATTER": "REDUCESCATTER",
             "ALL_TO_ALL": "ALLTOALL"}


@pytest.fixture(scope="module", params=PUBLISHED["cases"], ids=lambda c: c["name"])
def replay(request, tmp_path_factory):
    """(case, Result) of one published set replayed once, no warm-up."""
    case = request.param
    d = tmp_path_factory.mktemp(case["name"])
    (d / "micro.txt").write_text(f"MICRO\n1\n{case['name']} -1 0 NONE 0 0 NONE 0 "
                                 f"0 {TEXT_KIND[case['comm_type']]} {case['comm_size']} 0\n")
    for part in ("system", "network"):
        (d / f"{part}.json").write_text(json.dumps(PUBLISHED[f"{part}s"][case[part]]["value"]))
    options = {"warmup": 0, "system": str(d / "system.json"), "network": str(d / "network.json"),
               "congestion": case["congestion"][0]}
    return case, chakra_core.emulate(str(d / "micro.txt"), input_options={"npus": case["npus"]}, options=options)


def test_expected_time_is_the_published_run(replay):
    case, result = replay
    assert result.summary["expected_ns"] == case["cycles"]
    assert result.summary["error"] == pytest.approx(result.summary["finish_ns"] / case["cycles"] - 1)


def test_every_rank_ran_the_collective_with_its_size_on_the_world(replay):
    case, result = replay
    s = result.summary
    npus = case["npus"]
    assert s["ranks"] == npus and s["coverage"] == 1.0
    assert s["collectives"] == {case["comm_type"]: {"count": npus, "bytes": npus * case["comm_size"]}}
    seen = [n["observed"] for n in s["nodes"] if "observed" in n]
    assert len(seen) == npus
    assert {tuple(o["group"]) for o in seen} == {tuple(range(npus))}
    assert not any(o["composed"] for o in seen)
