"""``chakra sweep PIPELINE.yaml [--executor NAME] [-O key=value ...] [-o OUT] [-j N] [--resume]
[--timeout S] [--check] [--max-points N] [--plan-timeout S] [--json]``."""

from __future__ import annotations

import sys

from chakra_core.cli._common import add_plugin_options, host_of, print_json, shorten


def add_arguments(p) -> None:
    """Arguments of ``sweep``."""
    p.add_argument("pipeline", metavar="PIPELINE.yaml", help="pipeline file with a sweep: section")
    p.add_argument("--executor", default="local", help="executor that runs the points (default local; ray, dask)")
    add_plugin_options(p)
    p.add_argument("-o", dest="output", metavar="OUT",
                   help="the sweep's directory (default out/<pipeline>-sweep beside the pipeline)")
    p.add_argument("-j", dest="jobs", type=int, metavar="N", help="points at once (the executor's workers)")
    p.add_argument("--resume", action="store_true",
                   help="skip points whose results exist for the same resolved pipeline")
    p.add_argument("--timeout", dest="timeout_s", type=float, metavar="S",
                   help="seconds per point (overrides sweep.timeout_s)")
    p.add_argument("--check", action="store_true", help="only validate every point")
    p.add_argument("--max-points", type=int, default=None, metavar="N",
                   help="the most points the sweep may have (default 10000)")
    p.add_argument("--plan-timeout", type=float, default=None, metavar="S",
                   help="seconds that planning the points may take (default 300)")
    p.add_argument("--json", action="store_true", help="print the summary and the table as JSON")


def run(args) -> int:
    """Run the sweep; print the counts and the tables written; exit 1 when a point failed."""
    from chakra_core.base._options import parse_kv
    from chakra_core.sweeps._sweep import MAX_POINTS, PLAN_TIMEOUT_S, sweep

    out = sweep(args.pipeline, args.output, executor=args.executor, executor_options=parse_kv(args.opts),
                jobs=args.jobs, resume=args.resume, timeout_s=args.timeout_s, check=args.check,
                host=host_of(args), max_points=MAX_POINTS if args.max_points is None else args.max_points,
                plan_timeout_s=PLAN_TIMEOUT_S if args.plan_timeout is None else args.plan_timeout)
    for row in out["rows"]:
        if row["status"] in ("failed", "timeout"):
            print(f"point {row['point']}: {row['status']}: {shorten(str(row['error']))}", file=sys.stderr)
    if args.json:
        print_json(out)
    elif args.check:
        print(f"{args.pipeline}: OK ({out['points']} point(s): {out['runnable']} to run, "
              f"{out['skipped']} skipped by constraints)")
    else:
        print(f"{out['points']} point(s): {out['ok']} ok, {out['failed']} failed, {out['timeout']} timed out, "
              f"{out['skipped']} skipped ({out['reused']} reused)")
        how = f"-j {args.jobs}" if args.jobs else "the default: the machine's cores, at most one a point; -j N"
        ran = f"{out['workers']} worker(s) ({how})" if out["workers"] else "no point to run"
        print(f"executor {args.executor}: {ran}")
        for note in out["notes"]:
            print(f"note: {note}", file=sys.stderr)
        for f in out["files"]:
            print(f)
    return 1 if not args.check and (out["failed"] or out["timeout"]) else 0
