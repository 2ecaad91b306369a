"""Generated sets validate, simulate with simpy and export to ASTRA-sim, from 8 to 4,096 ranks;
the command, the Python call and the pipeline input give the same set; bad options are one line."""

from __future__ import annotations

import json

import pytest
import yaml

import chakra_core as chakra
from chakra_core import NodeType, get_attr
from chakra_core.system import get_device

TINY = {"layers": 2, "hidden": 32, "heads": 4, "seq": 16, "vocab": 64, "micro_batches": 2}


@pytest.mark.parametrize("options", [
    {"tp": 2, "pp": 2, "dp": 2},
    {"tp": 2, "pp": 2, "dp": 2, "sp": True, "cp": 2, "zero": 1},
    {"tp": 2, "pp": 2, "dp": 4, "ep": 2, "experts": 4, "zero": 3, "recompute": True},
    {"pp": 4, "dp": 2, "schedule": "interleaved", "virtual_stages": 2, "micro_batches": 4, "layers": 8},
])
def test_small_sets_validate_simulate_export(tmp_path, options):
    traces = chakra.generate("transformer", {**TINY, **options}, output=tmp_path / "et/")
    report = chakra.validate(traces)
    assert report.ok and not report.warnings, report.to_dict()["findings"][:3]
    sim = chakra.simulate(traces)
    assert sim.summary["finish_ns"] > 0 and len(sim.ranks) == len(traces)
    out = chakra.export(traces, "astrasim", tmp_path / "astra")
    assert sum(1 for f in out.files if f.endswith(".et")) == len(traces)


def test_4096_ranks_validate_simulate_export(tmp_path):
    traces = chakra.generate("transformer", {**TINY, "tp": 4, "pp": 2, "dp": 512, "micro_batches": 1},
                             output=tmp_path / "et")
    assert len(traces) == 4096
    assert chakra.validate(traces).ok
    sim = chakra.simulate(traces, validate=False)
    assert len(sim.ranks) == 4096 and sim.summary["finish_ns"] > 0
    out = chakra.export(traces, "astrasim", tmp_path / "astra", validate=False)
    assert sum(1 for f in out.files if f.endswith(".et")) == 4096


