"""Benchmark of the ``jax`` input format: a generated HLO module of 100,000 instructions.

The module is what a long ``lax.scan`` of transformer-like layers looks like once unrolled and
optimised (the instruction mix and line lengths of the recorded programs, metadata included):
per layer an all-gather of the weight shard, a dot fusion, an elementwise fusion, an all-reduce
and a collective-permute to the next device, over 8 partitions. For each device count the
benchmark parses and lowers the module and writes every device's ET, in a fresh process per
device count; it prints the wall time of each phase, instructions per minute (wall and CPU
time) and the process's peak RSS. A second part prints, for the recorded
programs of plugins/chakra-jax/tests/data, the measured step time against the simulated one.

    .venv/bin/python benches/bench_jax.py [--instructions 100000] [--devices 8 64] [--recorded]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PER_LAYER = 5
DATA = Path(__file__).resolve().parents[1] / "plugins" / "chakra-jax" / "tests" / "data"

HEADER = """HloModule jit_bench, is_scheduled=true, num_partitions={devices}

%add (x: f32[], y: f32[]) -> f32[] {{
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}}

%fused_dot (p0: f32[64,256], p1: f32[256,256]) -> f32[64,256] {{
  %p0 = f32[64,256]{{1,0}} parameter(0)
  %p1 = f32[256,256]{{1,0}} parameter(1)
  ROOT %d = f32[64,256]{{1,0}} dot(%p0, %p1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}

%fused_tanh (q0: f32[64,256]) -> f32[64,256] {{
  %q0 = f32[64,256]{{1,0}} parameter(0)
  ROOT %t = f32[64,256]{{1,0}} tanh(%q0)
}}

ENTRY %main (h0: f32[64,256], w: f32[256,32]) -> f32[64,256] {{
  %h0 = f32[64,256]{{1,0}} parameter(0), sharding={{devices=[{devices},1]<=[{devices}]}}, metadata={{op_name="x"}}
  %w = f32[256,32]{{1,0}} parameter(1), sharding={{devices=[1,{devices}]<=[{devices}]}}, metadata={{op_name="w"}}
"""

LAYER = (
    '  %all-gather.{i} = f32[256,256]{{1,0}} all-gather(%w), channel_id={c0}, '
    'replica_groups=[1,{devices}]<=[{devices}], dimensions={{1}}, use_global_device_ids=true, '
    'metadata={{op_name="jit(step)/while/body/all_gather" stack_frame_id=7}}\n'
    '  %dot_fusion.{i} = f32[64,256]{{1,0}} fusion(%{prev}, %all-gather.{i}), kind=kOutput, calls=%fused_dot, '
    'metadata={{op_name="jit(step)/while/body/closed_call/dot_general" stack_frame_id=8}}\n'
    '  %tanh_fusion.{i} = f32[64,256]{{1,0}} fusion(%dot_fusion.{i}), kind=kLoop, calls=%fused_tanh, '
    'metadata={{op_name="jit(step)/while/body/closed_call/tanh" stack_frame_id=9}}\n'
    '  %all-reduce.{i} = f32[64,256]{{1,0}} all-reduce(%tanh_fusion.{i}), channel_id={c1}, '
    'replica_groups={groups}, use_global_device_ids=true, to_apply=%add, '
    'metadata={{op_name="jit(step)/while/body/psum" stack_frame_id=10}}\n'
    '  %collective-permute.{i} = f32[64,256]{{1,0}} collective-permute(%all-reduce.{i}), channel_id={c2}, '
    'source_target_pairs={pairs}, metadata={{op_name="jit(step)/while/body/ppermute" stack_frame_id=11}}\n'
)


def write_module(path: Path, instructions: int, devices: int) -> int:
    """Write the generated module; return the number of instructions in its entry computation."""
    layers = max(1, (instructions - 2) // PER_LAYER)
    half = devices // 2
    groups = "{" + ",".join("{" + ",".join(str(d) for d in range(g * half, (g + 1) * half)) + "}"
                            for g in range(2)) + "}"
    pairs = "{" + ",".join(f"{{{d},{(d + 1) % devices}}}" for d in range(devices)) + "}"
    with open(path, "w") as f:
        f.write(HEADER.format(devices=devices))
        prev = "h0"
        for i in range(layers):
            f.write(LAYER.format(i=i, prev=prev, c0=3 * i + 1, c1=3 * i + 2, c2=3 * i + 3, devices=devices,
                                 groups=groups, pairs=pairs))
            prev = f"collective-permute.{i}"
        f.write(f"  ROOT %out = f32[64,256]{{1,0}} copy(%{prev})\n}}\n")
    return 2 + layers * PER_LAYER + 1


def convert(path: Path, out: Path) -> tuple[float, float, float, float, int]:
    """Parse, lower and write; return (parse s, lower s, write s, CPU s of parse + lower, nodes of
    device 0). The CPU time is what the process itself spent (on a shared machine the wall
    time also counts waiting for a core)."""
    from chakra_jax.format import convert_module
    from chakra_jax.hlo_text import parse_hlo_text

    c0 = time.process_time()
    t0 = time.perf_counter()
    module = parse_hlo_text(path)
    t1 = time.perf_counter()
    ts = convert_module(module)
    t2 = time.perf_counter()
    c1 = time.process_time()
    ts.write(out)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, c1 - c0, sum(1 for _ in ts[0].raw())


def bench_one(instructions: int, devices: int) -> None:
    """One device count, in this process: print its row (peak RSS of this process)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.hlo.txt"
        count = write_module(path, instructions, devices)
        parse, lower, write, cpu, nodes = convert(path, Path(tmp) / "a")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{devices:>7} {count:>12} {parse:>8.2f} {lower:>8.2f} {write:>8.2f} "
          f"{count / (parse + lower) * 60:>16,.0f} {count / cpu * 60:>15,.0f} {nodes:>12} {rss:>12.0f}", flush=True)


def bench_generated(instructions: int, device_counts: list[int]) -> None:
    """The generated module for each device count, each in a fresh process (so that its peak RSS
    is its own)."""
    print(f"{'devices':>7} {'instructions':>12} {'parse s':>8} {'lower s':>8} {'write s':>8} "
          f"{'instr/min (wall)':>16} {'instr/min (CPU)':>15} {'nodes/device':>12} {'peak RSS MB':>12}",
          flush=True)
    for devices in device_counts:
        subprocess.run([sys.executable, __file__, "--one", str(devices), "--instructions", str(instructions)],
                       check=True)


def bench_recorded() -> None:
    """Measured step time (profile) against the SimPy simulation of each recorded program: the
    measured step, the measured compute and communication time of the busiest device (sums of
    its nodes' durations), and the simulated step with its compute and exposed communication."""
    from chakra_core import NodeType, load_traces, simulate

    print(f"{'program':<10} {'devices':>7} {'measured step us':>16} {'measured compute us':>19} "
          f"{'measured comm us':>16} {'simulated us':>12} {'sim. exposed comm us':>20}")
    for name in ("mlp", "shard_map", "scan", "mesh8"):
        ts = load_traces([str(DATA / name / "program.hlo.txt"), str(DATA / name / "profile.xplane.pb")],
                         format="jax")
        step = next(a.double_val for a in ts[0].metadata().attr if a.name == "profile_step_us")
        sums = []
        for r in ts.ranks:
            compute = comm = 0
            for n in ts[r].nodes():
                if n.type == NodeType.COMP_NODE:
                    compute += n.duration_micros
                else:
                    comm += n.duration_micros
            sums.append((compute + comm, compute, comm))
        _, compute, comm = max(sums)
        with tempfile.TemporaryDirectory() as tmp:
            ts.write(Path(tmp) / "et")
            summary = simulate(str(Path(tmp) / "et"), "simpy").summary
        print(f"{name:<10} {len(ts):>7} {step:>16.0f} {compute:>19} {comm:>16} {summary['finish_ns'] / 1000:>12.1f} "
              f"{summary['max_exposed_comm_ns'] / 1000:>20.1f}")


def main() -> None:
    """Run the benchmark and print its tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=100_000)
    ap.add_argument("--devices", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--recorded", action="store_true", help="also compare measured and simulated step times")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        bench_one(args.instructions, args.one)
        return
    bench_generated(args.instructions, args.devices)
    if args.recorded:
        bench_recorded()


if __name__ == "__main__":
    main()
