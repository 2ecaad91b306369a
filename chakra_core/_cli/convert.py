"""``chakra convert INPUT... [--format NAME] -o OUT [-O key=value ...]``."""

from __future__ import annotations

from ._common import add_output_options, add_plugin_options, input_kwargs, print_written


def add_arguments(p) -> None:
    """Arguments of ``convert``."""
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="input files, directory or prefix")
    p.add_argument("--format", help="input format (auto-detected when omitted)")
    p.add_argument("-I", dest="input_opts", action="append", default=[], metavar="KEY=VALUE",
                   help="the same as -O (input-format option)")
    add_output_options(p)
    add_plugin_options(p)


def run(args) -> int:
    """Convert and write the set; print the files written."""
    from chakra_core._commands import convert

    args.input_opts = args.opts + args.input_opts
    result = convert(args.inputs, args.output, gzip=args.gzip, **input_kwargs(args))
    print_written(result, args)
    return 0
