"""A module compiled for GPUs by others: XLA's GPU benchmark ``nv_maxtext_llama3_8b_1n8g_after_spmd_
partitioner.hlo`` (tests/data/public/xla_benchmarks_gpu/, source and license in its README), one
MaxText Llama-3-8B training step for 8 GPUs right after SPMD partitioning.

Everything asserted is counted in the module text by hand (``zcat FILE | grep -c ...``):
16 lines hold ``all-gather(`` (7 in the forward loop body ``%region_1.4_spmd``, 7 in the backward
body ``%region_10.15_spmd``, 2 in ENTRY) and 51 hold ``all-reduce(`` (9 in the backward body,
42 in ENTRY); every one has ``replica_groups=mesh['axis_0'=8] {'axis_0'}``. Both bodies run 32
times: ``compare(%param.1#0, constant(32)), direction=LT`` with a counter starting at
``constant(0)`` and stepping by ``constant(1)``. Durations are closed forms at the default device
h100: bf16 peak 989.4 TFLOPS, 3350 GB/s."""

from __future__ import annotations

import gzip
import math
import warnings
from pathlib import Path

import pytest

from chakra_core import CommType, NodeAttrs, load_traces, simulate, validate

MODULE = "public/xla_benchmarks_gpu/nv_maxtext_llama3_8b_1n8g_after_spmd_partitioner.hlo.txt.gz"
LAYERS = 32
BF16 = 2
# the operands of the all-gathers of one loop body, forward and backward alike (bf16 shards):
# [512,32,128] query, 2 x [512,8,128] key/value, [32,128,512] out, 2 x [512,14336] wi_0/wi_1,
# [14336,512] wo
BODY_GATHER = BF16 * (512 * 32 * 128 + 2 * 512 * 8 * 128 + 32 * 128 * 512 + 2 * 512 * 14336 + 14336 * 512)
# ENTRY's all-gather.14 (embedding) and all-gather.15 (logits kernel): bf16[128256,512], bf16[512,128256]
ENTRY_GATHER = 2 * BF16 * 128256 * 512
# the backward body's all-reduces: dot.19/20/21 ([4096,14336] x2, [14336,4096]), dot.22/23 ([4096]
# x2), dot.24/27 ([8,128,4096] x2), dot.25 [4096,32,128], dot.26 [32,128,4096]
BODY_REDUCE = BF16 * (3 * 4096 * 14336 + 2 * 4096 + 2 * 8 * 128 * 4096 + 2 * 4096 * 32 * 128)
# ENTRY: all-reduce.10 bf16[4096], .18 bf16[4096,128256], .20 bf16[128256,4096], .9 s32[] and
# 38 of f32[] (gradient and parameter norms)
ENTRY_REDUCE = BF16 * (4096 + 2 * 4096 * 128256) + 4 + 38 * 4
H100_BF16_PER_US = 989.4e6
H100_BYTES_PER_US = 3350e3


