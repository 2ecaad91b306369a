"""Ranks loaded by several threads give the programs, results and errors of loading them one by one.

The sets are the bundled DLRM-like text workload on 8 NPUs and the recorded DDP ranks, written
as .et files; ``jobs=2`` loads them on two threads.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from chakra_core import TraceFormatError, load_traces, open_traceset
from chakra_simpy import loading

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def dlrm_set(tmp_path_factory):
    pytest.importorskip("chakra_text")
    out = tmp_path_factory.mktemp("dlrm")
    load_traces(str(ROOT / "examples/text/dlrm_like.txt"), "text", {"npus": 8}).write(out / "trace")
    return out


@pytest.fixture
def slow_load(monkeypatch):
    """A rank takes 0.05 s more to load (so that each thread takes its share of small sets); every
    program says which thread loaded it (``loaded_by``); returns this thread's id."""
    load = loading.load_program

    def timed(*args):
        time.sleep(0.05)
        prog = load(*args)
        prog.loaded_by = threading.get_ident()
        return prog

    monkeypatch.setattr(loading, "load_program", timed)
    return threading.get_ident()


def _run(kit, directory, **options):
    return kit.run(open_traceset(str(directory)), None, None, symmetry=False, **options)


def test_programs_loaded_by_two_threads_equal_those_loaded_by_one(dlrm_set, slow_load):
    from chakra_core.system import system_from_options

    ts = open_traceset(str(dlrm_set))
    sd = system_from_options({}).with_default_network(len(ts))
    here = loading.load_programs(ts, list(range(8)), sd, False, 1, lambda: None)
    calls: list[int] = []
    there = loading.load_programs(ts, list(range(8)), sd, False, 2, lambda: calls.append(1))
    assert len(calls) == 8
    assert {p.loaded_by for p in here} == {slow_load} and len({p.loaded_by for p in there}) == 2
    for a, b in zip(here, there):
        assert a.rank == b.rank and vars(a).keys() == vars(b).keys()
        for k, v in vars(a).items():
            w = getattr(b, k)
            if k != "loaded_by":
                assert (v.tolist() == w.tolist()) if hasattr(v, "tolist") else v == w, k


@pytest.mark.parametrize("name", ["dlrm", "ddp"])
def test_results_with_two_threads_equal_results_with_one(dlrm_set, kit, tmp_path, name, slow_load):
    directory = dlrm_set
    if name == "ddp":
        pytest.importorskip("chakra_pytorch")
        load_traces(str(ROOT / "plugins/chakra-pytorch/tests/data/ddp"), "pytorch").write(tmp_path / "trace")
        directory = tmp_path
    one = _run(kit, directory, jobs=1)
    two = _run(kit, directory, jobs=2)
    assert one.ranks == two.ranks and one.ranks[0]["finish_ns"] > 0
    assert one.summary["critical_path"] == two.summary["critical_path"]


@pytest.mark.parametrize("bad", [("2", "6"), ("5", "7")])
def test_the_first_bad_rank_in_rank_order_is_reported(dlrm_set, kit, tmp_path, slow_load, bad):
    for f in sorted(dlrm_set.iterdir()):
        data = f.read_bytes()
        if f.name in {f"trace.{r}.et" for r in bad}:
            data = data[:-3]  # the last node cut short
        (tmp_path / f.name).write_bytes(data)
    for jobs in (1, 2):
        with pytest.raises(TraceFormatError, match=rf"trace\.{bad[0]}\.et"):
            _run(kit, tmp_path, jobs=jobs)


def test_small_sets_and_one_job_load_on_one_thread(dlrm_set, monkeypatch):
    ts = open_traceset(str(dlrm_set))
    assert loading._threads(ts, list(range(8)), 0) == 1  # a few KiB of .et files
    monkeypatch.setattr(loading, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(loading.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert loading._threads(ts, list(range(8)), 0) == 3
    assert loading._threads(ts, list(range(8)), 1) == 1
    assert loading._threads(ts, list(range(8)), 3) == 3
    assert loading._threads(ts, list(range(2)), 3) == 2
    assert loading._threads(ts, [0], 2) == 1
