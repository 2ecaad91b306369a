"""Helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chakra_core._traceset import TraceSet

__all__ = ["add_plugin_options", "add_input_options", "open_input", "print_json", "progress"]


def add_plugin_options(parser) -> None:
    """Add ``-O key=value`` (repeatable) to ``parser``."""
    parser.add_argument("-O", dest="opts", action="append", default=[], metavar="KEY=VALUE",
                        help="plugin option (repeatable)")


def add_input_options(parser) -> None:
    """Add ``--format NAME`` and ``-I key=value`` (input-format options, repeatable)."""
    parser.add_argument("--format", help="input format (auto-detected when omitted)")
    parser.add_argument("-I", dest="input_opts", action="append", default=[], metavar="KEY=VALUE",
                        help="input-format option, e.g. -I npus=64 for a text workload (repeatable)")


def open_input(paths: list[str], args) -> TraceSet:
    """Open a trace set through the registry with ``args.format`` and the ``-I`` options."""
    from chakra_core._options import parse_kv
    from chakra_core._pipeline import load_traces
    from chakra_core._plugins import get_host

    return load_traces(paths, args.format, parse_kv(getattr(args, "input_opts", None)),
                       host=get_host(strict=args.strict or None))


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON to stdout."""
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def progress(what: str):
    """A ``(done, total)`` callback printing ``what done/total`` on stderr, only on a terminal."""
    if not sys.stderr.isatty():
        return None

    def report(done: int, total: int) -> None:
        sys.stderr.write(f"\r\033[K{what} {done}/{total} ranks" + ("\n" if done == total else ""))
        sys.stderr.flush()

    return report
