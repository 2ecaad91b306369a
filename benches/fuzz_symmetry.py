"""Seeded random sets through the simpy backend with symmetry on and off: the per-rank rows must
be equal (symmetry is a shortcut, never a different answer).

Each case draws a network (one or two dimensions of Ring, Switch or FullyConnected, 4 to 48
NPUs), a group size and a layout of model-parallel groups (consecutive blocks, some reversed,
strided, or a random permutation), the data-parallel groups across them, collective sizes and
compute times, and, in some cases, slow ranks (random, or the member at one place of some
groups), no data-parallel collective, a ring of sends inside each data-parallel group, or ranks
whose collectives take their two groups the other way round.  The
sets are built in memory (no framework here writes traces of chosen group layouts; the nodes
are what ``chakra_core`` documents for collectives, sends and receives).  A case is ``bad`` when
the rows differ; ``merged`` counts the cases simulated with fewer classes than ranks, ``broken``
those where a class finished apart and the run was repeated without symmetry.

    .venv/bin/python benches/fuzz_symmetry.py [--seeds 0:400]

Figures of a run are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

import yaml

from chakra_core import CommType, GlobalMetadata, MemoryRank, Node, NodeType, TraceSet, set_attr

TOPOLOGIES = ("Ring", "Switch", "FullyConnected")


def _node(i: int, kind: int, deps: list[int], **attrs) -> Node:
    n = Node(id=i, name=f"n{i}", type=kind)
    n.data_deps.extend(deps)
    for k, v in attrs.items():
        set_attr(n, k, v)
    return n


def _comp(i: int, us: int, deps: list[int]) -> Node:
    n = _node(i, NodeType.COMP_NODE, deps, is_cpu_op=False)
    n.duration_micros = us
    return n


def _coll(i: int, size: int, pg: str, deps: list[int], ct: int = CommType.ALL_REDUCE) -> Node:
    return _node(i, NodeType.COMM_COLL_NODE, deps, is_cpu_op=False, comm_type=int(ct), comm_size=size, pg_name=pg)


def _p2p(i: int, send: bool, peer: int, deps: list[int]) -> Node:
    kind = NodeType.COMM_SEND_NODE if send else NodeType.COMM_RECV_NODE
    peer_key = "comm_dst" if send else "comm_src"
    return _node(i, kind, deps, is_cpu_op=False, comm_tag=3, comm_size=1 << 16, **{peer_key: peer})


def _layout(rnd: random.Random, n: int, g: int) -> list[list[int]]:
    """Model-parallel groups of ``g`` ranks out of ``n``."""
    how = rnd.choice(["block", "stride", "perm", "block_rev"])
    if how == "stride":
        k = n // g
        return [[i + k * j for j in range(g)] for i in range(k)]
    ranks = list(range(n))
    if how == "perm":
        rnd.shuffle(ranks)
    blocks = [ranks[i:i + g] for i in range(0, n, g)]
    if how == "block_rev":
        blocks = [b[::-1] if rnd.random() < 0.5 else b for b in blocks]
    return blocks


def _case(rnd: random.Random) -> tuple[TraceSet, dict] | None:
    """A random set and system mapping, or None when the draw has no group size."""
    dims = [(rnd.choice(TOPOLOGIES), rnd.choice([2, 3, 4, 5, 6, 8]), rnd.choice([25, 50, 100]),
             rnd.choice([100, 500, 700])) for _ in range(rnd.choice([1, 1, 2]))]
    n = 1
    for d in dims:
        n *= d[1]
    sizes = [g for g in range(2, n) if n % g == 0]
    if not 4 <= n <= 48 or not sizes:
        return None
    g = rnd.choice(sizes)
    mp = _layout(rnd, n, g)
    dp = [[grp[j] for grp in mp] for j in range(g)]
    groups = {f"mp{i}": m for i, m in enumerate(mp)} | {f"dp{j}": m for j, m in enumerate(dp)}
    slow = set(rnd.sample(range(n), rnd.randint(1, max(1, n // 3)))) if rnd.random() < 0.5 else set()
    if slow and rnd.random() < 0.6:
        place = rnd.randrange(g)
        slow = {grp[place] for grp in rnd.sample(mp, rnd.randint(1, len(mp)))}
    no_dp, sends = rnd.random() < 0.35, rnd.random() < 0.3
    swapped = {r for r in range(n) if rnd.random() < 0.5} if rnd.random() < 0.3 else set()
    size = [rnd.choice([1 << 12, 1 << 16, 1 << 20, 3 << 20]) for _ in range(4)]
    us = [rnd.choice([1, 5, 50, 500]) for _ in range(4)]
    ranks = []
    for r in range(n):
        mpn = next(k for k, m in groups.items() if k.startswith("mp") and r in m)
        dpn = next(k for k, m in groups.items() if k.startswith("dp") and r in m)
        if r in swapped:  # the same trace up to relabelling, its groups in the other roles
            mpn, dpn = dpn, mpn
        nodes = [_comp(1, us[0] + (700 if r in slow else 0), []), _coll(2, size[0], mpn, [1]),
                 _comp(3, us[1], [2]), _coll(4, size[1], mpn, [3]),
                 _comp(5, 1, [3]) if no_dp else _coll(5, size[2], dpn, [3]), _comp(6, us[2], [4]),
                 _coll(7, size[3], mpn, [6], CommType.ALL_GATHER), _comp(8, us[3], [5, 7])]
        if swapped:  # one collective per group, on two branches of different lengths
            nodes = [_comp(1, us[0] + (700 if r in slow else 0), []), _comp(2, us[1], []),
                     _coll(3, size[0], mpn, [1]), _coll(4, size[0], dpn, [2]), _comp(5, us[2], [3]),
                     _comp(8, us[3], [4, 5])]
        if sends:
            ring = groups[dpn]
            j = ring.index(r)
            nodes += [_p2p(9, True, ring[(j + 1) % len(ring)], [8]), _p2p(10, False, ring[j - 1], [8]),
                      _comp(11, 3, [10])]
        ranks.append(MemoryRank(r, GlobalMetadata(), nodes))
    system = {"network": [{"topology": t, "npus_count": p, "bandwidth": b, "latency": lat} for t, p, b, lat in dims],
              "preferred-dataset-splits": 4, "active-chunks-per-dimension": 1, "endpoint-delay": 10,
              "local-mem-bw": 50, "collective-optimization": rnd.choice(["baseline", "localBWAware"])}
    for k in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
        system[f"{k}-implementation"] = ["ring"] * len(dims)
    return TraceSet(ranks, groups), system


def _rows(result) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "simulated_as"} for row in result.ranks]


def check(seed: int, where: Path) -> dict | None:
    """Run case ``seed`` with symmetry on and off; its figures, or None when the draw is empty."""
    got = _case(random.Random(seed))
    if got is None:
        return None
    traces, system = got
    path = where / f"system-{seed}.yaml"
    path.write_text(yaml.safe_dump(system))
    on, off = (_run(traces, path, s) for s in (True, False))
    if isinstance(on, str) or isinstance(off, str):  # an error: the same one both ways
        return {"seed": seed, "ranks": len(traces), "classes": len(traces), "equal": on == off, "broken": False}
    classes = on.summary["symmetry"]["classes"]
    return {"seed": seed, "ranks": len(traces), "classes": classes, "equal": _rows(on) == _rows(off),
            "broken": any("symmetry turned off" in n for n in on.notes)}


def _run(traces: TraceSet, system: Path, symmetry: bool):
    """The result, or the error's first words (a deadlock's report names the ranks simulated)."""
    from chakra_core import ChakraError
    from chakra_simpy import SimpyBackend

    backend = SimpyBackend()
    backend.name = "simpy"
    try:
        return backend.run(traces, backend.check_options({"system": str(system), "symmetry": symmetry}), None)
    except ChakraError as e:
        return str(e).split(":")[0]


def campaign(seeds: range) -> dict:
    """Every case of ``seeds``: counts and the seeds of bad cases."""
    fig: dict = {"tried": 0, "merged": 0, "broken": 0, "bad": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            got = check(seed, Path(tmp))
            if got is None:
                continue
            fig["tried"] += 1
            fig["merged"] += got["classes"] < got["ranks"]
            fig["broken"] += got["broken"]
            if not got["equal"]:
                fig["bad"].append(seed)
    return fig


def main() -> None:
    """Run the seeds asked for and print the figures."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0:400", help="FIRST:END (end excluded)")
    args = ap.parse_args()
    first, end = (int(x) for x in args.seeds.split(":"))
    fig = campaign(range(first, end))
    print(f"cases {fig['tried']}, simulated with fewer classes than ranks {fig['merged']}, "
          f"repeated without symmetry {fig['broken']}, rows differing {len(fig['bad'])} {fig['bad']}")


if __name__ == "__main__":
    main()
