"""Which backend and device a replay takes (the NCCL path is chosen here only by its rules: this
machine has no GPU), and option errors."""

from __future__ import annotations

import pytest

import chakra_core
from chakra_core import ConfigError
from chakra_emulator.select import Placement, choose_placement


@pytest.mark.parametrize("backend, device, ranks, gpus, want", [
    ("auto", "auto", 2, 0, Placement("gloo", "cpu")),
    ("auto", "auto", 2, 2, Placement("nccl", "cuda")),
    ("auto", "auto", 1, 1, Placement("nccl", "cuda")),
    ("auto", "auto", 4, 2, Placement("gloo", "cpu")),      # NCCL needs a device per rank
    ("gloo", "auto", 2, 8, Placement("gloo", "cpu")),
    ("gloo", "cuda", 2, 8, Placement("gloo", "cuda")),
    ("nccl", "auto", 8, 8, Placement("nccl", "cuda")),
    ("auto", "cuda", 2, 2, Placement("nccl", "cuda")),
    ("auto", "cpu", 2, 2, Placement("gloo", "cpu")),
    ("auto", "cuda", 4, 1, Placement("gloo", "cuda")),    # was NCCL, which refuses two ranks on a device
])
def test_placement(backend, device, ranks, gpus, want):
    assert choose_placement(backend, device, ranks, gpus) == want


@pytest.mark.parametrize("backend, device, ranks, gpus, message", [
    ("nccl", "auto", 2, 0, "one CUDA device per rank: 2 ranks, 0 device"),
    ("nccl", "auto", 4, 2, "one CUDA device per rank: 4 ranks, 2 device"),
    ("auto", "cuda", 2, 0, "torch sees no CUDA device"),
    ("nccl", "cpu", 2, 2, "needs device 'cuda'"),
])
def test_placement_refused(backend, device, ranks, gpus, message):
    with pytest.raises(ConfigError, match=message):
        choose_placement(backend, device, ranks, gpus)


def test_nccl_on_this_machine_is_a_one_line_error(chakra_cli, tmp_path):
    from chakra_core import GlobalMetadata, MemoryRank, Node, NodeType, TraceSet

    ts = TraceSet([MemoryRank(r, GlobalMetadata(), [Node(id=1, name="n", type=NodeType.COMP_NODE)]) for r in (0, 1)])
    ts.write(f"{tmp_path}/")
    status, out, err = chakra_cli("emulate", tmp_path, "-O", "backend=nccl")
    assert status == 2 and "needs one CUDA device per rank" in err and "\n" not in err.strip()


def test_unknown_compose_kind_is_refused(tmp_path):
    from chakra_core import GlobalMetadata, MemoryRank, Node, NodeType, TraceSet

    ts = TraceSet([MemoryRank(0, GlobalMetadata(), [Node(id=1, name="n", type=NodeType.COMP_NODE)])])
    with pytest.raises(ConfigError, match="'ALLREDUCE' is not a collective kind"):
        chakra_core.emulate(ts, options={"compose": ["ALLREDUCE"]})


def test_simulate_refuses_an_exporter_and_names_both_kinds(chakra_cli, tmp_path):
    status, _, err = chakra_cli("simulate", tmp_path, "--backend", "et")
    assert status == 2 and "not 'simulator' or 'emulator'" in err


@pytest.mark.parametrize("group, message", [([0, 0, 1], "lists rank 0 twice"),
                                            ([-1, 1], "names rank -1 but there are ranks 0 to 1"),
                                            ([1, 2], "names rank 2 but there are ranks 0 to 1")])
def test_a_group_naming_a_rank_twice_or_out_of_range_is_refused(group, message):
    # validation reports such groups (pg-bad-rank); without it the backend refuses them before
    # any worker starts (a repeated rank once reached torch.distributed.new_group)
    from chakra_core import GlobalMetadata, MemoryRank, Node, NodeType, TraceSet

    ts = TraceSet([MemoryRank(r, GlobalMetadata(), [Node(id=1, name="n", type=NodeType.COMP_NODE)]) for r in (0, 1)],
                  {"g": group})
    with pytest.raises(ConfigError, match=message):
        chakra_core.emulate(ts, validate=False)
