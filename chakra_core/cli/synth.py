"""``chakra synth fit|sample|show``: learn a model from trace sets, sample a new set, show a model."""

from __future__ import annotations

from chakra_core.cli._common import (
    add_input_options,
    add_plugin_options,
    host_of,
    input_kwargs,
    print_json,
    print_notes,
    print_written,
)


def add_arguments(p) -> None:
    """Arguments of ``synth`` and its three subcommands."""
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    fit = sub.add_parser("fit", help="learn a model from one or more trace sets (each PATH one set)")
    fit.add_argument("paths", nargs="+", metavar="PATH",
                     help="trace set: directory, prefix, file or glob; @FILE: a list of sets, one per line "
                          "(PATH [KEY=NUMBER ...], the set's parameters)")
    fit.add_argument("-o", "--output", required=True, metavar="MODEL", help="model file to write (JSON)")
    fit.add_argument("--synthesizer", help="registered synthesizer (default: structural, which keeps its source's "
                                           "node sequence; learned shares less)")
    add_plugin_options(fit)
    add_input_options(fit)
    fit.add_argument("--json", action="store_true", help="print the result as JSON")
    sample = sub.add_parser("sample", help="generate a new trace set from a model")
    sample.add_argument("model", metavar="MODEL", help="model file written by 'chakra synth fit'")
    sample.add_argument("-o", "--output", required=True, metavar="OUT", help="output directory or prefix")
    sample.add_argument("--seed", type=int, help="random seed (same seed, same bytes; default 0)")
    sample.add_argument("--ranks", type=int, help="ranks of the new set (a multiple of the model's tile)")
    sample.add_argument("--gzip", action="store_true", help="write .et.gz files")
    sample.add_argument("--no-validate", action="store_true",
                        help="write the sample even when it has validation errors (default: refuse, exit 2)")
    add_plugin_options(sample)
    sample.add_argument("--json", action="store_true", help="print the files written as JSON")
    show = sub.add_parser("show", help="print what a model holds")
    show.add_argument("model", metavar="MODEL", help="model file")
    show.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    """Run the chosen subcommand."""
    from chakra_core.base._options import parse_kv
    from chakra_core.pipeline._synth import synth_fit, synth_sample, synth_show

    if args.action == "fit":
        kw = input_kwargs(args)
        result = synth_fit(args.paths, args.output, synthesizer=args.synthesizer, options=parse_kv(args.opts), **kw)
        if args.json:
            print_json(result.to_dict())
        else:
            print(f"{result.files[0]} ({result.summary['workloads']} workload(s), "
                  f"{result.summary['model_bytes']} bytes)")
        print_notes(result)
    elif args.action == "sample":
        result = synth_sample(args.model, args.output, seed=args.seed, ranks=args.ranks,
                              options=parse_kv(args.opts), gzip=args.gzip, validate=not args.no_validate,
                              host=host_of(args))
        print_written(result, args)
        print_notes(result)
    else:
        shown = synth_show(args.model, host=host_of(args))
        if args.json:
            print_json(shown)
        else:
            print(format_shown(shown))
    return 0


def format_shown(shown, indent: int = 0) -> str:
    """A model description as indented ``key: value`` lines (lists of scalars on one line)."""
    pad = "  " * indent
    lines = []
    items = shown.items() if isinstance(shown, dict) else enumerate(shown)
    for key, value in items:
        if isinstance(value, (dict, list)) and value and any(isinstance(v, (dict, list)) for v in
                                                           (value.values() if isinstance(value, dict) else value)):
            lines.append(f"{pad}{key}:")
            lines.append(format_shown(value, indent + 1))
        elif isinstance(value, dict):
            lines.append(f"{pad}{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        elif isinstance(value, list):
            lines.append(f"{pad}{key}: " + " ".join(map(str, value)))
        else:
            lines.append(f"{pad}{key}: {value}")
    return "\n".join(lines)
