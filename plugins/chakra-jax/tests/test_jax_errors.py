"""Bad programs and profiles: one-line errors naming the file and line, exit status 2, nothing
written. The broken programs are the recorded ones with one line damaged."""

from __future__ import annotations

import pytest

from chakra_core import TraceFormatError, load_traces


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
