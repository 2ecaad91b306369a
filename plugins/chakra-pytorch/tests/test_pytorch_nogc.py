"""Ranks are read with the cyclic garbage collector off, and it is back as it was afterwards."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

import chakra_pytorch.convert as convert_mod
import chakra_pytorch.kineto_graph as kineto_graph_mod
from chakra_core import TraceFormatError
from chakra_pytorch import open_pytorch
from chakra_pytorch.kineto_only import open_kineto_only
from chakra_pytorch.nogc import without_cycle_collection

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def collector_on():
    """The collector on for the test, and as it was before afterwards."""
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
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
    ts = open_kineto_only([str(DATA / "nccl" / "kineto.0.json"), str(DATA / "nccl" / "kineto.1.json")])
    assert len(list(ts[1].nodes())) > 10 and seen == [False]
    assert gc.isenabled()


@pytest.mark.filterwarnings("ignore:.*no Kineto trace")
def test_the_collector_is_back_on_after_an_error(tmp_path, collector_on):
    bad = tmp_path / "pytorch_et.0.json"
    bad.write_text('{"schema": "1.1.1-chakra.0.0.4", "nodes": [{"id": 1, "name": 5}]}')
    with pytest.raises(TraceFormatError, match="'name' must be a string"):
        list(open_pytorch([str(bad)])[0].nodes())
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off():
    was = gc.isenabled()
    gc.disable()
    try:
        assert without_cycle_collection(gc.isenabled)() is False
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_a_cycle_made_while_off_is_collected_once_back_on(collector_on):
    class Cycle:
        other: Cycle

    def make() -> weakref.ref:
        a, b = Cycle(), Cycle()
        a.other, b.other = b, a
        return weakref.ref(a)

    made = without_cycle_collection(make)()
    assert made() is not None  # the cycle outlived the call: nothing collected it
    gc.collect()
    assert made() is None
