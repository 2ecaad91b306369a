"""Every mode on a small workload: the exact nodes and dependency edges.

The expected graphs are written by hand from the mapping rules in docs/text-workloads.md (one
comment per rule applied), not from the converter's output.  The workloads are hand-written
because the text format is produced by no framework on this machine.
"""

from __future__ import annotations

import pytest

from chakra_core import CommType, NodeType, get_bool, get_int, get_str
from chakra_text import parse_workload
from chakra_text.format import TextWarning, convert_workload

AR, AG, RS, A2A = (int(CommType.ALL_REDUCE), int(CommType.ALL_GATHER), int(CommType.REDUCE_SCATTER),
                   int(CommType.ALL_TO_ALL))


def C(nid, layer, label, dur, deps):
    """Expected compute node."""
    return (nid, f"COMP_NODE_{layer}_{label}", int(NodeType.COMP_NODE), dur, None, None, "", sorted(deps))


def K(nid, layer, token, ctype, size, deps, pg=""):
    """Expected collective node (``pg`` "" = default group, no pg_name)."""
    return (nid, f"COMM_COLL_NODE_{layer}_{token}", int(NodeType.COMM_COLL_NODE), 0, ctype, size, pg,
            sorted(deps))


def actual(ts, rank):
    out = []
    for n in ts[rank].nodes():
        assert get_bool(n, "is_cpu_op") is False
        coll = n.type == NodeType.COMM_COLL_NODE
        out.append((n.id, n.name, n.type, n.duration_micros,
                    get_int(n, "comm_type") if coll else None, get_int(n, "comm_size") if coll else None,
                    get_str(n, "pg_name", ""), sorted(n.data_deps)))
        assert not n.ctrl_deps
    return out


def convert(tmp_path, text, **opts):
    p = tmp_path / "w.txt"
    p.write_text(text)
    opts.setdefault("time_unit", "us")
    return convert_workload(parse_workload(p), **opts)


def test_data_two_passes(tmp_path):
    ts = convert(tmp_path, """DATA
3
conv1 -1 100 NONE 0 120 NONE 0 110 ALLREDUCE 4096 10
conv2 -1 200 NONE 0 220 NONE 0 210 NONE 0 10
fc    -1  50 NONE 0  60 NONE 0  55 ALLREDUCE 1024 10
""", npus=2, passes=2)
    one = [
        # forward: F_i <- F_{i-1}
        C(1, "conv1", "FWD", 100, []), C(2, "conv2", "FWD", 200, [1]), C(3, "fc", "FWD", 50, [2]),
        # backward: WG_{L-1} <- F_{L-1}; WGC_i <- WG_i; IG_i <- WG_i (i != 0); WG_i <- IG_{i+1}
        C(4, "fc", "BWD_WG", 55, [3]), K(5, "fc", "ALLREDUCE", AR, 1024, [4]), C(6, "fc", "BWD_IG", 60, [4]),
        C(7, "conv2", "BWD_WG", 210, [6]),  # NONE: no collective
        C(8, "conv2", "BWD_IG", 220, [7]),
        C(9, "conv1", "BWD_WG", 110, [8]), K(10, "conv1", "ALLREDUCE", AR, 4096, [9]),
    ]
    two = [
        # F_i <- prev-pass WGC_i, or prev-pass WG_i when the layer has no WG collective
        C(11, "conv1", "FWD", 100, [10]), C(12, "conv2", "FWD", 200, [11, 7]), C(13, "fc", "FWD", 50, [12, 5]),
        C(14, "fc", "BWD_WG", 55, [13]), K(15, "fc", "ALLREDUCE", AR, 1024, [14]), C(16, "fc", "BWD_IG", 60, [14]),
        C(17, "conv2", "BWD_WG", 210, [16]), C(18, "conv2", "BWD_IG", 220, [17]),
        C(19, "conv1", "BWD_WG", 110, [18]), K(20, "conv1", "ALLREDUCE", AR, 4096, [19]),
    ]
    assert actual(ts, 0) == one + two
    assert actual(ts, 1) == one + two
    assert ts.process_groups == {}


