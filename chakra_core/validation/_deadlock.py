"""Abstract execution of a whole trace set: which ranks wait on each other forever.

The model is the simulator's (``chakra-simpy``) with every computation taking no time:

- a node starts when all its dependencies have finished; nodes other than communication and
  memory ops finish at once;
- each rank has ``streams`` communication slots (the simulator's option, 1 by default as NCCL's
  one stream per communicator): of the ready collectives, sends and memory ops, the one with the
  smallest id starts when a slot is free; a send or memory op frees it at once, a collective
  holds it until it completes;
- the k-th collective a rank starts on a group is the k-th of every member, and completes when
  all members have started theirs;
- sends are eager; a receive completes once the matching send (same source, destination, tag
  and size, first in first out) has started.

This is the reference run: ``deadlock`` and ``never-reached`` come from it.  When the set has a
send, a second run looks for an order of events that the lengths of transfers give and the
reference does not: a message arrives (and its receive completes) a step after its send starts,
once no rank can do more, and the send holds its slot until then, as the simulator's holds the
stream for its transfer.  That run stuck where the reference finishes is a ``may-deadlock``.

Ranks left unfinished wait on other ranks; a cycle of such waits is a deadlock, a wait on a rank
that has finished is a collective or send that rank never reaches.  State is integer arrays per
rank, sized by the skeleton (:mod:`._skeleton`, :mod:`._skelrecord`), not by the node count;
the run is one loop (:mod:`._deadkernel`), compiled or run as Python as the caller chooses.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from chakra_core.base._kernels import chosen
from chakra_core.validation._deadkernel import run_compiled
from chakra_core.validation._skelrecord import K_COLL, K_RECV, K_SEND, Skeleton, Wait

__all__ = ["Outcome", "run_abstract"]


class Outcome(NamedTuple):
    """One run of the set: the waits of the ranks left unfinished, the ranks that finished, and
    the order of events it took ("" for the reference run)."""

    waits: list[Wait]
    finished: set[int]
    order: str = ""


#: the order of the second run, as a finding words it
_LATE = "each message arriving only after the ranks have done what they can without it"


def run_abstract(skels: dict[int, Skeleton], members: list[tuple[int, ...]],
                 streams: int = 1, compile_it: bool = True) -> tuple[Outcome, ...]:
    """Run the set: the reference run's outcome, then, when the set has a send and the reference
    run finishes, the outcome of the run with late messages (only then is it reported).

    ``members[g]`` are the ranks of group number ``g``; ``streams`` the communication slots
    per rank; ``compile_it``: whether the loop runs compiled (numba) or as Python.
    """
    ranks = list(skels)
    parts = [skels[r] for r in ranks]
    counts = np.array([len(s.ids) for s in parts], np.int64)
    base = np.zeros(len(parts) + 1, np.int64)
    np.cumsum(counts, out=base[1:])
    index = _index_type(max(int(base[-1]) + 1, sum(len(s.preds) for s in parts)))
    ids = _joined([s.ids for s in parts], np.uint64)
    kinds = _joined([s.kinds for s in parts], np.uint8)
    group, channel, nchannels = _groups_and_channels(ranks, parts, kinds)
    preds = _joined_offset([s.preds for s in parts], base[:-1].tolist(), index)
    pred_ptr = _joined_ptr([s.ptr for s in parts], index)
    member_count = np.array([len(m) for m in members] or [0], np.int64)
    pair, npairs, off = _sequence_tables(counts, kinds, group, len(member_count))
    run = chosen(run_compiled, compile_it)

    def outcome(late: bool) -> Outcome:
        done, state, seq_of = run(base, ids, kinds, group, channel, nchannels, pred_ptr, preds, member_count,
                                  streams, pair, npairs, off, late)
        finished = {r for r, d, c in zip(ranks, done.tolist(), counts.tolist()) if d == c}
        return Outcome(_waits(ranks, base, state, seq_of, skels, members), finished, _LATE if late else "")

    reference = outcome(False)
    if reference.waits or not bool((kinds == K_SEND).any()):
        return (reference,)
    return reference, outcome(True)


def _index_type(n: int) -> type:
    """The narrowest of int32 and int64 that numbers ``n`` things (node numbers, counts)."""
    return np.int32 if n < 2**31 else np.int64


def _groups_and_channels(ranks: list[int], parts: list[Skeleton],
                         kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Each node's group number (a collective's, else 0) and channel number (a send's or
    receive's: one per distinct source, destination, tag and size, else 0), and the channels'
    count.  Built rank by rank, so that no column of the whole set but these two is held."""
    group = np.zeros(len(kinds), np.int32)
    channel = np.zeros(len(kinds), np.int32)
    at, keys, where = 0, [], []
    for r, s in zip(ranks, parts):
        k = kinds[at:at + len(s.ids)]
        peer = np.frombuffer(s.peer_or_group, np.int64)
        coll = k == K_COLL
        group[at:at + len(k)][coll] = peer[coll]
        send = k == K_SEND
        p2p = np.flatnonzero(send | (k == K_RECV))
        if len(p2p):
            is_send = send[p2p]
            src = np.where(is_send, r, peer[p2p])
            dst = np.where(is_send, peer[p2p], r)
            keys.append(np.stack([src, dst, np.frombuffer(s.tags, np.int64)[p2p],
                                  np.frombuffer(s.sizes, np.int64)[p2p]], axis=1))
            where.append(p2p + at)
        at += len(k)
    if not keys:
        return group, channel, 0
    uniq, inverse = np.unique(np.concatenate(keys), axis=0, return_inverse=True)
    channel[np.concatenate(where)] = inverse.reshape(-1)
    return group, channel, len(uniq)


