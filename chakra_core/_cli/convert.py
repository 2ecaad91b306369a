"""``chakra convert INPUT... [--format NAME] -o OUT [-O key=value ...]``."""

from __future__ import annotations

from ._common import add_plugin_options, open_input, print_json, progress


def add_arguments(p) -> None:
    """Arguments of ``convert``."""
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="input files, directory or prefix")
    p.add_argument("--format", help="input format (auto-detected when omitted)")
    p.add_argument("-I", dest="input_opts", action="append", default=[], metavar="KEY=VALUE",
                   help="the same as -O (input-format option)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output directory (files trace.{rank}.et) or prefix (OUT.{rank}.et)")
    p.add_argument("--gzip", action="store_true", help="write .et.gz files")
    p.add_argument("--json", action="store_true", help="print the written files as JSON")
    add_plugin_options(p)


def run(args) -> int:
    """Convert and write the set; print the files written."""
    args.input_opts = args.opts + args.input_opts
    traces = open_input(args.inputs, args)
    paths = traces.write(args.output, compress=args.gzip, progress=progress("writing"), replace_stale=True)
    if args.json:
        print_json({"ranks": len(paths), "files": [str(p) for p in paths]})
    else:
        for p in paths:
            print(p)
    return 0
