"""Sub-groups, point-to-point spans and start offsets on the 4-rank pipeline x data-parallel
recording (recording/record_pipeline_dp.py: stages 0 -> 1 and 2 -> 3, all-reduce on
``new_group([0, 2])`` / ``new_group([1, 3])``, 2 recorded steps), from host ET + Kineto and from
Kineto alone.  gloo names no group in the op, so the groups come from matching calls across
ranks; each rank's Kineto lists only the groups it is in."""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path

import pytest

from chakra_core import NodeType, get_attr, load_traces
from chakra_pytorch.comms import comm_from_param_comms
from chakra_pytorch.groupmatch import match_groups

DATA = Path(__file__).resolve().parent / "data"
PIPE = DATA / "pipeline_dp"
P2P = (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)


@pytest.fixture(scope="module", params=["et+kineto", "kineto-only"])
def pipe(request, tmp_path_factory):
    """The recording converted (every rank's nodes in memory) and the set."""
    folder = PIPE
    if request.param == "kineto-only":
        folder = tmp_path_factory.mktemp("kineto_only")
        for f in PIPE.glob("kineto.*.json.gz"):
            shutil.copy(f, folder / f.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = load_traces([str(folder)])
        return ts, {r: list(ts[r].nodes()) for r in ts.ranks}


def _offset_ns(ts, rank: int) -> int | None:
    return next((a.int64_val for a in ts[rank].metadata().attr if a.name == "start_offset_ns"), None)


def _first_step_us(rank: int) -> float:
    events = json.loads(gzip.open(PIPE / f"kineto.{rank}.json.gz").read())["traceEvents"]
    return min(e["ts"] for e in events if str(e.get("name", "")).startswith("ProfilerStep#"))


def test_every_collective_has_its_data_parallel_group(pipe):
    ts, nodes = pipe
    assert sorted(map(sorted, ts.process_groups.values())) == [[0, 2], [1, 3]]
    for rank, ns in nodes.items():
        colls = [n for n in ns if n.type == NodeType.COMM_COLL_NODE]
        assert len(colls) == 2  # one all-reduce per recorded step
        for n in colls:
            assert ts.process_groups[get_attr(n, "pg_name")] == ([0, 2] if rank % 2 == 0 else [1, 3])
            assert get_attr(n, "comm_size") == (544 if rank % 2 == 0 else 132) * 4


def test_start_offsets_are_the_first_step_starts_on_one_clock(pipe):
    ts, _ = pipe
    firsts = {r: _first_step_us(r) for r in ts.ranks}
    for r in ts.ranks:
        assert _offset_ns(ts, r) == pytest.approx(1000 * (firsts[r] - min(firsts.values())), abs=1)


def _p2p(ts, nodes) -> dict[tuple[int, int, int], list[tuple[str, int, int]]]:
    """(src, dst, tag) -> [(kind, start, end) on the shared clock, us] in issue order, per side."""
    out: dict[tuple, list] = {}
    for rank, ns in nodes.items():
        off = _offset_ns(ts, rank) / 1000
        for n in ns:
            if n.type in P2P:
                key = (get_attr(n, "comm_src"), get_attr(n, "comm_dst"), get_attr(n, "comm_tag"))
                kind = "send" if n.type == NodeType.COMM_SEND_NODE else "recv"
                start = n.start_time_micros + off
                out.setdefault(key + (kind,), []).append((start, start + n.duration_micros))
    return out


def test_no_receive_ends_before_its_send_begins(pipe):
    ts, nodes = pipe
    p2p = _p2p(ts, nodes)
    pairs = 0
    for (src, dst, tag, kind), recvs in p2p.items():
        if kind != "recv":
            continue
        sends = p2p[(src, dst, tag, "send")]
        assert len(sends) == len(recvs) == 4  # 2 micro-batches x 2 steps
        for (s_start, _), (_, r_end) in zip(sends, recvs):
            # the grid rounds to whole microseconds on each rank
            assert r_end >= s_start - 1
            pairs += 1
    assert pairs == 16  # 2 pipelines x 2 directions x 4


def test_groups_by_matching_take_the_largest_group_that_fits():
    groups = {"0": [0, 1, 2, 3], "1": [0, 2], "2": [1, 3]}
    calls = {0: [("all_reduce", 8), ("all_reduce", 4)], 2: [("all_reduce", 8), ("all_reduce", 4)],
             1: [("all_reduce", 2), ("all_reduce", 4)], 3: [("all_reduce", 2), ("all_reduce", 4)]}
    names, left = match_groups(calls, groups)
    assert names == {0: ["1", "0"], 2: ["1", "0"], 1: ["2", "0"], 3: ["2", "0"]} and left == 0


def test_calls_that_match_no_group_are_counted():
    names, left = match_groups({0: [("all_reduce", 8)], 1: [("broadcast", 8)]}, {"0": [0, 1]})
    assert names == {0: [None], 1: [None]} and left == 2


def test_record_param_comms_group_from_its_inputs():
    # the inputs of a record_param_comms node of PARAM's resnet_2gpu host ET (schema 1.1.0),
    # without its attributes: the (pg_name, pg_desc) pair names the group
    values = [[[434, 435, 0, 53120, 4, "cuda:1"]], 33, ["0", "default_pg"], 0, "broadcast", [], [], 0, 1, 2]
    info = comm_from_param_comms({}, values)
    assert info is not None and (info.kind, info.pg_name, info.size_bytes) == ("broadcast", "0", 53120 * 4)


def test_host_ets_alone_get_the_groups_too(tmp_path):
    for f in PIPE.glob("pytorch_et.*.json.gz"):
        shutil.copy(f, tmp_path / f.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = load_traces([str(tmp_path)])
        for rank in ts.ranks:
            names = [get_attr(n, "pg_name") for n in ts[rank].nodes() if n.type == NodeType.COMM_COLL_NODE]
            assert [ts.process_groups[p] for p in names] == [[0, 2] if rank % 2 == 0 else [1, 3]] * 2
        assert all(_offset_ns(ts, r) is None for r in ts.ranks)  # no Kineto: no clock to say it
