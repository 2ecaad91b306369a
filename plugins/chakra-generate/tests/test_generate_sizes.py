"""Collective counts and sizes of generated sets against the closed forms, computed here.

Closed forms (docs/generate.md): per layer and micro-batch two tensor-parallel all-reduces of
``mb*s*h*d`` forward and two backward (with sp: all-gather + reduce-scatter pairs); pipeline
messages of the activation between adjacent stages; the data-parallel gradients of the stage's
parameters per tp rank (Megatron's split) times ``grad_bytes``; MoE all-to-alls of
``mb*s*topk*h*d``.  An all-gather's size is its per-rank input shard: the gathered bytes over
its group's ranks (``h.shard``), a reduce-scatter's its whole input.
"""

from __future__ import annotations

from collections import Counter

import pytest

import chakra_core as chakra
from chakra_core import get_attr

#: the tests' model (the same as conftest.SMALL)
H, SEQ, V, L, M = 64, 32, 256, 8, 4
F = 4 * H


def layer_params_per_tp_rank(tp):
    """Megatron's split of one layer: column-parallel QKV (3h x h + 3h) and fc1 (f x h + f),
    row-parallel proj (h x h) and fc2 (h x f) with replicated biases (h each), two norms (2h each)."""
    split = 3 * H * H + 3 * H + F * H + F + H * H + H * F
    replicated = H + H + 2 * H + 2 * H
    return split // tp + replicated


def test_layer_params_match_12h2_13h_at_tp1(h):
    assert layer_params_per_tp_rank(1) == 12 * H * H + 13 * H


