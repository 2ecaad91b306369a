"""The JAX findings of the fuzz campaign (issue 32), one test per cause: each input is refused
on the command line with exit status 2 and one located line on stderr, and nothing is written."""

from __future__ import annotations

import gzip
import json

import pytest


def _refused(chakra_cli, tmp_path, *inputs):
    out = tmp_path / "out"
    status, _, stderr = chakra_cli("convert", *inputs, "--format", "jax", "-o", f"{out}/")
    assert status == 2, stderr
    assert stderr.strip().count("\n") == 0, stderr
    assert not out.exists() or not any(out.iterdir())
    return stderr.strip()


def test_shape_dimension_that_is_not_a_whole_number(jax_data, tmp_path, chakra_cli):
    text = (jax_data / "mlp" / "program.hlo.txt").read_text()
    line = next(i for i, s in enumerate(text.splitlines(), 1) if " = f32[32,32]" in s)
    lines = text.splitlines()
    lines[line - 1] = lines[line - 1].replace(" = f32[32,32]", " = f32[1e-400,32]", 1)
    path = tmp_path / "bad.hlo.txt"
    path.write_text("\n".join(lines) + "\n")
    err = _refused(chakra_cli, tmp_path, path)
    assert f"{path}:line {line}" in err and "'1e-400' is not a whole number" in err


@pytest.mark.parametrize("old, new, key", [
    ("parameter(0)", "parameter(0, x)", "number"),
    ("index=0", "index=0x", "index"),
])
def test_parameter_number_or_tuple_index_that_is_not_a_whole_number(jax_data, tmp_path, chakra_cli, old, new, key):
    text = (jax_data / "mlp" / "program.hlo.txt").read_text()
    lines = text.splitlines()
    entry = next(i for i, s in enumerate(lines) if s.startswith("ENTRY"))
    line = next(i for i, s in enumerate(lines[entry:], entry + 1) if old in s)
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    path = tmp_path / "bad.hlo.txt"
    path.write_text("\n".join(lines) + "\n")
    err = _refused(chakra_cli, tmp_path, path)
    assert f"{path}:line {line}" in err and f"{key}=" in err and "is not a whole number" in err, err


def test_device_count_past_the_limit_is_refused_before_lowering(jax_data, tmp_path, chakra_cli):
    """num_partitions=2^32 in the header: one located line, not a per-device table of 2^32 entries."""
    text = (jax_data / "handmade" / "p2p.hlo.txt").read_text()
    path = tmp_path / "p2p.hlo.txt"
    path.write_text(text.replace("num_partitions=4", "num_partitions=4294967296", 1))
    status, _, stderr = chakra_cli("convert", str(path), "--format", "jax", "-o", f"{tmp_path / 'out'}/")
    assert status == 2 and stderr.strip().count("\n") == 0, stderr
    assert str(path) in stderr and "4294967296" in stderr, stderr
    assert not (tmp_path / "out").exists()


def test_done_without_its_operand(jax_data, tmp_path, chakra_cli):
    text = (jax_data / "handmade" / "async.hlo.txt").read_text()
    lines = text.splitlines()
    line = next(i for i, s in enumerate(lines, 1) if "collective-permute-done(%cps)" in s)
    lines[line - 1] = lines[line - 1].replace("collective-permute-done(%cps)", "collective-permute-done()")
    path = tmp_path / "async.hlo.txt"
    path.write_text("\n".join(lines) + "\n")
    err = _refused(chakra_cli, tmp_path, path)
    assert f"{path}:line {line}" in err and "collective-permute-done wants operand 1, got 0" in err, err


def test_profile_event_that_is_a_number(jax_data, tmp_path, chakra_cli):
    profile = tmp_path / "p.trace.json.gz"
    with gzip.open(profile, "wt") as f:
        json.dump({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}}, 5]}, f)
    err = _refused(chakra_cli, tmp_path, jax_data / "mlp" / "program.hlo.txt", profile)
    assert f"{profile}:event 1" in err and "a trace event must be an object, got int" in err


def test_profile_field_of_the_wrong_type(jax_data, tmp_path, chakra_cli):
    profile = tmp_path / "p.trace.json.gz"
    event = {"ph": "X", "ts": "soon", "dur": 1, "args": {"hlo_op": "dot", "hlo_module": "jit_step",
                                                        "device_ordinal": 0}}
    with gzip.open(profile, "wt") as f:
        json.dump({"traceEvents": [event]}, f)
    err = _refused(chakra_cli, tmp_path, jax_data / "mlp" / "program.hlo.txt", profile)
    assert f"{profile}:event 0" in err and "ts must be a number, got str" in err


@pytest.mark.parametrize("where, value, message", [("args", None, "args must be an object, got NoneType"),
                                                    ("hlo_op", None, "hlo_op must be a string or an integer, got NoneType")])
