"""``chakra generate NAME -o OUT [-O key=value ...] [--gzip] [--json] [--no-validate]``."""

from __future__ import annotations

from chakra_core.cli._common import add_output_options, add_plugin_options, host_of, print_traces


def add_arguments(p) -> None:
    """Arguments of ``generate``."""
    p.add_argument("name", metavar="NAME", help="a registered generator (chakra plugins lists them)")
    add_output_options(p)
    add_plugin_options(p)
    p.add_argument("--no-validate", action="store_true",
                   help="write the set even when it has validation errors (cycles, dangling dependencies, ...)")


def run(args) -> int:
    """Generate and write the set; print the files written."""
    from chakra_core.base._options import parse_kv
    from chakra_core.pipeline._commands import generate_pipeline, written_set

    pipe = generate_pipeline(args.name, parse_kv(args.opts), host=host_of(args))
    traces = written_set(pipe.load(), args.output, args.gzip, not args.no_validate)
    print_traces(traces, args, pipe.provenance())
    return 0
