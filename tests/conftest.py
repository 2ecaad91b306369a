"""Shared fixtures of the core tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chakra_core.io._schema import CommType, GlobalMetadata, Node, NodeType
from chakra_core.trace._attrs import set_attr
from chakra_core.trace._traceset import MemoryRank, TraceSet

DATA = Path(__file__).parent / "data"
EXAMPLE_PLUGIN = Path(__file__).resolve().parents[1] / "docs" / "examples" / "chakra-example-plugin"


def dp_rank(rank: int, layers: int = 3, size: int = 4096) -> list[Node]:
    """One rank of a data-parallel step: forward chain, backward chain, an all-reduce per layer,
    a send to the next rank and a receive from the previous one (a ring exchange)."""
    nodes, nid = [], 0

    def node(name, typ, deps=(), dur=0, **attrs):
        nonlocal nid
        nid += 1
        n = Node(id=nid, name=name, type=typ, duration_micros=dur)
        n.data_deps.extend(deps)
        for k, v in attrs.items():
            set_attr(n, k, v)
        nodes.append(n)
        return nid

    prev = ()
    for i in range(layers):
        prev = (node(f"fwd_{i}", NodeType.COMP_NODE, prev, 10 + i, is_cpu_op=False, num_ops=1000),)
    for i in reversed(range(layers)):
        prev = (node(f"bwd_{i}", NodeType.COMP_NODE, prev, 20 + i, is_cpu_op=False),)
        node(f"allreduce_{i}", NodeType.COMM_COLL_NODE, prev, is_cpu_op=False,
             comm_type=int(CommType.ALL_REDUCE), comm_size=size * (i + 1), pg_name="0")
    node("send", NodeType.COMM_SEND_NODE, prev, comm_src=rank, comm_dst=(rank + 1) % 2, comm_tag=7,
         comm_size=256, is_cpu_op=False)
    node("recv", NodeType.COMM_RECV_NODE, prev, comm_src=(rank + 1) % 2, comm_dst=rank, comm_tag=7,
         comm_size=256, is_cpu_op=False)
    return nodes


@pytest.fixture
def dp_set() -> TraceSet:
    """A correct 2-rank data-parallel set, in memory (synthetic: built from its definition above)."""
    return TraceSet([MemoryRank(r, GlobalMetadata(version="0.0.4"), dp_rank(r)) for r in range(2)])


@pytest.fixture(scope="session")
def load_script():
    """``load(relpath, name)``: a script of the repository (``benches/``, ``schema/``) imported by
    its path as module ``name`` (registered in ``sys.modules``: dataclasses look it up there)."""
    import importlib.util

    def load(relpath: str, name: str):
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / relpath)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def golden_path() -> Path:
    """The committed golden trace (see tests/data/make_golden.py)."""
    return DATA / "golden.0.et"


@pytest.fixture(scope="session")
def installed_example(tmp_path_factory) -> dict[str, str]:
    """An environment (for subprocesses) in which the example third-party plugin of docs/examples
    is pip-installed, as a user would install it."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(EXAMPLE_PLUGIN)], check=True)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]))


@pytest.fixture
def same_scan():
    """A check that validation's columnar scan of rank ``rt`` (into the RankCheck ``fast``) gives
    the per-node scan's record (into ``slow``) and skeleton."""
    from chakra_core.validation import _colscan
    from chakra_core.validation._skeleton import scan_rank

    record = ("colls", "roots", "sends", "recvs", "total_us", "saw_group_node", "skel_ids", "skel_kinds", "skel_a",
              "skel_tag", "skel_size")

    def check(rt, fast, slow) -> None:
        got = _colscan.scan_columns(rt, fast)
        assert got is not None, rt.label
        want = scan_rank(rt.batches, slow)
        for f in record:
            assert getattr(fast, f) == getattr(slow, f), (rt.label, f)
        for f in ("count", "skel_pos", "skel_ptr", "skel_preds"):
            assert getattr(got, f) == getattr(want, f), (rt.label, f)
    return check
