"""``chakra jsonize PATH -o OUT [--lines]``: the JSON form of a trace (or of every rank of a set)."""

from __future__ import annotations

import os
from pathlib import Path

from ._common import add_input_options, open_input


def add_arguments(p) -> None:
    """Arguments of ``jsonize``."""
    p.add_argument("path", metavar="PATH", help="trace file, directory or prefix")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output file for one rank; for several, a directory or prefix (OUT.{rank}.json)")
    p.add_argument("--lines", action="store_true", help="JSON Lines instead of one JSON document")
    add_input_options(p)


def run(args) -> int:
    """Write the JSON form and print the files written."""
    from chakra_core._jsonform import write_json
    from chakra_core._traceset import with_process_groups

    traces = open_input([args.path], args)
    out = Path(args.output)
    lines = args.lines or args.output.endswith(".jsonl")
    ext = ".jsonl" if lines else ".json"
    as_dir = out.is_dir() or args.output.endswith(("/", os.sep))
    for rt in traces:
        if as_dir:
            target = out / f"trace.{rt.rank}{ext}"
        elif len(traces) == 1:
            target = out
        else:
            target = Path(f"{out}.{rt.rank}{ext}")
        meta = with_process_groups(rt.metadata(), traces.process_groups)
        write_json(target, meta, rt.nodes(), rank=rt.rank, lines=lines)
        print(target)
    return 0
