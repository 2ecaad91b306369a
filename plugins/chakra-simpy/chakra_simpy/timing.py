"""Closed-form timing of collective phases, point-to-point messages, compute and memory.

Every formula follows ASTRA-sim's analytical (congestion-unaware) model, in integer ns:

- a message of ``m`` bytes over ``h`` hops: ``net(m) = floor(h*L + m/b)`` with ``b`` in bytes/ns
  (``bandwidth * 2**30 / 1e9``);
- a reduction of ``m`` bytes: ``red(m) = 3 * floor(m / M)`` with ``M`` = local-mem-bw (bytes/ns);
- a phase = (#endpoint delays) * e + the network steps + the reductions, per algorithm (see
  :func:`phase_cost`).

A phase cost is returned as ``Cost(fixed)``: the phase takes ``fixed`` ns (exact integer
arithmetic).  The congestion-aware mode sends the same steps' messages over shared links instead
(:mod:`aware`, :mod:`network`).
"""

from __future__ import annotations

from dataclasses import dataclass

from chakra_core import ConfigError
from chakra_core.system import Dimension, algorithm_base

__all__ = ["Cost", "NoLocalMemBandwidth", "ring_hops", "peer_hops", "net", "red", "phase_cost", "one_phase_cost",
           "algorithm_cost", "ring_group_cost", "ring_steps",
           "final_size", "chunking", "GROUP_ENDPOINT_DELAY"]

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


def ring_steps(kind: str, p: int) -> tuple[int, int, int]:
    """``(network steps, reductions, message divisor)`` of the ring algorithm on ``p`` NPUs."""
    if kind == "AR":
        return 2 * (p - 1), p - 1, p
    if kind == "RS":
        return p - 1, p - 1, p
    if kind == "AG":
        return p - 1, 0, 1
    return p * (p - 1) // 2, 0, p  # A2A


def _cost(e: int, n_e: int, msgs: list[tuple[int, Dimension, int]], reds: int) -> Cost:
    """Cost of a chain: ``n_e`` endpoint delays, messages ``(bytes, dimension, hops)`` one after
    the other, ``reds`` ns of reductions."""
    return Cost(n_e * e + sum(net(dim, m, h) for m, dim, h in msgs) + reds)


def direct_all_reduce(nets: list[int], e: int, r: int) -> int:
    """One chunk phase of ASTRA-sim's direct all-reduce with equal starts (ns); ``nets[k-1]``:
    the message to (and from) the peer ``k`` places on, ``r`` the reduction of one message.

    The P-1 first-half messages leave after ``e``.  Each arrival, earliest first, makes a
    second-half packet ready ``e + r`` later, and the k-th one made goes to the peer k places on,
    whoever sent the k-th arrival.  None leaves before all P-1 have arrived: one ready earlier
    leaves at the first ready time at or after the last arrival.  The phase ends ``e`` after the
    last second-half message arrives."""
    arrive = sorted(e + x for x in nets)
    ready = [t + e + r for t in arrive]
    gate = min(t for t in ready if t >= arrive[-1])
    return max(max(t, gate) + x for t, x in zip(ready, nets)) + e


def _not_modelled(impl: str) -> ConfigError:
    return ConfigError(f"implementation '{impl}' is not modelled by the simpy backend "
                       "(modelled: ring, direct, halvingDoubling and their one* variants, doubleBinaryTree)")


