"""``chakra graph PATH [--rank R] [--around NODE [--depth K] | --summary [--max-boxes N] | --full]
-o FILE.{dot,svg,graphml}``."""

from __future__ import annotations

from typing import Any

from chakra_core.cli._common import add_input_options, input_kwargs, print_json


def add_arguments(p) -> None:
    """Arguments of ``graph``."""
    p.add_argument("path", metavar="PATH", help="trace set: file, directory or prefix")
    add_input_options(p)
    p.add_argument("--rank", type=int, default=0, help="rank to draw (default: 0)")
    p.add_argument("--around", type=int, metavar="NODE", help="draw the neighbourhood of this node id")
    p.add_argument("--depth", type=int, help="hops from --around, both ways (default: 2); only with --around")
    p.add_argument("--max-nodes", dest="max_nodes", type=int, default=2000,
                   help="most nodes drawn (default: 2000); a larger selection is refused")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--summary", dest="summary", action="store_true", default=None,
                      help="draw the rank as a summary: repeated layers folded with their counts, runs of nodes "
                           "collapsed (the default for a rank of more than 100 nodes); not with --around")
    view.add_argument("--full", dest="summary", action="store_false",
                      help="draw every node of the rank; not with --around")
    p.add_argument("--max-boxes", dest="max_boxes", type=int,
                   help="most boxes of a summary (default: 30); only for a summary")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="FILE.dot, FILE.svg or FILE.graphml")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")


def run(args) -> int:
    """Draw the graph and say what was written."""
    from chakra_core.pipeline._analyses import graph

    out = graph(args.path, args.output, rank=args.rank, around=args.around, depth=args.depth,
                max_nodes=args.max_nodes, summary=args.summary, max_boxes=args.max_boxes, **input_kwargs(args))
    if args.json:
        print_json(out)
    else:
        print(_said(out, args))
        if out["missing_deps"]:
            n = out["missing_deps"]
            print(f"note: {n} {'dependency' if n == 1 else 'dependencies'} on ids not in rank {out['rank']} "
                  "not drawn (chakra validate lists them)")
    return 0


def _said(out: dict[str, Any], args: Any) -> str:
    """The line saying what was drawn, with the defaults that were applied."""
    if out["summary"]:
        folded = ", ".join(f"{f['repeats']} x {f['nodes'] // f['repeats']}" for f in out["folded"]) or "none"
        why = " (a summary: the default past 100 nodes; --full draws every node)" if args.summary is None else ""
        most = f"at most {out['max_boxes']}" + (", the default --max-boxes" if args.max_boxes is None else "")
        return (f"{out['path']}: summary of rank {out['rank']}'s {out['rank_nodes']} nodes in {out['nodes']} boxes "
                f"({most}), {out['edges']} edges; repeats folded (count x nodes): {folded}{why}")
    within = ""
    if "depth" in out:
        hops = f"{out['depth']} hop" + ("" if out["depth"] == 1 else "s")
        within = f" within {hops} of node {args.around}" + (" (the default --depth)" if args.depth is None else "")
    return (f"{out['path']}: {out['nodes']} of rank {out['rank']}'s {out['rank_nodes']} nodes{within}, "
            f"{out['edges']} edges")