def test_micro(tmp_path):
    ts = convert(tmp_path, """MICRO
3
a -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 64 0
b -1 5 NONE 0 5 NONE 0 5 ALLGATHER 128 0
c -1 5 NONE 0 5 NONE 0 5 NONE 0 0
""", npus=4, passes=2)
    # one collective per pass and layer (weight-gradient type and size), no dependencies
    want = [K(1, "a", "ALLREDUCE", AR, 64, []), K(2, "b", "ALLGATHER", AG, 128, []),
            K(3, "a", "ALLREDUCE", AR, 64, []), K(4, "b", "ALLGATHER", AG, 128, [])]
    for r in range(4):
        assert actual(ts, r) == want


def test_model_two_passes(tmp_path):
    ts = convert(tmp_path, """MODEL
3
l0 -1 10 ALLGATHER 100 11 ALLREDUCE 101 12 ALLREDUCE 102 0
l1 -1 20 NONE 0 21 REDUCESCATTER 201 22 NONE 0 0
l2 -1 30 ALLTOALL 300 31 ALLREDUCE 301 32 NONE 0 0
""", npus=2, passes=2)
    want = [
        # forward: F_i <- FC_{i-1} (F_{i-1} when it has none), prev-pass WG_i; FC_i <- F_i
        C(1, "l0", "FWD", 10, []), K(2, "l0", "ALLGATHER", AG, 100, [1]),
        C(3, "l1", "FWD", 20, [2]),
        C(4, "l2", "FWD", 30, [3]), K(5, "l2", "ALLTOALL", A2A, 300, [4]),
        # backward: IG_{L-1} <- FC_{L-1}; IGC_i <- IG_i (i != 0); WG_i <- IG_i; no WG collective
        C(6, "l2", "BWD_IG", 31, [5]), K(7, "l2", "ALLREDUCE", AR, 301, [6]), C(8, "l2", "BWD_WG", 32, [6]),
        # IG_i <- WG_{i+1}, IGC_{i+1}
        C(9, "l1", "BWD_IG", 21, [7, 8]), K(10, "l1", "REDUCESCATTER", RS, 201, [9]),
        C(11, "l1", "BWD_WG", 22, [9]),
        C(12, "l0", "BWD_IG", 11, [10, 11]), C(13, "l0", "BWD_WG", 12, [12]),
        # pass 2
        C(14, "l0", "FWD", 10, [13]), K(15, "l0", "ALLGATHER", AG, 100, [14]),
        C(16, "l1", "FWD", 20, [15, 11]),
        C(17, "l2", "FWD", 30, [16, 8]), K(18, "l2", "ALLTOALL", A2A, 300, [17]),
        C(19, "l2", "BWD_IG", 31, [18]), K(20, "l2", "ALLREDUCE", AR, 301, [19]), C(21, "l2", "BWD_WG", 32, [19]),
        C(22, "l1", "BWD_IG", 21, [20, 21]), K(23, "l1", "REDUCESCATTER", RS, 201, [22]),
        C(24, "l1", "BWD_WG", 22, [22]),
        C(25, "l0", "BWD_IG", 11, [23, 24]), C(26, "l0", "BWD_WG", 12, [25]),
    ]
    assert actual(ts, 0) == want
    assert actual(ts, 1) == want


HYBRID = """{mode}
2
l0 -1 10 ALLREDUCE 100 11 ALLREDUCE 101 12 ALLREDUCE 102 0
l1 -1 20 NONE 0 21 ALLGATHER 201 22 REDUCESCATTER 202 0
"""


def _hybrid_want(mp, dp):
    return [
        # forward: F_i <- FC_{i-1}, prev-pass WGC_i; FC_i <- F_i (model-parallel group)
        C(1, "l0", "FWD", 10, []), K(2, "l0", "ALLREDUCE", AR, 100, [1], mp),
        C(3, "l1", "FWD", 20, [2]),
        # backward as MODEL, plus WGC_i <- WG_i in the data-parallel group
        C(4, "l1", "BWD_IG", 21, [3]), K(5, "l1", "ALLGATHER", AG, 201, [4], mp),
        C(6, "l1", "BWD_WG", 22, [4]), K(7, "l1", "REDUCESCATTER", RS, 202, [6], dp),
        C(8, "l0", "BWD_IG", 11, [5, 6]), C(9, "l0", "BWD_WG", 12, [8]), K(10, "l0", "ALLREDUCE", AR, 102, [9], dp),
        # pass 2
        C(11, "l0", "FWD", 10, [10]), K(12, "l0", "ALLREDUCE", AR, 100, [11], mp),
        C(13, "l1", "FWD", 20, [12, 7]),
        C(14, "l1", "BWD_IG", 21, [13]), K(15, "l1", "ALLGATHER", AG, 201, [14], mp),
        C(16, "l1", "BWD_WG", 22, [14]), K(17, "l1", "REDUCESCATTER", RS, 202, [16], dp),
        C(18, "l0", "BWD_IG", 11, [15, 16]), C(19, "l0", "BWD_WG", 12, [18]),
        K(20, "l0", "ALLREDUCE", AR, 102, [19], dp),
    ]


