"""``chakra diff A B [--system F ...] [--json]``."""

from __future__ import annotations

from chakra_core.cli._backend import backend_kwargs
from chakra_core.cli._common import print_json
from chakra_core.cli.report import add_system_flags


def add_arguments(p) -> None:
    """Arguments of ``diff``."""
    p.add_argument("a", metavar="A", help="trace set, or result.json written with its spans")
    p.add_argument("b", metavar="B", help="trace set, or result.json written with its spans")
    add_system_flags(p)
    p.add_argument("--json", action="store_true", help="print JSON (metrics: {NAME: {a, b, delta, ratio}})")


def run(args) -> int:
    """Compare and print."""
    from chakra_core.pipeline._analyses import diff

    d = diff(args.a, args.b, backend=args.backend, **backend_kwargs(args))
    if args.json:
        print_json(d.to_dict())
    else:
        print(d.text())
    return 0
