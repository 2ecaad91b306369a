"""``chakra`` entry point: argument parsing, lazy subcommands, one-line errors (exit 2).

Subcommand modules are imported only when their command runs, and no plugin is loaded for
``--help``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import warnings

from chakra_core.cli._common import shorten
from chakra_core.cli._process import leave, settle, terminated

__all__ = ["main", "command", "COMMANDS", "Parser"]

#: command -> (module under chakra_core.cli, one-line help)
COMMANDS = {
    "convert": ("convert", "convert any registered input format to a Chakra .et set"),
    "validate": ("validate", "check traces for errors a simulator would crash or hang on"),
    "stats": ("stats", "node and collective counts, longest path by recorded durations (see 'report')"),
    "jsonize": ("jsonize", "write the JSON form of a trace (exact inverse of 'convert --format json')"),
    "plugins": ("plugins", "list installed plugins, what they registered, and failures"),
    "plugin": ("plugin", "start a new plugin distribution from a template (plugin new NAME)"),
    "run": ("run", "run a YAML pipeline"),
    "simulate": ("simulate", "simulate a trace set with a simulator backend"),
    "emulate": ("emulate", "replay a trace set on this machine's hardware (torch.distributed) and measure it"),
    "export": ("export", "export a trace set with an exporter backend (e.g. ASTRA-sim)"),
    "generate": ("generate", "generate a trace set with a registered generator (e.g. transformer training)"),
    "transform": ("transform", "apply registered transforms (what-if) to a trace set and write it"),
    "synth": ("synth", "learn a model from trace sets (fit), generate new sets (sample), show a model"),
    "sweep": ("sweep", "run every point of a pipeline's sweep: section, one results table"),
    "report": ("report", "per-rank breakdown, top operators, collectives, stragglers, cross-rank critical path"),
    "diff": ("diff", "compare two trace sets or results: the report's numbers side by side"),
    "graph": ("graph", "draw a rank's dependency graph or a node's neighbourhood (DOT, SVG, GraphML)"),
    "compare": ("compare", "fidelity report of trace set B against A (distributions, graph, simulated step time)"),
}


#: the commands that read no trace
_NO_TRACES = ("plugins", "plugin")


def _format_warning(message, category, filename, lineno, file=None, line=None):
    return f"chakra: warning: {shorten(str(message))}\n"


class Parser(argparse.ArgumentParser):
    """argparse with "did you mean" for a misspelt option or command, and the help's epilog
    printed as written."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        """Print the usage and the error with a suggestion (in place of the list of choices); exit 2."""
        self.print_usage(sys.stderr)
        hint = self._suggestion(message)
        if hint:
            message = message.split(" (choose from ")[0]
        self.exit(2, f"{self.prog}: error: {message}{hint}\n")

    def _suggestion(self, message: str) -> str:
        from chakra_core.base._options import suggest

        unknown = re.match(r"unrecognized arguments: (.*)", message)
        if unknown:
            flags = [a for a in unknown.group(1).split() if a.startswith("-")]
            known = [o for action in self._actions for o in action.option_strings]
            return "".join(suggest(flag.split("=")[0], known) for flag in flags[:1])
        choice = re.search(r"invalid choice: '([^']*)'", message)
        if choice:
            choices = [c for action in self._actions for c in (action.choices or ())]
            return suggest(choice.group(1), choices)
        return ""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per command (arguments added lazily)."""
    p = Parser(prog="chakra", description="Chakra execution-trace tools.",
               epilog="examples (from the repository root):\n"
                      "  chakra convert plugins/chakra-pytorch/tests/data/ddp -o out/ddp/\n"
                      "  chakra simulate out/ddp/ --system examples/system/any_size.yaml\n"
                      "  chakra COMMAND --help     more examples, per command")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("--strict", action="store_true", help="fail when any plugin fails to load")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars on stderr")
    p.add_argument("-v", "--verbose", action="store_true", help="print long lists (files, ranks) in full")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_mod, helptext) in COMMANDS.items():
        sub.add_parser(name, help=helptext, add_help=False)
    return p