def test_hybrid_data_model(tmp_path):
    ts = convert(tmp_path, HYBRID.format(mode="HYBRID_DATA_MODEL"), npus=4, passes=2, mp_group=2)
    # model-parallel groups are consecutive ranks, data-parallel groups strided
    assert ts.process_groups == {"1": [0, 1], "2": [2, 3], "3": [0, 2], "4": [1, 3]}
    assert actual(ts, 0) == _hybrid_want("1", "3")
    assert actual(ts, 1) == _hybrid_want("1", "4")
    assert actual(ts, 2) == _hybrid_want("2", "3")
    assert actual(ts, 3) == _hybrid_want("2", "4")


def test_hybrid_model_data(tmp_path):
    ts = convert(tmp_path, HYBRID.format(mode="HYBRID_MODEL_DATA"), npus=4, passes=2, mp_group=2)
    # data-parallel groups are consecutive ranks, model-parallel groups strided
    assert ts.process_groups == {"1": [0, 2], "2": [1, 3], "3": [0, 1], "4": [2, 3]}
    assert actual(ts, 0) == _hybrid_want("1", "3")
    assert actual(ts, 1) == _hybrid_want("2", "3")
    assert actual(ts, 2) == _hybrid_want("1", "4")
    assert actual(ts, 3) == _hybrid_want("2", "4")


def test_transformer_two_passes(tmp_path):
    ts = convert(tmp_path, """HYBRID_TRANSFORMER model_parallel_NPU_group: 2
3
emb -1 10 ALLGATHER 100 11 NONE 0 12 ALLREDUCE 102 0
att -1 20 ALLREDUCE 200 21 ALLREDUCE 201 22 ALLREDUCE 202 0
fc  -1 30 NONE 0 31 ALLREDUCE 301 32 NONE 0 0
""", npus=4, passes=2)
    assert ts.process_groups == {"1": [0, 1], "2": [2, 3], "3": [0, 2], "4": [1, 3]}
    mp, dp = "2", "4"  # rank 3
    want = [
        # forward: F_i <- FC_{i-1}, prev-pass WGC_i (else WG_i); FC_i <- F_i blocking (MP group)
        C(1, "emb", "FWD", 10, []), K(2, "emb", "ALLGATHER", AG, 100, [1], mp),
        C(3, "att", "FWD", 20, [2]), K(4, "att", "ALLREDUCE", AR, 200, [3], mp),
        C(5, "fc", "FWD", 30, [4]),
        # backward, every layer: IG_i <- previous step; IGC_i <- IG_i (MP, also for layer 0);
        # WG_i <- IGC_i (blocking); WGC_i <- WG_i (DP); the next IG waits for WG_i
        C(6, "fc", "BWD_IG", 31, [5]), K(7, "fc", "ALLREDUCE", AR, 301, [6], mp), C(8, "fc", "BWD_WG", 32, [7]),
        C(9, "att", "BWD_IG", 21, [8]), K(10, "att", "ALLREDUCE", AR, 201, [9], mp),
        C(11, "att", "BWD_WG", 22, [10]), K(12, "att", "ALLREDUCE", AR, 202, [11], dp),
        C(13, "emb", "BWD_IG", 11, [11]), C(14, "emb", "BWD_WG", 12, [13]),
        K(15, "emb", "ALLREDUCE", AR, 102, [14], dp),
        # pass 2
        C(16, "emb", "FWD", 10, [15]), K(17, "emb", "ALLGATHER", AG, 100, [16], mp),
        C(18, "att", "FWD", 20, [17, 12]), K(19, "att", "ALLREDUCE", AR, 200, [18], mp),
        C(20, "fc", "FWD", 30, [19, 8]),
        C(21, "fc", "BWD_IG", 31, [20]), K(22, "fc", "ALLREDUCE", AR, 301, [21], mp), C(23, "fc", "BWD_WG", 32, [22]),
        C(24, "att", "BWD_IG", 21, [23]), K(25, "att", "ALLREDUCE", AR, 201, [24], mp),
        C(26, "att", "BWD_WG", 22, [25]), K(27, "att", "ALLREDUCE", AR, 202, [26], dp),
        C(28, "emb", "BWD_IG", 11, [26]), C(29, "emb", "BWD_WG", 12, [28]),
        K(30, "emb", "ALLREDUCE", AR, 102, [29], dp),
    ]
    assert actual(ts, 3) == want


