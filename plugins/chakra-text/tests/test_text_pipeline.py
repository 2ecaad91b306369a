"""Pipeline stages (``pp:`` of SimAI/AICB headers): data-parallel and expert groups per stage.

SimAI sizes the data-parallel group ``DP_size = all_gpus / (TP_size * PP_size)``
(``workload/Layer.cc``) and ``DP_EP_size = DP_size / EP_size``; its MockNcclGroup puts
tensor-parallel groups on consecutive ranks and strides data-parallel groups by
``all_gpus / DP_size = TP_size * PP_size``.  The expected groups below are worked out from those
formulas, not from the converter.  ``data/simai/workload_analytical.txt`` is SimAI's own example
(see data/simai/README.md); the small workloads are hand-written.
"""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import pytest

from chakra_core import ConfigError, NodeType, TraceFormatError, TraceSet, get_str, load_traces
from chakra_text import GroupLayout, parse_workload
from chakra_text.format import TextWarning, convert_workload

SIMAI = Path(__file__).parent / "data" / "simai" / "workload_analytical.txt"
LAYER = "a -1 1 ALLREDUCE 8 1 NONE 0 1 ALLREDUCE 8 0"


def _simai() -> TraceSet:
    """SimAI's example at its header's size (the note on the values taken is tested below)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TextWarning)
        return load_traces(str(SIMAI))


def test_simai_example_groups_follow_simai_formulas():
    # header: model_parallel_NPU_group: 2 ep: 16 pp: 12 all_gpus: 9216
    tp, ep, pp, gpus = 2, 16, 12, 9216
    dp = gpus // (tp * pp)  # 384
    dp_ep = dp // ep  # 24
    ts = _simai()
    assert len(ts) == gpus
    # as many groups of each kind as the ranks they split: gpus / group size
    assert Counter(len(m) for m in ts.process_groups.values()) == {
        tp: gpus // tp, dp: gpus // dp, ep: gpus // ep, dp_ep: gpus // dp_ep}
    sizes = {}
    for n in ts[4321].nodes():
        if n.type == NodeType.COMM_COLL_NODE:
            members = ts.group_members(get_str(n, "pg_name", ""))
            assert 4321 in members
            sizes[n.name.removeprefix("COMM_COLL_NODE_")] = len(members)
    assert sizes["grad_gather_ALLGATHER"] == dp  # weight-gradient column: data-parallel group
    assert sizes["moe_grad_norm1_ALLGATHER_DP_EP"] == dp_ep
    assert {v for k, v in sizes.items() if k.endswith("_EP") and not k.endswith("_DP_EP")} == {ep}


def test_simai_example_data_parallel_groups_stay_in_one_stage():
    ts = _simai()
    stride = 2 * 12  # MockNcclGroup: DP ranks i + j * (all_gpus / DP_size)
    grad = next(n for n in ts[4321].nodes() if n.name == "COMM_COLL_NODE_grad_gather_ALLGATHER")
    members = ts.group_members(get_str(grad, "pg_name"))
    assert members == list(range(4321 % stride, 9216, stride))
    assert {r // 2 % 12 for r in members} == {4321 // 2 % 12}  # stage of rank r: (r // tp) % pp


def test_stage_layout_by_hand():
    # 16 ranks, tp 2, pp 2 (dp = 16 / 4 = 4), ep 2: rank = tp + 2 * (stage + 2 * d)
    layout = GroupLayout(16, 2, ep=2, pp=2)
    assert layout.dp == 4
    mp = {str(i + 1): [2 * i, 2 * i + 1] for i in range(8)}
    dp = {str(9 + i): [i, i + 4, i + 8, i + 12] for i in range(4)}  # stride tp * pp
    ep = {str(13 + i): m for i, m in enumerate([[0, 4], [1, 5], [2, 6], [3, 7], [8, 12], [9, 13], [10, 14],
                                                [11, 15]])}  # d in {0, 1} or {2, 3}
    dp_ep = {str(21 + i): [i, i + 8] for i in range(8)}  # d in {0, 2} or {1, 3}
    assert layout.groups() == {**mp, **dp, **ep, **dp_ep}
    for r in range(16):
        for role, name in layout.pg_names(r).items():
            assert list(layout.members(role, r)) == layout.groups()[name]
    with pytest.raises(ValueError, match="consecutive"):
        GroupLayout(16, 2, mp_low=False, pp=2)


def _write(tmp_path, header: str) -> Path:
    p = tmp_path / "w.txt"
    p.write_text(f"{header}\n1\n{LAYER}\n")
    return p


def test_pp_outside_the_transformer_modes_is_refused(tmp_path):
    with pytest.raises(TraceFormatError) as e:
        parse_workload(_write(tmp_path, "HYBRID_DATA_MODEL model_parallel_NPU_group: 2 pp: 2"))
    assert e.value.location == "line 1" and "pp: 2 (pipeline stages) applies to the transformer modes" in str(e.value)
    assert parse_workload(_write(tmp_path, "DATA pp: 1")).pp == 1


def test_stages_that_do_not_divide_npus_name_the_header_line(tmp_path):
    w = parse_workload(_write(tmp_path, "HYBRID_TRANSFORMER model_parallel_NPU_group: 2 pp: 3"))
    with pytest.raises(ConfigError) as e:
        convert_workload(w, npus=8)
    assert e.value.location == "line 1"
    assert ("model-parallel group size 2 (model_parallel_NPU_group: of the file) x pp: 3 = 6 does not divide "
            "npus=8 (option npus)") in e.value.message
    with pytest.warns(TextWarning, match=r"pp=3 from pp: \(line 1\): data-parallel groups of npus / \(mp_group x "
                      r"pp\) = 2 ranks"):
        ts = convert_workload(w, npus=12, time_unit="us")
    # 6 model-parallel groups of 2 consecutive ranks, then tp x pp = 6 data-parallel groups of 12 / 6 ranks
    assert list(ts.process_groups.values()) == [[r, r + 1] for r in range(0, 12, 2)] + [[r, r + 6] for r in range(6)]


def test_simai_example_states_the_header_values_taken():
    with pytest.warns(TextWarning, match=r"npus=9216 from all_gpus: \(line 1\); mp_group=2 from "
                      r"model_parallel_NPU_group: \(line 1\); pp=12 from pp: \(line 1\): data-parallel groups of "
                      r"npus / \(mp_group x pp\) = 384 ranks, within each pipeline stage"):
        load_traces(str(SIMAI))