def command() -> int:
    """The ``chakra`` console script and ``python -m chakra_core.cli.main``: :func:`main` on
    ``sys.argv`` in a process of the command's own, whose settings it makes (:mod:`._process`)."""
    status = main(own_process=True)
    leave()
    return status


def main(argv: list[str] | None = None, *, own_process: bool = False) -> int:
    """Run the CLI; return the exit status: 0 done (``validate``: no error found), 2 bad input or
    usage (``validate``: an error found), 1 an internal error, a bug (``sweep``: a run failed),
    130 interrupted, 143 terminated.
    ``own_process``: the process is the command's own (:func:`command`), so its settings are made
    before the command is imported; a caller's process (a test, a notebook) is left as it is."""
    argv = list(sys.argv[1:] if argv is None else argv)
    warnings.formatwarning = _format_warning  # type: ignore[assignment]
    top = build_parser()
    # split global flags from the command's own arguments
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 1
    globals_, rest = argv[:i], argv[i:]
    args = top.parse_args(globals_ + rest[:1])
    if args.version:
        from chakra_core.base._version import __version__

        print(f"chakra {__version__}")
        return 0
    if not args.command:
        top.print_help()
        return 0
    modname, helptext = COMMANDS[args.command]
    if own_process:  # before the command imports numpy or reads a trace
        settle(heap=args.command not in _NO_TRACES)
    mod = importlib.import_module(f"chakra_core.cli.{modname}")
    from chakra_core.cli._examples import epilog

    parser = Parser(prog=f"chakra {args.command}", description=helptext, epilog=epilog(args.command))
    mod.add_arguments(parser)
    cargs = parser.parse_args(rest[1:])
    cargs.debug = args.debug
    cargs.strict = args.strict
    cargs.verbose = args.verbose
    from chakra_core.base._errors import ChakraError
    from chakra_core.base._inputguard import guarding_inputs
    from chakra_core.base._progress import set_progress_enabled
    from chakra_core.cli._preflight import preflight
    from chakra_core.pipeline._provenance import command_line

    set_progress_enabled(not args.quiet)
    try:
        preflight(args.command, cargs)
        with command_line(argv), guarding_inputs():
            return int(mod.run(cargs) or 0)
    except ChakraError as e:
        if args.debug:
            raise
        print(f"chakra {args.command}: error: {shorten(str(e))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout went away (e.g. `| head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:  # an output that cannot be written, a directory in the way, ...
        if args.debug:
            raise
        where = f"{e.filename}: " if e.filename else ""
        print(f"chakra {args.command}: error: {shorten(f'{where}{e.strerror or e}')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # a PluginInterrupt names the plugin that was running
        if terminated():
            print("chakra: terminated by SIGTERM", file=sys.stderr)
            return 128 + 15
        print(f"chakra: interrupted {e}".rstrip(), file=sys.stderr)
        return 130
    except SystemExit as e:  # plugin code (an implementation) called sys.exit
        if args.debug:
            raise
        print(f"chakra {args.command}: internal error: code{_innermost_package(e)} called sys.exit({e.code!r}) "
              f"(a bug: plugins raise errors instead of exiting)", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug (ours or a plugin's): one line, exit 1
        if args.debug:
            raise
        where = _innermost_package(e)
        print(f"chakra {args.command}: internal error{where}: {type(e).__name__}: {shorten(str(e))} "
              f"(a bug, not bad input; chakra --debug {args.command} ... shows the traceback)", file=sys.stderr)
        return 1


def _innermost_package(e: BaseException) -> str:
    """`` in <package>``: the top-level package of the deepest non-stdlib frame, when not ours."""
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    tb, name = e.__traceback__, ""
    while tb is not None:
        frame = tb.tb_frame
        if not frame.f_code.co_filename.startswith(stdlib):
            name = frame.f_globals.get("__name__", "") or name
        tb = tb.tb_next
    top = name.split(".")[0]
    return f" in {top}" if top and top not in ("chakra_core", "__main__") else ""


if __name__ == "__main__":
    raise SystemExit(command())
