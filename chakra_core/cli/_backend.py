"""What ``simulate`` and ``export`` share: system-file flags, backend options, printing a Result."""

from __future__ import annotations

from typing import Any

from chakra_core.cli._common import add_input_options, add_plugin_options, input_kwargs, shown_ranks

__all__ = ["add_system_arguments", "add_run_arguments", "backend_kwargs", "print_result"]


def add_system_arguments(p) -> None:
    """PATH, ``--system``, ``--network``, ``--memory``, ``--comm-groups``, ``--format``, ``-I``,
    ``-O`` and ``--no-validate``."""
    p.add_argument("path", metavar="PATH", help="trace set: file, directory or prefix")
    add_input_options(p)
    p.add_argument("--system", metavar="FILE", help="our system YAML, or ASTRA-sim's system.json")
    p.add_argument("--network", metavar="FILE", help="our YAML, or ASTRA-sim's network.yml")
    p.add_argument("--memory", metavar="FILE", help="ASTRA-sim memory.json (remote memory)")
    p.add_argument("--comm-groups", dest="comm_groups", metavar="FILE",
                   help="ASTRA-sim communicator-group JSON")
    p.add_argument("--no-validate", action="store_true",
                   help="run even when the set has validation errors (by default it is refused)")
    add_plugin_options(p)


def add_run_arguments(p, kind: str, default: str) -> None:
    """The arguments of a command that runs a ``kind`` backend (default ``default``) over a
    trace set: :func:`add_system_arguments`, ``--backend``, ``--timeline``, ``-o DIR``, ``--json``."""
    add_system_arguments(p)
    p.add_argument("--backend", default=default, help=f"{kind} backend (default: {default})")
    p.add_argument("--timeline", metavar="FILE",
                   help="write a timeline: Perfetto protobuf, or Chrome JSON for a name ending in .json")
    p.add_argument("-o", "--output", metavar="DIR", help="directory for result.json and other files")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def backend_kwargs(args) -> dict[str, Any]:
    """Keyword arguments of :func:`chakra_core.simulate` / :func:`chakra_core.export` from ``args``."""
    from chakra_core.base._options import parse_kv
    from chakra_core.system import SYSTEM_OPTIONS

    flags = {k: getattr(args, k) for k in SYSTEM_OPTIONS}
    return {"options": parse_kv(args.opts), "validate": not args.no_validate, **flags, **input_kwargs(args)}


def print_result(result, verbose: bool = False) -> None:
    """Print a backend's scalar summary values, one per line, then its ranks (a long list
    summarised unless ``verbose``) and its notes."""
    from chakra_core.base._human import label, value

    for k, v in result.summary.items():
        if isinstance(v, (int, float, str)):
            print(f"{label(k)}: {value(k, v)}")
    for r in shown_ranks(result.ranks, 16, verbose):
        said = [f"{label(k)} {value(k, v)}" for k, v in r.items() if k.endswith("_ns") and isinstance(v, (int, float))]
        print(f"rank {r.get('rank')}: " + (", ".join(said) or "no times"))
    for n in result.notes:
        print(f"note: {n}")