#: four layers with a checkpoint at layer 0 that layer 2 recomputes from (after the mode's name)
_CHECKPOINTED = """ model_parallel_NPU_group: 2 checkpoints: 1 0 checkpoint_initiates: 1 2
4
l0 -1 10 ALLREDUCE 100 11 NONE 0 12 NONE 0 0
l1 -1 20 NONE 0 21 NONE 0 22 NONE 0 0
l2 -1 30 NONE 0 31 ALLREDUCE 301 32 ALLREDUCE 302 0
l3 -1 40 NONE 0 41 NONE 0 42 NONE 0 0
"""


def test_transformer_fwd_in_bckwd(tmp_path):
    ts = convert(tmp_path, "HYBRID_TRANSFORMER_FWD_IN_BCKWD" + _CHECKPOINTED, npus=4)
    mp, dp = "1", "3"  # rank 0
    want = [
        C(1, "l0", "FWD", 10, []), K(2, "l0", "ALLREDUCE", AR, 100, [1], mp),
        C(3, "l1", "FWD", 20, [2]), C(4, "l2", "FWD", 30, [3]), C(5, "l3", "FWD", 40, [4]),
        C(6, "l3", "BWD_IG", 41, [5]), C(7, "l3", "BWD_WG", 42, [6]),
        # layer 2 initiates a recompute from checkpoint 0: forward of layers 0..1 again, with
        # their forward collectives, chained after WG_3; then IG_2 waits for the last of them
        C(8, "l0", "FWD_RECOMPUTE", 10, [7]), K(9, "l0", "ALLREDUCE", AR, 100, [8], mp),
        C(10, "l1", "FWD_RECOMPUTE", 20, [9]),
        C(11, "l2", "BWD_IG", 31, [10]), K(12, "l2", "ALLREDUCE", AR, 301, [11], mp),
        C(13, "l2", "BWD_WG", 32, [12]), K(14, "l2", "ALLREDUCE", AR, 302, [13], dp),
        C(15, "l1", "BWD_IG", 21, [13]), C(16, "l1", "BWD_WG", 22, [15]),
        C(17, "l0", "BWD_IG", 11, [16]), C(18, "l0", "BWD_WG", 12, [17]),
    ]
    assert actual(ts, 0) == want


def test_transformer_ignores_checkpoints(tmp_path):
    # ASTRA-sim 1.0 recomputes only in HYBRID_TRANSFORMER_FWD_IN_BCKWD: the same file as above
    # under HYBRID_TRANSFORMER follows the plain transformer rules, and the ignored field is said
    with pytest.warns(TextWarning, match="line 1: checkpoint_initiates: ignored: only "
                      "HYBRID_TRANSFORMER_FWD_IN_BCKWD recomputes forward passes, not HYBRID_TRANSFORMER"):
        ts = convert(tmp_path, "HYBRID_TRANSFORMER" + _CHECKPOINTED, npus=4)
    mp, dp = "1", "3"  # rank 0
    assert actual(ts, 0) == [
        C(1, "l0", "FWD", 10, []), K(2, "l0", "ALLREDUCE", AR, 100, [1], mp),
        C(3, "l1", "FWD", 20, [2]), C(4, "l2", "FWD", 30, [3]), C(5, "l3", "FWD", 40, [4]),
        # IG_i <- (i = L-1 ? out(FC_{L-1}) : WG_{i+1}); WG_i <- out(IGC_i); WGC_i <- WG_i
        C(6, "l3", "BWD_IG", 41, [5]), C(7, "l3", "BWD_WG", 42, [6]),
        C(8, "l2", "BWD_IG", 31, [7]), K(9, "l2", "ALLREDUCE", AR, 301, [8], mp),
        C(10, "l2", "BWD_WG", 32, [9]), K(11, "l2", "ALLREDUCE", AR, 302, [10], dp),
        C(12, "l1", "BWD_IG", 21, [10]), C(13, "l1", "BWD_WG", 22, [12]),
        C(14, "l0", "BWD_IG", 11, [13]), C(15, "l0", "BWD_WG", 12, [14]),
    ]


