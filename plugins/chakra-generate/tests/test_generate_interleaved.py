"""The interleaved 1F1B schedule (Narayanan et al., SC'21, section 2.2) in closed form: the
pipeline messages per micro-batch and virtual stage, and the bubble.

With ``p`` stages of ``v`` chunks each (chunk ``c`` of stage ``s`` is virtual stage ``c*p + s``)
and ``m`` micro-batches, every micro-batch crosses ``p*v - 1`` virtual-stage boundaries forward
and as many backward; stage ``s`` sends one activation per micro-batch from each of its virtual
stages but the last of the model, and one gradient from each but the first.  The bubble, with
every chunk's forward taking ``t_f`` and backward ``t_b`` and communication free, is
``(p - 1) * (t_f + t_b)`` against ``m * v * (t_f + t_b)`` of work: a fraction ``(p - 1) / (v * m)``.
"""

from __future__ import annotations

from collections import Counter

import pytest

import chakra_core as chakra
from chakra_core import NodeType, get_attr

#: Llama-3-8B's width and a small vocabulary (so that the embedding and the
#: output layer, which the uniform-stage closed form leaves out, weigh little)
SHAPE = {"preset": "llama3-8b", "layers": 32, "vocab": 128, "seq": 4096}


def messages(traces, rank):
    out = []
    for n in traces[rank].nodes():
        if n.type == NodeType.COMM_SEND_NODE:
            out.append(("send", get_attr(n, "comm_dst"), get_attr(n, "comm_size"), get_attr(n, "comm_tag")))
        elif n.type == NodeType.COMM_RECV_NODE:
            out.append(("recv", get_attr(n, "comm_src"), get_attr(n, "comm_size"), get_attr(n, "comm_tag")))
    return out


@pytest.mark.parametrize("p,v,m", [(4, 2, 8), (4, 4, 4), (2, 2, 6)])
def test_sends_and_receives_per_micro_batch_and_virtual_stage(p, v, m):
    h, d, seq = 4096, 2, 4096
    traces = chakra.generate("transformer", {**SHAPE, "pp": p, "virtual_stages": v, "schedule": "interleaved",
                                             "micro_batches": m})
    act = seq * h * d
    vs = p * v
    for s in range(p):
        virtual = [c * p + s for c in range(v)]
        fwd_send = [x for x in virtual if x < vs - 1]
        bwd_send = [x for x in virtual if x > 0]
        want = Counter()
        for mb in range(m):
            for x in fwd_send:  # activation to virtual stage x + 1, tag 1 + 2 * (mb * vs + x)
                want[("send", (s + 1) % p, act, 1 + 2 * (mb * vs + x))] += 1
            for x in bwd_send:  # gradient to virtual stage x - 1
                want[("send", (s - 1) % p, act, 2 + 2 * (mb * vs + x))] += 1
            for x in virtual:
                if x > 0:
                    want[("recv", (s - 1) % p, act, 1 + 2 * (mb * vs + x - 1))] += 1
                if x < vs - 1:
                    want[("recv", (s + 1) % p, act, 2 + 2 * (mb * vs + x + 1))] += 1
        got = Counter(messages(traces, s))
        assert got == want
        assert sum(1 for k in got if k[0] == "send") == m * (2 * v - (s in (0, p - 1)))
    total = sum(1 for s in range(p) for k in messages(traces, s) if k[0] == "send")
    assert total == 2 * m * (vs - 1)


@pytest.mark.parametrize("p,v,m", [(4, 1, 8), (4, 2, 8), (4, 4, 8), (2, 2, 4), (4, 2, 4)])
def test_bubble_is_p_minus_1_over_v_m(p, v, m):
    options = {**SHAPE, "pp": p, "micro_batches": m, "tie_embeddings": False}
    options.update({"schedule": "interleaved", "virtual_stages": v} if v > 1 else {"schedule": "1f1b"})
    traces = chakra.generate("transformer", options)
    t_f = t_b = 0
    optimizer = {}
    for r in traces.ranks:
        for n in traces[r].nodes():
            if n.type != NodeType.COMP_NODE:
                continue
            if n.name == "s0.optimizer":
                optimizer[r] = n.duration_micros
            elif r == 1 and n.name.startswith("s0.F0.c0.L"):
                t_f += n.duration_micros
            elif r == 1 and n.name.startswith("s0.B0.c0.L"):
                t_b += n.duration_micros
    sim = chakra.simulate(traces, options={"comm": "replay"})  # communication takes no time
    step_us = max(sim.ranks[r]["finish_ns"] / 1000 - optimizer[r] for r in traces.ranks)
    work = m * v * (t_f + t_b)
    bubble = (step_us - work) / work
    # the first stage's embedding and the last stage's output layer add about 0.1% of the step
    assert bubble == pytest.approx((p - 1) / (v * m), abs=0.002)
