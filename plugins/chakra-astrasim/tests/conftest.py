"""The ASTRA-sim directory checker and trace-set builders shared by the chakra-astrasim tests.

The checker is written from ../../shared/spec/astra-sim.md and chakra-et.md, independently of
the exporter's code: it reads the files back (its own varint framing, protobuf decoding) and
checks each rule an ASTRA-sim 2.x analytical run depends on.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from math import prod
from pathlib import Path

import pytest
import yaml

from chakra_astrasim import BINARIES
from chakra_core import GlobalMetadata, Node

RUNNABLE_TYPES = {2: "MEM_LOAD_NODE", 3: "MEM_STORE_NODE", 4: "COMP_NODE", 5: "COMM_SEND_NODE",
                  6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE"}
MODELLED_KINDS = {0, 2, 6, 7}  # ALL_REDUCE, ALL_GATHER, ALL_TO_ALL, REDUCE_SCATTER
BROADCAST = 5
IMPL_RE = re.compile(r"^(ring|direct\d*|halvingDoubling|doubleBinaryTree|oneRing|oneDirect\d*|"
                     r"oneHalvingDoubling)$")
# name -> the one slot ASTRA-sim (and the legacy feeder) reads it from
SLOTS = {"is_cpu_op": "bool_val", "num_ops": "int64_val", "tensor_size": "uint64_val",
         "comm_type": "int64_val", "comm_size": "int64_val", "comm_priority": "int32_val",
         "comm_src": "int32_val", "comm_dst": "int32_val", "comm_tag": "int32_val",
         "pg_name": "string_val", "involved_dim": "bool_list"}
ALLOWED = {
    4: {"is_cpu_op", "num_ops", "tensor_size"},
    7: {"is_cpu_op", "comm_type", "comm_size", "pg_name", "comm_priority", "involved_dim"},
    5: {"is_cpu_op", "comm_src", "comm_dst", "comm_tag", "comm_size"},
    6: {"is_cpu_op", "comm_src", "comm_dst", "comm_tag", "comm_size"},
    2: {"is_cpu_op", "tensor_size"},
    3: {"is_cpu_op", "tensor_size"},
}
REQUIRED = {7: {"comm_type", "comm_size"}, 5: {"comm_src", "comm_dst", "comm_tag", "comm_size"},
            6: {"comm_src", "comm_dst", "comm_tag", "comm_size"}, 2: {"tensor_size"}, 3: {"tensor_size"}}


def read_frames(path: Path) -> list[bytes]:
    """The length-delimited messages of a file (varints of at most 4 bytes, none empty)."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        n = shift = used = 0
        while True:
            b = data[pos]
            pos += 1
            used += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        assert used <= 4, f"{path}: varint of {used} bytes"
        assert n > 0, f"{path}: zero-length message at byte {pos}"
        out.append(data[pos:pos + n])
        pos += n
    assert pos == len(data), f"{path}: truncated"
    return out


