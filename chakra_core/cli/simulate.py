"""``chakra simulate PATH [--backend NAME] [--system F] [--network F] [--memory F]
[--comm-groups F] [-O key=value ...] [--json] [--timeline FILE] [-o DIR] [--no-validate]``."""

from __future__ import annotations

from chakra_core.cli._backend import add_run_arguments, backend_kwargs
from chakra_core.cli._common import print_json
from chakra_core.cli._summary import print_timed_result


def add_arguments(p) -> None:
    """Arguments of ``simulate``."""
    add_run_arguments(p, "simulator", "simpy")


def run(args) -> int:
    """Simulate and print the breakdown, critical path and collectives (text in us, JSON in ns)."""
    from chakra_core.pipeline._commands import simulate

    result = simulate(args.path, args.backend, timeline=args.timeline, output=args.output, **backend_kwargs(args))
    if args.json:
        print_json(result.to_dict())
    else:
        print_timed_result(result, args.verbose)
    return 0
