"""``csv``: one row per node with its rank, id, type, duration and size."""

import csv

from chakra_core import Backend, NodeType, Option, Result, atomic_output, get_int


class CsvExporter(Backend):
    """Write ``<output>/nodes.csv``."""

    kind = "exporter"
    options = {"filename": Option("str", "nodes.csv", "name of the CSV file")}

    def run(self, traces, options, output):
        """Write the CSV and return how many rows it has."""
        path = output / options["filename"]
        rows = 0
        with atomic_output(path) as tmp, open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["rank", "id", "name", "type", "duration_us", "comm_size_bytes"])
            for rank_trace in traces:
                for n in rank_trace.nodes():
                    w.writerow([rank_trace.rank, n.id, n.name, NodeType(n.type).name,
                                n.duration_micros, get_int(n, "comm_size", "")])
                    rows += 1
        return Result(self.name, self.kind, {"rows": rows}, files=[str(path)])
