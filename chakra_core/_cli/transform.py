"""``chakra transform PATH NAME... -o OUT [-O key=value ...] [--gzip] [--json]``."""

from __future__ import annotations

from ._common import add_input_options, add_plugin_options, input_kwargs, print_json, print_paths


def add_arguments(p) -> None:
    """Arguments of ``transform``."""
    p.add_argument("input", metavar="PATH", help="the trace set (any registered input format)")
    p.add_argument("names", nargs="+", metavar="NAME", help="transforms, applied in order")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output directory (files trace.{rank}.et) or prefix (OUT.{rank}.et)")
    p.add_argument("--gzip", action="store_true", help="write .et.gz files")
    p.add_argument("--json", action="store_true", help="print the written files as JSON")
    add_input_options(p)
    add_plugin_options(p)


def run(args) -> int:
    """Transform and write the set; print the files written."""
    from chakra_core._commands import transform
    from chakra_core._options import parse_kv

    traces = transform(args.input, args.names, parse_kv(args.opts), output=args.output, gzip=args.gzip,
                       **input_kwargs(args))
    files = [rt.path or "" for rt in traces]
    if args.json:
        print_json({"ranks": len(files), "files": files})
    else:
        print_paths(files, args.verbose)
    return 0
