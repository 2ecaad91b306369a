"""The simpy backend side by side with ASTRA-sim's analytical binary, when one is found.

Cases: every text workload of examples/text/ on examples/system/system.yaml (8 NPUs, replay);
the ResNet-50-like one and the GPT-3-like one (model-parallel groups of 8 consecutive ranks) on
that system's Ring made 16 and 64 NPUs (``ring_N.yaml``; both congestion modes, as the 8-NPU
cases: ASTRA-sim's congestion-aware backend builds one dimension);
the ResNet-50-like and GPT-3-like ones on examples/system/system_2d.yaml (1,024 NPUs, roofline);
and a generated 256-rank transformer (``chakra generate transformer -O tp=8 -O pp=4 -O dp=8``)
on system_2d.yaml's two dimensions sized to it (8 NPUs a node, ``npus_count: auto`` nodes). Each
set is written as .et files first, and each case reads a copy of its system file of its own (so
that no case reuses an earlier case's parse or plans). One untimed run on another set comes first, with numba
loaded (this process's one-time loads: numba, SimPy, the plugins; once numba is loaded a small set
runs the core's compiled loops as a large one does; ``--python-loops`` leaves it unloaded, as in
a fresh ``chakra simulate`` of a small set, which adds 0.3-0.45 s of start-up, docs/benchmarks.md;
the binaries' exporter loads numba, so with ``--python-loops`` every simpy case runs before the
first binary). One untimed ``astrasim-run`` on the warm-up set likewise comes before the first
timed binary, so that neither side's times hold this process's first loads.
For each case and congestion mode it prints the simpy backend's wall and CPU seconds and
simulated events per second, and, when an ASTRA-sim binary of that mode is found
(``CHAKRA_ASTRASIM_BIN``, which names one binary, or the usual names on the PATH: put both there
to time both modes), the binary's wall time
(``astrasim-run``: export + run + parse) and how many ranks' cycles differ, with the largest
difference; when the binary fails, its time until then and its error (the GPT-3-like sets on
Rings of 16 NPUs or more: it aborts in glibc's heap checks as it exits, after printing every
rank). Without a binary it says so and times simpy alone. Each simpy run reads a copy of the set
and a system file of its own, so that no run reuses what an earlier one loaded or planned. With
``--repeat N`` each side runs every case N times and the medians of its wall and CPU times are
printed (the cases of a few ms move by 20-30% from one run to the next).

    .venv/bin/python benches/bench_side_by_side.py [--skip-1024] [--aware] [--python-loops] [--binary-timeout S]
                                                   [--repeat N]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import shutil
import tempfile
import time
from pathlib import Path
from statistics import median

from chakra_core import generate, load_traces, open_traceset

ROOT = Path(__file__).resolve().parents[1]
CASES = [("resnet50_like.txt", {"npus": 8}, "system.yaml"), ("dlrm_like.txt", {"npus": 8}, "system.yaml"),
         ("gpt3_like.txt", {"npus": 8, "mp_group": 8}, "system.yaml"),
         ("resnet50_like.txt", {"npus": 16}, "ring_16.yaml"), ("resnet50_like.txt", {"npus": 64}, "ring_64.yaml"),
         ("gpt3_like.txt", {"npus": 16, "mp_group": 8}, "ring_16.yaml"),
         ("gpt3_like.txt", {"npus": 64, "mp_group": 8}, "ring_64.yaml"),
         ("transformer", {"tp": 8, "pp": 4, "dp": 8}, "auto_2d.yaml"),
         ("resnet50_like.txt", {"npus": 1024}, "system_2d.yaml"),
         ("gpt3_like.txt", {"npus": 1024, "mp_group": 8}, "system_2d.yaml")]


def _binary(mode: str) -> str | None:
    from chakra_astrasim_runner import binary_mode, find_binary

    try:
        found = find_binary(None, mode)
    except Exception:  # a CHAKRA_ASTRASIM_BIN naming no file: reported as not found
        return None
    if found is None or binary_mode(found) not in (None, mode):
        return None
    return found


def _system(name: str, where: Path) -> str:
    """The path of a copy, in ``where``, of an example system, or of system_2d.yaml with its nodes
    sized to the set (``auto_2d.yaml``), ending in a comment naming ``where``: each case reads a
    system file and text of its own, so that no case reuses what an earlier one parsed or planned
    on the same system (a fresh command parses and plans anew)."""
    if name.startswith("ring_"):  # system.yaml's Ring of 8 made a Ring of N (ring_N.yaml)
        text = (ROOT / "examples" / "system" / "system.yaml").read_text().replace(
            "npus_count: 8", f"npus_count: {name[5:-5]}")
    elif name != "auto_2d.yaml":
        text = (ROOT / "examples" / "system" / name).read_text()
    else:
        text = (ROOT / "examples" / "system" / "system_2d.yaml").read_text().replace("npus_count: 128",
                                                                                      "npus_count: auto")
    where.mkdir(parents=True, exist_ok=True)
    (where / name).write_text(f"{text}\n# {where}\n")
    return str(where / name)


def _copy(case: Path, name: str) -> str:
    """A copy of the case's set (``case/set``) in ``case/name``: a set at a path of its own, whose
    programs no earlier run in this process kept (the simpy backend keeps a small file's program
    by its path and content)."""
    shutil.copytree(case / "set", case / name)
    return str(case / name)


def _run(backend_name: str, traces, options: dict):
    if backend_name == "simpy":
        from chakra_simpy import SimpyBackend as cls
    else:
        from chakra_astrasim_runner import AstraSimRunner as cls
    backend = cls()
    backend.name = backend_name
    t0, c0 = time.perf_counter(), time.process_time()
    res = backend.run(traces, backend.check_options(options), None)
    return res, time.perf_counter() - t0, time.process_time() - c0


def _warm_up(where: Path, compiled: bool) -> None:
    """One untimed run on a set of its own, so that no case pays this process's one-time loads
    (SimPy, the plugins; with ``compiled``, numba, whose loops a small set then runs as a set of
    any size does once numba is loaded) while the binary's times include its start. The set
    (DLRM-like x 4 on any_size.yaml) has no trace bytes, system file or path in common with a
    case, so no case reuses what the warm-up read, keyed or planned."""
    if compiled and importlib.util.find_spec("numba") is not None:
        importlib.import_module("numba")
    load_traces(str(ROOT / "examples" / "text" / "dlrm_like.txt"), "text", {"npus": 4}).write(f"{where}/trace")
    _run("simpy", open_traceset(str(where)), {"system": _system("any_size.yaml", where)})


def main() -> None:
    """Run every case in each asked congestion mode."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-1024", action="store_true", help="leave out the 1,024-NPU cases")
    ap.add_argument("--aware", action="store_true", help="also the congestion-aware mode (1-D networks)")
    ap.add_argument("--python-loops", action="store_true",
                    help="leave numba unloaded: small sets run the core's loops as Python (as a fresh process does)")
    ap.add_argument("--binary-timeout", type=float, default=None, metavar="S",
                    help="give the binary up after S seconds on a case (its line says so)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run each side of every case N times and print the medians")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be 1 or more")
    modes = ["unaware"] + (["aware"] if args.aware else [])
    binaries = {m: _binary(m) for m in modes}
    for m, b in binaries.items():
        print(f"congestion-{m} ASTRA-sim binary: {b or 'none found (CHAKRA_ASTRASIM_BIN or PATH): simpy only'}",
              flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm"
        _warm_up(warm, not args.python_loops)
        if not args.python_loops:
            _warm_up_binaries(warm, binaries)
        held = []
        for k, (name, opts, system) in enumerate(CASES):
            if args.skip_1024 and opts.get("npus", 0) >= 1024:
                continue
            if name.endswith(".txt"):
                load_traces(str(ROOT / "examples" / "text" / name), "text", opts).write(f"{tmp}/{k}/set/trace")
            else:
                generate(name, opts, output=f"{tmp}/{k}/set/trace")
            for mode in modes:
                if mode == "aware" and system != "system.yaml" and not system.startswith("ring_"):
                    continue
                runs = [_run("simpy", open_traceset(_copy(Path(tmp) / str(k), f"{mode}-{i}")),
                             {"system": _system(system, Path(tmp) / f"system{k}-{mode}-{i}"), "congestion": mode})
                        for i in range(args.repeat)]
                res, wall, cpu = runs[0][0], median(r[1] for r in runs), median(r[2] for r in runs)
                s = res.summary
                line = (f"{name} x {s['ranks']} on {system}, {mode}: simpy wall {wall:.3f} s (CPU {cpu:.3f} s)"
                        f"{f' (medians of {args.repeat})' if args.repeat > 1 else ''}, "
                        f"{s['events']} events, {s['events_per_s']} events/s, classes {s['symmetry']['classes']}")
                options = {"system": _system(system, Path(tmp) / f"system{k}-{mode}"), "congestion": mode,
                           "binary": binaries[mode], "timeout_s": args.binary_timeout}
                held.append((line, res, wall, open_traceset(f"{tmp}/{k}/set"), options, args.repeat))
                if not args.python_loops:
                    _report(*held.pop())
        if args.python_loops:  # the binaries' exporter loads numba: it runs after every simpy case
            _warm_up_binaries(warm, binaries)
            for run in held:
                _report(*run)


def _warm_up_binaries(where: Path, binaries: dict[str, str | None]) -> None:
    """One untimed ``astrasim-run`` per binary on the warm-up set, so that no case's binary time
    holds this process's first loads of the runner and its exporter (the binary itself starts
    anew on every case)."""
    from chakra_core import ChakraError

    for mode, binary in binaries.items():
        if binary:
            with contextlib.suppress(ChakraError):  # a failing binary is reported on each case
                _run("astrasim-run", open_traceset(str(where)),
                     {"system": str(where / "any_size.yaml"), "congestion": mode, "binary": binary})


def _report(line: str, res, wall: float, traces, options: dict, repeat: int) -> None:
    """Print a case's line, with the binary's time beside it when there is a binary."""
    if options["binary"]:
        line += _beside(res, wall, traces, options, repeat)
    print(line, flush=True)


def _beside(res, wall: float, traces, options: dict, repeat: int) -> str:
    """The binary's wall time on the same set (the median of ``repeat`` runs), its ratio to ours and
    how many ranks differ (when it fails: its time until then and its error)."""
    from chakra_core import ChakraError

    walls = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            astra, awall, _ = _run("astrasim-run", traces, options)
        except ChakraError as e:
            failed = time.perf_counter() - t0
            return f"; ASTRA-sim failed after {failed:.3f} s ({failed / wall:.1f}x simpy), ranks not compared: {e}"
        walls.append(awall)
        diff = [abs(a["finish_ns"] - b["finish_ns"]) for a, b in zip(res.ranks, astra.ranks)]
    awall = median(walls)
    return (f"; ASTRA-sim wall {awall:.3f} s ({awall / wall:.1f}x simpy), ranks differing "
            f"{sum(1 for d in diff if d)}/{len(diff)}, largest difference {max(diff, default=0)} ns")


if __name__ == "__main__":
    main()
