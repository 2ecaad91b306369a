"""``chakra transform``: several transforms in order, options routed to the one that declares
them, the result written as a set; the same from Python."""

from __future__ import annotations

import pytest

import chakra_core as chakra
from chakra_core.trace._attrs import get_int


@pytest.fixture
def et_dir(tmp_path, dp_set):
    dp_set.write(tmp_path / "in" / "job")
    return tmp_path / "in" / "job"


def test_cli_writes_the_transformed_set(et_dir, tmp_path, chakra_cli):
    status, out, err = chakra_cli("transform", str(et_dir), "scale", "-O", "compute_speedup=2",
                                  "-o", f"{tmp_path}/out/")
    assert status == 0, err
    before = {n.name: n for n in chakra.open_traceset(str(et_dir))[0].nodes()}
    after = {n.name: n for n in chakra.open_traceset(str(tmp_path / "out"))[0].nodes()}
    assert after["bwd_2"].duration_micros == round(before["bwd_2"].duration_micros / 2)


def test_several_names_apply_in_order_with_qualified_options(et_dir):
    traces = chakra.transform(str(et_dir), ["scale", "scale"],
                              {"scale.comm_scale": 3})  # NAME.key goes to the first transform of that name
    before = {n.name: n for n in chakra.open_traceset(str(et_dir))[0].nodes()}
    after = {n.name: n for n in traces[0].nodes()}
    assert get_int(after["allreduce_2"], "comm_size") == 3 * get_int(before["allreduce_2"], "comm_size")
    twice = chakra.transform(str(et_dir), ["scale", "scale"], [{"comm_scale": 2}, {"comm_scale": 3}])
    after = {n.name: n for n in twice[0].nodes()}
    assert get_int(after["allreduce_2"], "comm_size") == 6 * get_int(before["allreduce_2"], "comm_size")


def test_ambiguous_or_unknown_option_is_one_line(et_dir, tmp_path, chakra_cli):
    status, _, err = chakra_cli("transform", str(et_dir), "scale", "scale", "-O", "comm_scale=2",
                                "-o", f"{tmp_path}/o/")
    assert status == 2 and "declared by several of the transforms" in err and "NAME#K.comm_scale=2" in err
    status, _, err = chakra_cli("transform", str(et_dir), "scale", "scale", "-O", "scale#3.comm_scale=2",
                                "-o", f"{tmp_path}/o/")
    assert status == 2 and "'scale' is given 2 time(s): K in scale#K from 1 to 2" in err


def test_the_k_th_instance_of_a_transform_takes_its_own_options(et_dir, tmp_path, chakra_cli):
    """NAME#K.key: the second of two stragglers was given no way to have its ranks (an error,
    "option 'ranks' is required"), and a second scale's options went to the first."""
    status, _, err = chakra_cli("transform", str(et_dir), "scale", "scale", "-O", "scale#1.comm_scale=2",
                                "-O", "scale#2.comm_scale=3", "-O", "scale#2.compute_speedup=2",
                                "-o", f"{tmp_path}/out/")
    assert status == 0, err
    before = {n.name: n for n in chakra.open_traceset(str(et_dir))[0].nodes()}
    after = {n.name: n for n in chakra.open_traceset(str(tmp_path / "out"))[0].nodes()}
    assert get_int(after["allreduce_2"], "comm_size") == 6 * get_int(before["allreduce_2"], "comm_size")
    assert after["bwd_2"].duration_micros == round(before["bwd_2"].duration_micros / 2)
    status, _, err = chakra_cli("transform", str(et_dir), "scael", "-o", f"{tmp_path}/o/")
    assert status == 2 and "scale" in err and len(err.strip().splitlines()) == 1
