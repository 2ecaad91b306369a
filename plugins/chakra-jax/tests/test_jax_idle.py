"""Idle gaps: with a profile, each device's longest path is the measured step.

The measured step of each recorded program is computed here from its Chrome-trace JSON export
(first op start to last op end over all devices, the mean over the profiled executions), read
with json and gzip, independently of the converter, which reads the xplane; the longest path is
the core's (``chakra_core.compute_stats``).
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

from chakra_core import compute_stats

PROGRAMS = ["mlp", "shard_map", "scan", "mesh8", "control"]


def _measured_step_us(path, module):
    spans: dict[str, list[float]] = defaultdict(lambda: [float("inf"), float("-inf")])
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    for e in events:
        args = e.get("args") or {}
        if e.get("ph") == "X" and args.get("hlo_module") == module and "hlo_op" in args:
            span = spans[args["run_id"]]
            span[0] = min(span[0], e["ts"])
            span[1] = max(span[1], e["ts"] + e["dur"])
    return sum(hi - lo for lo, hi in spans.values()) / len(spans)


def _module_name(jax_data, name):
    first = (jax_data / name / "program.hlo.txt").read_text().split("\n", 1)[0]
    return first.split()[1].rstrip(",")


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_device_longest_path_is_the_measured_step(jax_data, jax_convert, name):
    step = _measured_step_us(jax_data / name / "profile.trace.json.gz", _module_name(jax_data, name))
    stats = compute_stats(jax_convert(name, "profile.xplane.pb"))
    for rank in stats["per_rank"]:
        assert abs(rank["longest_path_us"] / step - 1) <= 0.02, (name, rank["rank"], rank["longest_path_us"], step)


def test_idle_nodes_follow_the_pytorch_convention(jax_convert):
    ts = jax_convert("mesh8", "profile.xplane.pb")
    idle = [n for n in ts[7].nodes() if n.name == "[idle]"]
    assert idle
    for n in idle:
        assert n.type == 4 and n.duration_micros >= 1
        assert {a.name: a.bool_val for a in n.attr if a.name == "idle"} == {"idle": True}


def test_without_idle_gaps_the_ops_alone_are_shorter(jax_data, jax_convert):
    step = _measured_step_us(jax_data / "mesh8" / "profile.trace.json.gz", _module_name(jax_data, "mesh8"))
    stats = compute_stats(jax_convert("mesh8", "profile.xplane.pb", idle_gaps=False))
    assert all(not n.name == "[idle]" for n in jax_convert("mesh8", "profile.xplane.pb", idle_gaps=False)[0].nodes())
    assert min(r["longest_path_us"] for r in stats["per_rank"]) < 0.5 * step