DLRM = """{mode} 1
4
emb  -1 10 ALLTOALL 100 11 ALLTOALL 101 12 NONE 0 0
bot  -1 20 ALLREDUCE 200 21 ALLREDUCE 201 22 ALLREDUCE 202 0
top1 -1 30 NONE 0 31 NONE 0 32 ALLREDUCE 302 0
top2 -1 40 NONE 0 41 NONE 0 42 NONE 0 0
"""


def _dlrm_want(enhanced: bool):
    return [
        # forward: F_i <- F_{i-1}, prev-pass WGC_i (else WG_i); FC_i <- F_i only for ALLTOALL
        # (bot's forward ALLREDUCE is not issued); F_{k+1} also waits for FC_0 (k = 1)
        C(1, "emb", "FWD", 10, []), K(2, "emb", "ALLTOALL", A2A, 100, [1]),
        C(3, "bot", "FWD", 20, [1]), C(4, "top1", "FWD", 30, [3, 2]), C(5, "top2", "FWD", 40, [4]),
        # backward: WG_{L-1} <- F_{L-1}; WG_i <- IG_{i+1}; WGC_i <- WG_i; IG_i <- WG_i (i != 0)
        C(6, "top2", "BWD_WG", 42, [5]), C(7, "top2", "BWD_IG", 41, [6]),
        C(8, "top1", "BWD_WG", 32, [7]), K(9, "top1", "ALLREDUCE", AR, 302, [8]),
        C(10, "top1", "BWD_IG", 31, [8]),
        # i = k+1: IGC_0 (layer 0's input-gradient type and size) <- IG_{k+1}
        K(11, "emb", "ALLTOALL", A2A, 101, [10]),
        # i = k: WG_k does not wait for IGC_0 (they overlap; bot's input-gradient ALLREDUCE is
        # not issued)
        C(12, "bot", "BWD_WG", 22, [10]), K(13, "bot", "ALLREDUCE", AR, 202, [12]),
        C(14, "bot", "BWD_IG", 21, [12]),
        C(15, "emb", "BWD_WG", 12, [14]),
        # pass 2: HYBRID_DLRM's layer-0 weight-gradient step blocks on IGC_0 before the next
        # pass, so F_0 also waits for it; ENHANCED drops that wait
        C(16, "emb", "FWD", 10, [15] if enhanced else [11, 15]), K(17, "emb", "ALLTOALL", A2A, 100, [16]),
        C(18, "bot", "FWD", 20, [16, 13]), C(19, "top1", "FWD", 30, [18, 9, 17]), C(20, "top2", "FWD", 40, [19, 6]),
        C(21, "top2", "BWD_WG", 42, [20]), C(22, "top2", "BWD_IG", 41, [21]),
        C(23, "top1", "BWD_WG", 32, [22]), K(24, "top1", "ALLREDUCE", AR, 302, [23]),
        C(25, "top1", "BWD_IG", 31, [23]), K(26, "emb", "ALLTOALL", A2A, 101, [25]),
        C(27, "bot", "BWD_WG", 22, [25]), K(28, "bot", "ALLREDUCE", AR, 202, [27]),
        C(29, "bot", "BWD_IG", 21, [27]), C(30, "emb", "BWD_WG", 12, [29]),
    ]


def test_dlrm(tmp_path):
    ts = convert(tmp_path, DLRM.format(mode="HYBRID_DLRM"), npus=4, passes=2)
    for r in range(4):
        assert actual(ts, r) == _dlrm_want(enhanced=False)
    assert ts.process_groups == {}


def test_dlrm_enhanced(tmp_path):
    # ENHANCED drops HYBRID_DLRM's wait for IGC_0 at the end of a pass (ASTRA-sim 1.0's
    # Weight_Gradient state checks it only for ParallelismPolicy::DLRM)
    ts = convert(tmp_path, DLRM.format(mode="HYBRID_DLRM_ENHANCED"), npus=4, passes=2)
    assert actual(ts, 2) == _dlrm_want(enhanced=True)


