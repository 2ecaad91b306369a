"""``chakra emulate PATH [--backend NAME] [--system F] [--network F] [--memory F]
[--comm-groups F] [-O key=value ...] [--json] [--timeline FILE] [-o DIR] [--no-validate]``."""

from __future__ import annotations

from chakra_core.cli._backend import add_run_arguments, backend_kwargs, print_result
from chakra_core.cli._common import print_json


def add_arguments(p) -> None:
    """Arguments of ``emulate``."""
    add_run_arguments(p, "emulator", "emulator")


def run(args) -> int:
    """Replay and print the measured per-rank results (times in ns) and how they compare."""
    from chakra_core.pipeline._commands import emulate

    result = emulate(args.path, args.backend, timeline=args.timeline, output=args.output, **backend_kwargs(args))
    if args.json:
        print_json(result.to_dict())
        return 0
    from chakra_core.base._human import count, duration, size

    print_result(result, args.verbose)
    for kind, seen in (result.summary.get("collectives") or {}).items():
        print(f"observed {kind}: {count(seen['count'])} call(s), {size(seen['bytes'])} over all ranks")
    for how, row in (result.summary.get("measured_vs_trace") or {}).items():
        if row.get("ratio") is not None:
            print(f"{how} nodes: {count(row['nodes'])}, measured {duration(row['measured_ns'])} vs trace "
                  f"{duration(row['trace_ns'])} (x{row['ratio']:.3f})")
    return 0
