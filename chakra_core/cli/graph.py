"""``chakra graph PATH [--rank R] [--around NODE --depth K] -o FILE.{dot,svg,graphml}``."""

from __future__ import annotations

from chakra_core.cli._common import add_input_options, input_kwargs, print_json


def add_arguments(p) -> None:
    """Arguments of ``graph``."""
    p.add_argument("path", metavar="PATH", help="trace set: file, directory or prefix")
    add_input_options(p)
    p.add_argument("--rank", type=int, default=0, help="rank to draw (default: 0)")
    p.add_argument("--around", type=int, metavar="NODE", help="draw the neighbourhood of this node id")
    p.add_argument("--depth", type=int, default=2, help="hops from --around, both ways (default: 2)")
    p.add_argument("--max-nodes", dest="max_nodes", type=int, default=2000,
                   help="most nodes drawn (default: 2000); a larger selection is refused")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="FILE.dot, FILE.svg or FILE.graphml")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")


def run(args) -> int:
    """Draw the graph and say what was written."""
    from chakra_core.pipeline._analyses import graph

    out = graph(args.path, args.output, rank=args.rank, around=args.around, depth=args.depth,
                max_nodes=args.max_nodes, **input_kwargs(args))
    if args.json:
        print_json(out)
    else:
        print(f"{out['path']}: {out['nodes']} of rank {out['rank']}'s {out['rank_nodes']} nodes, {out['edges']} edges")
    return 0
