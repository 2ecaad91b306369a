"""The congestion-aware mode against ASTRA-sim's own expected values and hand-derived cases.

No ASTRA-sim binary exists on this machine; the recorded outputs of its binaries published with
complete inputs are checked in ``test_simpy_recorded.py``.  The expected values here are (a) those ASTRA-sim publishes for its
congestion-aware network (``extern/network_backend/analytical/test/test_congestion_aware.cpp``:
a 1 MiB message on 16-NPU Ring / FullyConnected / Switch networks of 50 GB/s and 500 ns, and an
all-to-all of such messages on the Ring), and (b) closed forms derived below from the rules of
its network (:mod:`chakra_simpy.network`) and system layer.  Run against a binary,
``plugins/chakra-astrasim/tests/test_astrasim_examples.py`` and ``benches/bench_side_by_side.py
--aware`` compare with it when ``CHAKRA_ASTRASIM_BIN`` names one.

Numbers used throughout: b = 50 * 2**30 / 1e9 = 53.6870912 bytes/ns; a 1 MiB message
serializes in 1048576 / b = 19531.25 ns (19531 as a link's busy time) and crosses a link of
500 ns in floor(500 + 19531.25) = 20031 ns; a message of 32768 bytes serializes in 610.35 ns
(610) and crosses a link in 1110 ns.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra_core import load_traces, open_traceset
from chakra_core.system import Dimension
from chakra_simpy.event_loop import EventLoop
from chakra_simpy.network import Network

MIB = 1 << 20
ROOT = Path(__file__).resolve().parents[3]


def _network(topology: str, npus: int = 16) -> tuple[EventLoop, Network]:
    env = EventLoop()
    dims = (Dimension(topology, npus, 50.0, 500.0),)
    return env, Network(env, dims, [(r,) for r in range(npus)])


@pytest.mark.parametrize(("topology", "want"), [("Ring", 60_093), ("FullyConnected", 20_031),
                                                ("Switch", 40_062)])
def test_astra_sim_published_single_message(topology, want):
    """ASTRA-sim's expected values: 1 MiB from NPU 1 to NPU 4 (Ring: 3 links of 20031 ns each,
    store and forward; FullyConnected: one link; Switch: up and down, 2 links)."""
    env, net = _network(topology)
    got = []
    net.send(1, 4, MIB, lambda _: got.append(env.now))
    env.run()
    assert got == [want]


def test_astra_sim_published_all_to_all_on_ring():
    """ASTRA-sim's expected value: every NPU of the 16-Ring sends 1 MiB to every other one at
    time 0 (in source, then destination order); the last arrives at 704,116 ns.  Links serve
    first come first served and the shorter way is taken (clockwise on ties)."""
    env, net = _network("Ring")
    for i in range(16):
        for j in range(16):
            if i != j:
                net.send(i, j, MIB, lambda _: None)
    env.run()
    assert env.now == 704_116


@pytest.mark.parametrize(("topology", "want"), [("Ring", 60_093), ("FullyConnected", 20_031),
                                                ("Switch", 40_062)])
def test_send_through_the_simulator_takes_the_published_time(kit, tmp_path, topology, want):
    """The same message as a COMM_SEND node of rank 1 to rank 4: the send and its receive end
    when it arrives."""
    ts = kit.traces({r: ([kit.p2p(0, True, 4, MIB)] if r == 1 else [kit.p2p(0, False, 1, MIB)] if r == 4
                         else [kit.comp(0, 1)]) for r in range(16)})
    res = kit.run(ts, kit.system([(topology, 16, 50, 500)]), tmp_path, congestion="aware")
    assert res.ranks[1]["finish_ns"] == res.ranks[4]["finish_ns"] == want


def test_two_messages_contend_for_one_link(kit, tmp_path):
    """Two sends of 1 MiB from rank 0 to rank 1 at once (two comm streams): the first holds the
    link for 19531 ns and arrives at 20031; the second starts when the link frees and arrives
    at 19531 + 20031 = 39562.  Without sharing (congestion-unaware) both take 20031."""
    ts = kit.traces({0: [kit.p2p(0, True, 1, MIB, tag=1), kit.p2p(1, True, 1, MIB, tag=2)],
                     1: [kit.p2p(0, False, 0, MIB, tag=1), kit.p2p(1, False, 0, MIB, tag=2)]})
    sysd = kit.system([("FullyConnected", 2, 50, 500)])
    aware = kit.run(ts, sysd, tmp_path, congestion="aware", streams=2)
    assert aware.ranks[0]["finish_ns"] == 39_562
    assert kit.run(ts, sysd, tmp_path, streams=2).ranks[0]["finish_ns"] == 20_031


def test_ring_all_reduce_alone_on_its_links_is_the_reference(kit, tmp_path):
    """ASTRA-sim's regression: 1 MiB all-reduce, Ring of 8, 4 chunks, one active chunk: every
    message goes to the next NPU over its own link, so nothing is shared and each step is one
    link of floor(500 + 610.35) = 1110 ns: 4 * (15*10 + 14*1110 + 7*1965) = 117,780 ns, the
    unaware binary's printed value.  On FullyConnected the same."""
    ts = kit.same(8, lambda: [kit.coll(1, MIB)])
    for topology in ("Ring", "FullyConnected"):
        res = kit.run(ts, kit.system([(topology, 8, 50, 500)]), tmp_path, congestion="aware")
        assert [r["finish_ns"] for r in res.ranks] == [117_780] * 8


