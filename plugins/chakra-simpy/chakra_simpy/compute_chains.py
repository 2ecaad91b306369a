"""A compute chain's per-node times in one loop, for :meth:`Sim._run_chain`: a kernel
(:func:`chakra_core.kernel`) that runs as Python, or compiled by numba (``nogil``, kept in numba's
on-disk cache) when the programs are large enough to pay for loading it
(``chakra_core.chosen(fill_chain, compile_it)``)."""

from __future__ import annotations

from chakra_core import kernel

from .classify import MAX_NS

__all__ = ["fill_chain"]


@kernel(cache=True, nogil=True)
def fill_chain(start, end, readyby, why, indeg, seq, cum, first, last, waiting, now):
    """Run chain positions ``first..last`` of ``seq`` from ``now``, stopping before the first
    node whose index is ``waiting`` or more (-1: none waits): each node after the first starts
    when the one before ends (``cum``: durations summed along ``seq``), depends on it alone and
    is made ready by it.  Returns (the last position run, when it ends; -1, nothing written:
    past 2**63-1 ns)."""
    if waiting >= 0:
        for p in range(first + 1, last + 1):
            if seq[p] >= waiting:
                last = p - 1
                break
    base = cum[first]
    if cum[last + 1] - base > MAX_NS - now:
        return last, -1
    for p in range(first + 1, last + 1):
        node, prev = seq[p], seq[p - 1]
        t = now + (cum[p] - base)
        start[node] = t
        end[prev] = t
        readyby[node] = prev
        why[node] = prev
        indeg[node] = 0
    return last, now + (cum[last + 1] - base)