def check_export(d: str | Path, prefix: str = "trace") -> list[str]:
    """Every rule of the spec that the directory ``d`` breaks (an empty list when it runs)."""
    d = Path(d)
    errs: list[str] = []
    system = json.loads((d / "system.json").read_text())
    net = yaml.safe_load((d / "network.yml").read_text())
    mem = json.loads((d / "memory.json").read_text())
    groups = json.loads((d / "groups.json").read_text()) if (d / "groups.json").exists() else {}
    # network.yml
    keys = ("topology", "npus_count", "bandwidth", "latency")
    lens = {k: len(net.get(k) or []) for k in keys}
    if len(set(lens.values())) != 1 or not lens["topology"]:
        return [f"network.yml list lengths differ or are empty: {lens}"]
    ndims = lens["topology"]
    for i in range(ndims):
        if net["topology"][i] not in ("Ring", "FullyConnected", "Switch"):
            errs.append(f"network dim {i}: topology {net['topology'][i]!r}")
        if not isinstance(net["npus_count"][i], int) or net["npus_count"][i] <= 1:
            errs.append(f"network dim {i}: npus_count {net['npus_count'][i]!r} must be an integer > 1")
        if not net["bandwidth"][i] > 0 or not net["latency"][i] >= 0:
            errs.append(f"network dim {i}: bandwidth/latency {net['bandwidth'][i]}/{net['latency'][i]}")
    npus = prod(net["npus_count"])
    # system.json
    if system.get("scheduling-policy") not in ("LIFO", "FIFO", "EXPLICIT"):
        errs.append("system.json: scheduling-policy unset or unknown")
    if system.get("collective-optimization") not in ("baseline", "localBWAware"):
        errs.append("system.json: collective-optimization unset or unknown")
    for k in ("endpoint-delay", "preferred-dataset-splits", "active-chunks-per-dimension"):
        v = system.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            errs.append(f"system.json: {k} = {v!r}, must be an integer >= 1")
    if not (system.get("local-mem-bw") or 0) > 0:
        errs.append("system.json: local-mem-bw must be > 0")
    for kind in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
        impl = system.get(f"{kind}-implementation")
        if not isinstance(impl, list) or len(impl) != ndims:
            errs.append(f"system.json: {kind}-implementation {impl!r} needs exactly {ndims} entries")
            continue
        for name in impl:
            if not IMPL_RE.match(name) or (name == "doubleBinaryTree" and kind != "all-reduce"):
                errs.append(f"system.json: {kind}-implementation entry {name!r}")
    for key, value in system.items():
        if key.endswith(("-implementation-custom", "-implementation-chakra")):  # one ET prefix per rank
            if not (isinstance(value, list) and len(value) == 1 and isinstance(value[0], str)):
                errs.append(f"system.json: {key} = {value!r}, want one path prefix")
            elif not all((d / f"{value[0]}.{r}.et").is_file() for r in range(npus)):
                errs.append(f"system.json: {key}: not every {value[0]}.<rank>.et exists")
    roofline = system.get("roofline-enabled")
    if roofline not in (0, 1):
        errs.append(f"system.json: roofline-enabled {roofline!r}")
    if roofline == 1 and not (system.get("peak-perf") or 0) > 0:
        errs.append("system.json: roofline needs peak-perf > 0")
    # memory.json
    mtype = mem.get("memory-type")
    if mtype not in ("NO_MEMORY_EXPANSION", "PER_NODE_MEMORY_EXPANSION", "PER_NPU_MEMORY_EXPANSION",
                     "MEMORY_POOL"):
        errs.append(f"memory.json: memory-type {mtype!r}")
    elif mtype != "NO_MEMORY_EXPANSION":
        if not (mem.get("remote-mem-bw") or 0) > 0 or "remote-mem-latency" not in mem:
            errs.append("memory.json: remote-mem-bw > 0 and remote-mem-latency needed")
        if mtype == "PER_NODE_MEMORY_EXPANSION" and not (
                mem.get("num-nodes", 0) >= 1 and mem.get("num-npus-per-node", 0) >= 1):
            errs.append("memory.json: num-nodes and num-npus-per-node needed")
    # groups.json
    for key, ranks in groups.items():
        if not key.isdigit() or int(key) < 1 or key != str(int(key)):
            errs.append(f"groups.json: key {key!r} (decimal ids from 1)")
        if len(ranks) < 2 or len(set(ranks)) != len(ranks) or any(
                not isinstance(r, int) or not 0 <= r < npus for r in ranks):
            errs.append(f"groups.json: group {key} = {ranks}")
    if groups and sorted(int(k) for k in groups) != list(range(1, len(groups) + 1)):
        errs.append(f"groups.json: ids are not 1..{len(groups)}")
    # run.sh
    run = (d / "run.sh").read_text()
    for arg in (f"--workload-configuration=workload/{prefix}", "--system-configuration=system.json",
                "--network-configuration=network.yml", "--remote-memory-configuration=memory.json"):
        if arg not in run:
            errs.append(f"run.sh lacks {arg}")
    if ("--comm-group-configuration=groups.json" in run) != bool(groups):
        errs.append("run.sh: --comm-group-configuration present iff groups.json is")
    if "empty" in run.replace("non-empty", ""):
        errs.append("run.sh: a path containing 'empty'")
    if ndims > 1 and "AstraSim_Analytical_Congestion_Aware" in run:
        errs.append("run.sh offers the congestion-aware binary for a multi-dimensional network")
    if "AstraSim_Analytical_Congestion_Aware" in run and net["topology"][0] == "Ring" and npus == 2:
        # its Ring links 0->1 both ways, then 1->0 again: Device::connect asserts
        errs.append("run.sh offers the congestion-aware binary a Ring of 2 NPUs (it aborts)")
    # workload files
    wdir = d / "workload"
    names = {p.name for p in wdir.iterdir()}
    expected = {f"{prefix}.{r}.et" for r in range(npus)}
    if names != expected:
        errs.append(f"workload files: missing {sorted(expected - names)[:5]}, extra {sorted(names - expected)[:5]}")
        return errs
    seqs: dict[str, dict[int, list]] = {}
    p2p: Counter = Counter()
    for r in range(npus):
        path = wdir / f"{prefix}.{r}.et"
        frames = read_frames(path)
        GlobalMetadata.FromString(frames[0])
        nodes = [Node.FromString(f) for f in frames[1:]]
        if not nodes:
            errs.append(f"{path.name}: no nodes (ASTRA-sim aborts)")
            continue
        ids = [n.id for n in nodes]
        if len(set(ids)) != len(ids):
            errs.append(f"{path.name}: duplicate ids")
        idset = set(ids)
        for n in nodes:
            where = f"{path.name} node {n.id}"
            if n.type not in RUNNABLE_TYPES:
                errs.append(f"{where}: type {n.type} (METADATA/INVALID must be left out)")
                continue
            if n.type in (2, 3) and mtype == "NO_MEMORY_EXPANSION":
                errs.append(f"{where}: memory node with NO_MEMORY_EXPANSION")
            if n.HasField("inputs") or n.HasField("outputs"):
                errs.append(f"{where}: inputs/outputs written (ASTRA-sim reads neither)")
            for dep in list(n.data_deps) + list(n.ctrl_deps):
                if dep not in idset or dep == n.id:
                    errs.append(f"{where}: dependency {dep} not in the file")
            attrs = {}
            for a in n.attr:
                slot = a.WhichOneof("value")
                if a.name in attrs:
                    errs.append(f"{where}: attribute {a.name} twice")
                if a.name not in ALLOWED[n.type]:
                    errs.append(f"{where}: attribute {a.name} is not one ASTRA-sim reads for this type")
                elif slot != SLOTS[a.name]:
                    errs.append(f"{where}: {a.name} in {slot}, want {SLOTS[a.name]}")
                attrs[a.name] = list(getattr(a, slot).values) if slot and slot.endswith("_list") else (
                    getattr(a, slot) if slot else None)
            if "is_cpu_op" not in attrs:
                errs.append(f"{where}: is_cpu_op not written")
            missing = REQUIRED.get(n.type, set()) - set(attrs)
            if missing:
                errs.append(f"{where}: missing {sorted(missing)}")
                continue
            if n.type in (5, 6, 7) and attrs.get("is_cpu_op"):
                errs.append(f"{where}: communication marked is_cpu_op")
            if n.type == 4 and roofline == 1 and not attrs.get("is_cpu_op"):
                if not attrs.get("tensor_size", 0) > 0 or "num_ops" not in attrs:
                    errs.append(f"{where}: roofline compute without num_ops/tensor_size > 0")
                else:  # the spec's roofline time, truncated to ns: 0 aborts ASTRA-sim's event queue
                    ops, size = attrs["num_ops"], attrs["tensor_size"]
                    perf = min(system["local-mem-bw"] * 1e9 * (ops / size), system["peak-perf"] * 1e12)
                    if int(ops / perf * 1e9) < 1:
                        errs.append(f"{where}: roofline time of 0 ns (num_ops {ops}, tensor_size {size})")
            if n.type == 7:
                kind, size, pg = attrs["comm_type"], attrs["comm_size"], attrs.get("pg_name", "")
                if kind not in MODELLED_KINDS and kind != BROADCAST:
                    errs.append(f"{where}: comm_type {kind} aborts ASTRA-sim")
                if size <= 0:
                    errs.append(f"{where}: comm_size {size}")
                elif kind == 2 and size < system.get("preferred-dataset-splits", 1):
                    # all-gather chunks are not raised to the NPU count: size // splits = 0 divides by zero
                    errs.append(f"{where}: all-gather of {size} bytes below preferred-dataset-splits")
                if pg not in ("", "0") and pg not in groups:
                    errs.append(f"{where}: pg_name {pg!r} not in groups.json")
                members = groups.get(pg, range(npus)) if pg not in ("", "0") else range(npus)
                if r not in members:
                    errs.append(f"{where}: rank not in its group {pg!r}")
                if "involved_dim" in attrs and len(attrs["involved_dim"]) != ndims:
                    errs.append(f"{where}: involved_dim of {len(attrs['involved_dim'])} for {ndims} dims")
                seqs.setdefault(pg if pg != "0" else "", {}).setdefault(r, []).append((n.id, kind, size))
            if n.type in (5, 6):
                src, dst = attrs["comm_src"], attrs["comm_dst"]
                own, peer = (src, dst) if n.type == 5 else (dst, src)
                if own != r or not 0 <= peer < npus or peer == r:
                    errs.append(f"{where}: peers src={src} dst={dst}")
                p2p[(src, dst, attrs["comm_tag"], attrs["comm_size"])] += 1 if n.type == 5 else -1
        # acyclic
        indeg = {n.id: len(set(n.data_deps) | set(n.ctrl_deps)) for n in nodes}
        kids: dict[int, list[int]] = {}
        for n in nodes:
            for dep in set(n.data_deps) | set(n.ctrl_deps):
                kids.setdefault(dep, []).append(n.id)
        ready = [i for i, k in indeg.items() if k == 0]
        seen = 0
        while ready:
            i = ready.pop()
            seen += 1
            for k in kids.get(i, ()):
                indeg[k] -= 1
                if indeg[k] == 0:
                    ready.append(k)
        if seen != len(nodes):
            errs.append(f"{path.name}: dependency cycle")
    for pg, by_rank in seqs.items():
        members = groups.get(pg, []) if pg else list(range(npus))
        ref = None
        for m in members:
            seq = [(k, s) for _, k, s in sorted(by_rank.get(m, []))]
            if ref is None:
                ref = seq
            elif seq != ref:
                errs.append(f"group {pg or 'all'}: rank {m} issues other collectives than rank {members[0]}")
    for key, v in p2p.items():
        if v:
            errs.append(f"unmatched send/recv {key}: {v:+d}")
    return errs


