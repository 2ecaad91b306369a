"""The supervisor never reads half of one status update with half of another.

A worker publishes its oldest node in flight in ``status.RANK`` many times per millisecond while
the supervisor polls it from another process; a read that mixed two updates once paired a node
with a start time of 0 and stopped a healthy replay as hung.  Here a child process writes
updates whose fields are all derived from one counter (phase 3, iteration k, done k, position k,
since k + 1) as fast as it can, and every read must be one of them."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from chakra_emulator.worker import STATUS_BYTES, Status, StatusReader

_UPDATES = 300_000


def _write(path: str) -> None:
    status = Status(Path(path))
    for k in range(1, _UPDATES):
        status.iteration = k
        status.set(3, k, k + 1, k)


def test_reads_are_whole_updates(tmp_path):
    path = tmp_path / "status.0"
    path.write_bytes(bytes(STATUS_BYTES))
    writer = multiprocessing.get_context("fork").Process(target=_write, args=(str(path),))
    writer.start()
    reader = StatusReader(path)
    reads = []
    try:
        while writer.is_alive() or not reads:
            reads.append(reader.read())
    finally:
        writer.join(60)
    updates = [r for r in reads if r[0] == 3]
    assert len(updates) > 100
    bad = [r for r in updates if not (r[1] == r[2] == r[3] and r[4] == r[3] + 1)]
    assert not bad, f"{len(bad)} of {len(updates)} reads mixed two updates, e.g. {bad[:3]}"
    assert reads[-1] == (3, _UPDATES - 1, _UPDATES - 1, _UPDATES - 1, _UPDATES)
