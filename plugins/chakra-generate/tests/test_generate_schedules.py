"""The order of forward and backward passes per stage, as the papers describe the schedules.

The expected orders are built here from the papers' descriptions, independently of the
generator's code: 1F1B (PipeDream-Flush, Narayanan et al. 2021) keeps at most ``p - s``
micro-batches in flight on stage ``s`` and runs a backward as soon as that limit is reached;
the interleaved schedule (ibid., section 2.2) walks micro-batches in groups of ``p`` through
chunk 0, then chunk 1, ... (backwards through the chunks in reverse), with Megatron-LM's
warm-up of ``(p - s - 1) * 2 + (v - 1) * p`` forwards; GPipe runs every forward, then every
backward from the last micro-batch.
"""

from __future__ import annotations

import re

import pytest

import chakra_core as chakra

_PASS = re.compile(r"^s0\.([FB])(\d+)\.c(\d+)\.")


def passes(traces, rank):
    """The passes of ``rank`` in issue order, from the names of its compute nodes."""
    out = []
    for n in traces[rank].nodes():
        m = _PASS.match(n.name)
        if m:
            p = (m.group(1), int(m.group(2)), int(m.group(3)))
            if not out or out[-1] != p:
                out.append(p)
    return out


def one_f_one_b(stage, p, m):
    """At most ``p - stage`` micro-batches in flight; a backward as soon as the limit is hit."""
    order, next_f, next_b = [], 0, 0
    while next_b < m:
        if next_f < m and next_f - next_b < p - stage:
            order.append(("F", next_f, 0))
            next_f += 1
        else:
            order.append(("B", next_b, 0))
            next_b += 1
    return order


def interleaved(stage, p, v, m):
    """Groups of ``p`` micro-batches through the chunks; warm-up, then one forward one backward."""
    forwards = [("F", g * p + j, c) for g in range(m // p) for c in range(v) for j in range(p)]
    backwards = [("B", g * p + j, c) for g in range(m // p) for c in reversed(range(v)) for j in range(p)]
    warm = len(forwards) if m == p else min((p - stage - 1) * 2 + (v - 1) * p, len(forwards))
    order = forwards[:warm]
    for i in range(len(forwards) - warm):
        order += [forwards[warm + i], backwards[i]]
    return order + backwards[len(forwards) - warm:]


def gen(**options):
    base = {"layers": 8, "hidden": 32, "heads": 4, "seq": 16, "vocab": 64}
    return chakra.generate("transformer", {**base, **options})


@pytest.mark.parametrize("p,m", [(4, 8), (4, 2), (2, 5)])
def test_1f1b_order_per_stage(p, m):
    traces = gen(pp=p, micro_batches=m, schedule="1f1b")
    for s in range(p):
        assert passes(traces, s) == one_f_one_b(s, p, m)


def test_1f1b_stage0_of_4_from_the_paper():
    # Narayanan et al. 2021, figure 4 (top): the first device runs 1 2 3 4 forward, then alternates
    traces = gen(pp=4, micro_batches=8)
    assert [f"{ph}{mb + 1}" for ph, mb, _ in passes(traces, 0)][:8] == ["F1", "F2", "F3", "F4", "B1", "F5", "B2", "F6"]


@pytest.mark.parametrize("p,v,m", [(4, 2, 8), (2, 2, 4), (4, 2, 4), (2, 4, 6)])
def test_interleaved_order_per_stage(p, v, m):
    traces = gen(pp=p, micro_batches=m, schedule="interleaved", virtual_stages=v, layers=p * v)
    for s in range(p):
        assert passes(traces, s) == interleaved(s, p, v, m)


def test_interleaved_chunks_hold_the_layers_of_their_virtual_stage():
    p, v = 2, 2
    traces = gen(pp=p, micro_batches=4, schedule="interleaved", virtual_stages=v, layers=8)
    layers = {n.name.split(".")[2]: set() for n in traces[1].nodes() if n.name.startswith("s0.F")}
    for n in traces[1].nodes():
        parts = n.name.split(".")
        if n.name.startswith("s0.F") and parts[3].startswith("L"):
            layers[parts[2]].add(int(parts[3][1:]))
    assert layers == {"c0": {2, 3}, "c1": {6, 7}}  # virtual stages 1 and 3 of 4, two layers each


def test_gpipe_all_forwards_then_backwards_in_reverse():
    traces = gen(pp=4, micro_batches=4, schedule="gpipe")
    for s in range(4):
        assert passes(traces, s) == [("F", i, 0) for i in range(4)] + [("B", i, 0) for i in (3, 2, 1, 0)]


def test_pipeline_messages_pair_up_across_chunks():
    p, v = 4, 2
    traces = gen(pp=p, micro_batches=4, schedule="interleaved", virtual_stages=v)
    sends, recvs = [], []
    for r in range(p):
        for n in traces[r].nodes():
            if n.type == chakra.NodeType.COMM_SEND_NODE:
                sends.append((r, chakra.get_attr(n, "comm_dst"), chakra.get_attr(n, "comm_tag")))
            elif n.type == chakra.NodeType.COMM_RECV_NODE:
                recvs.append((chakra.get_attr(n, "comm_src"), r, chakra.get_attr(n, "comm_tag")))
    assert sorted(sends) == sorted(recvs)
    # 2 directions x micro-batches x (p*v - 1) virtual-stage boundaries
    assert len(sends) == 2 * 4 * (p * v - 1)
