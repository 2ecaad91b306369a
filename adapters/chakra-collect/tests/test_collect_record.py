"""chakra_collect records a real CPU training loop and writes a valid Chakra ET directly."""

from __future__ import annotations

import gzip
import json

import pytest

from chakra_core import NodeType, read_et

torch = pytest.importorskip("torch")

from chakra_collect import Recorder, raw_paths, record_steps  # noqa: E402


def _model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 8), torch.randn(4, 2)

    def step():
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return step


def test_record_steps_writes_raw_files_and_et(tmp_path):
    et_json, kineto = record_steps(_model(), tmp_path, steps=1, warmup=1, rank=0, convert=True)
    assert (et_json, kineto) == raw_paths(tmp_path, 0)
    assert et_json.stat().st_size > 0 and kineto.stat().st_size > 0
    meta, nodes = read_et(tmp_path / "trace.0.et")
    names = [n.name for n in nodes]
    # the forward pass of the model: two linear layers and a relu, each one top-level node
    assert names.count("aten::linear") == 2 and names.count("aten::relu") == 1
    assert all(n.type in (NodeType.COMP_NODE, NodeType.METADATA_NODE) for n in nodes)
    assert sum(n.duration_micros for n in nodes) > 0


def test_recorder_stops_after_its_steps(tmp_path):
    step = _model()
    calls = 0
    with Recorder(tmp_path, steps=2, warmup=0, rank=3) as rec:
        for _ in range(10):
            step()
            calls += 1
            if not rec.step():
                break
    assert calls == 2
    assert raw_paths(tmp_path, 3)[0].exists()


def test_the_profiler_settles_outside_the_recorded_steps(tmp_path):
    _, kineto = record_steps(_model(), tmp_path, steps=2, warmup=1, rank=0, settle_s=0.3)
    with gzip.open(kineto) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted(e["name"] for e in events if e["name"].startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#1", "ProfilerStep#2"]  # no step opened for the settling
    last_end = max(e["ts"] + e["dur"] for e in events if e["name"].startswith("ProfilerStep#"))
    (profiler,) = [e for e in events if e["name"].startswith("PyTorch Profiler")]
    assert profiler["ts"] + profiler["dur"] - last_end >= 0.3e6


def test_bad_arguments():
    with pytest.raises(ValueError):
        Recorder("x", steps=0)
    with pytest.raises(ValueError):
        Recorder("x", settle_s=-1)
