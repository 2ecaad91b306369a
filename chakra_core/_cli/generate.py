"""``chakra generate NAME -o OUT [-O key=value ...] [--gzip] [--json]``."""

from __future__ import annotations

from ._common import add_plugin_options, host_of, print_json, print_paths


def add_arguments(p) -> None:
    """Arguments of ``generate``."""
    p.add_argument("name", metavar="NAME", help="a registered generator (chakra plugins lists them)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output directory (files trace.{rank}.et) or prefix (OUT.{rank}.et)")
    p.add_argument("--gzip", action="store_true", help="write .et.gz files")
    p.add_argument("--json", action="store_true", help="print the written files as JSON")
    add_plugin_options(p)


def run(args) -> int:
    """Generate and write the set; print the files written."""
    from chakra_core._commands import generate
    from chakra_core._options import parse_kv

    traces = generate(args.name, parse_kv(args.opts), output=args.output, gzip=args.gzip, host=host_of(args))
    files = [rt.path or "" for rt in traces]
    if args.json:
        print_json({"ranks": len(files), "files": files})
    else:
        print_paths(files, args.verbose)
    return 0
