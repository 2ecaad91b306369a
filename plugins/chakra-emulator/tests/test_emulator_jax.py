"""A JAX program replayed on 4 ranks: plugins/chakra-jax/tests/data/shard_map (recorded by
plugins/chakra-jax/recording/record_shard_map.py: psum, pmean, psum_scatter, all_gather, two
ppermutes and all_to_all on 4 CPU devices, each holding an [8, 16] float32 block of 512 bytes)."""

from __future__ import annotations

from pathlib import Path

import pytest

import chakra_core

PROGRAM = Path(__file__).resolve().parents[3] / "plugins" / "chakra-jax" / "tests" / "data" / "shard_map" / \
    "program.hlo.txt"
BLOCK = 8 * 16 * 4


@pytest.fixture(scope="module")
def shard_map():
    return chakra_core.emulate(str(PROGRAM), options={"warmup": 0})


def test_every_node_of_the_jax_program_ran(shard_map):
    s = shard_map.summary
    assert s["ranks"] == 4 and s["coverage"] == 1.0 and s["composed"] == {}


def test_the_jax_collectives_ran_with_the_scripts_sizes(shard_map):
    want = {
        # psum and pmean of the block: XLA combines them into one all-reduce of both per device
        "ALL_REDUCE": {"count": 4, "bytes": 4 * 2 * BLOCK},
        "REDUCE_SCATTER": {"count": 4, "bytes": 4 * BLOCK},         # the full input
        "ALL_GATHER": {"count": 4, "bytes": 4 * BLOCK // 4},        # the shard psum_scatter left
        "ALL_TO_ALL": {"count": 4, "bytes": 4 * BLOCK},             # the whole send buffer
        "SEND": {"count": 4 + 2, "bytes": 6 * BLOCK},               # the ring, then 0->2 and 1->3
        "RECV": {"count": 4 + 2, "bytes": 6 * BLOCK},
    }
    assert shard_map.summary["collectives"] == want
    peers = sorted((n["rank"], n["observed"]["peer"]) for n in shard_map.summary["nodes"] if n["kind"] == "send")
    assert peers == sorted([(i, (i + 1) % 4) for i in range(4)] + [(0, 2), (1, 3)])
