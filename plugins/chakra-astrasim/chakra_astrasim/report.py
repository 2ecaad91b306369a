"""The export report: counts of everything the exporter changed or dropped, and why."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ExportReport"]


@dataclass
class ExportReport:
    """Counters grouped by topic; every key says what happened, every value is a count.

    ``removed``: nodes left out, by reason; ``rewritten``: collectives turned into modelled
    kinds (``"REDUCE->ALL_REDUCE"``); ``changed``: attribute fixes (sizes, tags, durations);
    ``dependencies``: edges rewired through removed nodes, dangling or duplicate edges
    dropped, join nodes added; ``ranks``: trace and network rank counts, padded ranks;
    ``groups``: old process-group name -> ASTRA-sim group id ("" = all ranks); ``configs``:
    changes made to the system description so that ASTRA-sim runs it; ``warnings``: things the
    exporter cannot fix (a collective order that differs between ranks, unmatched send/recv).
    """

    removed: Counter = field(default_factory=Counter)
    rewritten: Counter = field(default_factory=Counter)
    changed: Counter = field(default_factory=Counter)
    dependencies: Counter = field(default_factory=Counter)
    ranks: dict[str, int] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    configs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    nodes_in: int = 0
    nodes_out: int = 0

    def warn(self, message: str, limit: int = 50) -> None:
        """Record a warning (at most ``limit``; the rest are counted)."""
        if len(self.warnings) < limit:
            self.warnings.append(message)
        else:
            self.changed["warnings_not_listed"] += 1

    def absorb(self, other: ExportReport) -> None:
        """Add the node-level counts of ``other`` (one rank's conversion) to these."""
        self.removed.update(other.removed)
        self.rewritten.update(other.rewritten)
        self.changed.update(other.changed)
        self.dependencies.update(other.dependencies)
        self.nodes_in += other.nodes_in
        self.nodes_out += other.nodes_out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (counters sorted by key)."""
        return {
            "nodes_in": self.nodes_in,
            "nodes_out": self.nodes_out,
            "ranks": dict(self.ranks),
            "removed": dict(sorted(self.removed.items())),
            "rewritten": dict(sorted(self.rewritten.items())),
            "changed": dict(sorted(self.changed.items())),
            "dependencies": dict(sorted(self.dependencies.items())),
            "groups": dict(self.groups),
            "configs": list(self.configs),
            "warnings": list(self.warnings),
        }

    def notes(self) -> list[str]:
        """One human line per non-empty topic, for the Result's notes."""
        out = []
        for title, counter in (("removed", self.removed), ("rewritten", self.rewritten),
                               ("changed", self.changed), ("dependencies", self.dependencies)):
            if counter:
                out.append(f"{title}: " + ", ".join(f"{k} {v}" for k, v in sorted(counter.items())))
        renamed = self._renamed_groups()
        if renamed:
            out.append("groups (ASTRA-sim numbers them from 1; report.json: groups): " + renamed)
        out += [f"config: {c}" for c in self.configs]
        out += [f"warning: {w}" for w in self.warnings]
        return out

    def _renamed_groups(self, shown: int = 8) -> str:
        """``"'abc' -> 1, 'xy' -> all ranks, ..."`` for the process groups written under
        another name (at most ``shown``, then the count of the others); "" when none."""
        words = {"": "all ranks"}
        pairs = [f"{name!r} -> {words.get(gid, gid)}" for name, gid in self.groups.items() if name != gid]
        more = f", and {len(pairs) - shown} more" if len(pairs) > shown else ""
        return ", ".join(pairs[:shown]) + more