def test_profile_op_event_with_null_args_or_op(jax_data, tmp_path, chakra_cli, where, value, message):
    """Such an event was left out without a word (its op then took no measured time)."""
    with gzip.open(jax_data / "mlp" / "profile.trace.json.gz", "rt") as f:
        trace = json.load(f)
    index = next(i for i, ev in enumerate(trace["traceEvents"]) if ev.get("ph") == "X" and "hlo_op" in ev.get("args", {}))
    event = trace["traceEvents"][index]
    if where == "args":
        event["args"] = value
    else:
        event["args"]["hlo_op"] = value
    profile = tmp_path / "p.trace.json.gz"
    with gzip.open(profile, "wt") as f:
        json.dump(trace, f)
    err = _refused(chakra_cli, tmp_path, jax_data / "mlp" / "program.hlo.txt", profile)
    assert f"{profile}:event {index}" in err and message in err, err


@pytest.mark.parametrize("key, value", [("dur", 1e308), ("ts", -1e300), ("dur", 2.0 ** 60)])
def test_profile_time_past_2_to_the_53_us(jax_data, tmp_path, chakra_cli, key, value):
    """A duration of 1e308 us made an [idle] node out of an ET's uint64 range (internal error)."""
    with gzip.open(jax_data / "mlp" / "profile.trace.json.gz", "rt") as f:
        trace = json.load(f)
    index = next(i for i, ev in enumerate(trace["traceEvents"]) if ev.get("ph") == "X" and "hlo_op" in ev.get("args", {}))
    trace["traceEvents"][index][key] = value
    profile = tmp_path / "p.trace.json.gz"
    with gzip.open(profile, "wt") as f:
        json.dump(trace, f)
    err = _refused(chakra_cli, tmp_path, jax_data / "mlp" / "program.hlo.txt", profile)
    assert f"{profile}:event {index}" in err and f"{key}={value!r} is out of range" in err, err


def test_corrupt_gzip_stream(jax_data, tmp_path, chakra_cli):
    data = bytearray((jax_data / "mlp" / "profile.trace.json.gz").read_bytes())
    for i in range(200, 260):
        data[i] ^= 0x5A
    profile = tmp_path / "damaged.trace.json.gz"
    profile.write_bytes(bytes(data))
    err = _refused(chakra_cli, tmp_path, jax_data / "mlp" / "program.hlo.txt", profile)
    assert err.startswith(f"chakra convert: error: {profile}: not a Chrome-trace JSON profile")
    program = tmp_path / "program.hlo.txt.gz"
    packed = bytearray(gzip.compress((jax_data / "mlp" / "program.hlo.txt").read_bytes()))
    for i in range(100, 160):
        packed[i] ^= 0x5A
    program.write_bytes(bytes(packed))
    assert f"{program}: damaged gzip stream" in _refused(chakra_cli, tmp_path, program)


def _p2p(jax_data, tmp_path, old, new):
    text = (jax_data / "handmade" / "p2p.hlo.txt").read_text()
    assert old in text
    path = tmp_path / "p2p.hlo.txt"
    path.write_text(text.replace(old, new, 1))
    return path, text[:text.index(old)].count("\n") + 1


def test_p2p_tag_beyond_32_bits(jax_data, tmp_path, chakra_cli):
    path, line = _p2p(jax_data, tmp_path, "recv(%after-all), channel_id=5", f"recv(%after-all), channel_id={2**32}")
    err = _refused(chakra_cli, tmp_path, path)
    assert f"{path}:line {line}" in err and f"channel_id={2**32} is not a tag" in err


@pytest.mark.parametrize("old, new, message", [
    ('recv(%after-all), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,3}}"}',
     'recv(%after-all), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2}}"}',
     "send of channel 5 from device 2 to 3 has no matching recv"),
    ("recv(%after-all), channel_id=5", "recv(%after-all), channel_id=6",
     "recv of channel 6 from device 0 to 1 has no matching send"),
])
def test_damaged_p2p_program_is_refused(jax_data, tmp_path, chakra_cli, old, new, message):
    path, _ = _p2p(jax_data, tmp_path, old, new)
    err = _refused(chakra_cli, tmp_path, path)
    assert message in err and f"{path}:line " in err


def test_native_log_lines_stay_off_stderr(jax_data, tmp_path, chakra_cli, capfd):
    data = bytearray((jax_data / "mlp" / "program.hlo.pb").read_bytes())
    data[100] ^= 0xFF
    data[2000] ^= 0x55
    path = tmp_path / "mutated.hlo.pb"
    path.write_bytes(bytes(data))
    capfd.readouterr()
    err = _refused(chakra_cli, tmp_path, path)
    assert err.startswith(f"chakra convert: error: {path}: not an HloModuleProto")
    assert capfd.readouterr().err == ""  # what jaxlib's C++ code wrote to file descriptor 2
