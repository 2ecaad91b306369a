"""Helpers of the generator tests: generate a small set and read back what each rank does."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

import chakra_core as chakra
from chakra_core import CommType, NodeType, get_attr

#: a small GPT-like model; tests add the parallelism
SMALL = {"layers": 8, "hidden": 64, "heads": 8, "seq": 32, "vocab": 256, "micro_batches": 4}


def gen(**options):
    """The generated set of ``SMALL`` with ``options``."""
    return chakra.generate("transformer", {**SMALL, **options})


def colls(traces, rank):
    """``[(name, comm type name, size, members)]`` of the collectives of ``rank``, in order."""
    out = []
    for n in traces[rank].nodes():
        if n.type == NodeType.COMM_COLL_NODE:
            members = tuple(traces.group_members(get_attr(n, "pg_name")))
            out.append((n.name, CommType(get_attr(n, "comm_type")).name, get_attr(n, "comm_size"), members))
    return out


def p2p(traces, rank):
    """``[(kind, peer, size, tag)]`` of the sends and receives of ``rank``, in order."""
    out = []
    for n in traces[rank].nodes():
        if n.type == NodeType.COMM_SEND_NODE:
            out.append(("send", get_attr(n, "comm_dst"), get_attr(n, "comm_size"), get_attr(n, "comm_tag")))
        elif n.type == NodeType.COMM_RECV_NODE:
            out.append(("recv", get_attr(n, "comm_src"), get_attr(n, "comm_size"), get_attr(n, "comm_tag")))
    return out


def by_kind(collectives, marker):
    """Counter of ``(type, size, members)`` of the collectives whose name contains ``marker``."""
    return Counter((t, s, m) for name, t, s, m in collectives if marker in name)


def shard(gathered, ranks):
    """An all-gather's ``comm_size``: the per-rank input shard of ``gathered`` bytes (its output)
    over a group of ``ranks``, rounded up where they do not divide it (docs/generate.md)."""
    return -(-gathered // ranks)


def megatron_rank(tp_rank, cp_rank, dp_rank, pp_rank, tp, cp, dp):
    """Megatron-LM's rank order, as the issue states it."""
    return tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))


@pytest.fixture
def h():
    """The helpers of this module, for the tests (``h.gen(...)``, ``h.colls(...)``, ...)."""
    return SimpleNamespace(SMALL=SMALL, gen=gen, colls=colls, p2p=p2p, by_kind=by_kind, megatron_rank=megatron_rank,
                           shard=shard)


@pytest.fixture(autouse=True)
def _same_model(h):
    assert (h.SMALL["hidden"], h.SMALL["seq"], h.SMALL["vocab"], h.SMALL["layers"], h.SMALL["micro_batches"]) == (64, 32, 256, 8, 4)
