"""``chakra jsonize PATH -o OUT [--lines]``: the JSON form of a trace (or of every rank of a set)."""

from __future__ import annotations

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
    from chakra_core.jsonform import write_json
    from chakra_core.traceset import with_process_groups

    traces = open_input([args.path], args)
    ext = ".jsonl" if args.lines else ".json"
    out = Path(args.output)
    for rt in traces:
        if len(traces) == 1 and not out.is_dir():
            target = out
        elif out.is_dir() or args.output.endswith("/"):
            target = out / f"trace.{rt.rank}{ext}"
        else:
            target = Path(f"{out}.{rt.rank}{ext}")
        meta = with_process_groups(rt.metadata(), traces.process_groups)
        write_json(target, meta, rt.nodes(), rank=rt.rank)
        print(target)
    return 0
