"""Communication timing on real 2-rank gloo recordings, one step and several steps.

recording/record_ddp.py, record_ddp_buckets.py and record_collectives.py, recorded with one
step (``ddp/`` ...) and with ``--steps 3`` / ``--steps 2`` (``ddp_steps/`` ...): tensors are
reused from step to step, so an annotation matched to the wrong op shows here.

The expected durations are computed from the Kineto file alone: PyTorch hands out
record-function ids in issue order and gloo opens its ``gloo:*`` annotation inside the c10d op
that creates the work, so the annotations of a c10d op are those whose record-function id lies
between the op's and the next c10d op's.
"""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import pytest

from chakra_core import NodeType, get_int
from chakra_pytorch import convert_rank, find_rank_files

DATA = Path(__file__).resolve().parent / "data"
COMM = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
TRACES = ["ddp", "ddp_steps", "ddp_buckets", "ddp_buckets_steps", "collectives", "collectives_steps"]


def _kineto_spans(path: Path) -> dict[int, float]:
    """Record-function id of each c10d op -> the span (us) of its gloo annotations."""
    with gzip.open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    c10d = sorted(e["args"]["Record function id"] for e in events
                  if e["cat"] == "cpu_op" and e["name"].startswith("c10d::"))
    work = sorted((e["args"]["Record function id"], e["ts"], e["ts"] + e["dur"]) for e in events
                  if e["cat"] == "user_annotation" and e["name"].startswith("gloo:"))
    spans = {}
    for rf, nxt in zip(c10d, c10d[1:] + [float("inf")]):
        mine = [(s, e) for r, s, e in work if rf < r < nxt]
        if mine:
            spans[rf] = max(e for _, e in mine) - min(s for s, _ in mine)
    return spans


def _converted(name: str, rank: int):
    rfs, _ = find_rank_files([str(DATA / name)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rfs[rank], convert_rank(rfs[rank])


def _critical_path(graph) -> int:
    finish: dict[int, int] = {}
    for n in graph.nodes:  # topological order
        finish[n.id] = max((finish[d] for d in n.ctrl + n.data if d in finish), default=0) + n.dur
    return max(finish.values())


@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("name", TRACES)
def test_each_communication_lasts_its_own_gloo_work(name, rank):
    files, g = _converted(name, rank)
    spans = _kineto_spans(Path(files.kineto))
    comms = [n.to_node() for n in g.nodes if n.type in COMM]
    assert len(comms) == len(spans) > 0
    for n in comms:
        rf = get_int(n, "rf_id")
        # the grid rounds start and end to whole microseconds: at most 1 us apart
        assert abs(n.duration_micros - spans[rf]) <= 1, (n.name, rf, n.duration_micros, spans[rf])


@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("name", TRACES)
def test_longest_path_stays_within_the_measured_steps(name, rank):
    _, g = _converted(name, rank)
    # waiting for the other rank is not local work: the path may be shorter, never longer
    assert 0 < _critical_path(g) <= g.step_us
