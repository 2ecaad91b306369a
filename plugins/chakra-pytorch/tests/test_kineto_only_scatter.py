"""A Kineto-only scatter or gather whose tensor lists Kineto records without dims (older PyTorch
writes a ``TensorList``'s ``Input Dims`` as ``[]``, as PARAM's DLRM trace shows): sized from its
work annotation as the other collectives are, and a rank whose trace gives no size is told so.

The collectives recording (2 gloo ranks, root 0) with its ``c10d::scatter_``/``c10d::gather_``
dims emptied: the root's ``gloo:scatter`` lists the chunks it sends (one per rank, each what a
rank receives), the other rank's lists no tensor; each ``gloo:gather`` lists its rank's input."""

from __future__ import annotations

import gzip
import json
import math
import warnings
from pathlib import Path

import pytest

from chakra_core import NodeType
from chakra_pytorch import PyTorchTraceWarning, open_pytorch

COLLECTIVES = Path(__file__).resolve().parent / "data" / "collectives"
ELEM_BYTES = {"float": 4}


def _without_list_dims(tmp_path: Path) -> Path:
    """The recording's Kineto traces with every dims entry of its scatter and gather ops empty."""
    for r in (0, 1):
        doc = json.loads(gzip.decompress((COLLECTIVES / f"kineto.{r}.json.gz").read_bytes()))
        for e in doc["traceEvents"]:
            if e.get("name") in ("c10d::scatter_", "c10d::gather_"):
                e["args"]["Input Dims"] = [[] for _ in e["args"]["Input Dims"]]
        (tmp_path / f"kineto.{r}.json").write_text(json.dumps(doc))
    return tmp_path


def _event(rank: int, name: str) -> dict:
    doc = json.loads(gzip.decompress((COLLECTIVES / f"kineto.{rank}.json.gz").read_bytes()))
    (e,) = [e for e in doc["traceEvents"] if e.get("name") == name]
    return e


def _sizes(ts, rank: int) -> dict[str, int]:
    """comm_size of each scatter and gather op of ``rank``."""
    return {n.name: next(a.int64_val for a in n.attr if a.name == "comm_size") for n in ts[rank].nodes()
            if n.type == NodeType.COMM_COLL_NODE and n.name in ("c10d::scatter_", "c10d::gather_")}


def _tensor_bytes(dims: list, dtype: str) -> int:
    return math.prod(dims) * ELEM_BYTES[dtype]


def test_the_roots_scatter_is_one_chunk_of_its_annotation(tmp_path):
    work = _event(0, "gloo:scatter")["args"]
    chunks = [_tensor_bytes(d, t) for d, t in zip(work["Input Dims"], work["Input type"])]
    assert chunks == [440, 440]  # 110 floats for each of the 2 ranks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_host_et = _sizes(open_pytorch([str(COLLECTIVES)]), 0)
        emptied = _sizes(open_pytorch([str(_without_list_dims(tmp_path))]), 0)
    assert emptied == from_host_et == {"c10d::scatter_": chunks[0],
                                       "c10d::gather_": _tensor_bytes([100], "float")}


def test_a_scatter_with_no_size_in_its_trace_is_said_by_file_op_and_time(tmp_path):
    # rank 1 receives: its gloo:scatter is given no tensor, its op's output list has no dims
    assert "Input Dims" not in _event(1, "gloo:scatter")["args"]
    op = _event(1, "c10d::scatter_")
    folder = _without_list_dims(tmp_path)
    with pytest.warns(PyTorchTraceWarning) as got:
        ts = open_pytorch([str(folder)])
        sizes = [_sizes(ts, r) for r in (0, 1)]
    said = [str(w.message) for w in got if "have no size in the trace" in str(w.message)]
    assert said == [f"{folder / 'kineto.1.json'}: 1 communication op(s) have no size in the trace, the first "
                    f"c10d::scatter_ at ts {op['ts']:.3f} us: their comm_size is 0 (recorded with shapes, but "
                    "their tensor lists' dims are empty and no gloo:/nccl: work annotation gives them)"]
    assert sizes[1] == {"c10d::scatter_": 0, "c10d::gather_": 400} and sizes[0]["c10d::scatter_"] == 440
