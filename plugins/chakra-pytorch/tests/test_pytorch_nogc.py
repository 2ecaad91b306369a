"""Ranks are read with the cyclic garbage collector off, and it is back as it was afterwards."""

from __future__ import annotations

import gc
import threading
import warnings
from pathlib import Path

import pytest

import chakra_pytorch.convert as convert_mod
import chakra_pytorch.kineto_graph as kineto_graph_mod
from chakra_core import TraceFormatError
from chakra_pytorch import open_pytorch
from chakra_pytorch.kineto_only import open_kineto_only
from chakra_pytorch.nogc import cycle_collection_off
from chakra_pytorch.schema_version import PyTorchTraceWarning

DATA = Path(__file__).resolve().parent / "data"
NCCL_KINETO = [str(DATA / "nccl" / "kineto.0.json"), str(DATA / "nccl" / "kineto.1.json")]


@pytest.fixture
def collector_on():
    """The collector on for the test, and as it was before afterwards."""
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def _spy(monkeypatch, module, name: str) -> list[bool]:
    """Record whether the collector is on each time ``module.name`` is called."""
    seen: list[bool] = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, spy)
    return seen


def test_host_et_and_kineto_are_read_with_the_collector_off(monkeypatch, collector_on):
    host, kineto = _spy(monkeypatch, convert_mod, "read_host_et"), _spy(monkeypatch, convert_mod, "read_kineto")
    ts = open_pytorch([str(DATA / "mlp")])
    nodes = list(ts[0].nodes())
    assert len(nodes) > 10 and host == [False] and kineto == [False]
    assert gc.isenabled()


def test_kineto_alone_is_read_with_the_collector_off(monkeypatch, collector_on):
    seen = _spy(monkeypatch, kineto_graph_mod, "read_kineto")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyTorchTraceWarning)
        ts = open_kineto_only(NCCL_KINETO)
        assert len(list(ts[1].nodes())) > 10 and seen == [False]
    assert gc.isenabled()


def test_warnings_inside_still_name_the_caller(collector_on):
    # the nccl recordings have no message sizes: the warning is issued inside the block and, with
    # its stack level, names the line that called the conversion, as it did before the block
    with pytest.warns(PyTorchTraceWarning, match="have no size") as got:
        kineto_graph_mod.convert_kineto_rank(NCCL_KINETO[0], 0, 2, {})
    assert {Path(w.filename).name for w in got} == {Path(__file__).name}


@pytest.mark.filterwarnings("ignore:.*no Kineto trace")
def test_the_collector_is_back_on_after_an_error(tmp_path, collector_on):
    bad = tmp_path / "pytorch_et.0.json"
    bad.write_text('{"schema": "1.1.1-chakra.0.0.4", "nodes": [{"id": 1, "name": 5}]}')
    with pytest.raises(TraceFormatError, match="'name' must be a string"):
        list(open_pytorch([str(bad)])[0].nodes())
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off(collector_on):
    gc.disable()
    with cycle_collection_off():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_overlapping_blocks_keep_it_off_until_the_last_ends(collector_on):
    # two conversions on two threads: the first to end leaves the collector off for the other
    entered, first_done, states = threading.Barrier(2), threading.Event(), []

    def first() -> None:
        with cycle_collection_off():
            entered.wait()
        first_done.set()

    def second() -> None:
        with cycle_collection_off():
            entered.wait()
            first_done.wait()
            states.append(gc.isenabled())
        states.append(gc.isenabled())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert states == [False, True]
    with cycle_collection_off():  # and nested on one thread
        with cycle_collection_off():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
