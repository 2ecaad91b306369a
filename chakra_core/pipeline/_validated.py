"""Writing a trace set only when it is valid: the one door of every command that writes a set.

:func:`write_validated_set` writes the ranks into the staging directory of the output (as
:meth:`TraceSet.write` does), checks the staged files by the rules of a set that no simulator can
run past (the errors of ``chakra validate`` in :data:`REFUSED_RULES`: cycles, dangling
dependencies, duplicate ids, unmatched or misordered communication, deadlocks, and durations or
sizes past the limits a simulator's sums can hold; not the content of a node, such as a node type
a simulator does not know) and publishes them only
when none is found; otherwise the output keeps what it held and a one-line error names the first
finding and the count.  ``convert``, ``transform``, ``generate`` and ``synth sample`` write
through it; ``validate=False`` (the CLI's ``--no-validate``) writes the set as it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from chakra_core.base._errors import TraceFormatError
from chakra_core.base._progress import progress
from chakra_core.trace._traceset import FileRank, TraceSet, publish_set

__all__ = ["write_validated_set", "refuse_staged", "REFUSED_RULES"]

#: the rules of :mod:`chakra_core.validation` whose errors keep a set from being written: its
#: structure, and values past what a simulator can add up (``bad-duration``, ``bad-size``)
REFUSED_RULES = frozenset({
    "cycle", "missing-dep", "duplicate-id", "deadlock", "never-reached", "bad-peer", "coll-order",
    "coll-not-member", "pg-bad-rank", "pg-undefined", "pg-unparseable", "bad-duration", "bad-size",
})


def refuse_staged(stage: Path, names: Sequence[str], labels: Sequence[str], output: str | os.PathLike,
                  process_groups: Mapping[str, Sequence[int]] | None = None) -> None:
    """Raise TraceFormatError naming the first error and the count when the set written in
    ``stage`` as ``names`` (named ``labels`` in messages) is invalid; nothing is published then.
    ``process_groups`` are the set's (None: read from the staged files)."""
    from chakra_core.validation._validate import validate

    ranks = []
    for name, label in zip(names, labels):
        fr = FileRank(_rank_of_name(name), stage / name)
        fr.path = label
        ranks.append(fr)
    traces = TraceSet(ranks, process_groups, str(output))
    with progress("validating", total=len(traces)) as bar:
        findings = validate(traces, progress=bar)
    errors = [f for f in findings if f.severity == "error" and f.rule in REFUSED_RULES]
    if errors:
        count = sum(f.count for f in errors)
        raise TraceFormatError(f"the trace set to write has {count} validation error(s), so it was not written; "
                               f"the first: {errors[0]} (see chakra validate; --no-validate writes it anyway)",
                               os.fspath(output))


def _rank_of_name(name: str) -> int:
    """The rank of a staged ``NAME.{rank}.et[.gz]`` file."""
    stem = name[: -len(".gz")] if name.endswith(".gz") else name
    return int(stem[: -len(".et")].rsplit(".", 1)[1])


def write_validated_set(traces: TraceSet, output: str | os.PathLike, *, compress: bool = False,
                        validate: bool = True, replace_stale: bool = True,
                        label: Callable[[int, str], str] | None = None, stage_name: str = "writing") -> list[Path]:
    """Write ``traces`` at ``output`` (a directory or a prefix, as :meth:`TraceSet.write`) when it
    passes validation (or ``validate`` is False); returns the paths written, by rank.  Messages
    name each rank by ``label(rank, staged name)``, by default its source's path; the progress
    bar is named ``stage_name``."""
    def write(stage: Path, name: str, suffix: str) -> list[str]:
        with progress(stage_name, total=len(traces)) as bar:
            names = traces.write_ranks(stage, traces.ranks, name, suffix, bar)
        if validate:
            labels = [label(r, n) if label else (traces[r].path or n) for r, n in zip(traces.ranks, names)]
            refuse_staged(stage, names, labels, output, traces.process_groups)
        return names

    return publish_set(output, write, compress, replace_stale)