def test_compute_nodes_carry_flops_bytes_and_roofline_durations():
    traces = chakra.generate("transformer", {**TINY, "tp": 2, "device": "a100"})
    a100 = get_device("a100")
    seen = 0
    for n in traces[0].nodes():
        if n.type == NodeType.COMP_NODE and n.name.endswith(".qkv"):
            T, h = 16, 32
            assert get_attr(n, "num_ops") == 2 * T * h * 3 * h // 2
            assert get_attr(n, "tensor_size") == (T * h + 3 * h * h // 2 + 3 * T * h // 2) * 2
            ns = int(max(get_attr(n, "num_ops") / 312e3, get_attr(n, "tensor_size") / 2039))
            assert n.duration_micros == max(1, -(-ns // 1000))
            assert a100.peak("bf16") == 312
            seen += 1
    assert seen == TINY["layers"] * TINY["micro_batches"]


def test_roofline_simulation_matches_replay_of_the_same_device(tmp_path):
    traces = chakra.generate("transformer", {**TINY, "layers": 4, "hidden": 2048, "heads": 16, "seq": 1024},
                             output=tmp_path / "et/")
    system = tmp_path / "sys.yaml"
    system.write_text(yaml.safe_dump({"compute": get_device("h100").compute_system("bf16")}))
    replay = chakra.simulate(traces).summary["finish_ns"]
    roofline = chakra.simulate(traces, system=str(system)).summary["finish_ns"]
    assert roofline <= replay  # the trace rounds each duration up to whole microseconds
    assert roofline > 0.9 * replay


def test_cli_generate_and_pipeline_give_the_same_files(tmp_path, chakra_cli):
    opts = ["-O", "tp=2", "-O", "pp=2", "-O", "layers=2", "-O", "hidden=32", "-O", "heads=4", "-O", "seq=16",
            "-O", "vocab=64", "-O", "micro_batches=2"]
    status, out, err = chakra_cli("generate", "transformer", "-o", f"{tmp_path}/cli/", *opts, "--json")
    assert status == 0, err
    assert json.loads(out)["ranks"] == 4
    pipe = tmp_path / "p.yaml"
    pipe.write_text(yaml.safe_dump({
        "input": {"generator": "transformer", "options": {"tp": 2, "pp": 2, **TINY}},
        "backends": [{"name": "et", "output": "out/et"}, {"name": "simpy", "output": "out/sim"}],
    }))
    summary = chakra.run_pipeline(pipe)
    sim = summary["backends"][1]["result"]
    assert sim["provenance"]["implementations"][0]["kind"] == "generator"
    assert sim["provenance"]["implementations"][0]["options"]["tp"] == 2
    for r in range(4):
        assert (tmp_path / "cli" / f"trace.{r}.et").read_bytes() == (tmp_path / "out/et" / f"trace.{r}.et").read_bytes()


@pytest.mark.parametrize("args,message", [
    (["-O", "layers=7", "-O", "pp=2"], "layers 7 is not a multiple of pp * virtual_stages = 2"),
    (["-O", "tp=3"], "heads 16 is not a multiple of tp 3"),
    (["-O", "schedule=interleaved", "-O", "pp=2", "-O", "micro_batches=3", "-O", "virtual_stages=2"],
     "micro_batches (3) to be a multiple of pp (2)"),
    (["-O", "dp=4", "-O", "ep=3", "-O", "experts=6"], "ep 3 does not divide dp 4"),
    (["-O", "device=h1000"], "unknown device 'h1000' (did you mean 'h100'"),
    (["-O", "layres=4"], "did you mean 'layers'"),
    (["-O", "order=tp-dp-pp"], "must name tp, cp, dp and pp once each"),
    (["-O", "zero=3", "-O", "zero3_grad_reduce=per_step"],
     "unknown option 'zero3_grad_reduce' (did you mean 'grad_reduce'?)"),
    (["-O", "grad_reduce=per_layer"], "option 'grad_reduce' must be one of auto, per_microbatch, per_step"),
    # a world past CHAKRA_MAX_NPUS used to be built rank by rank (minutes, then memory)
    (["-O", "dp=2000000"], "ranks tp * cp * dp * pp = 2000000 exceeds the limit of 1048576"),
])
def test_bad_options_one_line_exit_2(tmp_path, chakra_cli, args, message):
    status, out, err = chakra_cli("generate", "transformer", "-o", str(tmp_path / "x/"), *args)
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


@pytest.mark.parametrize("generator,args,options", [
    # past int64 in a node's FLOPs: once a protobuf ValueError after building had begun (exit 1),
    # or a message naming an attribute but no option
    ("transformer", ["-O", "micro_batch=9223372036854775807"], "micro_batch, seq"),
    ("transformer", ["-O", "seq=1000000000000"], "micro_batch, seq"),
    ("transformer", ["-O", "vocab=9223372036854775807"], "vocab"),
    ("transformer", ["-O", "dp=2", "-O", "grad_bytes=9223372036854775807"], "grad_bytes"),
    ("inference", ["-O", "batch=9223372036854775807"], "batch, prompt"),
    ("inference", ["-O", "prompt=1000000000000"], "batch, prompt"),
])
def test_sizes_past_int64_name_the_options_exit_2(tmp_path, chakra_cli, generator, args, options):
    status, out, err = chakra_cli("generate", generator, "-o", str(tmp_path / "x/"), "-O", "layers=1", *args)
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert "does not fit a trace's 64-bit field (at most 2**63-1)" in err
    assert options in err.split("grows with the options ")[1]
    assert "internal error" not in err
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


def test_pipeline_refuses_generator_with_paths(tmp_path):
    with pytest.raises(chakra.ConfigError, match="either 'generator' or 'paths'"):
        chakra.load_pipeline({"input": {"generator": "transformer", "paths": ["x"]}, "backends": [{"name": "simpy"}]})


def test_device_file_extends_the_table(tmp_path):
    f = tmp_path / "dev.yaml"
    f.write_text("slow-npu:\n  peak_tflops: {bf16: 1}\n  memory_gbs: 10\n")
    big = {**TINY, "hidden": 1024, "heads": 8, "seq": 512}
    fast = chakra.generate("transformer", big)
    slow = chakra.generate("transformer", {**big, "device": "slow-npu", "devices": str(f)})

    def total(ts):
        return sum(n.duration_micros for n in ts[0].nodes() if n.type == NodeType.COMP_NODE)

    assert total(slow) > 100 * total(fast)
    f.write_text("bad:\n  peak_tflops: {bf17: 1}\n  memory_gbs: 10\n")
    with pytest.raises(chakra.ConfigError, match="unknown data type 'bf17'"):
        chakra.generate("transformer", {**TINY, "device": "bad", "devices": str(f)})


@pytest.mark.parametrize("text, message", [
    ("fast:\n  peak_tflops: {bf16: fast}\n  memory_gbs: 10\n",
     "key 'fast.peak_tflops.bf16': wants a number, got 'fast' (write numbers unquoted, e.g. 50, 2.5 or 1.0e-3)"),
    ("fast:\n  peak_tflops: {bf16: 1}\n  memory_gbs: 0\n",
     "key 'fast.memory_gbs': must be a positive number (decimal GB/s), got 0"),
])
def test_device_file_numbers_name_the_key_and_the_form_wanted(tmp_path, text, message):
    f = tmp_path / "dev.yaml"
    f.write_text(text)
    with pytest.raises(chakra.ConfigError) as e:
        chakra.generate("transformer", {**TINY, "device": "fast", "devices": str(f)})
    assert str(e.value) == f"{f}:{message}"


def test_device_file_number_that_yaml_reads_as_text_is_a_number(tmp_path):
    """PyYAML reads ``1e3`` (no dot) as a string; it is the number a system file takes it for."""
    f = tmp_path / "dev.yaml"
    f.write_text("fast:\n  peak_tflops: {bf16: 1e3}\n  memory_gbs: 2e3\n")
    device = get_device("fast", str(f))
    assert device.peak("bf16") == 1000.0 and device.memory_gbs == 2000.0


@pytest.mark.parametrize("generator, options, counted", [
    ("transformer", {"micro_batches": 10 ** 8}, "steps * micro_batches * 2 passes * layers / pp"),
    ("transformer", {"steps": 10 ** 6}, "steps * micro_batches * 2 passes * layers / pp"),
    ("inference", {"decode": 10 ** 8}, "(prefill + decode) * micro_batches * layers / pp"),
])
def test_absurd_node_counts_are_refused_before_building(generator, options, counted):
    shape = {k: TINY[k] for k in ("layers", "hidden", "heads", "vocab")}
    with pytest.raises(chakra.ConfigError) as e:
        chakra.generate(generator, {**shape, **options})
    message = str(e.value)
    assert message.startswith(f"generator {generator!r}: compute nodes per rank {counted} * "), message
    assert "exceeds the limit of 4194304" in message and "raise it with CHAKRA_MAX_NODES=" in message


def test_node_limit_is_raised_by_its_variable(monkeypatch):
    options = {**TINY, "micro_batches": 100}
    monkeypatch.setenv("CHAKRA_MAX_NODES", "1000")
    with pytest.raises(chakra.ConfigError, match="exceeds the limit of 1000 "):
        chakra.generate("transformer", options)
    monkeypatch.setenv("CHAKRA_MAX_NODES", "100000")
    assert len(chakra.generate("transformer", options)) == 1
