"""``chakra export PATH --to NAME -o DIR [--system F] [--network F] [-O key=value ...] [--json]
[--no-validate]``."""

from __future__ import annotations

import os

from chakra_core.cli._backend import add_system_arguments, backend_kwargs, print_result
from chakra_core.cli._common import print_json


def add_arguments(p) -> None:
    """Arguments of ``export``."""
    add_system_arguments(p)
    p.add_argument("--to", required=True, metavar="NAME", help="exporter backend, e.g. astrasim")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args) -> int:
    """Export (writing result.json in DIR) and print the report."""
    from chakra_core.pipeline._commands import export

    result = export(args.path, args.to, args.output, **backend_kwargs(args))
    if args.json:
        print_json(result.to_dict())
        return 0
    print_result(result, args.verbose)
    print(f"wrote {len(result.files)} file(s) under {args.output}; result: {os.path.join(args.output, 'result.json')}")
    return 0
