"""The ``inference`` generator against closed forms computed here.

Per step and micro-batch of ``b`` sequences with ``n`` new tokens each (``n = prompt`` in the
prefill, 1 in a decode step) and hidden size ``h``, dtype ``d``, vocabulary ``V``, tp ``t``:
two tensor-parallel all-reduces per layer of ``b * n * h * d`` bytes (after the attention
projection and the MLP's down matrix) and one after the vocabulary-parallel embedding; an
all-gather of the last tokens' logits ``b * V * d`` (each rank's shard ``b * V/t * d``, its
``comm_size``) on the last stage; between pipeline stages a
send of ``b * n * h * d``, and from the last stage to the first the ``b`` sampled token ids (8
bytes each) before every step but the first.  A decode step's attention reads the whole KV cache:
``2 * b * context * (h * kv_heads / heads) / t`` elements per layer.
"""

from __future__ import annotations

from collections import Counter

import pytest

import chakra_core as chakra
from chakra_core import NodeType, get_attr

L2 = {"L": 80, "h": 8192, "a": 64, "kv": 8, "f": 28672, "V": 32000}


def comms(traces, rank):
    out = []
    for n in traces[rank].nodes():
        if n.type == NodeType.COMM_COLL_NODE:
            out.append((chakra.CommType(get_attr(n, "comm_type")).name, get_attr(n, "comm_size"),
                        tuple(traces.group_members(get_attr(n, "pg_name")))))
        elif n.type == NodeType.COMM_SEND_NODE:
            out.append(("send", get_attr(n, "comm_size"), get_attr(n, "comm_dst")))
        elif n.type == NodeType.COMM_RECV_NODE:
            out.append(("recv", get_attr(n, "comm_size"), get_attr(n, "comm_src")))
    return Counter(out)


def test_llama2_70b_decode_step_tp8_pp2():
    tp, pp, b, prompt, d = 8, 2, 16, 4096, 2
    traces = chakra.generate("inference", {"preset": "llama2-70b", "tp": tp, "pp": pp, "batch": b,
                                           "prompt": prompt, "decode": 1, "prefill": False})
    assert len(traces) == tp * pp
    act = b * 1 * L2["h"] * d
    first, last = tuple(range(tp)), tuple(range(tp, 2 * tp))
    assert comms(traces, 0) == Counter({("ALL_REDUCE", act, first): 1 + 2 * L2["L"] // pp, ("send", act, tp): 1})
    assert comms(traces, tp) == Counter({("ALL_REDUCE", act, last): 2 * L2["L"] // pp, ("recv", act, 0): 1,
                                         ("ALL_GATHER", b * L2["V"] * d // tp, last): 1})
    nodes = {n.name: n for n in traces[0].nodes()}
    kvd = L2["h"] * L2["kv"] // L2["a"]
    attention = nodes["decode1.mb0.L0.attention"]
    assert get_attr(attention, "tensor_size") == (2 * b * L2["h"] // tp + 2 * b * (prompt + 1) * kvd // tp) * d
    assert get_attr(nodes["decode1.mb0.L0.qkv"], "num_ops") == 2 * b * L2["h"] * (L2["h"] + 2 * kvd) // tp
    assert get_attr(nodes["decode1.mb0.L0.fc1"], "num_ops") == 2 * b * L2["h"] * 2 * L2["f"] // tp
    assert chakra.validate(traces).ok


def test_llama3_8b_prefill_and_decode_through_a_pipeline():
    tp, pp, b, mbs, prompt, decode, d, h, V, L = 2, 2, 8, 2, 512, 3, 2, 4096, 128256, 32
    traces = chakra.generate("inference", {"preset": "llama3-8b", "tp": tp, "pp": pp, "batch": b,
                                           "micro_batches": mbs, "prompt": prompt, "decode": decode})
    mb = b // mbs
    pre, dec = mb * prompt * h * d, mb * h * d
    tp0, tp1 = (0, 1), (2, 3)
    assert comms(traces, 0) == Counter({
        ("ALL_REDUCE", pre, tp0): mbs * (1 + L), ("ALL_REDUCE", dec, tp0): decode * mbs * (1 + L),
        ("send", pre, 2): mbs, ("send", dec, 2): decode * mbs, ("recv", 8 * mb, 2): decode * mbs})
    assert comms(traces, 2) == Counter({
        ("ALL_REDUCE", pre, tp1): mbs * L, ("ALL_REDUCE", dec, tp1): decode * mbs * L,
        ("recv", pre, 0): mbs, ("recv", dec, 0): decode * mbs, ("send", 8 * mb, 0): decode * mbs,
        ("ALL_GATHER", mb * V * d // tp, tp1): (1 + decode) * mbs})
    contexts = [get_attr(n, "tensor_size") for n in traces[2].nodes() if n.name.endswith("mb0.L16.attention")]
    kvd = h * 8 // 32
    assert contexts == [(2 * mb * n * h // tp + 2 * mb * c * kvd // tp) * d
                        for n, c in [(prompt, prompt)] + [(1, prompt + i) for i in range(1, decode + 1)]]
    sim = chakra.simulate(traces)
    assert sim.summary["finish_ns"] > 0


def test_single_rank_has_no_communication():
    traces = chakra.generate("inference", {"layers": 2, "hidden": 64, "heads": 4, "vocab": 256, "prompt": 16})
    assert len(traces) == 1 and not comms(traces, 0)


@pytest.mark.parametrize("args,message", [
    (["-O", "batch=6", "-O", "micro_batches=4"], "batch 6 is not a multiple of micro_batches 4"),
    (["-O", "prefill=false", "-O", "decode=0"], "nothing to run"),
    (["-O", "preset=llama9"], "preset 'llama9' is not one of"),
    (["-O", "tp=2000000"], "generator 'inference': ranks tp * cp * dp * pp = 2000000 exceeds the limit"),
    (["-O", "tp=3"], "generator 'inference': heads 16 is not a multiple of tp 3"),
])
def test_bad_options_one_line_exit_2(tmp_path, chakra_cli, args, message):
    status, _, err = chakra_cli("generate", "inference", "-o", str(tmp_path / "x/"), *args)
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_small_inference_set_writes_validates_simulates_exports(tmp_path):
    traces = chakra.generate("inference", {"layers": 4, "hidden": 64, "heads": 8, "kv_heads": 2, "mlp": "swiglu",
                                           "vocab": 256, "prompt": 32, "decode": 4, "batch": 4, "micro_batches": 2,
                                           "tp": 2, "pp": 2}, output=tmp_path / "et/")
    report = chakra.validate(traces)
    assert report.ok and not report.warnings, report.to_dict()["findings"][:3]
    assert chakra.simulate(traces).summary["finish_ns"] > 0
    out = chakra.export(traces, "astrasim", tmp_path / "astra")
    assert sum(1 for f in out.files if f.endswith(".et")) == 4
