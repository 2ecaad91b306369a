"""Llama 2 and Llama 3 shapes (grouped-query attention, SwiGLU, RMSNorm, rotary positions, no
biases, untied output layer) and ZeRO-3, against closed forms computed here from the matrix shapes.

Published sizes (Meta's released configurations): Llama-2-70B has 80 layers, hidden 8192, 64
heads, 8 key/value heads, ffn 28672, vocabulary 32000: 68,976,648,192 parameters; Llama-3-8B has
32 layers, hidden 4096, 32 heads, 8 key/value heads, ffn 14336, vocabulary 128256:
8,030,261,248 parameters.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

import chakra_core as chakra
from chakra_core import NodeType, get_attr

LLAMA = {
    "llama2-70b": {"L": 80, "h": 8192, "a": 64, "kv": 8, "f": 28672, "V": 32000, "seq": 4096, "params": 68_976_648_192},
    "llama3-8b": {"L": 32, "h": 4096, "a": 32, "kv": 8, "f": 14336, "V": 128256, "seq": 8192, "params": 8_030_261_248},
}


def layer_params(s, tp):
    """One Llama layer on a tp rank: q (h x h), k and v (h x h*kv/a each), o (h x h), gate and up
    (h x f each) and down (f x h) split by tp; two RMSNorms (h each) replicated."""
    h, kvd, f = s["h"], s["h"] * s["kv"] // s["a"], s["f"]
    return (h * h + 2 * h * kvd + h * h + 3 * h * f) // tp + 2 * h


def colls(traces, rank):
    return [(n.name, chakra.CommType(get_attr(n, "comm_type")).name, get_attr(n, "comm_size"),
             tuple(traces.group_members(get_attr(n, "pg_name"))))
            for n in traces[rank].nodes() if n.type == NodeType.COMM_COLL_NODE]


def grads(cs):
    return sum(s for n, _, s, _ in cs if "grad_bucket" in n)


@pytest.mark.parametrize("preset", sorted(LLAMA))
def test_published_parameter_count_from_the_gradient_bytes(preset):
    s = LLAMA[preset]
    traces = chakra.generate("transformer", {"preset": preset, "dp": 2, "micro_batches": 1})
    total = s["L"] * layer_params(s, 1) + 2 * s["V"] * s["h"] + s["h"]  # embedding, output, final norm
    assert total == s["params"]
    assert grads(colls(traces, 0)) == s["params"] * 4  # fp32 gradients


def test_llama2_70b_tp8_pp4_dp2_bytes():
    s, tp, pp, dp, m, d, g = LLAMA["llama2-70b"], 8, 4, 2, 4, 2, 4
    traces = chakra.generate("transformer", {"preset": "llama2-70b", "tp": tp, "pp": pp, "dp": dp, "micro_batches": m})
    assert len(traces) == tp * pp * dp
    act, per_stage = s["seq"] * s["h"] * d, s["L"] // pp
    for stage in range(pp):
        r = stage * tp * dp  # tp_rank 0, dp_rank 0
        cs = colls(traces, r)
        tp_group = tuple(range(r, r + tp))
        assert Counter((t, sz, mem) for n, t, sz, mem in cs if ".L" in n) == Counter(
            {("ALL_REDUCE", act, tp_group): 4 * per_stage * m})
        want = per_stage * layer_params(s, tp)
        if stage == 0:
            want += s["V"] * s["h"] // tp  # rotary positions: no position table
        if stage == pp - 1:
            want += s["V"] * s["h"] // tp + s["h"]
        assert grads(cs) == want * g
        assert not any("embedding_grad" in n for n, *_ in cs)  # untied output layer
    compute = {n.name.split(".")[-1]: get_attr(n, "num_ops") for n in traces[0].nodes()
               if n.type == NodeType.COMP_NODE and n.name.startswith("s0.F0.c0.L0.")}
    T, h, kvd, f = s["seq"], s["h"], s["h"] * s["kv"] // s["a"], s["f"]
    assert compute["qkv"] == 2 * T * h * (h + 2 * kvd) // tp
    assert compute["fc1"] == 2 * T * h * 2 * f // tp and compute["fc2"] == 2 * T * f // tp * h
    assert "swiglu" in compute and "gelu" not in compute


def test_llama3_8b_sequence_and_context_parallel_bytes():
    s, tp, cp, m, d = LLAMA["llama3-8b"], 2, 2, 2, 2
    traces = chakra.generate("transformer", {"preset": "llama3-8b", "tp": tp, "cp": cp, "sp": True,
                                             "micro_batches": m, "layers": 4})
    cs = colls(traces, 0)
    act = s["seq"] // cp * s["h"] * d
    kv = 2 * s["seq"] * (s["h"] * s["kv"] // s["a"]) // tp * d  # keys and values of 8 groups, gathered over cp
    layers = Counter((t, sz) for n, t, sz, _ in cs if ".L" in n)
    # an all-gather's size is the per-rank shard: the gathered bytes over its group (tp, cp)
    assert layers == Counter({("ALL_GATHER", act // tp): 6 * 4 * m, ("REDUCE_SCATTER", act): 4 * 4 * m,
                              ("ALL_GATHER", kv // cp): 4 * m, ("REDUCE_SCATTER", kv): 4 * m})


def test_explicit_options_win_over_the_preset():
    traces = chakra.generate("transformer", {"preset": "llama3-8b", "layers": 2, "vocab": 1024, "seq": 64})
    names = {n.name.split(".")[3] for n in traces[0].nodes() if n.name.startswith("s0.F0.c0.L")}
    assert names == {"L0", "L1"}


def test_kv_heads_must_split_over_tp():
    with pytest.raises(chakra.ConfigError, match="kv_heads 8 is not a multiple of tp 16"):
        chakra.generate("transformer", {"preset": "llama3-8b", "tp": 16})


def test_zero3_llama3_8b_three_times_the_parameters(h):
    # ZeRO-3 (Rajbhandari et al., 2020, section 7.2.2): per step, an all-gather of every parameter
    # before its forward and again before its backward, and a reduce-scatter of every gradient
    s, tp, dp, m, d, g = LLAMA["llama3-8b"], 2, 2, 2, 2, 4
    traces = chakra.generate("transformer", {"preset": "llama3-8b", "tp": tp, "dp": dp, "zero": 3, "micro_batches": m,
                                             "grad_reduce": "per_step"})
    cs = colls(traces, 0)
    dp_group = (0, 2)
    lp, emb, out = layer_params(s, tp), s["V"] * s["h"] // tp, s["h"] + s["V"] * s["h"] // tp
    gathers = Counter((t, sz, mem) for n, t, sz, mem in cs if "zero3_all_gather" in n)
    assert gathers == Counter({("ALL_GATHER", h.shard(lp * d, dp), dp_group): 2 * s["L"] * m,
                               ("ALL_GATHER", h.shard(emb * d, dp), dp_group): 2 * m,
                               ("ALL_GATHER", h.shard(out * d, dp), dp_group): 2 * m})
    psi = s["L"] * lp + emb + out  # parameters on one tp rank
    # each rank contributes its shard of every gather: 2 m Psi d gathered over dp ranks
    assert sum(sz for n, t, sz, _ in cs if "zero3_all_gather" in n) * dp == 2 * m * psi * d
    rs = [(t, mem) for n, t, _, mem in cs if "grad_bucket" in n]
    assert set(rs) == {("REDUCE_SCATTER", dp_group)} and len(rs) == s["L"] + 2  # per layer, embedding, output
    assert grads(cs) == psi * g
    assert not any("param_bucket" in n or t == "ALL_REDUCE" and mem == dp_group for n, t, _, mem in cs)


def test_zero3_llama3_8b_dp4_reduce_scatters_every_micro_batch(h):
    # DeepSpeed stage 3 (and FSDP without no_sync): each micro-batch's backward gathers every layer's
    # parameters and reduce-scatters its gradients into the rank's partition, so one micro-batch
    # moves 2 Psi d gathered and Psi g reduce-scattered bytes, and a step m times that.
    s, dp, m, d, g = LLAMA["llama3-8b"], 4, 4, 2, 4
    traces = chakra.generate("transformer", {"preset": "llama3-8b", "dp": dp, "zero": 3, "micro_batches": m})
    workload = json.loads(get_attr(traces[0].metadata(), "workload"))
    assert (workload["zero"], workload["grad_reduce"]) == (3, "per_microbatch")  # the default, recorded
    cs = colls(traces, 0)
    dp_group = (0, 1, 2, 3)
    lp, emb, out = layer_params(s, 1), s["V"] * s["h"], s["h"] + s["V"] * s["h"]
    assert (lp, emb, out) == (218_112_000, 525_336_576, 525_340_672)
    psi = s["L"] * lp + emb + out
    assert psi == s["params"]
    gathers = Counter((t, sz, mem) for n, t, sz, mem in cs if "zero3_all_gather" in n)
    assert gathers == Counter({("ALL_GATHER", h.shard(lp * d, dp), dp_group): 2 * s["L"] * m,
                               ("ALL_GATHER", h.shard(emb * d, dp), dp_group): 2 * m,
                               ("ALL_GATHER", h.shard(out * d, dp), dp_group): 2 * m})
    rs = [(n, t, sz, mem) for n, t, sz, mem in cs if "grad_bucket" in n]
    assert Counter((t, sz, mem) for _, t, sz, mem in rs) == Counter(
        {("REDUCE_SCATTER", lp * g, dp_group): s["L"] * m, ("REDUCE_SCATTER", emb * g, dp_group): m,
         ("REDUCE_SCATTER", out * g, dp_group): m})
    assert sum(sz for n, t, sz, _ in cs if "zero3_all_gather" in n) * dp == 2 * m * psi * d == 128_484_179_968
    assert grads(cs) == m * psi * g == 128_484_179_968
    # in issue order: each backward reduce-scatters the output layer, the layers last to first,
    # then the embedding, before the next micro-batch's backward starts
    one_backward = [out * g] + [lp * g] * s["L"] + [emb * g]
    assert [sz for _, _, sz, _ in rs] == one_backward * m
    micro_batch_of = {}
    for n in traces[0].nodes():
        if n.type == NodeType.COMP_NODE and ".B" in n.name:
            current = int(n.name.split(".")[1][1:])
        if n.type == NodeType.COMM_COLL_NODE and "grad_bucket" in n.name:
            micro_batch_of[n.name] = current
    assert list(micro_batch_of.values()) == [k for k in range(m) for _ in range(s["L"] + 2)]
    optimizer = [get_attr(n, "num_ops") for n in traces[0].nodes() if n.name == "s0.optimizer"]
    assert optimizer == [12 * psi // dp]  # Adam on the rank's partition, once per step
