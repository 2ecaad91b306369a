"""Bad programs and profiles: one-line errors naming the file and line, exit status 2, nothing
written. The broken programs are the recorded ones with one line damaged."""

from __future__ import annotations

import pytest

from chakra_core import ConfigError, TraceFormatError, load_traces


def _damaged(jax_data, tmp_path, old, new, name="shard_map"):
    text = (jax_data / name / "program.hlo.txt").read_text()
    assert old in text
    path = tmp_path / "bad.hlo.txt"
    path.write_text(text.replace(old, new, 1))
    line = text[:text.index(old)].count("\n") + 1
    return path, line


@pytest.mark.parametrize("old, new, message", [
    ("%all-reduce = (f32[8,16]{1,0}, f32[8,16]{1,0}) all-reduce(", "%all-reduce = (f32[8,16]{1,0} all-reduce(",
     "unbalanced parentheses"),
    ("replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%region_0.0",
     "replica_groups={{0,1,2,9}}, use_global_device_ids=true, to_apply=%region_0.0", "outside 0..3"),
    ("source_target_pairs={{0,1},{1,2},{2,3},{3,0}}", "source_target_pairs={{0,1,2}}", "must be pairs"),
    ("replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%region_0.0",
     "replica_groups={{0,1,2}}, use_global_device_ids=true, to_apply=%region_0.0", "device 3 of 4 is in no replica group"),
    ("fusion(%param.1), kind=kLoop, calls=%fused_computation.1", "fusion(%nowhere), kind=kLoop, calls=%fused_computation.1",
     "'nowhere' is not defined"),
])
def test_malformed_instruction_names_file_and_line(jax_data, tmp_path, old, new, message):
    path, line = _damaged(jax_data, tmp_path, old, new)
    with pytest.raises(TraceFormatError, match=message) as err:
        list(load_traces(str(path), format="jax")[0].nodes())
    assert err.value.where == str(path)
    assert err.value.location == f"line {line}"


@pytest.mark.parametrize("name, old, new, message", [
    ("scan_cond", '"known_trip_count":{"n":"4"}', '"known_trip_count":{"n":"-4"}', "known_trip_count -4 is negative"),
    ("scan_cond", '"known_trip_count":{"n":"4"}', '"known_trip_count":{"n":"100000000000000000000"}',
     "does not fit a 64-bit integer"),
    ("mesh8", "{'axis_0'}", "{'axis_0':(2)4}", "span 8 devices, which does not divide its 4"),
    ("mesh8", "{'axis_0'}", "{'axis_0':(0)2}", "overlap or are empty"),
])
def test_bad_loop_counts_and_mesh_sub_axes_name_file_and_line(jax_data, tmp_path, name, old, new, message):
    """A negative trip count (the loop was dropped), a summarised loop's cost past 64 bits and mesh
    sub-axes that do not tile their axis (an internal error before) are errors at their line."""
    path, line = _damaged(jax_data, tmp_path, old, new, name)
    with pytest.raises(TraceFormatError, match=message) as err:
        list(load_traces(str(path), format="jax")[0].nodes())
    assert err.value.where == str(path)
    assert err.value.location == f"line {line}"


