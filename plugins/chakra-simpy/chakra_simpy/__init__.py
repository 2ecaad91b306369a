"""chakra-simpy: the built-in SimPy simulator backend ``simpy`` (see docs/simulator.md).

Public API: :class:`SimpyBackend` (registered as backend ``simpy``, kind ``simulator``).

Where the code is (every module; ``tests/test_simpy_modules.py`` checks the list):

=================================  ==========================================================
module                             what it holds
=================================  ==========================================================
``plugin``                         the backend's registration (light)
``backend``                        options, loading, symmetry, running, the Result
``result_notes``                   the Result's notes
``loading``                        loading many ranks' programs on threads
``beside``                         two pieces of work side by side (a thread only for large ones)
``program``                        a rank's trace in flat arrays, compute chains
``classify``                       what each node is to the simulator: kind, resource, arguments
``symmetry``                       classes of ranks simulated once
``actor``                          one simulated rank's state and busy-time accounting
``engine``                         the SimPy simulation: nodes, resources, memory, point to point
``watch``                          the progress bar of a running simulation (simulated time, ranks done)
``compute_chains``                 a compute chain's node times in one loop (compiled for large sets)
``event_loop``                     the congestion-aware mode's event loop (SimPy's order, calls without event objects)
``network``                        links shared by messages (congestion-aware mode)
``collectives``                    matching collectives by issue order per group, and their timing
``replayed``                       collectives replaying their recorded duration: note, summary rows
``parts``                          the parts of a collective on fewer dimensions than its group
``collective_context``             what the collective code sees of the simulation, and its tally
``lockstep``                       collectives in lockstep: a flow shop of chunk phases
``member_phases``                  per-member phases of a collective not in lockstep (cached)
``member_timing``                  per-member timing: step chains, queues over chunks
``message_run``                    a collective message by message on the shared links
``message_phases``                 a message run's chunk phases: messages, members' routed parts
``closed_runs``                    collectives alone, beside quiet events or together: timed once, replayed
``run_facts``                      what the closed-run side reads of a message run: routes, kind, links, lead
``closed_check``                   a message run's closed-run check: replay, or record to keep
``rotation_runs``                  closed runs of members that rotate on a ring: timed by member 0 alone
``group_check``                    message runs starting together, checked and recorded together
``replay_ends``                    the ends of replayed runs: hand-backs, and checks among quiet events
``planner``                        plans: chunks and phases per collective
``lru``                            what a process keeps between runs, least recently used first out
``chunk_phases``                   a chunk phase through the algorithm registry: cost, per member
``layouts``                        member layouts: the logical rings a phase runs on
``formulas``                       ASTRA-sim's analytical formulas (net, red, hops, chunking)
``report``                         spans, per-rank rows, critical path, timeline
``algorithms``                     the algorithm registry (the one place that reads algorithm names)
``algorithms.base``                the algorithm interface: cost, member phase, messages
``algorithms.ring``                the ring algorithm, and the ring over a group
``algorithms.direct``              the direct algorithm (its all-reduce packet by packet)
``algorithms.halving_doubling``    the halving-doubling algorithm
``algorithms.double_binary_tree``  the double binary tree all-reduce
``algorithms.custom``              a collective run as its own ET per rank
=================================  ==========================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .backend import SimpyBackend

__all__ = ["SimpyBackend"]

__getattr__, __dir__ = lazy_exports(__name__, {"SimpyBackend": "backend"})
