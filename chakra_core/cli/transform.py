"""``chakra transform PATH NAME... -o OUT [-O key=value ...] [--gzip] [--json] [--no-validate]``."""

from __future__ import annotations

from chakra_core.cli._common import (
    add_input_options,
    add_output_options,
    add_plugin_options,
    input_kwargs,
    print_traces,
)


def add_arguments(p) -> None:
    """Arguments of ``transform``."""
    p.add_argument("input", metavar="PATH", help="the trace set (any registered input format)")
    p.add_argument("names", nargs="+", metavar="NAME", help="transforms, applied in order")
    add_output_options(p)
    add_input_options(p)
    add_plugin_options(p)
    p.add_argument("--no-validate", action="store_true",
                   help="write the set even when it has validation errors (cycles, dangling dependencies, ...)")


def run(args) -> int:
    """Transform and write the set; print the files written."""
    from chakra_core.base._options import parse_kv
    from chakra_core.pipeline._commands import transform

    traces = transform(args.input, args.names, parse_kv(args.opts), output=args.output, gzip=args.gzip,
                       validate=not args.no_validate, **input_kwargs(args))
    print_traces(traces, args)
    return 0
