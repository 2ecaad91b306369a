"""Benchmark of the analysis layer: report and timeline of a 1,024-rank simulated run, and the
breakdown and critical path of 10^7 spans.

Cases:

- ``simulated``: 1,024 identical ranks of 200 layers (compute, then a 16 MiB all-reduce) on a
  Ring of 8 x Switch of 128, simulated by simpy keeping its spans (one symmetric class); then
  ``report`` (breakdown, tables, critical path), the HTML page, the Perfetto timeline of every
  rank (the class expanded to 1,024 processes) and the Chrome JSON of the first 8 ranks;
- ``synthetic``: breakdown and critical path of 10^7 spans on 1,024 ranks (benches/bench_timeline.py's
  synthetic spans; that script measures the timeline writer on them).

Prints wall seconds of each step, spans, and output sizes.

    .venv/bin/python benches/bench_report.py [--ranks 1024] [--layers 200] [--spans 10000000] [--skip synthetic]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import chakra_core as chakra


def _t(label: str, t0: float, extra: str = "") -> float:
    now = time.perf_counter()
    print(f"  {label:<44} {now - t0:8.2f} s  {extra}")
    return now


def layered_set(ranks: int, layers: int) -> chakra.TraceSet:
    """``ranks`` identical ranks of ``layers`` x (a 100 us compute node, then a 16 MiB all-reduce
    depending on it), the layers chained: the shape of benches/bench_simpy.py's case (a)."""
    from chakra_core import CommType, GlobalMetadata, MemoryRank, Node, NodeType, set_attr

    def nodes() -> list[Node]:
        out = []
        for k in range(layers):
            comp = Node(id=2 * k + 1, name=f"layer{k}.fwd", type=NodeType.COMP_NODE, duration_micros=100)
            set_attr(comp, "is_cpu_op", False)
            if k:
                comp.data_deps.append(2 * k)
            coll = Node(id=2 * k + 2, name=f"layer{k}.all_reduce", type=NodeType.COMM_COLL_NODE)
            set_attr(coll, "is_cpu_op", False)
            set_attr(coll, "comm_type", int(CommType.ALL_REDUCE))
            set_attr(coll, "comm_size", 16 << 20)
            coll.data_deps.append(2 * k + 1)
            out += [comp, coll]
        return out

    return chakra.TraceSet([MemoryRank(r, GlobalMetadata(), nodes()) for r in range(ranks)])


def simulated(ranks: int, layers: int, tmp: Path) -> None:
    """Simulate a layered set on ``ranks`` NPUs (8 x ranks/8), then report and write timelines."""
    print(f"simulated: {ranks} ranks x {layers} layers (compute + 16 MiB all-reduce), symmetric")
    system = tmp / "system.yaml"
    system.write_text(f"network:\n  - {{topology: Ring, npus_count: 8, bandwidth: 200, latency: 500}}\n"
                      f"  - {{topology: Switch, npus_count: {ranks // 8}, bandwidth: 50, latency: 1000}}\n")
    t0 = time.perf_counter()
    res = chakra.simulate(layered_set(ranks, layers), options={"spans": True}, system=str(system))
    spans = res.spans
    t = _t("simulate (spans kept)", t0, f"{len(spans):,} spans, finish {res.summary['finish_ns']:,} ns, "
           f"{res.summary['symmetry']['classes']} classes")
    rep = chakra.report(spans, what_if=["compute=2"])
    t = _t("report (breakdown, tables, critical path)", t, f"{len(rep.data['ranks'])} rank rows, path "
           f"{rep.data['critical_path']['length']} ops")
    rep.write_html(tmp / "report.html")
    t = _t("report page (HTML, plots)", t, f"{(tmp / 'report.html').stat().st_size / 2**20:.1f} MiB")
    out = tmp / "run.pftrace"
    info = chakra.write_timeline(spans, out, expand=True)
    t = _t("timeline, Perfetto, every rank expanded", t, f"{info['spans']:,} spans, "
           f"{out.stat().st_size / 2**20:.1f} MiB, {info['flows']:,} flows, truncated {info['truncated']}")
    out = tmp / "run.json"
    info = chakra.write_timeline(spans, out, expand=True, ranks="0-7")
    _t("timeline, Chrome JSON, ranks 0-7", t, f"{info['spans']:,} spans, {out.stat().st_size / 2**20:.1f} MiB")


def synthetic(ranks: int, total: int) -> None:
    """Breakdown and critical path of ``total`` synthetic spans."""
    from bench_timeline import synthetic_spans

    print(f"synthetic: {total:,} spans on {ranks} ranks")
    t0 = time.perf_counter()
    spans = synthetic_spans(ranks, total)
    t = _t("build spans", t0, f"{len(spans):,} spans")
    rows = chakra.breakdown(spans)
    t = _t("breakdown", t, f"{len(rows)} rows")
    cp = chakra.critical_path(spans)
    _t("critical path", t, f"{len(cp.span):,} segments, {cp.crossings:,} crossings")


def main() -> None:
    """Run the cases."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=200)
    ap.add_argument("--spans", type=int, default=10_000_000)
    ap.add_argument("--skip", action="append", default=[], choices=("simulated", "synthetic"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "simulated" not in args.skip:
            simulated(args.ranks, args.layers, tmp)
        if "synthetic" not in args.skip:
            synthetic(args.ranks, args.spans)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
