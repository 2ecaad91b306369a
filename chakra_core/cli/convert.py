"""``chakra convert INPUT... [--format NAME] -o OUT [-O key=value ...] [-j N] [--executor NAME]
[-E key=value ...] [--no-validate]``."""

from __future__ import annotations

from chakra_core.cli._common import (
    add_output_options,
    add_plugin_options,
    input_kwargs,
    print_notes,
    print_written,
)


def add_arguments(p) -> None:
    """Arguments of ``convert``."""
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="input files, directory or prefix")
    p.add_argument("--format", help="input format (auto-detected when omitted)")
    p.add_argument("-I", dest="input_opts", action="append", default=[], metavar="KEY=VALUE",
                   help="the same as -O (input-format option)")
    add_output_options(p)
    p.add_argument("-j", dest="jobs", type=int, metavar="N",
                   help="convert the ranks in N parts at once (formats whose ranks convert independently)")
    p.add_argument("--executor", help="sweep executor that runs the parts (default local; ray, dask)")
    p.add_argument("-E", dest="executor_opts", action="append", default=[], metavar="KEY=VALUE",
                   help="executor option, e.g. -E address=auto (repeatable)")
    add_plugin_options(p)
    p.add_argument("--no-validate", action="store_true",
                   help="write the set even when it has validation errors (cycles, dangling dependencies, ...)")


def run(args) -> int:
    """Convert and write the set; print the files written."""
    from chakra_core.base._options import parse_kv
    from chakra_core.pipeline._commands import convert

    args.input_opts = args.opts + args.input_opts
    result = convert(args.inputs, args.output, gzip=args.gzip, jobs=args.jobs, executor=args.executor,
                     executor_options=parse_kv(args.executor_opts), validate=not args.no_validate,
                     **input_kwargs(args))
    print_notes(result)
    print_written(result, args)
    return 0
