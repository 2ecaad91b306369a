"""Without a profile: compute durations from the device model, on a module in GPU syntax.

``handmade/module_0001.jit_gpu_step.sm_8.0_gpu_after_optimizations.txt`` is hand-written in the
syntax of XLA's GPU backend (see tests/data/README.md). Every figure below is a closed form of
the shapes in that file; durations are the roofline on an A100 (19.5 fp32 TFLOPS, 2039 GB/s):
``ceil(max(FLOPs / peak, bytes / bandwidth))`` in microseconds.
"""

from __future__ import annotations

import math
import shutil
import warnings

import pytest

from chakra_core import CommType, NodeAttrs, compute_stats, get_str, load_traces

GPU = "module_0001.jit_gpu_step.sm_8.0_gpu_after_optimizations.txt"
A100_FP32_FLOPS_PER_US = 19.5e6
A100_BYTES_PER_US = 2039e3


def _load(path, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts = load_traces(str(path), format="jax", options=options)
        nodes = {n.name: n for n in ts[0].nodes()}
    return ts, nodes, [str(w.message) for w in caught]


def _roofline_us(flops, size):
    return math.ceil(max(flops / A100_FP32_FLOPS_PER_US, size / A100_BYTES_PER_US))


def _notes(ts):
    return [a.string_val for a in ts[0].metadata().attr if a.name == "note"]


def test_costs_are_closed_forms_of_the_shapes(jax_data):
    ts, nodes, _ = _load(jax_data / "handmade" / GPU)
    m, k, n = 256, 1024, 512
    gemm = NodeAttrs(nodes["gemm"])
    assert gemm.get("num_ops") == 2 * m * n * k
    assert gemm.get("tensor_size") == 4 * (m * k + k * n + m * n) + 4194304  # + cuBLAS workspace
    conv = NodeAttrs(nodes["conv"])
    assert conv.get("num_ops") == 2 * (8 * 32 * 32 * 32) * (3 * 3 * 16)
    fft = NodeAttrs(nodes["fft"])
    assert fft.get("num_ops") == 64 * 5 * 1024 * 10
    assert NodeAttrs(nodes["act"]).get("num_ops") == m * n


def test_durations_are_the_a100_roofline(jax_data):
    ts, nodes, _ = _load(jax_data / "handmade" / GPU)
    for name in ("gemm", "conv", "fft", "act", "pfft"):
        a = NodeAttrs(nodes[name])
        assert nodes[name].duration_micros == _roofline_us(a.get("num_ops") or 0, a.get("tensor_size")), name
    assert nodes["gemm"].duration_micros == math.ceil(2 * 256 * 512 * 1024 / A100_FP32_FLOPS_PER_US) == 14
    assert _notes(ts)[0] == "device model a100 (CUDA compute capability 8.x in the file name)"
    stats = compute_stats(ts)
    assert stats["per_rank"][0]["compute_us"] == sum(
        nodes[x].duration_micros for x in ("gemm", "conv", "fft", "act", "pfft")) > 0


def test_collectives_of_the_gpu_module(jax_data, comm_nodes):
    ts, nodes, _ = _load(jax_data / "handmade" / GPU)
    assert ts.process_groups == {"1": [0, 1], "2": [2, 3], "3": [0, 1, 2, 3]}
    for rank in ts.ranks:
        got = [(n.name, a.get("comm_type"), a.get("comm_size"), a.get("pg_name")) for n, a in comm_nodes(ts[rank])]
        pair = "1" if rank < 2 else "2"
        assert got == [("all-to-all-start", CommType.ALL_TO_ALL, 64 * 1024 * 8, pair),
                       ("all-reduce-start", CommType.ALL_REDUCE, 256 * 512 * 4, "3")]
        assert all(n.duration_micros == 0 for n, _ in comm_nodes(ts[rank]))


def test_unknown_custom_call_is_one_warning(jax_data):
    _, nodes, caught = _load(jax_data / "handmade" / GPU)
    assert caught == [f"{jax_data / 'handmade' / GPU}: custom-calls of unknown targets kept as compute nodes "
                      "without FLOPs ('pfft3d' x1): communication inside them is not in the trace"]
    assert "communication inside it is not in the trace" in get_str(nodes["pfft"], "note")
    assert NodeAttrs(nodes["pfft"]).get("num_ops") == 0


def test_device_option_and_stated_default(jax_data, tmp_path):
    renamed = tmp_path / "step.hlo.txt"
    shutil.copy(jax_data / "handmade" / GPU, renamed)
    ts, nodes, _ = _load(renamed)
    assert _notes(ts)[0].startswith("device model h100 (default: the module names no target")
    assert nodes["gemm"].duration_micros == math.ceil(2 * 256 * 512 * 1024 / 66.9e6)
    ts, nodes, _ = _load(renamed, device="v100")
    assert _notes(ts)[0] == "device model v100 (option device)"
    assert nodes["gemm"].duration_micros == math.ceil(2 * 256 * 512 * 1024 / 15.7e6)


def test_module_without_device_count_is_one_device(tmp_path, chakra_cli):
    path = tmp_path / "graph.hlo.txt"
    path.write_text("HloModule SyncTensorsGraph.7\n\n%add (a: f32[], b: f32[]) -> f32[] {\n"
                    "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\n"
                    "ENTRY %main (p: f32[1024]) -> f32[1024] {\n  %p = f32[1024]{0} parameter(0)\n"
                    "  ROOT %ar = f32[1024]{0} all-reduce(%p), replica_groups={}, to_apply=%add\n}\n")
    ts, nodes, caught = _load(path)
    assert ts.ranks == [0] and list(nodes) == []
    assert "states no device count" in _notes(ts)[0] and any("one device" in m for m in caught)
    with pytest.warns(UserWarning, match="one device, as XLA reads it"):
        status, stdout, stderr = chakra_cli("convert", path, "--format", "jax", "-o", f"{tmp_path}/out/", "--json")
    assert status == 0 and '"ranks": 1' in stdout
    assert (tmp_path / "out" / "trace.0.et").is_file()


@pytest.mark.parametrize("device", ["nope"])
def test_unknown_device_is_an_error(jax_data, device, chakra_cli):
    status, _, stderr = chakra_cli("convert", jax_data / "handmade" / GPU, "--format", "jax", "-O",
                                   f"device={device}", "-o", "/nonexistent/out/")
    assert status == 2 and "unknown device 'nope'" in stderr and stderr.strip().count("\n") == 0


@pytest.mark.parametrize("name, device, why", [
    ("module_0002.jit_f.sm_9.0_gpu_after_optimizations.txt", "h100", "CUDA compute capability 9.x in the file name"),
    ("module_0002.jit_f.sm_70_gpu_after_optimizations.txt", "v100", "CUDA compute capability 7.x in the file name"),
    ("module_0002.jit_f.gfx942_gpu_after_optimizations.txt", "mi300x", "AMD target gfx942 in the file name"),
])
def test_device_from_the_dump_file_name(jax_data, tmp_path, name, device, why):
    path = tmp_path / name
    shutil.copy(jax_data / "handmade" / GPU, path)
    ts, _, _ = _load(path)
    assert _notes(ts)[0] == f"device model {device} ({why})"