def test_dense_tp_pp_dp_counts_and_sizes(h):
    tp, pp, dp, b, d, g = 2, 2, 2, 1, 2, 4
    traces = h.gen(tp=tp, pp=pp, dp=dp)
    assert len(traces) == tp * pp * dp
    act = b * SEQ * H * d
    per_stage = L // pp
    for pp_rank in range(pp):
        for dp_rank in range(dp):
            for tp_rank in range(tp):
                r = h.megatron_rank(tp_rank, 0, dp_rank, pp_rank, tp, 1, dp)
                cs = h.colls(traces, r)
                tp_members = tuple(h.megatron_rank(t, 0, dp_rank, pp_rank, tp, 1, dp) for t in range(tp))
                dp_members = tuple(h.megatron_rank(tp_rank, 0, x, pp_rank, tp, 1, dp) for x in range(dp))
                layers_ar = h.by_kind(cs, ".L")
                assert layers_ar == Counter({("ALL_REDUCE", act, tp_members): 4 * per_stage * M})
                extra = h.by_kind(cs, ".embedding.tp_") + h.by_kind(cs, ".output.tp_")
                expected_extra = M if pp_rank in (0, pp - 1) else 0
                assert sum(extra.values()) == expected_extra
                params = per_stage * layer_params_per_tp_rank(tp)
                if pp_rank == 0:
                    params += V * H // tp + SEQ * H
                if pp_rank == pp - 1:
                    params += V * H // tp + 2 * H
                grads = [(t, s, m) for n, t, s, m in cs if "grad_bucket" in n]
                assert {t for t, _, _ in grads} == {"ALL_REDUCE"} and {m for _, _, m in grads} == {dp_members}
                assert sum(s for _, s, _ in grads) == params * g
                emb = h.by_kind(cs, "embedding_grad")
                first_last = (h.megatron_rank(tp_rank, 0, dp_rank, 0, tp, 1, dp),
                              h.megatron_rank(tp_rank, 0, dp_rank, pp - 1, tp, 1, dp))
                assert emb == Counter({("ALL_REDUCE", V * H // tp * g, first_last): 1})
                msgs = h.p2p(traces, r)
                other = h.megatron_rank(tp_rank, 0, dp_rank, 1 - pp_rank, tp, 1, dp)
                assert Counter((k, peer, s) for k, peer, s, _ in msgs) == Counter(
                    {("send", other, act): M, ("recv", other, act): M})


def test_single_stage_has_embedding_once_and_no_p2p(h):
    traces = h.gen(tp=2, dp=2)
    cs = h.colls(traces, 0)
    params = L * layer_params_per_tp_rank(2) + V * H // 2 + SEQ * H + 2 * H
    assert sum(s for n, _, s, _ in cs if "grad_bucket" in n) == params * 4
    assert not h.p2p(traces, 0) and not h.by_kind(cs, "embedding_grad")


def test_buckets_are_at_most_one_layer_over_the_bucket_size(h):
    bucket = 3 * layer_params_per_tp_rank(1) * 4
    cs = h.colls(h.gen(dp=2, bucket_bytes=bucket), 0)
    sizes = [s for n, _, s, _ in cs if "grad_bucket" in n]
    assert len(sizes) > 1 and all(s >= bucket for s in sizes[:-1])
    assert all(s < bucket + layer_params_per_tp_rank(1) * 4 + (V + SEQ + 2) * H * 4 for s in sizes)


def test_sequence_parallel_pairs_and_p2p_shard(h):
    tp, pp, b, d = 2, 2, 1, 2
    traces = h.gen(tp=tp, pp=pp, sp=True)
    act = b * SEQ * H * d
    cs = h.colls(traces, 0)
    layers = h.by_kind(cs, ".L")
    members = (0, 1)
    per_stage = L // pp
    # forward: all-gather before QKV and fc1, reduce-scatter after proj and fc2; backward: the
    # mirror plus Megatron-LM's second all-gather of QKV's and fc1's input for the weight gradient
    assert layers == Counter({("ALL_GATHER", act // tp, members): 6 * per_stage * M,
                              ("REDUCE_SCATTER", act, members): 4 * per_stage * M})
    assert not any(t == "ALL_REDUCE" for n, t, _, _ in cs if ".L" in n)
    assert {s for _, _, s, _ in h.p2p(traces, 0)} == {b * SEQ // tp * H * d}


def test_context_parallel_gathers_kv_and_joins_the_gradient_group(h):
    tp, cp, dp, b, d = 2, 2, 2, 1, 2
    traces = h.gen(tp=tp, cp=cp, dp=dp)
    cs = h.colls(traces, 0)
    cp_members = (h.megatron_rank(0, 0, 0, 0, tp, cp, dp), h.megatron_rank(0, 1, 0, 0, tp, cp, dp))
    kv = 2 * b * SEQ * (H // tp) * d
    assert h.by_kind(cs, "cp_") == Counter({("ALL_GATHER", kv // cp, cp_members): L * M,
                                          ("REDUCE_SCATTER", kv, cp_members): L * M})
    assert h.by_kind(cs, ".L") - h.by_kind(cs, "cp_") == Counter(
        {("ALL_REDUCE", b * SEQ // cp * H * d, (0, 1)): 4 * L * M})
    grad_members = {m for n, _, _, m in cs if "grad_bucket" in n}
    assert grad_members == {tuple(sorted(h.megatron_rank(0, c, x, 0, tp, cp, dp) for c in range(cp) for x in range(dp)))}


def test_zero1_reduce_scatter_then_all_gather(h):
    tp, dp, d, g = 2, 4, 2, 4
    traces = h.gen(tp=tp, dp=dp, zero=1)
    cs = h.colls(traces, 0)
    params = L * layer_params_per_tp_rank(tp) + V * H // tp + SEQ * H + 2 * H
    dp_members = tuple(h.megatron_rank(0, 0, x, 0, tp, 1, dp) for x in range(dp))
    rs = [(t, s, m) for n, t, s, m in cs if "grad_bucket" in n]
    ag = [(t, s, m) for n, t, s, m in cs if "param_bucket" in n]
    assert {(t, m) for t, _, m in rs} == {("REDUCE_SCATTER", dp_members)}
    assert {(t, m) for t, _, m in ag} == {("ALL_GATHER", dp_members)}
    assert sum(s for _, s, _ in rs) == params * g and sum(s for _, s, _ in ag) == h.shard(params * d, dp)
    assert not any(t == "ALL_REDUCE" and m == dp_members for _, t, _, m in cs)


def test_zero3_gathers_every_layer_before_forward_and_backward(h):
    tp, dp, d, g = 2, 2, 2, 4
    traces = h.gen(tp=tp, dp=dp, zero=3, grad_reduce="per_step")
    cs = h.colls(traces, 0)
    lp = layer_params_per_tp_rank(tp)
    dp_members = (0, 2)
    gathers = h.by_kind(cs, "zero3_all_gather")
    emb, out = V * H // tp + SEQ * H, 2 * H  # one stage: the output layer is the word embedding
    assert gathers == Counter({("ALL_GATHER", h.shard(lp * d, dp), dp_members): 2 * L * M,
                               ("ALL_GATHER", h.shard(emb * d, dp), dp_members): 2 * M,
                               ("ALL_GATHER", h.shard(out * d, dp), dp_members): 2 * M})
    rs = [s for n, t, s, m in cs if "grad_bucket" in n and t == "REDUCE_SCATTER"]
    assert sum(rs) == (L * lp + emb + out) * g
    assert not h.by_kind(cs, "param_bucket")


def test_recompute_repeats_the_forward_collectives(h):
    tp, d = 2, 2
    cs = h.colls(h.gen(tp=tp, recompute=True), 0)
    act = SEQ * H * d
    assert sum(h.by_kind(cs, ".L").values()) == 6 * L * M
    assert sum(h.by_kind(cs, ".R").values()) == 2 * L * M
    assert {s for n, _, s, _ in cs if ".L" in n or ".R" in n} == {act}


@pytest.mark.parametrize("sp", [False, True])
def test_moe_all_to_alls_and_expert_gradients(h, sp):
    tp, dp, ep, experts, topk, every, d, g = 2, 4, 2, 4, 2, 2, 2, 4
    traces = h.gen(tp=tp, dp=dp, ep=ep, experts=experts, topk=topk, moe_every=every, sp=sp)
    moe_layers = L // every
    for r in range(len(traces)):
        tp_rank, dp_rank = r % tp, r // tp
        cs = h.colls(traces, r)
        ep_members = tuple(h.megatron_rank(tp_rank, 0, (dp_rank // ep) * ep + e, 0, tp, 1, dp) for e in range(ep))
        a2a = h.by_kind(cs, "all_to_all")
        assert a2a == Counter({("ALL_TO_ALL", SEQ * topk * H * d, ep_members): 4 * moe_layers * M})
        edp_members = tuple(h.megatron_rank(tp_rank, 0, x, 0, tp, 1, dp) for x in range(dp) if x % ep == dp_rank % ep)
        expert = [(s, m) for n, _, s, m in cs if "grad_bucket" in n and n.endswith("edp_all_reduce")]
        per_expert = (2 * H * F + F) // tp + H
        assert {m for _, m in expert} == {edp_members}
        assert sum(s for s, _ in expert) == moe_layers * experts // ep * per_expert * g
        dense = sum(s for n, _, s, _ in cs if "grad_bucket" in n and n.endswith(".dp_all_reduce"))
        moe_shared = (4 * H * H + 3 * H) // tp + 5 * H + H * experts
        assert dense == ((L - moe_layers) * layer_params_per_tp_rank(tp) + moe_layers * moe_shared
                         + V * H // tp + SEQ * H + 2 * H) * g


def test_rank_order_is_megatron_and_recorded(h):
    import json

    traces = h.gen(tp=2, cp=2, dp=2, pp=2)
    for r in range(len(traces)):
        attrs = {a.name: a.string_val for a in traces[r].metadata().attr}
        c = json.loads(attrs["parallel_coords"])
        assert h.megatron_rank(c["tp"], c["cp"], c["dp"], c["pp"], 2, 2, 2) == r
    assert attrs["rank_order"] == "rank = tp_rank + tp*(cp_rank + cp*(dp_rank + dp*(pp_rank)))"


def test_another_order_puts_dp_fastest(h):
    cs = h.colls(h.gen(tp=2, dp=2, order="dp-tp-cp-pp"), 0)
    assert {m for n, _, _, m in cs if ".L" in n} == {(0, 2)}
    assert {m for n, _, _, m in cs if "grad_bucket" in n} == {(0, 1)}


def test_sequence_parallel_embedding_and_output_collectives(h):
    tp, pp, d = 2, 2, 2
    traces = h.gen(tp=tp, pp=pp, sp=True)
    act = SEQ * H * d
    first = h.colls(traces, 0)
    last = h.colls(traces, tp)  # pp_rank 1, tp_rank 0
    assert h.by_kind(first, ".embedding.tp_") == Counter({("REDUCE_SCATTER", act, (0, 1)): M,
                                                          ("ALL_GATHER", act // tp, (0, 1)): M})
    # the output layer is column-parallel: its backward gathers its input again (weight gradient)
    assert h.by_kind(last, ".output.tp_") == Counter({("ALL_GATHER", act // tp, (2, 3)): 2 * M,
                                                      ("REDUCE_SCATTER", act, (2, 3)): M})


def test_zero3_recomputation_runs_after_the_gather(h):
    tp, dp, d = 2, 2, 2
    traces = h.gen(tp=tp, dp=dp, zero=3, recompute=True)
    nodes = list(traces[0].nodes())
    index = {n.name: i for i, n in enumerate(nodes)}
    assert len(h.by_kind(h.colls(traces, 0), "zero3_all_gather")) == 3  # layers, embedding, output
    assert sum(h.by_kind(h.colls(traces, 0), "zero3_all_gather").values()) == 2 * (L + 2) * M
    for k in range(M):
        for layer in range(L):
            gather = nodes[index[f"s0.B{k}.c0.L{layer}.zero3_all_gather"]]
            recomputed = [n for n in nodes if n.name.startswith(f"s0.R{k}.c0.L{layer}.")]
            assert index[gather.name] < index[recomputed[0].name]
            assert gather.id in recomputed[0].data_deps
            assert get_attr(gather, "comm_size") == h.shard(layer_params_per_tp_rank(tp) * d, dp)


def test_zero3_grad_reduce_is_an_unknown_option(h):
    with pytest.raises(chakra.ConfigError, match=r"unknown option 'zero3_grad_reduce' \(did you mean 'grad_reduce'\?\)"):
        h.gen(dp=2, zero=3, zero3_grad_reduce="per_step")


def test_zero3_moe_gathers_and_reduce_scatters_experts_over_edp_every_micro_batch(h):
    dp, ep, experts, every, d, g = 4, 2, 4, 2, 2, 4
    traces = h.gen(dp=dp, ep=ep, experts=experts, moe_every=every, zero=3)
    cs = h.colls(traces, 0)
    moe_layers, dense_layers = L // every, L - L // every
    dp_members, edp_members = (0, 1, 2, 3), (0, 2)
    dense, shared = layer_params_per_tp_rank(1), 4 * H * H + 3 * H + 5 * H + H * experts
    expert = experts // ep * (2 * H * F + F + H)
    emb, out = V * H + SEQ * H, 2 * H
    assert (dense, shared, expert) == (49_984, 17_152, 66_176)
    edp = dp // ep
    assert h.by_kind(cs, "zero3_all_gather") == Counter(
        {("ALL_GATHER", h.shard(dense * d, dp), dp_members): 2 * dense_layers * M,
         ("ALL_GATHER", h.shard(shared * d, dp), dp_members): 2 * moe_layers * M,
         ("ALL_GATHER", h.shard(emb * d, dp), dp_members): 2 * M, ("ALL_GATHER", h.shard(out * d, dp), dp_members): 2 * M})
    assert h.by_kind(cs, "zero3_expert_all_gather") == Counter(
        {("ALL_GATHER", h.shard(expert * d, edp), edp_members): 2 * moe_layers * M})
    assert h.by_kind(cs, "grad_bucket") == Counter(
        {("REDUCE_SCATTER", dense * g, dp_members): dense_layers * M, ("REDUCE_SCATTER", shared * g, dp_members): moe_layers * M,
         ("REDUCE_SCATTER", expert * g, edp_members): moe_layers * M,
         ("REDUCE_SCATTER", emb * g, dp_members): M, ("REDUCE_SCATTER", out * g, dp_members): M})
    optimizer = [get_attr(n, "num_ops") for n in traces[0].nodes() if n.name == "s0.optimizer"]
    partition = (dense_layers * dense + moe_layers * shared + emb + out) // dp + moe_layers * expert // edp
    assert optimizer == [12 * partition]


def backward_of_each_gradient_collective(traces, rank):
    """``{name: micro-batch}``: the backward whose compute last ran before each gradient collective."""
    current, out = None, {}
    for n in traces[rank].nodes():
        if n.type == chakra.NodeType.COMP_NODE and ".B" in n.name:
            current = int(n.name.split(".")[1][1:])
        elif n.type == chakra.NodeType.COMM_COLL_NODE and "grad_bucket" in n.name:
            out[n.name] = current
    return out


def optimizer_ops(traces, rank):
    return [get_attr(n, "num_ops") for n in traces[rank].nodes() if n.name == "s0.optimizer"]


def grad_reduce_recorded(traces, rank):
    import json

    return json.loads(get_attr(traces[rank].metadata(), "workload"))["grad_reduce"]


def test_zero2_auto_reduce_scatters_every_micro_batch_and_gathers_once(h):
    # DeepSpeed stage 2: every micro-batch's backward reduce-scatters its gradient buckets into the
    # rank's partition (m P_s g); the optimizer updates the partition and the parameters are
    # all-gathered once after it (P_s d gathered: a shard of P_s d / dp)
    tp, dp, d, g = 2, 4, 2, 4
    traces = h.gen(tp=tp, dp=dp, zero=2)
    assert grad_reduce_recorded(traces, 0) == "per_microbatch"  # auto, recorded resolved
    cs = h.colls(traces, 0)
    params = L * layer_params_per_tp_rank(tp) + V * H // tp + SEQ * H + 2 * H
    assert params == 211_840  # 8 x 25,184 + 8,192 + 2,048 + 128
    dp_members = tuple(h.megatron_rank(0, 0, x, 0, tp, 1, dp) for x in range(dp))
    assert h.by_kind(cs, "grad_bucket") == Counter({("REDUCE_SCATTER", params * g, dp_members): M})
    assert h.by_kind(cs, "param_bucket") == Counter({("ALL_GATHER", h.shard(params * d, dp), dp_members): 1})
    assert sum(s for n, _, s, _ in cs if "grad_bucket" in n) == M * params * g == 3_389_440
    assert list(backward_of_each_gradient_collective(traces, 0).values()) == list(range(M))
    assert optimizer_ops(traces, 0) == [12 * params // dp]


def test_zero1_auto_reduce_scatters_once_per_step(h):
    # DeepSpeed stage 1 and Megatron-LM's distributed optimizer: one reduce-scatter at the
    # accumulation boundary, after the last micro-batch's backward
    tp, dp, d, g = 2, 4, 2, 4
    traces = h.gen(tp=tp, dp=dp, zero=1)
    assert grad_reduce_recorded(traces, 0) == "per_step"
    cs = h.colls(traces, 0)
    params = L * layer_params_per_tp_rank(tp) + V * H // tp + SEQ * H + 2 * H
    dp_members = tuple(h.megatron_rank(0, 0, x, 0, tp, 1, dp) for x in range(dp))
    assert h.by_kind(cs, "grad_bucket") == Counter({("REDUCE_SCATTER", params * g, dp_members): 1})
    assert h.by_kind(cs, "param_bucket") == Counter({("ALL_GATHER", h.shard(params * d, dp), dp_members): 1})
    assert list(backward_of_each_gradient_collective(traces, 0).values()) == [M - 1]
    assert optimizer_ops(traces, 0) == [12 * params // dp]


def test_zero0_per_microbatch_all_reduces_every_micro_batch(h):
    # PyTorch DDP without no_sync: every micro-batch's backward all-reduces the buckets (m P_s g);
    # the optimizer updates every parameter, once
    tp, dp, g = 2, 2, 4
    traces = h.gen(tp=tp, dp=dp, grad_reduce="per_microbatch")
    assert grad_reduce_recorded(traces, 0) == "per_microbatch"
    cs = h.colls(traces, 0)
    params = L * layer_params_per_tp_rank(tp) + V * H // tp + SEQ * H + 2 * H
    assert h.by_kind(cs, "grad_bucket") == Counter({("ALL_REDUCE", params * g, (0, 2)): M})
    assert sum(s for n, _, s, _ in cs if "grad_bucket" in n) == M * params * g == 3_389_440
    assert not h.by_kind(cs, "param_bucket")
    assert list(backward_of_each_gradient_collective(traces, 0).values()) == list(range(M))
    assert optimizer_ops(traces, 0) == [12 * params]


def test_zero2_interleaved_reduces_each_chunk_every_micro_batch_and_gathers_each_once(h):
    # pp 2 x v 2: stage 0 holds virtual stage 0 (layers 0-1 and the embedding) and virtual stage 2
    # (layers 4-5); each backward of a chunk reduce-scatters that chunk's gradients
    pp, v, dp, d, g = 2, 2, 2, 2, 4
    traces = h.gen(pp=pp, dp=dp, zero=2, schedule="interleaved", virtual_stages=v)
    cs = h.colls(traces, 0)
    lp, emb = layer_params_per_tp_rank(1), V * H + SEQ * H
    dp_members = (0, 1)
    assert h.by_kind(cs, "grad_bucket") == Counter({("REDUCE_SCATTER", (2 * lp + emb) * g, dp_members): M,
                                                    ("REDUCE_SCATTER", 2 * lp * g, dp_members): M})
    assert h.by_kind(cs, "param_bucket") == Counter({("ALL_GATHER", h.shard((2 * lp + emb) * d, dp), dp_members): 1,
                                                     ("ALL_GATHER", h.shard(2 * lp * d, dp), dp_members): 1})
    assert optimizer_ops(traces, 0) == [12 * (4 * lp + emb) // dp]


def ring_bytes(kind, size, p):
    """Bytes one rank sends in a ring collective of ``comm_size`` ``size`` over ``p`` ranks
    (ASTRA-sim's ring: an all-reduce 2(p-1) messages of size/p, a reduce-scatter p-1 of size/p,
    an all-gather p-1 of the shard, its comm_size)."""
    return {"ALL_REDUCE": 2 * (p - 1) * size // p, "REDUCE_SCATTER": (p - 1) * size // p,
            "ALL_GATHER": (p - 1) * size}[kind]


@pytest.mark.parametrize("tp", [2, 4])
def test_sequence_parallel_pairs_move_the_bytes_of_the_all_reduces(h, tp):
    # sp turns each tensor-parallel all-reduce of the activation A = b s h d into a reduce-scatter
    # of A and an all-gather of the A/t shard: (t-1) A/t + (t-1) A/t, the all-reduce's 2 (t-1) A/t
    # bytes per rank; the backward's weight-gradient all-gathers (2 a layer, 1 the output) are extra
    act = SEQ * H * 2
    plain = h.colls(h.gen(tp=tp), 0)
    sp = h.colls(h.gen(tp=tp, sp=True), 0)
    pairs = [(t, s) for n, t, s, _ in sp if "tp_" in n and "wgrad" not in n]
    assert Counter(pairs) == Counter({("REDUCE_SCATTER", act): (4 * L + 2) * M, ("ALL_GATHER", act // tp): (4 * L + 2) * M})
    assert Counter((t, s) for n, t, s, _ in plain if "tp_" in n) == Counter({("ALL_REDUCE", act): (4 * L + 2) * M})
    layer = [(t, s) for n, t, s, _ in sp if n.startswith("s0.F0.c0.L0.") and n.endswith(("proj.tp_reduce_scatter",
                                                                                          "fc1.tp_all_gather"))]
    assert sum(ring_bytes(t, s, tp) for t, s in layer) == ring_bytes("ALL_REDUCE", act, tp)
    assert sum(ring_bytes(t, s, tp) for t, s in pairs) == sum(ring_bytes(t, s, tp) for _, t, s, _ in plain
                                                               if t == "ALL_REDUCE")
    wgrad = [s for n, t, s, _ in sp if "wgrad" in n]
    assert wgrad == [act // tp] * (2 * L + 1) * M


def test_sequence_parallel_simulates_as_the_all_reduces(h):
    # ring all-reduce of A = reduce-scatter of A then all-gather of its A/t shard: the same
    # messages, so in simulation one sp pair takes one all-reduce's time (up to one endpoint delay
    # a chunk), and sp's step is the plain step plus its weight-gradient all-gathers (compute
    # differs a little: sp splits the norms over tp)
    tp, layers = 4, 2
    big = {"hidden": 1024, "heads": 8, "seq": 1024, "layers": layers, "micro_batches": 1, "tp": tp}
    plain, sp = (chakra.simulate(h.gen(sp=on, **big)).summary for on in (False, True))
    each = {c["collective"]: c["total_ns"] / c["count"] for run in (plain, sp) for c in run["collectives"]}
    assert each["REDUCE_SCATTER"] + each["ALL_GATHER"] == pytest.approx(each["ALL_REDUCE"], rel=1e-3)
    wgrad = (2 * layers + 1) * each["ALL_GATHER"]
    assert sp["max_exposed_comm_ns"] > 0.9 * sp["finish_ns"]  # communication-bound
    assert sp["max_exposed_comm_ns"] - wgrad == pytest.approx(plain["max_exposed_comm_ns"], rel=1e-3)
    assert sp["finish_ns"] - wgrad == pytest.approx(plain["finish_ns"], rel=0.02)
