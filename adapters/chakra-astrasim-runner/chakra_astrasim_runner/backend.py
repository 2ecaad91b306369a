"""The ``astrasim-run`` backend: export with chakra-astrasim, run ASTRA-sim, read its results."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chakra_astrasim import AstraSimExporter, export_astrasim
from chakra_core import Backend, ConfigError, Option, Result, TraceSet, output_directory

from .runner import ENV_VAR, check_binary_mode, find_binary, run_directory

__all__ = ["AstraSimRunner"]


class AstraSimRunner(Backend):
    """A simulator backend whose engine is the user's ASTRA-sim binary.

    Takes every option of the ``astrasim`` exporter plus ``binary``, ``congestion`` and
    ``timeout_s``.  Its Result has the simpy backend's shape: ``ranks`` lists
    ``{"rank", "finish_ns", "exposed_comm_ns", "wall_ns", "compute_ns", "comm_ns", ...}`` for the
    trace's ranks (all in ns; one ASTRA-sim cycle is 1 ns).
    """

    kind = "simulator"
    description = "export for ASTRA-sim, run the user's binary, read per-rank results (ns)"
    options = {
        **AstraSimExporter.options,
        "binary": Option("str", None, f"ASTRA-sim analytical binary (default: ${ENV_VAR}, else the PATH)"),
        "congestion": Option("str", "unaware", "analytical backend: unaware, or aware (1-D networks)",
                             choices=("unaware", "aware")),
        "timeout_s": Option("float", None, "give up after this many seconds (none: no limit)", unit="s",
                            minimum=0.001),
        "timeline": Option("path", None, "accepted for 'chakra simulate'; ASTRA-sim writes no timeline"),
    }

    def run(self, traces: TraceSet, options: Mapping[str, Any], output: Path | None) -> Result:
        """Export under ``output`` (a temporary directory when None), run, parse."""
        binary = find_binary(options.get("binary"), options.get("congestion") or "unaware")
        export_opts = {k: v for k, v in options.items() if k in AstraSimExporter.options}
        if binary is None:
            raise ConfigError(f"no ASTRA-sim binary found: set {ENV_VAR} or -O binary=PATH to an ASTRA-sim "
                              "analytical binary, or write a directory to run later with "
                              "'chakra export --to astrasim -o DIR' (it has a run.sh)")
        mode = check_binary_mode(binary, options.get("congestion") or "unaware")
        options = {**options, "binary_mode": mode}
        if output is None:
            with tempfile.TemporaryDirectory(prefix="chakra-astrasim-") as tmp:
                return self._run(traces, options, export_opts, Path(tmp), binary, keep=False)
        return self._run(traces, options, export_opts, Path(output), binary, keep=True)

    def _run(self, traces, options, export_opts, out: Path, binary: str, keep: bool) -> Result:
        with output_directory(out) as stage:  # the export, ASTRA-sim's run and its log, published together
            exported = export_astrasim(traces, out, export_opts)
            results, text = run_directory(stage, binary, options.get("congestion") or "unaware",
                                          options.get("timeout_s"), where=str(out) if keep else binary)
            (stage / "astrasim.log").write_text(text)
        files = [*exported.files, str(out / "astrasim.log")] if keep else []
        present = set(traces.ranks)
        ranks = [r for r in results if r["rank"] in present]
        finish = max((r["finish_ns"] for r in ranks), default=0)
        summary = {
            "time_unit": "ns",
            "finish_ns": finish,
            "max_exposed_comm_ns": max((r.get("exposed_comm_ns", 0) for r in ranks), default=0),
            "units": "ns (one ASTRA-sim cycle = 1 ns)",
            "binary": binary,
            "congestion": options.get("congestion") or "unaware",
            "binary_mode": options["binary_mode"],
            "export": exported.summary["report"],
        }
        if keep:
            summary["directory"] = str(out)
        notes = [n for n in exported.notes if not n.startswith("run it:")]
        if options["binary_mode"] is None:
            notes.append(f"could not tell whether {binary} is the congestion-aware or -unaware binary "
                         "(neither its name nor its contents say): ran it as asked")
        if options.get("timeline"):
            notes.append("no timeline written: ASTRA-sim's analytical backends do not produce one")
        if len(results) > len(ranks):
            notes.append(f"{len(results) - len(ranks)} idle rank(s) that pad the network are not listed")
        return Result("astrasim-run", "simulator", summary, ranks=ranks, files=files, notes=notes)