def algorithm_cost(kind: str, impl: str, p: int, link, d: int, e: int, local_mem_bw: float) -> Cost:
    """Cost of one chunk phase of ``kind`` (AR, RS, AG, A2A) with ``d`` bytes entering it, on a
    logical ring of ``p`` NPUs with algorithm ``impl``; ``link(distance)`` gives the
    ``(Dimension, hops)`` a message to the NPU ``distance`` places away is charged on.

    ring:   m = d // P (all-gather: d); AR 2(P-1) steps, P-1 reductions, 2P-1 endpoint delays;
            RS P-1 steps and reductions, P delays; AG P-1 steps, P delays; A2A P(P-1)/2 steps,
            P(P-1)/2+1 delays.
    direct: all P-1 messages at once (m = d // P; all-gather d), charged by the farthest
            peer: RS 2 delays, 1 step, 1 reduction; AG and A2A 2 delays, 1 step; AR: the
            second half's messages go as :func:`direct_all_reduce` sends them (with one cost
            for every peer, 3 delays, 2 steps and 1 reduction).
    doubleBinaryTree (all-reduce, P = 2^k): the slowest member (a leaf) with equal starts:
            2k messages of d bytes, to the peers P/2, P/4, ..., 1 away and back, 2k+1 endpoint
            delays, 2k-1 reductions of d (members finish apart: :mod:`dbt` times each one).
    halvingDoubling (P a power of 2, k = log2 P): message i (i = 1..k) of RS and the first half
            of AR is (d // 2) halved i-1 times, to the peer 2^(i-1) away, reduced from the
            second on; AG and the second half of AR double back from P/2 away; k+1 (RS, AG) or
            2k+1 (AR) endpoint delays.
    """
    base, window = algorithm_base(impl)
    if base == "ring":
        steps, nred, div = ring_steps(kind, p)
        m = d // div
        dim, h = link(1)
        return _cost(e, steps + 1, [(m, dim, h)] * steps, nred * red(m, local_mem_bw) if nred else 0)
    if base == "direct":
        if window is not None and window < p - 1:
            raise ConfigError(f"'{impl}' with a window below P-1 = {p - 1} is not modelled by the "
                              "simpy backend; use 'direct'")
        m = d if kind == "AG" else d // p
        if kind == "AR":
            nets = [net(dim_k, m, h_k) for dim_k, h_k in (link(k) for k in range(1, p))]
            return Cost(direct_all_reduce(nets, e, red(m, local_mem_bw)))
        dim, h = max((link(k) for k in range(1, p)), key=lambda dh: (net(dh[0], m, dh[1]), dh[1]))
        reds = red(m, local_mem_bw) if kind == "RS" else 0
        return _cost(e, 2, [(m, dim, h)], reds)
    if base == "halvingDoubling":
        k = p.bit_length() - 1
        if p != 1 << k:
            raise ConfigError(f"halvingDoubling needs a power-of-two NPU count, got {p}")
        if kind == "A2A":
            raise ConfigError("ASTRA-sim has no halvingDoubling all-to-all")
        msgs: list[tuple[int, Dimension, int]] = []
        reds = 0
        if kind in ("AR", "RS"):
            s = d // 2
            for i in range(1, k + 1):
                msgs.append((s, *link(1 << (i - 1))))
                if i >= 2:
                    reds += red(s, local_mem_bw)
                if i < k:
                    s //= 2
            if kind == "RS":
                return _cost(e, k + 1, msgs, reds)
            t = 2 * (s // 2)
            for j in range(1, k + 1):
                msgs.append((t << (j - 1), *link(p >> j)))
            return _cost(e, 2 * k + 1, msgs, reds)
        for i in range(1, k + 1):  # AG
            msgs.append((d << (i - 1), *link(p >> i)))
        return _cost(e, k + 1, msgs, 0)
    if base == "doubleBinaryTree":
        k = p.bit_length() - 1
        if p != 1 << k:
            raise ConfigError(f"doubleBinaryTree needs a power-of-two NPU count, got {p}")
        msgs = [(d, *link(p >> i)) for i in range(1, k + 1)] * 2
        return _cost(e, 2 * k + 1, msgs, (2 * k - 1) * red(d, local_mem_bw))
    raise _not_modelled(impl)


def phase_cost(kind: str, impl: str, dim: Dimension, d: int, e: int, local_mem_bw: float) -> Cost:
    """Cost of one chunk phase on network dimension ``dim`` (see :func:`algorithm_cost`)."""
    if impl.startswith("one"):
        raise _not_modelled(impl)
    return algorithm_cost(kind, impl, dim.npus_count, lambda dist: (dim, ring_hops(dim, dist)), d, e,
                          local_mem_bw)


def one_phase_cost(kind: str, impl: str, dims: tuple[Dimension, ...], d: int, e: int,
                   local_mem_bw: float) -> Cost:
    """Cost of one chunk phase of a ``one*`` implementation: one logical ring over every NPU
    (rank order), each message charged on the lowest dimension where the two ranks differ
    (seen from rank 0: the network is symmetric)."""
    total = 1
    for dim in dims:
        total *= dim.npus_count
    base, _ = algorithm_base(impl)
    if base == "halvingDoubling" and any(x.npus_count & (x.npus_count - 1) for x in dims):
        raise ConfigError(f"'{impl}' needs power-of-two dimensions")

    def coords(r: int) -> list[int]:
        out = []
        for dim in dims:
            out.append(r % dim.npus_count)
            r //= dim.npus_count
        return out

    zero = coords(0)

    def link(dist: int):
        dd, h = peer_hops(dims, tuple(zero), tuple(coords(dist % total)))
        return dims[dd], h

    return algorithm_cost(kind, impl, total, link, d, e, local_mem_bw)


def ring_group_cost(kind: str, members: list[int], hop_cost, d: int, local_mem_bw: float) -> Cost:
    """Cost of one chunk phase of a ring over a communicator group (members in rank order).

    ``hop_cost(a, b)`` gives ``(Dimension, hops)`` of the physical path from rank a to rank b.
    Member j receives every step from its predecessor, so its phase lasts
    ``(S+1)*10 + reductions + sum of the S incoming messages`` walking the ring backwards.  This
    is the slowest member's time: exact for every member when the links are even; uneven rings
    are timed per member (:mod:`stagger`), and this cost only serves when they are too large.
    """
    p = len(members)
    steps, nred, div = ring_steps(kind, p)
    m = d // div
    e = GROUP_ENDPOINT_DELAY
    links = [hop_cost(members[j - 1], members[j]) for j in range(p)]  # into member j
    nets = [net(dim, m, h) for dim, h in links]
    q, r = divmod(steps, p)
    reds = nred * red(m, local_mem_bw) if nred else 0

    def worst(vals):
        total = sum(vals)
        if r == 0:
            return q * total
        pre = [0]
        for v in vals + vals:
            pre.append(pre[-1] + v)
        # the r messages into member j come over links j-r+1 .. j
        return q * total + max(pre[j + p + 1] - pre[j + p + 1 - r] for j in range(p))

    worst_net = int(worst(nets)) if steps else 0
    return Cost((steps + 1) * e + reds + worst_net)
