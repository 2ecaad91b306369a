"""``opslist``: a tiny text format, one op per line: ``name duration_us [dep ...]``.

A file ``job.3.ops`` holds rank 3 (the rank is the number before ``.ops``; 0 without one).
"""

import re

from chakra_core import (
    GeneratedRank,
    GlobalMetadata,
    InputFormat,
    Node,
    NodeType,
    Option,
    TraceFormatError,
    TraceSet,
    set_attr,
)


class OpsListFormat(InputFormat):
    """Read ``.ops`` files, one rank each, as compute nodes (ids are line numbers)."""

    options = {"scale_us": Option("float", 1.0, "multiply every duration by this", unit="x")}

    def open(self, paths, options):
        """A TraceSet with one lazily read rank per file."""
        ranks = []
        for path in paths:
            m = re.search(r"\.(\d+)\.ops$", path)
            rank = int(m.group(1)) if m else 0
            ranks.append(GeneratedRank(rank, GlobalMetadata(version="0.0.4"),
                                       lambda path=path: read_ops(path, options["scale_us"]), path=path))
        return TraceSet(ranks, process_groups={}, source=paths[0])


def read_ops(path, scale):
    """Yield the nodes of one ``.ops`` file; bad lines raise a one-line TraceFormatError."""
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            try:
                duration = round(float(fields[1]) * scale)
                deps = [int(d) for d in fields[2:]]
            except (IndexError, ValueError):
                raise TraceFormatError("want: name duration_us [dep ...]", path, f"line {lineno}") from None
            node = Node(id=lineno, name=fields[0], type=NodeType.COMP_NODE, duration_micros=duration)
            node.data_deps.extend(deps)
            set_attr(node, "is_cpu_op", False)
            yield node
