"""``chakra export --to astrasim`` and the ``astrasim`` backend in a YAML pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra_core import CommType, GlobalMetadata, MemoryRank, Node, NodeType, TraceSet, set_attr

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _write_set(d: Path) -> Path:
    """A 4-rank set with a METADATA node and a REDUCE, written as .et files."""
    ranks = []
    for r in range(4):
        meta = Node(id=1, name="meta", type=NodeType.METADATA_NODE)
        c = Node(id=2, name="c", type=NodeType.COMM_COLL_NODE, data_deps=[1])
        set_attr(c, "comm_type", int(CommType.REDUCE))
        set_attr(c, "comm_size", 1 << 20)
        ranks.append(MemoryRank(r, GlobalMetadata(), [meta, c]))
    TraceSet(ranks, {"1": [0, 1], "2": [2, 3]}).write(d / "t")
    return d / "t"


def test_cli_export(tmp_path, chakra_cli, astrasim_check):
    src = _write_set(tmp_path)
    out = tmp_path / "out"
    status, stdout, stderr = chakra_cli("export", src, "--to", "astrasim", "-o", out, "--system",
                                        EXAMPLES / "system" / "astra" / "system.json", "--network",
                                        EXAMPLES / "system" / "astra" / "network.yml", "-O", "prefix=w",
                                        "-O", "durations=roofline")
    assert status == 0, stderr
    assert "ranks: 8" in stdout and "rewritten: REDUCE->ALL_REDUCE 4" in stdout
    astrasim_check(out, "w")
    result = json.loads((out / "result.json").read_text())
    assert result["backend"] == "astrasim" and result["summary"]["report"]["removed"] == {"METADATA_NODE": 4}
    assert json.loads((out / "system.json").read_text())["roofline-enabled"] == 1


def test_cli_bad_option_is_one_line(tmp_path, chakra_cli):
    src = _write_set(tmp_path)
    status, _, stderr = chakra_cli("export", src, "--to", "astrasim", "-o", tmp_path / "o", "-O",
                                   "unsuported=drop")
    assert status == 2 and "did you mean 'unsupported'" in stderr and len(stderr.strip().splitlines()) == 1


def test_pipeline_backend(tmp_path, chakra_pipeline, astrasim_check):
    pytest.importorskip("chakra_text")
    src = tmp_path / "w.txt"
    src.write_text("HYBRID_MODEL_DATA model_parallel_NPU_group: 2\n1\n"
                   "l0 -1 10 ALLGATHER 64 11 NONE 0 12 ALLREDUCE 128 0\n")
    spec = {"input": {"format": "text", "paths": [str(src)], "options": {"npus": 4}},
            "backends": [{"name": "astrasim", "output": str(tmp_path / "out"),
                          "options": {"network": str(EXAMPLES / "system" / "system.yaml"),
                                      "prefix": "ws"}}]}
    # the example network has 8 NPUs: the 4-rank set is padded with idle ranks
    chakra_pipeline(spec)
    astrasim_check(tmp_path / "out", "ws")
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["summary"]["ranks"] == 8 and result["summary"]["trace_ranks"] == 4
