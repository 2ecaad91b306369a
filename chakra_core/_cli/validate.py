"""``chakra validate PATH... [--json]``: exit 0 when clean, 2 when any error is found."""

from __future__ import annotations

import sys

from ._common import add_input_options, open_input, print_json, progress


def add_arguments(p) -> None:
    """Arguments of ``validate``."""
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace file, directory or prefix")
    add_input_options(p)
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    p.add_argument("--no-cross-rank", action="store_true", help="skip the cross-rank checks")


def run(args) -> int:
    """Validate and report; exit 2 on errors."""
    from chakra_core._validate import validate

    traces = open_input(args.paths, args)
    findings = validate(traces, cross_rank=not args.no_cross_rank, progress=progress("validating"))
    n_errors = sum(f.count for f in findings if f.severity == "error")
    n_warnings = sum(f.count for f in findings) - n_errors
    if args.json:
        print_json({"ok": not n_errors, "ranks": len(traces), "errors": n_errors, "warnings": n_warnings,
                    "findings": [f.to_dict() for f in findings]})
    else:
        for f in findings:
            print(f)
        status = "FAILED" if n_errors else "OK"
        print(f"{status}: {len(traces)} rank(s), {n_errors} error(s), {n_warnings} warning(s)",
              file=sys.stderr if n_errors else sys.stdout)
    return 2 if n_errors else 0
