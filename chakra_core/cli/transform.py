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
    from chakra_core.pipeline._commands import transform_pipeline, written_set

    pipe = transform_pipeline(args.input, args.names, parse_kv(args.opts), **input_kwargs(args))
    traces = written_set(pipe.load(), args.output, args.gzip, not args.no_validate)
    print_traces(traces, args, pipe.provenance())
    return 0
