"""The mapping rules: a parsed workload becomes one rank's dependency graph (a template).

Every rank of a text workload runs the same graph; only the names of the process groups its
collectives use differ.  :func:`build_graph` returns that graph as a list of :class:`Spec`
(ids from 1, dependencies always on earlier ids) with each collective's role (all ranks,
model-parallel or data-parallel group); the format turns it into per-rank nodes.

Notation (docs/text-workloads.md has the full rules): for layer i, ``F`` forward compute,
``FC`` its collective, ``IG``/``IGC`` input gradient, ``WG``/``WGC`` weight gradient.  A
collective of type ``NONE``, or whose group is a single rank, does not exist; whoever would
wait for it waits for the compute node that would have issued it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chakra_core import ConfigError, NodeType, TraceFormatError, check_limit

from .groups import ALL, DP, MP, ROLE_OF_SUFFIX, GroupLayout
from .modes import COMM_TYPES, DLRM_MODES, RECOMPUTE_MODE, TRANSFORMER_MODES
from .parse import Layer, Phase, Workload

__all__ = ["Spec", "build_graph"]

#: the largest ``duration_micros`` (a uint64 field).
MAX_MICROS = 2**64 - 1


@dataclass(frozen=True, slots=True)
class Spec:
    """One node of the template graph (durations in microseconds, sizes in bytes)."""

    id: int
    name: str
    type: int
    deps: tuple[int, ...]
    duration: int = 0
    comm_type: int = -1
    comm_size: int = 0
    role: int = ALL


class _Builder:
    def __init__(self, layout: GroupLayout, to_us: Callable[[float], int], where: str):
        self.layout = layout
        self.where = where
        self.to_us = to_us
        self.nodes: list[Spec] = []

    def comp(self, layer: Layer, label: str, time: float, deps) -> int:
        try:
            us = self.to_us(time)
        except OverflowError:  # the product with the unit is infinite
            us = MAX_MICROS + 1
        if us > MAX_MICROS:
            raise TraceFormatError(f"layer {layer.name!r}: {label} time {time:g} in the chosen time unit is "
                                   "more microseconds than duration_micros can hold (2**64-1)",
                                   self.where, f"line {layer.line}")
        nid = len(self.nodes) + 1
        self.nodes.append(Spec(nid, f"COMP_NODE_{layer.name}_{label}", int(NodeType.COMP_NODE),
                               tuple(sorted({d for d in deps if d is not None})), duration=us))
        return nid

    def coll(self, layer: Layer, phase: Phase, role: int, deps) -> int | None:
        if phase.group is not None:
            role = ROLE_OF_SUFFIX[phase.group]
        if phase.comm is None or phase.kind is None or not self.layout.active(role):
            return None
        nid = len(self.nodes) + 1
        self.nodes.append(Spec(nid, f"COMM_COLL_NODE_{layer.name}_{phase.comm}", int(NodeType.COMM_COLL_NODE),
                               tuple(sorted({d for d in deps if d is not None})),
                               comm_type=int(COMM_TYPES[phase.kind]), comm_size=phase.size, role=role))
        return nid


def _or(a: int | None, b: int) -> int:
    return b if a is None else a


def _micro(b: _Builder, layers: list[Layer], prev: dict[int, int]) -> dict[int, int]:
    for layer in layers:
        b.coll(layer, layer.wg, ALL, ())
    return prev


def _data(b: _Builder, layers: list[Layer], prev: dict[int, int]) -> dict[int, int]:
    size = len(layers)
    f: list[int] = []
    for i, layer in enumerate(layers):
        f.append(b.comp(layer, "FWD", layer.fwd.time, [f[i - 1] if i else None, prev.get(i)]))
    nxt: dict[int, int] = {}
    ig: int | None = None
    for i in reversed(range(size)):
        layer = layers[i]
        wg = b.comp(layer, "BWD_WG", layer.wg.time, [f[-1] if i == size - 1 else ig])
        nxt[i] = _or(b.coll(layer, layer.wg, ALL, [wg]), wg)
        if i:
            ig = b.comp(layer, "BWD_IG", layer.ig.time, [wg])
    return nxt


def _model_like(b: _Builder, layers: list[Layer], prev: dict[int, int], fwd_role: int,
                wg_role: int | None) -> dict[int, int]:
    """MODEL (``wg_role`` None: no weight-gradient collective) and HYBRID_DATA_MODEL/MODEL_DATA."""
    size = len(layers)
    out: int | None = None
    for i, layer in enumerate(layers):
        fi = b.comp(layer, "FWD", layer.fwd.time, [out, prev.get(i)])
        out = _or(b.coll(layer, layer.fwd, fwd_role, [fi]), fi)
    nxt: dict[int, int] = {}
    wait: list[int | None] = [out]
    for i in reversed(range(size)):
        layer = layers[i]
        ig = b.comp(layer, "BWD_IG", layer.ig.time, wait)
        igc = b.coll(layer, layer.ig, fwd_role, [ig]) if i else None
        wg = b.comp(layer, "BWD_WG", layer.wg.time, [ig])
        wgc = b.coll(layer, layer.wg, wg_role, [wg]) if wg_role is not None else None
        nxt[i] = _or(wgc, wg)
        wait = [wg, igc]
    return nxt


def _transformer(b: _Builder, w: Workload, prev: dict[int, int]) -> dict[int, int]:
    """Both transformer modes; only HYBRID_TRANSFORMER_FWD_IN_BCKWD recomputes at its initiates."""
    layers = w.layers
    initiates = w.initiates if w.mode == RECOMPUTE_MODE else frozenset()
    out: int | None = None
    for i, layer in enumerate(layers):
        fi = b.comp(layer, "FWD", layer.fwd.time, [out, prev.get(i)])
        out = _or(b.coll(layer, layer.fwd, MP, [fi]), fi)
    nxt: dict[int, int] = {}
    tail = out
    for i in reversed(range(len(layers))):
        layer = layers[i]
        if i in initiates:
            start = max(c for c in w.checkpoints if c < i)
            for j in range(start, i):
                r = b.comp(layers[j], "FWD_RECOMPUTE", layers[j].fwd.time, [tail])
                tail = _or(b.coll(layers[j], layers[j].fwd, MP, [r]), r)
        ig = b.comp(layer, "BWD_IG", layer.ig.time, [tail])
        igc = b.coll(layer, layer.ig, MP, [ig])
        wg = b.comp(layer, "BWD_WG", layer.wg.time, [_or(igc, ig)])
        nxt[i] = _or(b.coll(layer, layer.wg, DP, [wg]), wg)
        tail = wg
    return nxt


def _dlrm(b: _Builder, w: Workload, prev: dict[int, int]) -> dict[int, int]:
    layers, k = w.layers, w.last_bottom
    assert k is not None
    size = len(layers)
    f: list[int] = []
    fc0: int | None = None
    for i, layer in enumerate(layers):
        # HYBRID_DLRM: the pass starts once the previous pass's IGC_0 ended (key -1 of prev)
        fi = b.comp(layer, "FWD", layer.fwd.time,
                    [f[i - 1] if i else None, prev.get(i), fc0 if i == k + 1 else None,
                     None if i else prev.get(-1)])
        f.append(fi)
        if layer.fwd.comm == "ALLTOALL":
            fc = b.coll(layer, layer.fwd, ALL, [fi])
            if i == 0:
                fc0 = fc
    nxt: dict[int, int] = {}
    ig: int | None = None
    igc0: int | None = None
    for i in reversed(range(size)):
        layer = layers[i]
        wg = b.comp(layer, "BWD_WG", layer.wg.time, [f[-1] if i == size - 1 else ig])
        nxt[i] = _or(b.coll(layer, layer.wg, ALL, [wg]), wg)
        if i:
            ig = b.comp(layer, "BWD_IG", layer.ig.time, [wg])
            if i == k + 1:
                igc0 = b.coll(layers[0], layers[0].ig, ALL, [ig])
    if igc0 is not None and w.mode == "HYBRID_DLRM":
        nxt[-1] = igc0
    return nxt


def build_graph(w: Workload, layout: GroupLayout, passes: int, to_us: Callable[[float], int]) -> list[Spec]:
    """The per-rank graph of ``passes`` training passes of ``w`` (``to_us`` converts file times).

    Every pass has the nodes of the first, so once that is built ``passes`` times its nodes are
    checked against the ``nodes`` limit (``CHAKRA_MAX_NODES``) before any other pass is built."""
    b = _Builder(layout, to_us, w.path)
    prev = _pass(b, w, {})
    check_limit("nodes", passes * len(b.nodes), f"option passes={passes}: nodes per rank passes * "
                f"{len(b.nodes)} nodes of a pass =", w.path, error=ConfigError)
    for _ in range(passes - 1):
        prev = _pass(b, w, prev)
    return b.nodes


def _pass(b: _Builder, w: Workload, prev: dict[int, int]) -> dict[int, int]:
    """Add one training pass of ``w`` to ``b``: ``prev`` holds, by layer index, the nodes of the
    previous pass that this one waits for; the result holds this pass's for the next."""
    if w.mode == "MICRO":
        return _micro(b, w.layers, prev)
    if w.mode == "DATA":
        return _data(b, w.layers, prev)
    if w.mode == "MODEL":
        return _model_like(b, w.layers, prev, ALL, None)
    if w.mode in ("HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA"):
        return _model_like(b, w.layers, prev, MP, DP)
    if w.mode in TRANSFORMER_MODES:
        return _transformer(b, w, prev)
    if w.mode in DLRM_MODES:
        return _dlrm(b, w, prev)
    raise AssertionError(w.mode)  # parse_workload admits only known modes
