"""The notes of a simulation's Result: what was read, how it was timed, what was turned off."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from chakra_core.system import SystemDescription

from .collective_context import CollectiveTally
from .program import K_COLL, K_RECV, K_SEND, Program
from .replayed import replayed_note

__all__ = ["load_notes", "run_notes"]


def load_notes(progs: list[Program], classes: list[list[int]], sd: SystemDescription,
               options: Mapping[str, Any]) -> list[str]:
    """Notes on what the ranks' programs hold and how the options time it."""
    notes = []
    fallbacks = sum(p.roofline_fallbacks * len(c) for p, c in zip(progs, classes))
    if fallbacks:
        notes.append(f"{fallbacks} accelerator compute node(s) without an integer num_ops replayed "
                     "their duration instead of the roofline")
    unmodelled = sorted(set().union(*(p.unmodelled for p in progs)))
    if unmodelled:
        notes.append(f"collectives ASTRA-sim does not model ({', '.join(unmodelled)}) were timed by "
                     "the documented mappings (docs/simulator.md)")
    replayed = replayed_note(progs, classes)
    if replayed:
        notes.append(replayed)
    unknown = sorted(set().union(*(p.unknown_types for p in progs)))
    if unknown:
        notes.append(f"node types this schema does not know ({', '.join(map(str, unknown))}) were "
                     "skipped (no time; their dependencies pass through)")
    if any(p.has_mem for p in progs) and sd.remote_memory.memory_type == "NO_MEMORY_EXPANSION":
        notes.append("memory nodes replayed their duration (memory-type NO_MEMORY_EXPANSION; "
                     "ASTRA-sim aborts on them)")
    if options["comm"] == "replay":
        notes.append("comm=replay: communication lasted its recorded durations (a collective or a "
                     "send/receive pair the shortest of its members', from when the last member issued "
                     "it); the network description timed no communication")
        unrecorded = sum(_unrecorded_comm(p) * len(c) for p, c in zip(progs, classes))
        if unrecorded:
            notes.append(f"comm=replay: {unrecorded} communication node(s) have no recorded duration and took 0 ns "
                         "(comm=model times them by the network)")
    if options["congestion"] == "aware":
        notes.append("congestion-aware: every message crosses the links of its route first come first "
                     "served, latency plus serialization on each (ASTRA-sim's congestion-aware network)")
    return notes


def _unrecorded_comm(prog: Program) -> int:
    """The communication nodes (collectives, sends, receives) of ``prog`` whose duration is 0."""
    kind = np.frombuffer(prog.kind, np.uint8)
    dur = np.frombuffer(prog.dur, np.int64) if len(prog.dur) else np.zeros(0, np.int64)
    return int((np.isin(kind, (K_COLL, K_SEND, K_RECV)) & (dur == 0)).sum())


def run_notes(tally: CollectiveTally, sd: SystemDescription, options: Mapping[str, Any], symmetry: bool,
              broken: str | None, trees: bool, start_ns: list[int], differ: list[str]) -> list[str]:
    """Notes on how the run went: symmetry turned off (``broken``: why), ranks started late,
    collectives timed per rank, by a barrier, message by message, off the shared links or by
    their custom implementation, and groups the comm-group file redefined (``differ``)."""
    notes = _symmetry_notes(options, symmetry, broken, trees, start_ns)
    notes += _collective_notes(tally, sd)
    if differ:
        notes.append(f"the comm-group file redefines group(s) {', '.join(differ)} of the trace set; "
                     "the file wins")
    return notes


def _symmetry_notes(options: Mapping[str, Any], symmetry: bool, broken: str | None, trees: bool,
                    start_ns: list[int]) -> list[str]:
    notes = []
    if broken:
        notes.append(f"symmetry turned off: {broken}")
    if any(start_ns):
        notes.append("ranks started at their start_ns times (each simulated on its own)")
    if symmetry and not broken and options["congestion"] == "aware":
        notes.append("symmetry by identical traces only: congestion-aware links are shared per rank, "
                     "so ranks with peers or with collectives on groups smaller than the set are simulated each")
    if trees:
        notes.append("symmetry turned off: doubleBinaryTree all-reduces finish at different times "
                     "on the ranks (leaf, intermediate, root)")
    return notes


def _collective_notes(tally: CollectiveTally, sd: SystemDescription) -> list[str]:
    notes = []
    if tally.per_rank:
        notes.append(f"{tally.per_rank} collective(s) whose members did not move in lockstep "
                     "were timed per rank (no barrier, as ASTRA-sim)")
    if tally.approximated:
        notes.append(f"{tally.approximated} collective(s) whose members did not move in lockstep, "
                     "too large for stagger_limit, were timed from the last member's start (barrier)")
    if tally.held:
        notes.append(f"{tally.held} collective(s) had members whose part finished before the last member "
                     "issued them (a custom implementation's part, or a part on fewer network dimensions than "
                     "the group spans of an alternating algorithm, whose trees count over the whole network): "
                     "those were ended when it did (ASTRA-sim ends them earlier)")
    if tally.by_message:
        notes.append(f"{tally.by_message} collective(s) ran message by message on the shared links")
    if tally.unshared:
        notes.append(f"{tally.unshared} collective(s) (one* on several dimensions, custom over all "
                     "ranks) were timed as in the congestion-unaware mode: their messages do not take "
                     "the shared links")
    if tally.custom_runs:
        notes.append(f"{tally.custom_runs} collective(s) over all ranks ran their custom implementation "
                     f"({', '.join(f'{k}: {v}' for k, v in sd.custom_implementations.items())}): its ET's "
                     "messages, not the collective's comm_size, set the time")
    return notes