def test_one_ring_on_one_dimension_is_the_dimension_ring(kit, tmp_path):
    """oneRing on a Ring of 8 is one ring over every NPU in rank order, the dimension's ring:
    the same messages as ring, 117,780 ns; run message by message (noted)."""
    sysd = kit.system([("Ring", 8, 50, 500)], all_reduce_implementation=["oneRing"])
    res = kit.run(kit.same(8, lambda: [kit.coll(1, MIB)]), sysd, tmp_path, congestion="aware")
    assert [r["finish_ns"] for r in res.ranks] == [117_780] * 8
    assert any("1 collective(s) ran message by message" in n for n in res.notes)


def test_double_binary_tree_children_share_the_switch_link_down_to_their_parent(kit, tmp_path):
    """Switch of 4, doubleBinaryTree all-reduce of 32768 bytes in one chunk (max tree: root 3 ->
    1 -> {0, 2}); every message goes up to the switch and down (610 busy, 1110 per link), r =
    3*floor(32768/50) = 1965, e = 10.  Leaves 0 and 2 send up at 10; both reach the switch at
    1120 and share its link down to 1: 0's arrives at 2230, 2's waits until 1730 and arrives at
    2840.  Member 1 sends up at 2840 + 10 + 1965 = 4815, reaching 3 at 4815 + 2220 = 7035; the
    root sends down at 7035 + 1975 = 9010 (its finish), reaching 1 at 11230; member 1 sends down
    at 11230 + 1975 = 13205 (its finish), to 0 then 2 over its one link up: 0's at 13205..13815,
    arrives 15425, 2's at 13815..14425, arrives 16035; the leaves finish one endpoint delay
    later: 15435 and 16045."""
    sysd = kit.system([("Switch", 4, 50, 500)], all_reduce_implementation=["doubleBinaryTree"],
                      preferred_dataset_splits=1)
    res = kit.run(kit.same(4, lambda: [kit.coll(1, 32768)]), sysd, tmp_path, congestion="aware")
    assert [r["finish_ns"] for r in res.ranks] == [15435, 13205, 16045, 9010]


def test_several_dimensions_carry_a_message_on_the_lowest_differing_one(kit, tmp_path):
    """An extension (ASTRA-sim's aware backend builds one dimension): FullyConnected 2 x Switch
    2 (200 GB/s, 100 ns; 25 GB/s, 1000 ns); rank 0 = (0, 0) to rank 2 = (0, 1) differs in
    dimension 1 only: up and down its switch, 2 * floor(1000 + 32768 / 26.8435456) = 2 * 2220
    = 4440 ns; rank 1 = (1, 0) to rank 2 differs in both and is charged on dimension 0 (as the
    unaware model does), one link: floor(100 + 32768 / 214.7483648) = 252 ns."""
    sysd = kit.system([("FullyConnected", 2, 200, 100), ("Switch", 2, 25, 1000)])
    ts = kit.traces({0: [kit.p2p(0, True, 2, 32768)], 1: [kit.p2p(0, True, 2, 32768)],
                     2: [kit.p2p(0, False, 0, 32768), kit.p2p(1, False, 1, 32768)], 3: [kit.comp(0, 1)]})
    res = kit.run(ts, sysd, tmp_path, congestion="aware")
    assert [r["finish_ns"] for r in res.ranks] == [4440, 252, 4440, 1000]


def test_ring_all_gather_with_chunks_in_flight(kit, tmp_path):
    """FullyConnected 4, ring all-gather of a 65536-byte shard in 2 chunks of 32768, both
    active at once; every member sends to the next one over one link (610 busy, 1110 to
    cross).  Step 0: both chunks' messages go at t = 10, chunk 0 holds the link 10..620
    (arrives 1120), chunk 1 620..1230 (arrives 1730).  Each later message goes one endpoint
    delay after the previous step's arrived and finds the link busy with the other chunk's
    message: chunk 0 sends at 1130, starts at 1230 (arrives 2340), chunk 1 sends at 1740,
    starts at 1840 (2950); then 2350 -> 2450 (3560) and 2960 -> 3060 (4170).  The last step's
    arrival plus one endpoint delay: 4180 ns.  Unaware: both chunks side by side, 4*10 + 3*1110
    = 3370."""
    sysd = kit.system([("FullyConnected", 4, 50, 500)], active_chunks_per_dimension=2,
                      preferred_dataset_splits=2)
    ts = kit.same(4, lambda: [kit.coll(1, 65536, kit.CommType.ALL_GATHER)])
    assert [r["finish_ns"] for r in kit.run(ts, sysd, tmp_path, congestion="aware").ranks] == [4180] * 4
    assert kit.run(ts, sysd, tmp_path).ranks[0]["finish_ns"] == 3370


