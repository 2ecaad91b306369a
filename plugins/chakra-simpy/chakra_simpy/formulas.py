"""ASTRA-sim's analytical (congestion-unaware) formulas shared by every collective algorithm.

In integer ns:

- a message of ``m`` bytes over ``h`` hops: ``net(m) = floor(h*L + m/b)`` with ``b`` in bytes/ns
  (``bandwidth * 2**30 / 1e9``);
- a reduction of ``m`` bytes: ``red(m) = 3 * floor(m / M)`` with ``M`` = local-mem-bw (bytes/ns);
- a chunk phase = (#endpoint delays) * e + its network steps + its reductions, per algorithm
  (:mod:`algorithms`, each with its ``cost``).

A phase cost is a ``Cost(fixed)``: the phase takes ``fixed`` ns (exact integer arithmetic).  The
congestion-aware mode sends the same steps' messages over shared links instead
(:mod:`message_run`, :mod:`network`).
"""

from __future__ import annotations

from dataclasses import dataclass

from chakra_core import ConfigError
from chakra_core.system import Dimension

__all__ = ["Cost", "NoLocalMemBandwidth", "ring_hops", "peer_hops", "net", "red", "final_size", "chunking",
           "chain_cost", "same_steps_cost", "link_net", "GROUP_ENDPOINT_DELAY"]

#: endpoint delay (ns) that ASTRA-sim uses for rings over a communicator group, whatever
#: ``endpoint-delay`` says.
GROUP_ENDPOINT_DELAY = 10


@dataclass(frozen=True)
class Cost:
    """Duration of one chunk phase: ``fixed`` ns (congestion-unaware)."""

    fixed: int


def ring_hops(dim: Dimension, distance: int) -> int:
    """Hops between two NPUs ``distance`` apart in one dimension (bidirectional ring,
    shortest way; FullyConnected 1; Switch 2)."""
    if dim.topology == "Switch":
        return 2
    if dim.topology == "FullyConnected":
        return 1
    d = distance % dim.npus_count
    return min(d, dim.npus_count - d)


def peer_hops(dims: tuple[Dimension, ...], coords_a: tuple[int, ...], coords_b: tuple[int, ...]
              ) -> tuple[int, int]:
    """``(dimension, hops)`` of a message between two NPUs: charged on the lowest dimension
    where their coordinates differ (as ASTRA-sim's analytical network does)."""
    for d, (a, b) in enumerate(zip(coords_a, coords_b)):
        if a != b:
            return d, ring_hops(dims[d], b - a)
    raise ValueError("a message to oneself")


def net(dim: Dimension, m: int, hops: int) -> int:
    """``floor(hops * L + m / b)`` ns for ``m`` bytes over ``hops`` links of ``dim``."""
    return int(hops * dim.latency + m / dim.bytes_per_ns)


class NoLocalMemBandwidth(ConfigError):
    """A reduction on a description whose ``local-mem-bw`` is 0; the backend re-raises it with
    the system file and key (the timing code does not know them)."""


def red(m: int, local_mem_bw: float) -> int:
    """``3 * floor(m / M)`` ns to reduce ``m`` bytes (M = local-mem-bw, GB/s = bytes/ns)."""
    if local_mem_bw <= 0:
        raise NoLocalMemBandwidth("a reduction needs 'local-mem-bw' > 0 GB/s (ASTRA-sim divides by "
                                  "zero; its system.json default is 0): set it in the system file")
    return 3 * int(m // local_mem_bw)


def final_size(kind: str, d: int, p: int) -> int:
    """Bytes leaving a phase of ``kind`` that got ``d`` bytes on ``p`` NPUs."""
    if kind == "RS":
        return d // p
    if kind == "AG":
        return d * p
    return d


def chunking(kind: str, size: int, splits: int, total_npus: int) -> tuple[int, int]:
    """``(chunks, chunk_bytes)`` as ASTRA-sim splits a collective of ``size`` bytes.

    chunk = size // splits; unless all-gather, a chunk below the total NPU count is raised to
    it (and the size to ``splits * chunk``); a remainder is one more full-size chunk.  A
    zero-byte all-gather has no chunk; one smaller than ``splits`` bytes is one chunk (ASTRA-sim
    divides by zero there).
    """
    c = size // splits
    if kind != "AG" and total_npus > c:
        c = total_npus
        size = splits * c
    if size <= 0:
        return 0, 0
    if c == 0:
        return 1, size
    return -(-size // c), c


def chain_cost(e: int, n_e: int, msgs: list[tuple[int, Dimension, int]], reds: int) -> Cost:
    """Cost of a chain: ``n_e`` endpoint delays, messages ``(bytes, dimension, hops)`` one after
    the other, ``reds`` ns of reductions."""
    return Cost(n_e * e + sum(net(dim, m, h) for m, dim, h in msgs) + reds)


def same_steps_cost(e: int, steps: int, m: int, dim: Dimension, hops: int, reds: int) -> Cost:
    """:func:`chain_cost` of ``steps`` equal messages of ``m`` bytes over ``hops`` links of ``dim``
    with ``steps + 1`` endpoint delays: each message's time is floored alike, so they sum to
    ``steps`` times one."""
    return Cost((steps + 1) * e + steps * net(dim, m, hops) + reds)


def link_net(dim_hops: tuple[Dimension, int], m: int) -> int:
    """:func:`net` of ``m`` bytes over a ``(Dimension, hops)`` path."""
    dim, h = dim_hops
    return net(dim, m, h)
