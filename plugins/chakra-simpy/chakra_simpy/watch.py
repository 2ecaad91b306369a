"""The progress of a running simulation: nodes done, simulated time and ranks finished.

The engine's loop stays as it is: when a bar is shown, a watcher thread reads the actors'
counters and the simulated clock every ``interval_s`` seconds (plain attribute reads, atomic
under the GIL) and draws them; when no bar is shown nothing runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from chakra_core import Progress, progress

if TYPE_CHECKING:
    from .engine import Sim

__all__ = ["watched", "status_line"]


def status_line(now_ns: float, finished: int, nranks: int) -> str:
    """``at 12.345 ms simulated, 3/8 ranks finished``: the simulated clock (ns) and the ranks done."""
    return f"at {now_ns / 1e6:,.3f} ms simulated, {finished}/{nranks} ranks finished"


def _draw(sim: Sim, bar: Progress, total: int, nranks: int) -> None:
    actors = sim.actors
    bar(sum(a.done for a in actors), total)
    finished = sum(len(a.ranks) for a in actors if a.done == a.n)
    bar.status(status_line(sim.env.now, finished, nranks))


@contextmanager
def watched(sim: Sim, nranks: int, interval_s: float = 0.5) -> Iterator[None]:
    """Show a ``simulating`` bar of ``sim``'s nodes (those of the simulated ranks, one per class of
    identical ranks) while the block runs ``sim``, with the simulated time and the ranks of the
    ``nranks`` finished; the last state is drawn when the block ends."""
    total = sum(a.n for a in sim.actors)
    with progress("simulating", total=total, unit="node") as bar:
        if not bar.shown:
            yield
            return
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(interval_s):
                _draw(sim, bar, total, nranks)

        thread = threading.Thread(target=watch, name="chakra-simpy-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            _draw(sim, bar, total, nranks)
