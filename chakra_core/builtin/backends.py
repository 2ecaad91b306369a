"""Built-in exporters: write a set as ``.et`` files or as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chakra_core.base._errors import ConfigError
from chakra_core.base._options import Option
from chakra_core.hookspecs import hookimpl
from chakra_core.host._api import Backend, Result
from chakra_core.io._publish import inside_output, output_directory
from chakra_core.trace._traceset import TraceSet

__all__ = ["EtExporter", "JsonExporter"]


def _place(backend: str, output: Path | None, options: Mapping[str, Any]) -> tuple[Path, Path]:
    """``output`` and the ``prefix`` option as a path inside it (an exporter needs an output directory)."""
    if output is None:
        raise ConfigError(f"backend '{backend}' needs an output directory")
    return output, inside_output(output, options["prefix"], "prefix")


class EtExporter(Backend):
    """Write the set as ``<output>/<prefix>.{rank}.et`` (``prefix`` may name a subdirectory, never
    a place outside ``output``; the directory is replaced whole)."""

    kind = "exporter"
    description = "write the trace set as Chakra .et files"
    options = {
        "prefix": Option("str", "trace", "file-name prefix"),
        "compress": Option("bool", False, "gzip each file (.et.gz)"),
    }

    def run(self, traces: TraceSet, options: Mapping[str, Any], output: Path | None) -> Result:
        """Write every rank; the result lists the files and node counts."""
        output, prefix = _place("et", output, options)
        with output_directory(output) as stage:
            written = traces.write(stage / prefix.relative_to(output), compress=options["compress"])
        files = [str(prefix.parent / p.name) for p in written]
        return Result("et", self.kind, {"ranks": len(files)}, files=files)


class JsonExporter(Backend):
    """Write the set as ``<output>/<prefix>.{rank}.json`` (or ``.jsonl``), like :class:`EtExporter`."""

    kind = "exporter"
    description = "write the trace set in the JSON form"
    options = {
        "prefix": Option("str", "trace", "file-name prefix"),
        "lines": Option("bool", False, "JSON Lines (.jsonl) instead of JSON"),
    }

    def run(self, traces: TraceSet, options: Mapping[str, Any], output: Path | None) -> Result:
        """Write every rank as JSON."""
        from chakra_core.trace._jsonset import write_set_json  # protobuf's json_format: only for JSON

        output, prefix = _place("json", output, options)
        prefix = prefix.relative_to(output)
        ext = ".jsonl" if options["lines"] else ".json"
        names = [f"{prefix}.{rank}{ext}" for rank in traces.ranks]
        with output_directory(output) as stage:
            nodes = write_set_json(traces, stage, names, options["lines"])
        files = [str(Path(output) / name) for name in names]
        return Result("json", self.kind, {"ranks": len(files), "nodes": nodes}, files=files)


@hookimpl
def chakra_register_backends(register):
    """Register the ``et`` and ``json`` exporters."""
    register("et", EtExporter, description=EtExporter.description)
    register("json", JsonExporter, description=JsonExporter.description)