def test_transformer_expert_groups(tmp_path):
    # an AICB-style header and SimAI's group suffixes: 8 ranks, model-parallel groups of 2
    # ([0,1] [2,3] [4,5] [6,7] = MP groups g0..g3), data-parallel groups of 4 (strided),
    # expert groups of ep=2: same position in MP groups {g0,g1} / {g2,g3}; DP_EP groups: same
    # position in MP groups {g0,g2} / {g1,g3}
    ts = convert(tmp_path, """HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 2 pp: 1 vpp: 1 ga: 1 all_gpus: 8 checkpoints: 0 checkpoint_initiates: 0 pp_comm 0
2
moe -1 10 ALLTOALL_EP 100 11 ALLTOALL_EP 101 12 ALLGATHER_DP_EP 102 0
mlp -1 20 ALLREDUCE 200 21 NONE 0 22 REDUCESCATTER_DP_EP 202 0
""")
    assert ts.ranks == list(range(8))
    assert ts.process_groups == {
        "1": [0, 1], "2": [2, 3], "3": [4, 5], "4": [6, 7], "5": [0, 2, 4, 6], "6": [1, 3, 5, 7],
        "7": [0, 2], "8": [1, 3], "9": [4, 6], "10": [5, 7],
        "11": [0, 4], "12": [1, 5], "13": [2, 6], "14": [3, 7],
    }
    mp, ep, dp_ep = "3", "10", "12"  # rank 5
    assert actual(ts, 5) == [
        C(1, "moe", "FWD", 10, []), K(2, "moe", "ALLTOALL_EP", A2A, 100, [1], ep),
        C(3, "mlp", "FWD", 20, [2]), K(4, "mlp", "ALLREDUCE", AR, 200, [3], mp),
        C(5, "mlp", "BWD_IG", 21, [4]), C(6, "mlp", "BWD_WG", 22, [5]),
        K(7, "mlp", "REDUCESCATTER_DP_EP", RS, 202, [6], dp_ep),
        C(8, "moe", "BWD_IG", 11, [6]), K(9, "moe", "ALLTOALL_EP", A2A, 101, [8], ep),
        C(10, "moe", "BWD_WG", 12, [9]), K(11, "moe", "ALLGATHER_DP_EP", AG, 102, [10], dp_ep),
    ]


def test_dense_aicb_dp_ep_is_the_data_parallel_group(tmp_path):
    # without ep: (ep = 1) a _DP_EP collective runs in the data-parallel group, under its name
    ts = convert(tmp_path, """HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2
1
grad_norm -1 1 NONE 0 1 NONE 0 1 ALLGATHER_DP_EP 0 100
""", npus=4)
    assert ts.process_groups == {"1": [0, 1], "2": [2, 3], "3": [0, 2], "4": [1, 3]}
    assert actual(ts, 3) == [
        C(1, "grad_norm", "FWD", 1, []), C(2, "grad_norm", "BWD_IG", 1, [1]), C(3, "grad_norm", "BWD_WG", 1, [2]),
        K(4, "grad_norm", "ALLGATHER_DP_EP", AG, 0, [3], "4"),
    ]


def test_absent_collectives_drop_their_dependencies(tmp_path):
    # MODEL: layer b has no forward collective (out(FC_b) = F_b) and no input-gradient one, so
    # IG_a waits for WG_b only
    ts = convert(tmp_path, """MODEL
2
a -1 1 ALLREDUCE 8 2 NONE 0 3 NONE 0 0
b -1 4 NONE 0 5 NONE 0 6 NONE 0 0
""", npus=2)
    assert actual(ts, 1) == [
        C(1, "a", "FWD", 1, []), K(2, "a", "ALLREDUCE", AR, 8, [1]), C(3, "b", "FWD", 4, [2]),
        C(4, "b", "BWD_IG", 5, [3]), C(5, "b", "BWD_WG", 6, [4]),
        C(6, "a", "BWD_IG", 2, [5]), C(7, "a", "BWD_WG", 3, [6]),
    ]
    # DLRM, k = 0, no embedding all-to-alls: F_1 does not wait for FC_0, WG_0 not for IGC_0
    ts = convert(tmp_path, """HYBRID_DLRM 0
2
emb -1 1 NONE 0 2 NONE 0 3 NONE 0 0
top -1 4 NONE 0 5 NONE 0 6 ALLREDUCE 16 0
""", npus=2)
    assert actual(ts, 0) == [
        C(1, "emb", "FWD", 1, []), C(2, "top", "FWD", 4, [1]),
        C(3, "top", "BWD_WG", 6, [2]), K(4, "top", "ALLREDUCE", AR, 16, [3]), C(5, "top", "BWD_IG", 5, [3]),
        C(6, "emb", "BWD_WG", 3, [5]),
    ]
