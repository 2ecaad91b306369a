"""Shared builders for the simpy backend tests: traces built in memory (closed-form inputs)."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest

from chakra_core import CommType, GlobalMetadata, MemoryRank, Node, NodeType, TraceSet, set_attr


def comp(i, us, deps=(), cpu=False, **attrs):
    """A compute node of ``us`` microseconds."""
    n = Node(id=i, name=f"comp{i}", type=NodeType.COMP_NODE, duration_micros=us)
    set_attr(n, "is_cpu_op", cpu)
    for k, v in attrs.items():
        set_attr(n, k, v)
    n.data_deps.extend(deps)
    return n


def coll(i, size, ct=CommType.ALL_REDUCE, deps=(), pg=None, involved=None, ctrl=()):
    """A collective node of ``size`` bytes."""
    n = Node(id=i, name=f"{CommType(ct).name.lower()}{i}", type=NodeType.COMM_COLL_NODE)
    set_attr(n, "is_cpu_op", False)
    set_attr(n, "comm_type", int(ct))
    set_attr(n, "comm_size", size)
    if pg is not None:
        set_attr(n, "pg_name", pg)
    if involved is not None:
        set_attr(n, "involved_dim", list(involved))
    n.data_deps.extend(deps)
    n.ctrl_deps.extend(ctrl)
    return n


def p2p(i, send, peer, size, tag=0, deps=()):
    """A send (to ``peer``) or a receive (from ``peer``)."""
    n = Node(id=i, name=f"{'send' if send else 'recv'}{i}",
             type=NodeType.COMM_SEND_NODE if send else NodeType.COMM_RECV_NODE)
    set_attr(n, "is_cpu_op", False)
    set_attr(n, "comm_dst" if send else "comm_src", peer)
    set_attr(n, "comm_tag", tag)
    set_attr(n, "comm_size", size)
    n.data_deps.extend(deps)
    return n


def mem(i, size, store=False, deps=()):
    """A remote-memory load or store of ``size`` bytes."""
    n = Node(id=i, name=f"mem{i}", type=NodeType.MEM_STORE_NODE if store else NodeType.MEM_LOAD_NODE)
    set_attr(n, "is_cpu_op", False)
    set_attr(n, "tensor_size", size)
    n.data_deps.extend(deps)
    return n


def traces(per_rank, groups=None):
    """A TraceSet from ``{rank: [nodes]}`` or a list of node lists."""
    items = per_rank.items() if isinstance(per_rank, dict) else enumerate(per_rank)
    return TraceSet([MemoryRank(r, GlobalMetadata(), nodes) for r, nodes in items], groups)


def same(n, make):
    """``n`` ranks with nodes from ``make()`` each."""
    return traces([make() for _ in range(n)])


def system(dims, **keys):
    """Our YAML system description as a mapping: ``dims`` = [(topology, npus, GB/s, ns)]."""
    d = {"network": [{"topology": t, "npus_count": p, "bandwidth": b, "latency": lat} for t, p, b, lat in dims],
         "preferred-dataset-splits": 4, "active-chunks-per-dimension": 1, "endpoint-delay": 10,
         "local-mem-bw": 50, "collective-optimization": "baseline"}
    for k in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
        d[f"{k}-implementation"] = ["ring"] * len(dims)
    d.update({k.replace("_", "-"): v for k, v in keys.items()})
    return d


def run(ts, sysdesc=None, tmp_path=None, **options):
    """Run the backend on ``ts`` with a system mapping (written to a YAML file) and options."""
    import yaml

    from chakra_simpy.backend import SimpyBackend

    if sysdesc is not None:
        text = yaml.safe_dump(sysdesc)
        path = tmp_path / f"system-{hashlib.sha1(text.encode()).hexdigest()[:10]}.yaml"
        path.write_text(text)
        options["system"] = str(path)
    b = SimpyBackend()
    b.name = "simpy"
    return b.run(ts, b.check_options(options), None)


# -- the spec's formulas, written out independently of the implementation ------------------
def bpns(gbps):
    """Link bandwidth in bytes per ns (GB = 2^30 bytes)."""
    return gbps * 2**30 / 1e9


def net(m, hops, lat, gbps):
    """floor(h*L + m/b)."""
    return int(hops * lat + m / bpns(gbps))


def red(m, mbw=50):
    """3 * floor(m / M)."""
    return 3 * int(m // mbw)


@pytest.fixture
def kit():
    """Builders and the spec's formulas."""
    return SimpleNamespace(comp=comp, coll=coll, p2p=p2p, mem=mem, traces=traces, same=same,
                           system=system, run=run, net=net, red=red, bpns=bpns, CommType=CommType)
