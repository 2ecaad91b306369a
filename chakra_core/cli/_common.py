"""Helpers shared by the CLI commands."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chakra_core.host._plugins import PluginHost

__all__ = ["add_plugin_options", "add_input_options", "add_output_options", "input_kwargs", "host_of",
           "print_json", "print_notes", "print_paths", "print_traces", "print_written", "shown_ranks", "shorten"]

#: longest list of paths printed in full without --verbose
SHOWN_PATHS = 10
#: longest error message printed in full (characters); a message echoing a huge input is cut
MESSAGE_CHARS = 1000  # room for an error that names two absolute paths


def add_plugin_options(parser) -> None:
    """Add ``-O key=value`` (repeatable) to ``parser``."""
    parser.add_argument("-O", dest="opts", action="append", default=[], metavar="KEY=VALUE",
                        help="plugin option (repeatable)")


def add_input_options(parser) -> None:
    """Add ``--format NAME`` and ``-I key=value`` (input-format options, repeatable)."""
    parser.add_argument("--format", help="input format (auto-detected when omitted)")
    parser.add_argument("-I", dest="input_opts", action="append", default=[], metavar="KEY=VALUE",
                        help="input-format option, e.g. -I npus=64 for a text workload (repeatable)")


def add_output_options(parser, gzip: bool = True) -> None:
    """Add the written set's ``-o OUT`` (required), ``--gzip`` (unless ``gzip`` is false) and ``--json``."""
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="output directory (files trace.{rank}.et) or prefix (OUT.{rank}.et)")
    if gzip:
        parser.add_argument("--gzip", action="store_true", help="write .et.gz files")
    parser.add_argument("--json", action="store_true", help="print the written files as JSON")


def host_of(args) -> PluginHost:
    """The plugin host, strict when ``--strict`` was given."""
    from chakra_core.host._plugins import get_host

    return get_host(strict=args.strict or None)


def input_kwargs(args) -> dict[str, Any]:
    """``format``, ``input_options`` and ``host`` keyword arguments of the Python API from ``args``."""
    from chakra_core.base._options import parse_kv

    return {"format": args.format, "input_options": parse_kv(getattr(args, "input_opts", None)),
            "host": host_of(args)}


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON to stdout; NaN and infinities, which JSON has not, as null
    (as the files the commands write)."""
    def finite(v: Any) -> Any:
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        return [finite(x) for x in v] if isinstance(v, (list, tuple)) else v

    json.dump(finite(obj), sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def print_paths(paths: Sequence[str], verbose: bool) -> None:
    """Print ``paths`` one per line; a long list is summarised unless ``verbose``."""
    if verbose or len(paths) <= SHOWN_PATHS:
        for p in paths:
            print(p)
        return
    for p in paths[:3]:
        print(p)
    print(f"... {len(paths) - 4} more (all of them with chakra --verbose, or --json)")
    print(paths[-1])


def print_written(result: Any, args: Any) -> None:
    """Print the files a writing command made: as JSON with ``--json``, else one per line."""
    if args.json:
        print_json({"ranks": len(result.files), "files": result.files, "provenance": result.provenance})
    else:
        print_paths(result.files, args.verbose)


def print_notes(result: Any) -> None:
    """A writing command's notes (``result.notes``) on standard error, its files staying alone
    on standard output."""
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)


def print_traces(traces: Any, args: Any, provenance: Mapping[str, Any]) -> None:
    """Print the files of a written trace set: as JSON with ``--json`` (with the ``provenance``
    of what made it), else one per line."""
    files = [rt.path or "" for rt in traces]
    if args.json:
        print_json({"ranks": len(files), "files": files, "provenance": provenance})
    else:
        print_paths(files, args.verbose)


def shown_ranks(ranks: Sequence[Any], most: int, verbose: bool):
    """The rank rows to print: all of them, or past ``most`` (unless ``verbose``) the first and
    last four, with a line saying how many were left out printed between them."""
    long = len(ranks) > most and not verbose
    shown = [*ranks[:4], *ranks[-4:]] if long else list(ranks)
    for i, r in enumerate(shown):
        if long and i == 4:
            print(f"... {len(ranks) - 8} more ranks (all of them with chakra --verbose, or --json)")
        yield r


def shorten(message: str, most: int = MESSAGE_CHARS) -> str:
    """``message`` on one line and at most about ``most`` characters: a longer one keeps its start
    and its end around ``... (N characters left out) ...``."""
    one = " ".join(message.split())
    if len(one) <= most:
        return one
    head, tail = most * 2 // 3, most // 3
    return f"{one[:head]} ... ({len(one) - head - tail} characters left out) ... {one[-tail:]}"
