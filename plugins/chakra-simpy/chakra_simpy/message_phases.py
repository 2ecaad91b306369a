"""The chunk phases of a message run (:mod:`message_run`): each phase's algorithm messages on
its member layout, built once per phase spec and group, and each member's part of a phase with
the route of every message it sends."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .algorithms import lookup
from .algorithms.base import Messages, PacketMessages, RotatedParts, TreeTurn
from .chunk_phases import PhaseSpec, tree_turns
from .formulas import GROUP_ENDPOINT_DELAY
from .layouts import dim_layout, group_layout
from .network import Link

if TYPE_CHECKING:
    from .collective_context import CollectiveContext
    from .collectives import Instance

__all__ = ["Phase", "Routed", "plan_phases"]


#: a member's part of a chunk phase with the route of every message it sends: ns before its
#: first step, and its steps: ((links, peer, number) per message sent; (peer, number) per message
#: received; bytes; ns after)
Routed = tuple[int, list[tuple[tuple[tuple[tuple[Link, ...], int, int], ...], tuple[tuple[int, int], ...], int, int]]]


class Phase:
    """One chunk phase of a plan: its queue and label, its algorithm's messages, for an
    alternating algorithm its turn, and the members' parts with routes built so far
    (``routed``, shared by the phases of the same messages)."""

    __slots__ = ("queue", "label", "messages", "turn", "routed")

    def __init__(self, queue: int, label: str, messages: Messages, turn: TreeTurn | None,
                 routed: dict[tuple[int, int], Routed]):
        self.queue = queue
        self.label = label
        self.messages = messages
        self.turn = turn
        self.routed = routed

    def rotated(self, c: int) -> RotatedParts | None:
        """The members' parts for chunk ``c`` when they are member 0's rotated (a phase run by
        steps on one ring in index order), else None."""
        msgs = self.messages
        if isinstance(msgs, PacketMessages):
            return None
        parts = msgs.choices[0 if self.turn is None else self.turn.choice(c)]
        return parts if isinstance(parts, RotatedParts) else None

    def part(self, c: int, j: int, links: Callable[[int, int], tuple[Link, ...]]) -> Routed:
        """Member ``j``'s part for chunk ``c`` (a phase run by steps), every message with its
        route (``links(j, k)``: from member j to member k)."""
        msgs = self.messages
        assert not isinstance(msgs, PacketMessages)
        choice = 0 if self.turn is None else self.turn.choice(c)
        got = self.routed.get((choice, j))
        if got is None:
            delay, steps = msgs.choices[choice][j]
            got = self.routed[(choice, j)] = (delay, [(tuple([(links(j, k), k, n) for k, n in to]), frm, m, add)
                                                      for to, frm, m, add in steps])
        return got


def plan_phases(ctx: CollectiveContext, memo: dict[tuple, tuple[Messages, dict]], inst: Instance,
                per_member: Sequence[PhaseSpec], tree_bases: dict[int, int], ranks: list[int],
                group: bool) -> tuple[list[Phase], list[tuple]]:
    """Every phase of ``inst`` with its messages, from its algorithm on its member layout (once
    per phase spec and group in ``memo``), and the memo key of each phase's messages."""
    members = tuple(ranks) if group else None
    keys: list[tuple] = []
    out = []
    for spec, turn, planned in zip(per_member, tree_turns(per_member, tree_bases), inst.phases):
        key = (spec, members)
        keys.append(key)
        got = memo.get(key)
        if got is None:
            got = memo[key] = (_messages(ctx, spec, ranks, group), {})
        out.append(Phase(planned.queue, planned.label, got[0], turn, got[1]))
    return out, keys


def _messages(ctx: CollectiveContext, spec: PhaseSpec, ranks: list[int], group: bool) -> Messages:
    """A phase's messages from its algorithm, on its member layout."""
    sd = ctx.sd
    lay = (group_layout(ranks, ctx.planner.hop) if spec.dim is None
           else dim_layout(ctx.planner.dims, spec.dim, ctx.planner.total))
    e = GROUP_ENDPOINT_DELAY if group else sd.endpoint_delay
    return lookup(spec.impl).algorithm.messages(spec.kind, spec.data, lay, e, sd.local_mem_bw)
