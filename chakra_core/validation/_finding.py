"""One finding of :func:`chakra_core.validate` (kept apart from the validator, which loads the
compiled loops, so that a command can name the type without loading them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["Finding"]


@dataclass
class Finding:
    """One problem: ``severity`` is "error" or "warning"; ``node_id`` is None for whole-file rules.

    After 20 findings of one rule in one file, one summary finding stands for the rest
    (``count`` says how many).  ``involved`` lists the ``(rank, node id)`` pairs of a
    ``deadlock`` or ``never-reached`` finding.
    """

    rule: str
    file: str
    node_id: int | None
    message: str
    severity: str = "error"
    rank: int | None = None
    count: int = 1  # how many problems this finding stands for (more than 1 on a "not shown" summary)
    involved: list[tuple[int, int]] = field(default_factory=list)

    def __str__(self) -> str:
        where = self.file + (f":node {self.node_id}" if self.node_id is not None else "")
        return f"{where}: {self.severity}: [{self.rule}] {self.message}"

    def to_dict(self) -> dict:
        """Plain data for ``--json``."""
        return asdict(self)