def test_switch_route_is_two_links_store_and_forward(kit, tmp_path):
    """Switch of 8, 1 MiB ring all-reduce, 4 chunks, one active: each message goes up to the
    switch and down (2 * 1110 ns; the unaware model charges floor(2*500 + 610.35) = 1610), on
    links no other message of the step uses: 4 * (15*10 + 14*2220 + 7*1965) = 179,940 ns
    (unaware: 4 * (150 + 14*1610 + 13755) = 145,780)."""
    ts = kit.same(8, lambda: [kit.coll(1, MIB)])
    sysd = kit.system([("Switch", 8, 50, 500)])
    assert [r["finish_ns"] for r in kit.run(ts, sysd, tmp_path, congestion="aware").ranks] == [179_940] * 8
    assert kit.run(ts, sysd, tmp_path).ranks[0]["finish_ns"] == 145_780


def test_direct_all_gather_shares_ring_links(kit, tmp_path):
    """Ring of 4, direct all-gather of a 32768-byte shard, one chunk.  At t = 10 member j sends
    to j+1, j+2, j+3 in that order: to j+1 over link j->j+1 (arrives 1120); to j+2 the shorter
    way is a tie, so clockwise, and its first link j->j+1 is busy until 620, so it arrives at
    j+1 at 620 + 1110 = 1730 and, link j+1->j+2 free by then, at j+2 at 2840; to j+3 = j-1
    anticlockwise over one link (1120).  The last message arrives at 2840, then one endpoint
    delay: 2850 ns.  Unaware: 2*10 + floor(2*500 + 610.35) = 1630."""
    sysd = kit.system([("Ring", 4, 50, 500)], all_gather_implementation=["direct"], preferred_dataset_splits=1)
    ts = kit.same(4, lambda: [kit.coll(1, 32768, kit.CommType.ALL_GATHER)])
    assert [r["finish_ns"] for r in kit.run(ts, sysd, tmp_path, congestion="aware").ranks] == [2850] * 4
    assert kit.run(ts, sysd, tmp_path).ranks[0]["finish_ns"] == 1630


def test_two_group_rings_interleave_on_a_ring(kit, tmp_path):
    """Ring of 8; groups {0,2,4,6} and {1,3,5,7} all-reduce 128 KiB at once: 4 chunks of 32768
    bytes, one at a time; a group ring of 4 sends messages of 8192 bytes (152.59 ns of
    serialization, 152 busy, floor(652.59) = 652 per link) to the next member, two links away
    clockwise (6 -> 0 and 7 -> 1 too: 2 links clockwise, 6 the other way).  Member 0's message
    takes link 0->1 at 10..162 and link 1->2 at 662..814; member 1's takes link 1->2 at 10..162:
    every link is free when a message reaches it, so a step is 2 * 652 = 1304 ns.  A chunk: 7
    group endpoint delays of 10, 6 steps, 3 reductions of 3*floor(8192/50) = 489: 70 + 7824 +
    1467 = 9361 ns; 4 chunks: 37,444 ns on every rank (unaware, floor(2*500 + 152.59) = 1152 a
    step: 4 * (70 + 6912 + 1467) = 33,796)."""
    groups = {"a": [0, 2, 4, 6], "b": [1, 3, 5, 7]}
    ts = kit.traces({r: [kit.coll(1, 128 * 1024, pg="a" if r % 2 == 0 else "b")] for r in range(8)}, groups)
    sysd = kit.system([("Ring", 8, 50, 500)])
    assert [r["finish_ns"] for r in kit.run(ts, sysd, tmp_path, congestion="aware").ranks] == [37_444] * 8
    assert kit.run(ts, sysd, tmp_path).ranks[0]["finish_ns"] == 33_796


@pytest.mark.parametrize(("name", "opts"), [("dlrm_like.txt", {"npus": 8}),
                                            ("gpt3_like.txt", {"npus": 8, "mp_group": 8})])
def test_text_examples_match_the_measured_binary(kit, tmp_path, name, opts):
    """Issue 17 measured ASTRA-sim's aware binary against the earlier aware model on these
    examples (Ring of 8, examples/system/system.yaml): +636 cycles (DLRM-like) and +27,168
    (GPT-3-like), the earlier model's whole excess over the unaware mode (which equals the
    unaware binary): so the aware binary gave the unaware cycles there, every collective being
    a ring with one active chunk, each message on a link of its own.  The aware mode must too."""
    load_traces(str(ROOT / "examples" / "text" / name), "text", opts).write(tmp_path / "w" / "trace")
    ts = open_traceset(str(tmp_path / "w"))
    sysf = str(ROOT / "examples" / "system" / "system.yaml")
    aware = kit.run(ts, congestion="aware", system=sysf)
    unaware = kit.run(ts, system=sysf)
    assert [r["finish_ns"] for r in aware.ranks] == [r["finish_ns"] for r in unaware.ranks]
    assert any("message by message" in n for n in aware.notes)
