"""HLO modules compiled by others (tests/data/public/, sources and license in their README):
torch_xla graphs of AWS Neuron jobs. Collectives are checked by hand against the module text;
FLOPs and durations against closed forms of the shapes (default device h100: 66.9 fp32 TFLOPS,
3350 GB/s)."""

from __future__ import annotations

import math
import warnings

from chakra_core import CommType, NodeAttrs, load_traces

NEURON = "public/torch_xla_neuron"


def _load(path, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts = load_traces(str(path), format="jax", options=options)
        ranks = {r: list(ts[r].nodes()) for r in ts.ranks}
    return ts, ranks, [str(w.message) for w in caught]


def test_gpt2_tensor_parallel_collectives(jax_data, comm_nodes):
    ts, _, _ = _load(jax_data / NEURON / "gpt2_tp2.hlo.txt")
    # no replica_count in the header: the groups {{0,1}} name devices 0 and 1
    assert ts.ranks == [0, 1] and ts.process_groups == {"1": [0, 1]}
    for r in ts.ranks:
        got = [(n.name, a.get("comm_type"), a.get("comm_size"), a.get("pg_name")) for n, a in comm_nodes(ts[r])]
        # %all-reduce.158 and %all-reduce.189: f32[768,1,4] each
        assert got == [("all-reduce.158", CommType.ALL_REDUCE, 768 * 1 * 4 * 4, "1"),
                       ("all-reduce.189", CommType.ALL_REDUCE, 768 * 1 * 4 * 4, "1")]


def test_gpt2_dot_costs_and_durations(jax_data):
    ts, ranks, caught = _load(jax_data / NEURON / "gpt2_tp2.hlo.txt")
    nodes = {n.name: n for n in ranks[0]}
    # %dot.184 = f32[4,768] dot(f32[4,1536], f32[768,1536]), lhs_contracting_dims={1}
    dot = NodeAttrs(nodes["dot.184"])
    assert dot.get("num_ops") == 2 * 4 * 768 * 1536
    size = 4 * (4 * 1536 + 768 * 1536 + 4 * 768)
    assert dot.get("tensor_size") == size
    assert nodes["dot.184"].duration_micros == math.ceil(max(2 * 4 * 768 * 1536 / 66.9e6, size / 3350e3)) == 2
    # %dot.74 = f32[4,384] dot(f32[768,4], f32[768,384]), lhs_contracting_dims={0}
    assert NodeAttrs(nodes["dot.74"]).get("num_ops") == 2 * 4 * 384 * 768
    default = "device model h100 (default: the module names no target; option device= to change)"
    where = jax_data / NEURON / "gpt2_tp2.hlo.txt"
    assert caught == [f"{where}: {default}",
                      f"{where}: custom-calls of unknown targets kept as compute nodes without FLOPs "
                      "('AwsNeuronGelu' x1, 'AwsNeuronTransferWithStaticRing' x22): "
                      "communication inside them is not in the trace"]
    notes = [a.string_val for a in ts[0].metadata().attr if a.name == "note"]
    assert notes == [default]


def test_data_parallel_graph_without_device_count(jax_data, comm_nodes):
    path = jax_data / NEURON / "mini_mlp_dp.hlo.txt"
    ts, ranks, caught = _load(path)
    assert ts.ranks == [0] and len(ranks[0]) > 0
    assert any("one device, as XLA reads it" in m for m in caught)
    assert comm_nodes(ts[0]) == []  # an all-reduce of one device is no communication
    ts8, _, _ = _load(path, devices=8)
    assert ts8.process_groups == {"1": list(range(8))}
    for r in ts8.ranks:
        # %all-reduce.105: (f32[10], f32[10,784], f32[]) summed over the tuple
        assert [(a.get("comm_type"), a.get("comm_size")) for _, a in comm_nodes(ts8[r])] == [
            (CommType.ALL_REDUCE, 4 * (10 + 10 * 784 + 1))]
