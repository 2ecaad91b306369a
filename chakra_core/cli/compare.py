"""``chakra compare A B [--system FILE ...] [--backend NAME] [-O key=value ...] [--json]``: the
fidelity report of B against A."""

from __future__ import annotations

from chakra_core.cli._common import add_input_options, add_plugin_options, host_of, input_kwargs, print_json


def add_arguments(p) -> None:
    """Arguments of ``compare``."""
    p.add_argument("a", metavar="A", help="the reference trace set (e.g. the source of a model)")
    p.add_argument("b", metavar="B", help="the trace set judged against A (e.g. a sample)")
    p.add_argument("--system", action="append", default=[], metavar="FILE",
                   help="system description both are simulated on (repeat for a sweep; default: the "
                        "simulator's default system)")
    p.add_argument("--backend", default="simpy", help="simulator backend (default: simpy)")
    add_plugin_options(p)
    p.add_argument("--no-simulate", action="store_true", help="leave the simulated step time out")
    add_input_options(p)
    p.add_argument("--json", action="store_true", help="print JSON (simulated.relative_error, ...)")


def run(args) -> int:
    """Compute and print the report."""
    from chakra_core.analysis._compare import format_report
    from chakra_core.base._options import parse_kv
    from chakra_core.pipeline._analyses import compare

    kw = input_kwargs(args)
    report = compare(args.a, args.b, systems=args.system or None, backend=args.backend, options=parse_kv(args.opts),
                     simulate=not args.no_simulate, format=kw["format"], input_options=kw["input_options"],
                     host=host_of(args))
    if args.json:
        print_json(report)
    else:
        print(format_report(report))
    return 0
