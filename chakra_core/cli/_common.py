"""Helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["add_plugin_options", "open_input", "print_json", "progress"]


def add_plugin_options(parser) -> None:
    """Add ``-O key=value`` (repeatable) to ``parser``."""
    parser.add_argument("-O", dest="opts", action="append", default=[], metavar="KEY=VALUE",
                        help="plugin option (repeatable)")


def open_input(paths: list[str], fmt: str | None = None, options: dict | None = None, strict: bool = False):
    """Open a trace set through the registry (``et`` for .et sets, else the named/detected format)."""
    from chakra_core.pipeline import load_traces
    from chakra_core.plugins import get_host

    return load_traces(paths, fmt, options, host=get_host(strict=strict or None))


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