def _sequence_tables(counts: np.ndarray, kinds: np.ndarray, group: np.ndarray,
                     ngroups: int) -> tuple[np.ndarray, int, np.ndarray]:
    """The tables of the collectives' sequences (:mod:`._deadkernel`): each collective's (rank,
    group) number, how many numbers there are, and the first slot of each group's sequences,
    sized by the most collectives any rank has on the group.  The numbers are ``rank * ngroups
    + group`` while that range is small next to the collectives (a table of counts), else the
    distinct ones in order."""
    at_coll = np.flatnonzero(kinds == K_COLL)
    key = np.searchsorted(np.cumsum(counts), at_coll, side="right")
    key *= ngroups
    key += group[at_coll]
    if len(counts) * ngroups <= max(4 * len(key), 1 << 16):
        per = np.bincount(key, minlength=len(counts) * ngroups)
        at, npairs = key, len(per)
        most = per.reshape(-1, ngroups).max(axis=0, initial=0)
    else:
        uniq, at, per = np.unique(key, return_inverse=True, return_counts=True)
        npairs = len(uniq)
        most = np.zeros(ngroups, np.int64)
        np.maximum.at(most, uniq % ngroups, per)
    del key
    pair: np.ndarray = np.zeros(len(kinds), _index_type(npairs))
    pair[at_coll] = at
    off = np.zeros(ngroups + 1, np.int64)
    np.cumsum(most, out=off[1:])
    return pair, npairs, off


def _joined(arrays: list, dtype: type) -> np.ndarray:
    """The skeleton columns of every rank, one after the other."""
    return np.concatenate([np.frombuffer(a, dtype) for a in arrays] + [np.zeros(0, dtype)])


def _joined_offset(arrays: list, offsets: list[int], dtype: type) -> np.ndarray:
    """Int64 columns of every rank, one after the other, each plus its rank's offset."""
    cols = [np.frombuffer(a, np.int64) for a in arrays]
    out: np.ndarray = np.empty(sum(len(c) for c in cols), dtype)
    at = 0
    for c, add in zip(cols, offsets):
        np.add(c, add, out=out[at:at + len(c)], casting="unsafe")
        at += len(c)
    return out


def _joined_ptr(ptrs: list, dtype: type) -> np.ndarray:
    """CSR offsets (int64 columns, each from 0) of consecutive ranks as one."""
    cols = [np.frombuffer(a, np.int64) for a in ptrs]
    ends = np.cumsum([0] + [int(c[-1]) for c in cols])
    return np.concatenate([np.zeros(1, dtype), _joined_offset([c[1:] for c in cols], ends[:-1].tolist(), dtype)])


def _waits(ranks: list[int], base: np.ndarray, state: np.ndarray, seq_of: np.ndarray, skels: dict[int, Skeleton],
           members: list[tuple[int, ...]]) -> list[Wait]:
    """What each unfinished rank waits for: its collectives in progress and its receives."""
    out: list[Wait] = []
    arrived: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for x in np.flatnonzero(state >= 2).tolist():
        k = int(np.searchsorted(base, x, side="right")) - 1
        r, i = ranks[k], x - int(base[k])
        s = skels[r]
        if state[x] == 3:
            out.append(Wait(r, i, [s.peer_or_group[i]]))
        else:
            arrived.setdefault((s.peer_or_group[i], int(seq_of[x])), []).append((r, i))
    for (g, k), at in arrived.items():
        have = {r for r, _ in at}
        missing = [m for m in members[g] if m not in have]
        out.extend(Wait(r, i, missing, k) for r, i in at)
    return sorted(out, key=lambda w: (w.rank, skels[w.rank].ids[w.index]))
