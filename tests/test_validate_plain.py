"""Validation of a small set runs as Python without loading numba, and finds what the compiled
loops find: the recorded PyTorch sets of the plugin's tests (converted, written as .et), the
ASTRA-sim all-reduce example, and a recorded set broken in one place (a collective dropped)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chakra_core.io._schema import GlobalMetadata, NodeType
from chakra_core.pipeline._pipeline import load_traces
from chakra_core.trace._traceset import MemoryRank, TraceSet, open_traceset
from chakra_core.validation import _validate
from chakra_core.validation._validate import validate_as

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"
ALL_REDUCE = ROOT / "plugins/chakra-simpy/tests/data/astra_sim_example/examples/workload/microbenchmarks/all_reduce"
RUN = '''
import sys
from chakra_core.cli.main import main
status = main(sys.argv[1:])
print("numba loaded" if "numba" in sys.modules else "numba not loaded", status)
'''

pytest.importorskip("numba")
pytest.importorskip("chakra_pytorch")


def _both(traces):
    plain, compiled = validate_as(traces, False), validate_as(traces, True)
    assert plain == compiled
    return plain


@pytest.mark.parametrize("name,ranks", [("collectives", 2), ("pipeline_dp", 4), ("ddp_buckets_queued", 2),
                                        ("threads", 1)])
def test_recorded_sets_same_findings(name, ranks, tmp_path):
    load_traces([str(DATA / name)], "pytorch").write(tmp_path / name)
    traces = open_traceset(str(tmp_path / name))
    assert len(traces) == ranks
    assert _both(traces) == []


def test_astra_sim_example_same_findings():
    traces = open_traceset(str(ALL_REDUCE / "8npus_1MB" / "all_reduce"))
    assert len(traces) == 8 and _both(traces) == []


def test_dropped_collective_same_findings(tmp_path):
    load_traces([str(DATA / "collectives")], "pytorch").write(tmp_path / "coll")
    src = open_traceset(str(tmp_path / "coll"))
    ranks = []
    for rt in src:
        nodes = list(rt.nodes())
        if rt.rank == 1:
            victim = next(n for n in nodes if n.type == NodeType.COMM_COLL_NODE)
            for n in nodes:
                for deps in (n.data_deps, n.ctrl_deps):
                    keep = [d for d in deps if d != victim.id]
                    del deps[:]
                    deps.extend(keep)
            nodes = [n for n in nodes if n is not victim]
        ranks.append(MemoryRank(rt.rank, GlobalMetadata(), nodes))
    TraceSet(ranks, process_groups=src.process_groups).write(tmp_path / "t")
    found = _both(open_traceset(str(tmp_path / "t")))
    assert [(f.rule, f.rank) for f in found] == [("coll-order", 1), ("deadlock", 0)]
    assert sorted(r for r, _ in found[1].involved) == [0, 1]


def test_small_set_is_validated_without_numba(tmp_path):
    """``chakra convert`` (which validates what it writes) and ``chakra validate`` of a recorded
    set of a few hundred KiB do not load numba; a set past COMPILED_FROM would."""
    out = tmp_path / "pp"
    for args in (["convert", DATA / "pipeline_dp", "-o", f"{out}/"], ["validate", out]):
        r = subprocess.run([sys.executable, "-c", RUN, *map(str, args)], capture_output=True, text=True,
                           cwd=ROOT, timeout=300)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().splitlines()[-1] == "numba not loaded 0"
    size = sum(f.stat().st_size for f in out.glob("*.et"))
    assert size < _validate.COMPILED_FROM
    code = ("import sys; from chakra_core.trace._traceset import open_traceset; "
            "from chakra_core.validation import _validate as V; "
            f"print(V.compiled_pays(open_traceset({str(out)!r})), 'numba' in sys.modules); V.COMPILED_FROM = {size}; "
            f"print(V.compiled_pays(open_traceset({str(out)!r})))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["False", "False", "True"], r.stderr
