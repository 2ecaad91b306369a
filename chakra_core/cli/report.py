"""``chakra report [PATH] [--result RESULT.json] [--system F ...] [-o report.html|.json|.txt] [--json]
[--what-if TARGET=FACTOR ...]``."""

from __future__ import annotations

from chakra_core.cli._backend import backend_kwargs
from chakra_core.cli._common import add_input_options, add_plugin_options


def add_system_flags(p, result_backend: bool = False) -> None:
    """The system-description flags and ``-O`` of the simulator run on a trace set; with
    ``result_backend`` an unset ``--backend`` is None (simpy, or the backend of ``--result``)."""
    add_input_options(p)
    p.add_argument("--backend", default=None if result_backend else "simpy",
                   help="simulator or emulator for a trace set (default: simpy"
                        + ("; re-simulating a --result's set, the result's)" if result_backend else ")"))
    p.add_argument("--system", metavar="FILE", help="our system YAML, or ASTRA-sim's system.json")
    p.add_argument("--network", metavar="FILE", help="our YAML, or ASTRA-sim's network.yml")
    p.add_argument("--memory", metavar="FILE", help="ASTRA-sim memory.json (remote memory)")
    p.add_argument("--comm-groups", dest="comm_groups", metavar="FILE", help="ASTRA-sim communicator-group JSON")
    p.add_argument("--no-validate", action="store_true", help="simulate even a set with validation errors")
    add_plugin_options(p)


def add_arguments(p) -> None:
    """Arguments of ``report``."""
    p.add_argument("path", nargs="?", metavar="PATH", help="trace set: file, directory or prefix")
    p.add_argument("--result", metavar="RESULT.json", help="a result written with its spans (-O spans=true -o DIR)")
    add_system_flags(p, result_backend=True)
    p.add_argument("--what-if", dest="what_if", action="append", default=[], metavar="TARGET=FACTOR",
                   help="estimate the step time with TARGET (compute, cpu, accelerator, comm, collective, memory, "
                        "name:OPERATOR) FACTOR times faster (repeatable)")
    p.add_argument("--top", type=int, default=20, help="operators listed (default: 20)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report here, by the suffix: the HTML page "
                   "(.html, .htm), JSON (.json) or text (.txt)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args) -> int:
    """Build the report; print it as text or JSON."""
    from chakra_core.pipeline._analyses import report

    rep = report(args.path, result=args.result, backend=args.backend, what_if=args.what_if, top=args.top,
                 output=args.output, **backend_kwargs(args))
    if args.json:
        print(rep.json())
    else:
        print(rep.text())
        if args.output:
            print(f"wrote {args.output}")
    return 0
