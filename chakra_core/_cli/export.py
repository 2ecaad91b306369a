"""``chakra export PATH --to NAME -o DIR [--system F] [--network F] [-O key=value ...] [--json]``."""

from __future__ import annotations

from ._backend import add_system_arguments, print_result, run_backend
from ._common import print_json


def add_arguments(p) -> None:
    """Arguments of ``export``."""
    add_system_arguments(p)
    p.add_argument("--to", required=True, metavar="NAME", help="exporter backend, e.g. astrasim")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args) -> int:
    """Export, write result.json in DIR, and print the report."""
    result = run_backend(args, args.to, "exporter", args.output)
    path = result.write_json(f"{args.output}/result.json")
    if args.json:
        print_json(result.to_dict())
        return 0
    print_result(result)
    print(f"wrote {len(result.files)} file(s) under {args.output}; result: {path}")
    return 0