@pytest.fixture(scope="module")
def llama():
    path = str(Path(__file__).resolve().parent / "data" / MODULE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts = load_traces(path, format="jax", options={})
        ranks = {r: list(ts[r].nodes()) for r in ts.ranks}
    # chakra_core's open_binary leaves the file under a gzip stream open (a ResourceWarning of
    # the core, not of this converter): only the converter's own warnings are compared
    return path, ts, ranks, [str(w.message) for w in caught if not issubclass(w.category, ResourceWarning)]


def _comm(nodes, kind):
    return [(n.name, NodeAttrs(n)) for n in nodes if NodeAttrs(n).get("comm_type") == kind]


def test_eight_devices_one_group_of_all(llama):
    _, ts, _, _ = llama
    # num_partitions=8; every collective's groups are mesh['axis_0'=8] {'axis_0'}
    assert ts.ranks == list(range(8))
    assert ts.process_groups == {"1": list(range(8))}


def test_collectives_counted_by_hand(llama):
    _, _, ranks, _ = llama
    for nodes in ranks.values():
        gathers, reduces = _comm(nodes, CommType.ALL_GATHER), _comm(nodes, CommType.ALL_REDUCE)
        assert len(gathers) == 2 * 7 * LAYERS + 2 == 450
        assert len(reduces) == 9 * LAYERS + 42 == 330
        assert sum(a.get("comm_size") for _, a in gathers) == 2 * LAYERS * BODY_GATHER + ENTRY_GATHER
        assert sum(a.get("comm_size") for _, a in reduces) == LAYERS * BODY_REDUCE + ENTRY_REDUCE
        assert {a.get("pg_name") for _, a in gathers + reduces} == {"1"}
    sizes = {name: a.get("comm_size") for name, a in _comm(ranks[0], CommType.ALL_GATHER)
             + _comm(ranks[0], CommType.ALL_REDUCE)}
    # %all-gather.14 = bf16[128256,4096] all-gather(bf16[128256,512] ...): the shard each device sends
    assert sizes["all-gather.14"] == BF16 * 128256 * 512
    # %all-gather = bf16[4096,32,128] all-gather(bf16[512,32,128]) in every forward iteration
    assert sizes["while.50[0]/all-gather"] == sizes["while.50[31]/all-gather"] == BF16 * 512 * 32 * 128
    # %all-reduce = bf16[4096,14336] all-reduce(%dot.19) in the last backward iteration
    assert sizes["while.51[31]/all-reduce"] == BF16 * 4096 * 14336
    assert sizes["all-reduce.9"] == 4  # s32[] token count


def test_counter_loops_without_trip_count_are_unrolled(llama):
    _, _, ranks, _ = llama
    names = {n.name for n in ranks[0]}
    # neither while carries known_trip_count; the counter runs 0..31 in both
    assert {"while.50", "while.51"}.isdisjoint(names)
    assert {f"while.50[{i}]/dot.9" for i in range(LAYERS)} <= names
    assert "while.50[32]/dot.9" not in names
    # the backward body reads the forward activations through %param.2#11 (tuple-index operands)
    assert {f"while.51[{i}]/dot.22" for i in range(LAYERS)} <= names
    # %dynamic-slice.11 = bf16[1,1,4096,14336] dynamic-slice(%param.2#11, %sub.9, 3 x s32[] zero):
    # element 11 of the loop state, bf16[32,1,4096,14336] (the tuple printed with /*index=N*/ marks)
    ds = next(n for n in ranks[0] if n.name == "while.51[0]/dynamic-slice.11")
    assert NodeAttrs(ds).get("tensor_size") == BF16 * 4096 * 14336 + BF16 * 32 * 4096 * 14336 + 4 * 4


def _roofline_us(flops, size):
    return math.ceil(max(flops / H100_BF16_PER_US, size / H100_BYTES_PER_US))


def test_dot_durations_are_the_h100_roofline(llama):
    _, _, ranks, _ = llama
    nodes = {n.name: n for n in ranks[0]}
    cases = {
        # %dot.29 = bf16[1,4096,128256] dot(bf16[1,4096,4096], bf16[4096,128256]), K = 4096 (logits)
        "dot.29": (4096, 128256, 4096, 4096 * 4096 + 4096 * 128256 + 4096 * 128256),
        # %dot.9 = bf16[1,4096,14336] dot(bf16[1,4096,4096], bf16[4096,14336]), K = 4096 (MLP wi_0)
        "while.50[5]/dot.9": (4096, 14336, 4096, 4096 * 4096 + 4096 * 14336 + 4096 * 14336),
        # %dot.8 = bf16[1,4096,4096] dot(bf16[1,4096,32,128], bf16[32,128,4096]), K = 32 x 128
        "while.50[0]/dot.8": (4096, 4096, 32 * 128, 4096 * 32 * 128 + 32 * 128 * 4096 + 4096 * 4096),
    }
    for name, (m, n, k, elements) in cases.items():
        attrs = NodeAttrs(nodes[name])
        assert attrs.get("num_ops") == 2 * m * n * k
        assert attrs.get("tensor_size") == BF16 * elements
        assert nodes[name].duration_micros == _roofline_us(2 * m * n * k, BF16 * elements)
    assert nodes["dot.29"].duration_micros == 4350
    # %dot.22 = bf16[4096] dot(bf16[4096,1,4096], bf16[1,4096,4096]), batch 4096, K = 4096: memory-bound
    dot22 = nodes["while.51[0]/dot.22"]
    size = BF16 * (4096 * 4096 + 4096 * 4096 + 4096)
    assert NodeAttrs(dot22).get("num_ops") == 2 * 4096 * 4096
    assert dot22.duration_micros == _roofline_us(2 * 4096 * 4096, size) == 21


def test_cudnn_flash_attention_priced_from_its_shapes(llama):
    path, _, ranks, caught = llama
    # %dot_product_attention_fwd.5 (forward body) and .0 (rematerialised in the backward body):
    # __cudnn$fmhaSoftmax of q bf16[1,4096,32,128], k and v bf16[1,4096,8,128] (grouped-query),
    # intermediate_tensor_shape [1,32,4096,4096], mask_type CAUSAL: 4096 x 4097 / 2 (query, key)
    # pairs per head; forward = 2 GEMMs (QK^T, PV) of 2 x pairs x 128 FLOPs for each of 32
    # heads, backward (%dot_product_attention_bwd.8, __cudnn$fmhaSoftmaxBackward) = 5 GEMMs
    pairs = 4096 * 4097 // 2
    forward, backward = 2 * 2 * 32 * pairs * 128, 5 * 2 * 32 * pairs * 128
    assert caught == [f"{path}: device model h100 (default: the module names no target; option device= to change)"]
    nodes = {n.name: n for n in ranks[0]}
    for i in (0, 31):
        for name, flops in ((f"while.50[{i}]/dot_product_attention_fwd.5", forward),
                            (f"while.51[{i}]/dot_product_attention_fwd.0", forward),
                            (f"while.51[{i}]/dot_product_attention_bwd.8", backward)):
            attrs = NodeAttrs(nodes[name])
            assert attrs.get("num_ops") == flops
            # compute-bound at the bf16 peak: 137.5 GFLOP -> 139 us, 343.7 GFLOP -> 348 us
            assert nodes[name].duration_micros == _roofline_us(flops, attrs.get("tensor_size"))
    assert nodes["while.51[0]/dot_product_attention_bwd.8"].duration_micros == 348


def test_validates_and_simulates_with_its_compute(llama, tmp_path):
    _, ts, ranks, _ = llama
    assert validate(ts) == []
    ts.write(tmp_path / "et")
    result = simulate(str(tmp_path / "et"), "simpy")
    compute_us = sum(n.duration_micros for n in ranks[0] if n.type not in (5, 6, 7))
    assert compute_us > 0
    # one stream per device: every compute node is on the critical path
    assert result.summary["critical_path"]["ns_by_category"]["compute_ns"] == compute_us * 1000
    assert result.summary["finish_ns"] > compute_us * 1000


@pytest.mark.parametrize("old, new", [
    # the forward body steps its counter by 2: not the canonical counter loop
    ("%constant.129.clone = s32[] constant(1)", "%constant.129.clone = s32[] constant(2)"),
    # the forward condition tests i != 32: not a bound the counter is known to reach
    ("compare(%param.1#0, %constant.136.clone), direction=LT", "compare(%param.1#0, %constant.136.clone), direction=NE"),
])
def test_other_loops_stay_summarised(llama, tmp_path, old, new):
    path, _, _, _ = llama
    text = gzip.decompress(Path(path).read_bytes()).decode()
    assert text.count(old) == 1
    changed = tmp_path / "changed.hlo.txt"
    changed.write_text(text.replace(old, new))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nodes = {n.name: n for n in load_traces(str(changed), format="jax", options={})[0].nodes()}
    loop = NodeAttrs(nodes["while.50"])
    assert "trip count unknown" in loop.get_str("note")
    # timed at the peak of its bf16 dots, not of the loop's first output (its s32 counter)
    assert nodes["while.50"].duration_micros == _roofline_us(loop.get("num_ops"), loop.get("tensor_size"))
    assert "while.50[0]/dot.9" not in nodes
    assert "while.51[31]/dot.22" in nodes  # the backward loop is still a counter loop
