"""``chakra jsonize PATH -o OUT [--lines]``: the JSON form of a trace (or of every rank of a set)."""

from __future__ import annotations

from chakra_core.cli._common import add_input_options, input_kwargs, print_notes, print_written


def add_arguments(p) -> None:
    """Arguments of ``jsonize``."""
    p.add_argument("path", metavar="PATH", help="trace file, directory or prefix")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output file for one rank; for several, a directory or prefix (OUT.{rank}.json)")
    p.add_argument("--lines", action="store_true", help="JSON Lines instead of one JSON document")
    p.add_argument("--json", action="store_true", help="print the written files as JSON")
    add_input_options(p)


def run(args) -> int:
    """Write the JSON form and print the files written."""
    from chakra_core.pipeline._commands import jsonize

    result = jsonize(args.path, args.output, lines=args.lines, **input_kwargs(args))
    print_written(result, args)
    print_notes(result)
    return 0
