"""A sweep whose points run two backends lists both in each row's provenance."""

from __future__ import annotations

from pathlib import Path

import yaml

import chakra_core as chakra

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "examples" / "text" / "resnet50_like.txt"
SYSTEM = {"network": [{"topology": "Ring", "npus_count": 2, "bandwidth": 50, "latency": 500}],
          "all-reduce-implementation": "ring", "local-mem-bw": 50}


def test_every_backend_of_a_point_is_in_its_provenance(tmp_path):
    doc = {"input": {"format": "text", "paths": [str(WORKLOAD)], "options": {"npus": 2}},
           "system": SYSTEM,
           "backends": [{"name": "simpy"}, {"name": "et"}],
           "sweep": {"grid": {"system.network[0].bandwidth": [25, 50]}}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    out = chakra.sweep(tmp_path / "sweep.yaml", tmp_path / "out", jobs=1)
    assert out["ok"] == 2
    for row in out["rows"]:
        names = [i["name"] for i in row["provenance"]["implementations"]]
        assert "chakra-simpy:simpy" in names and "chakra-core:et" in names
        assert len(names) == len(set(map(str, row["provenance"]["implementations"])))
