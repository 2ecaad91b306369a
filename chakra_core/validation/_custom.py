"""Custom collectives: the per-rank ETs that a ``*-implementation-custom`` key names, checked.

One check for every consumer (the simulator before it runs them, the ASTRA-sim exporter before
it copies them), so that no consumer accepts what another refuses.
"""

from __future__ import annotations

from pathlib import Path

from chakra_core.base._errors import ConfigError, TraceFormatError
from chakra_core.io._schema import NodeType
from chakra_core.system._model import SystemDescription
from chakra_core.trace._columns import node_columns
from chakra_core.trace._traceset import FileRank, RankTrace, TraceSet
from chakra_core.validation._validate import validate

__all__ = ["custom_collective"]

#: the node types a custom collective may hold: ASTRA-sim's ``ChakraImpl`` issues only these
_ALLOWED = frozenset({NodeType.COMP_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE})


def custom_collective(sd: SystemDescription, kind: str, npus: int) -> TraceSet:
    """The ETs of ``sd``'s custom ``kind`` (``PREFIX.<rank>.et``) for ranks 0..npus-1, checked as
    one set of ``npus`` ranks: every rank has its file (else a ConfigError naming the system file
    and key), the set has no validation error (:func:`chakra_core.validate`'s rules: peers within
    the ``npus`` ranks, no dependency cycle, durations and sizes in range, every message matched,
    no deadlock) and holds only sends, receives and compute nodes.  The first problem is a
    TraceFormatError naming its file and node."""
    prefix = sd.custom_implementations[kind]
    traces = TraceSet([FileRank(r, _rank_file(sd, kind, prefix, r, npus)) for r in range(npus)])
    _first_error(traces, kind)
    for rt in traces:
        _only_messages_and_compute(rt, kind)
    return traces


def _rank_file(sd: SystemDescription, kind: str, prefix: str, rank: int, npus: int) -> str:
    """Rank ``rank``'s file of the custom ``kind``; a ConfigError when there is none."""
    path = f"{prefix}.{rank}.et"
    if not Path(path).is_file():
        raise ConfigError(f"the custom {kind} has no ET for rank {rank} ({path}); ASTRA-sim needs "
                          f"{prefix}.<rank>.et for every one of the {npus} NPUs",
                          sd.sources.get("system"), f"key '{kind}-implementation-custom'")
    return path


def _first_error(traces: TraceSet, kind: str) -> None:
    """A TraceFormatError for the first validation error of ``traces``, if any."""
    for f in validate(traces):
        if f.severity == "error":
            raise TraceFormatError(f"the custom {kind} ({len(traces)} ranks): [{f.rule}] {f.message}", f.file,
                                   None if f.node_id is None else f"node {f.node_id}")


def _only_messages_and_compute(rt: RankTrace, kind: str) -> None:
    """A TraceFormatError naming the first node of ``rt`` that is not a send, receive or compute."""
    cols = node_columns(rt)
    for nid, t in zip(cols.ids.tolist(), cols.types.tolist()):
        if t not in _ALLOWED:
            name = NodeType(t).name if t in NodeType.__members__.values() else f"type {t}"
            raise TraceFormatError(f"the custom {kind}: a custom collective holds only sends, receives and "
                                   f"compute nodes, not {name}", rt.label, f"node {nid}")
