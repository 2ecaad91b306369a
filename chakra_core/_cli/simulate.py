"""``chakra simulate PATH [--backend NAME] [--system F] [--network F] [--memory F]
[--comm-groups F] [-O key=value ...] [--json] [--timeline FILE] [-o DIR] [--no-validate]``."""

from __future__ import annotations

from ._backend import add_system_arguments, backend_kwargs
from ._common import print_json
from ._summary import print_timed_result


def add_arguments(p) -> None:
    """Arguments of ``simulate``."""
    add_system_arguments(p)
    p.add_argument("--backend", default="simpy", help="simulator backend (default: simpy)")
    p.add_argument("--timeline", metavar="FILE",
                   help="write a timeline: Perfetto protobuf, or Chrome JSON for a name ending in .json")
    p.add_argument("-o", "--output", metavar="DIR", help="directory for result.json and other files")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args) -> int:
    """Simulate and print the breakdown, critical path and collectives (text in us, JSON in ns)."""
    from chakra_core._commands import simulate

    result = simulate(args.path, args.backend, timeline=args.timeline, output=args.output, **backend_kwargs(args))
    if args.json:
        print_json(result.to_dict())
    else:
        print_timed_result(result, args.verbose)
    return 0