@pytest.fixture
def astrasim_check():
    """``astrasim_check(dir, prefix="trace")`` asserts that the export breaks no rule."""

    def check(d, prefix: str = "trace") -> None:
        errs = check_export(d, prefix)
        assert not errs, "\n".join(errs[:30])

    return check


@pytest.fixture
def astrasim_errors():
    """``astrasim_errors(dir)``: the list of broken rules (for tests of the checker itself)."""
    return check_export


def find_binary(mode: str) -> str | None:
    """The ASTRA-sim binary of ``mode`` (``unaware`` or ``aware``): ``CHAKRA_ASTRASIM_BIN`` (a
    name with ..._Congestion_Aware is the aware one, any other the unaware one), else the PATH."""
    env = os.environ.get("CHAKRA_ASTRASIM_BIN")
    if env:
        return env if (BINARIES["aware"] in Path(env).name) == (mode == "aware") else None
    return shutil.which(BINARIES[mode])


@pytest.fixture
def astrasim_binary():
    """``astrasim_binary(mode)``: :func:`find_binary`, skipping the test when there is none."""

    def find(mode: str) -> str:
        binary = find_binary(mode)
        if binary is None:
            pytest.skip(f"no congestion-{mode} ASTRA-sim binary (CHAKRA_ASTRASIM_BIN or "
                        f"{BINARIES[mode]} on the PATH): the exports were checked against the spec only")
        return binary

    return find
