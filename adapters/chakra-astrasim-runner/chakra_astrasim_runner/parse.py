"""Read ASTRA-sim 2.x's standard output into per-rank results (one cycle = 1 ns).

Lines read (any log prefix such as ``[2024-01-01 10:00:00.000] [workload] [info]`` is ignored)::

    sys[R] finished, N cycles, exposed communication M cycles.
    sys[R], Wall time: N          sys[R], GPU time: N          sys[R], CPU time: N
    sys[R], Comm time: N          sys[R], Remote mem time: N
    sys[R], Total compute-communication overlap: N
"""

from __future__ import annotations

import re

from chakra_core import ChakraError

__all__ = ["parse_output", "STAT_KEYS"]

_FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles(?:, exposed communication (-?\d+) cycles)?")
_STAT = re.compile(r"sys\[(\d+)\], ([A-Za-z -]+?)(?: time)?: (-?\d+)\s*$")
#: statistics line label -> result key (all in ns).
STAT_KEYS = {
    "Wall": "wall_ns",
    "GPU": "compute_ns",
    "CPU": "cpu_ns",
    "Comm": "comm_ns",
    "Remote mem": "remote_mem_ns",
    "Replay": "replay_ns",
    "Invalid": "invalid_ns",
    "Total compute-communication overlap": "overlap_ns",
}


def parse_output(text: str, ranks: int | None = None, where: str = "ASTRA-sim output") -> list[dict]:
    """Per-rank results ``[{"rank", "finish_ns", "exposed_comm_ns", "wall_ns", ...}]`` sorted by
    rank.  ``finish_ns`` is the rank's finish time and ``exposed_comm_ns`` its finish time minus
    its accelerator compute time, as ASTRA-sim defines them.  With ``ranks``, every rank
    0..ranks-1 must have finished (ChakraError otherwise, naming the first missing rank)."""
    out: dict[int, dict] = {}
    for line in text.splitlines():
        m = _FINISHED.search(line)
        if m:
            r = int(m.group(1))
            d = out.setdefault(r, {"rank": r})
            d["finish_ns"] = int(m.group(2))
            if m.group(3) is not None:
                d["exposed_comm_ns"] = int(m.group(3))
            continue
        m = _STAT.search(line)
        if m and m.group(2) in STAT_KEYS:
            r = int(m.group(1))
            out.setdefault(r, {"rank": r})[STAT_KEYS[m.group(2)]] = int(m.group(3))
    finished = {r: d for r, d in out.items() if "finish_ns" in d}
    if ranks is not None:
        missing = [r for r in range(ranks) if r not in finished]
        if missing:
            tail = " | ".join(text.strip().splitlines()[-3:]) or "no output"
            raise ChakraError(f"rank {missing[0]} did not finish ({len(missing)} of {ranks} ranks "
                              f"missing); last lines: {tail}", where)
    return [finished[r] for r in sorted(finished)]
