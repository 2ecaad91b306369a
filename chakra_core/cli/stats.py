"""``chakra stats PATH... [--json]``."""

from __future__ import annotations

from chakra_core.cli._common import add_input_options, input_kwargs, print_json


def add_arguments(p) -> None:
    """Arguments of ``stats``."""
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace file, directory or prefix")
    add_input_options(p)
    p.add_argument("--json", action="store_true", help="print JSON (total node count under 'nodes')")
    p.add_argument("--no-longest-path", action="store_true",
                   help="skip the longest-path computation (by recorded durations)")


def run(args) -> int:
    """Compute and print the statistics."""
    from chakra_core.pipeline._commands import stats
    from chakra_core.trace._stats import format_stats

    s = stats(args.paths, longest_path=not args.no_longest_path, **input_kwargs(args))
    if args.json:
        print_json(s)
    else:
        print(format_stats(s))
    return 0
