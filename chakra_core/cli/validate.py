"""``chakra validate PATH... [--json] [--no-cross-rank]``: exit 0 when clean, 2 when any error is found."""

from __future__ import annotations

import sys

from chakra_core.cli._common import add_input_options, input_kwargs, print_json


def add_arguments(p) -> None:
    """Arguments of ``validate``."""
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace file, directory or prefix")
    add_input_options(p)
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    p.add_argument("--no-cross-rank", action="store_true",
                   help="skip the rules that compare ranks (those of the process groups still run)")


def run(args) -> int:
    """Validate and report; exit 2 on errors."""
    from chakra_core.pipeline._commands import validate

    report = validate(args.paths, cross_rank=not args.no_cross_rank, **input_kwargs(args))
    if args.json:
        print_json(report.to_dict())
    else:
        for f in report:
            print(f)
        status = "OK" if report.ok else "FAILED"
        print(f"{status}: {report.ranks} rank(s), {report.errors} error(s), {report.warnings} warning(s)",
              file=sys.stdout if report.ok else sys.stderr)
    return 0 if report.ok else 2