def test_truncated_and_foreign_files(jax_data, tmp_path):
    text = (jax_data / "mlp" / "program.hlo.txt").read_text()
    cut = tmp_path / "cut.hlo.txt"
    lines = text.splitlines(keepends=True)
    cut.write_text("".join(lines[: len(lines) // 2]))
    with pytest.raises(TraceFormatError, match="not closed"):
        load_traces(str(cut), format="jax")
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    with pytest.raises(TraceFormatError, match="HloModule"):
        load_traces(str(other), format="jax")
    junk = tmp_path / "junk.hlo.pb"
    junk.write_bytes(b"\x08\x96\x01 garbage")
    with pytest.raises(TraceFormatError, match="HloModuleProto"):
        load_traces(str(junk), format="jax")


def test_profile_of_another_module(jax_data):
    with pytest.raises(TraceFormatError, match="no op events of module 'jit_step'"):
        load_traces([str(jax_data / "mlp" / "program.hlo.txt"), str(jax_data / "shard_map" / "profile.xplane.pb")],
                    format="jax")


def test_cli_error_is_one_line_and_keeps_earlier_output(jax_data, tmp_path, chakra_cli):
    out = tmp_path / "out"
    assert chakra_cli("convert", jax_data / "shard_map" / "program.hlo.txt", "-o", f"{out}/")[0] == 0
    before = sorted(p.name for p in out.iterdir())
    path, line = _damaged(jax_data, tmp_path, "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}",
                          "source_target_pairs={{0,1,2}}")
    status, stdout, stderr = chakra_cli("convert", path, "--format", "jax", "-o", f"{out}/")
    assert status == 2
    assert stderr.strip().count("\n") == 0 and f"{path}:line {line}" in stderr
    assert sorted(p.name for p in out.iterdir()) == before


def _program_and_profile(jax_data, program, profile):
    return [str(jax_data / program / "program.hlo.txt"), str(jax_data / profile / "profile.xplane.pb")]


def test_profile_on_devices_the_program_lacks_is_refused(jax_data, tmp_path, chakra_cli):
    """scan (4 devices) and mesh8's profile: both modules are named jit_step, the profile's events
    are on 8 devices."""
    paths = _program_and_profile(jax_data, "scan", "mesh8")
    with pytest.raises(TraceFormatError, match=r"on devices 0\.\.7, but the program has 4 \(0\.\.3\)") as err:
        load_traces(paths, format="jax")
    assert err.value.where == paths[1]
    status, _, stderr = chakra_cli("convert", *paths, "-o", f"{tmp_path}/out/")
    assert status == 2 and stderr.strip().count("\n") == 0
    assert not (tmp_path / "out").exists()


def test_profile_of_another_program_of_the_same_module_name_is_refused(jax_data):
    """mesh8 (4 operations, 8 devices) and mlp's profile (4 devices): only the two instructions
    both programs name alike have events; devices 4..7 have none."""
    paths = _program_and_profile(jax_data, "mesh8", "mlp")
    with pytest.warns(UserWarning, match=r"devices 4\.\.7 of the program's 8 have no events"), \
            pytest.raises(TraceFormatError, match="2 of the program's 4 operations have no event in the profile"):
        load_traces(paths, format="jax")


def test_devices_the_profile_does_not_cover_are_said(jax_data):
    """mesh8 with its own 8-device profile as 16 devices: devices 8..15 have no events, so their
    operations keep duration 0 (said; an [idle] node spans the step), and devices 0..7 keep their
    measured durations."""
    paths = _program_and_profile(jax_data, "mesh8", "mesh8")
    with pytest.warns(UserWarning, match=r"devices 8\.\.15 of the program's 16 have no events in the profile"):
        ts = load_traces(paths, format="jax", options={"devices": 16})
    own = load_traces(paths, format="jax")
    assert [n.duration_micros for n in ts[0].nodes()] == [n.duration_micros for n in own[0].nodes()]
    assert all(n.duration_micros == 0 for n in ts[8].nodes() if n.name != "[idle]")


@pytest.mark.parametrize("profile, options, message", [
    (False, {"step": 0}, "option step=0 needs a profile"),
    (False, {"idle_gaps": False}, "option idle_gaps=false needs a profile"),
    (True, {"device": "a100"}, "option device=a100 times compute without a profile"),
])
def test_options_that_would_do_nothing_are_refused(jax_data, tmp_path, chakra_cli, profile, options, message):
    paths = _program_and_profile(jax_data, "shard_map", "shard_map")[: 2 if profile else 1]
    with pytest.raises(ConfigError, match=message):
        load_traces(paths, format="jax", options=options)
    (key, value), = options.items()
    status, _, stderr = chakra_cli("convert", *paths, "-O", f"{key}={str(value).lower()}", "-o", f"{tmp_path}/o/")
    assert status == 2 and message in stderr and stderr.strip().count("\n") == 0
