"""replica_groups syntaxes and collective group modes, against closed-form expectations."""

from __future__ import annotations

import pytest

from chakra_jax.groups import GroupError, device_groups, parse_pairs, parse_replica_groups, permute_pairs


def test_explicit_and_empty_groups():
    assert parse_replica_groups("{{0,1},{2,3}}") == [[0, 1], [2, 3]]
    assert parse_replica_groups("{{0,2,4,6},{1,3,5,7}}") == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert parse_replica_groups("{}") is None
    assert parse_replica_groups(None) is None


def test_iota_groups():
    assert parse_replica_groups("[2,2]<=[4]") == [[0, 1], [2, 3]]
    # ids 0..7 as a 4x2 array, transposed: the rows are the columns of [[0,1],[2,3],[4,5],[6,7]]
    assert parse_replica_groups("[2,4]<=[4,2]T(1,0)") == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert parse_replica_groups("[4,2]<=[2,4]T(1,0)") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    # A[a][b][c] = 4a + 2b + c transposed (2,0,1): B[i][j][k] = A[j][k][i] = 4j + 2k + i
    assert parse_replica_groups("[4,2]<=[2,2,2]T(2,0,1)") == [[0, 2], [4, 6], [1, 3], [5, 7]]
    assert parse_replica_groups("[1,4]<=[4]") == [[0, 1, 2, 3]]


def test_mesh_axes_groups():
    # device = 4a + b on mesh a=2, b=4
    assert parse_replica_groups("mesh['a'=2,'b'=4] {'b'}") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert parse_replica_groups("mesh['a'=2,'b'=4] {'a'}") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert parse_replica_groups("mesh['a'=2,'b'=4] {'b','a'}") == [[0, 4, 1, 5, 2, 6, 3, 7]]
    assert parse_replica_groups("mesh[a=2,b=2] {a}") == [[0, 2], [1, 3]]
    # a sub-axis of a=8: (pre 2) size 2 splits 8 into [2, 2, 2] and groups over the middle one
    assert parse_replica_groups("mesh['a'=8] {'a':(2)2}") == [[0, 2], [1, 3], [4, 6], [5, 7]]
    # a mesh with its own device order: devices [0, 4, 1, 5, 2, 6, 3, 7] on a=4, b=2
    assert parse_replica_groups("mesh['a'=4,'b'=2], device_ids=([2,4]T(1,0)) {'a'}") == [[0, 1, 2, 3],
                                                                                      [4, 5, 6, 7]]
    assert parse_replica_groups("mesh['a'=2,'b'=2], device_ids=(3,2,1,0) {'b'}") == [[3, 2], [1, 0]]


@pytest.mark.parametrize("bad", ["{{0,1},2}", "[3,2]<=[4]", "[2,2]<=[4]T(0,0)", "mesh['a'=2] {'c'}", "xyz"])
def test_bad_groups_raise(bad):
    with pytest.raises(GroupError):
        parse_replica_groups(bad)


def test_group_modes():
    # 2 replicas x 2 partitions: device = 2 * replica + partition
    groups = [[0, 1]]
    assert device_groups("all-reduce", groups, False, False, 2, 2) == [[0, 2], [1, 3]]          # cross-replica
    assert device_groups("all-reduce", groups, True, False, 2, 2) == [[0, 1, 2, 3]]             # replica+partition
    assert device_groups("all-reduce", [[0, 3], [1, 2]], True, True, 2, 2) == [[0, 3], [1, 2]]  # flattened
    assert device_groups("all-to-all", groups, True, False, 2, 2) == [[0, 1], [2, 3]]           # cross-partition
    assert device_groups("all-gather", None, True, True, 1, 4) == [[0, 1, 2, 3]]
    assert device_groups("all-reduce", None, False, False, 4, 1) == [[0, 1, 2, 3]]


def test_added_replicas_repeat_the_groups_that_name_ids():
    """Two copies of a 2-replica x 2-partition module (device = 2 * replica + partition): groups
    naming ids repeat in the second copy, offset by its 2 replicas (4 flattened ids); {} spans all."""
    assert device_groups("all-reduce", [[0, 3], [1, 2]], True, True, 4, 2, 2) == [[0, 3], [1, 2], [4, 7], [5, 6]]
    assert device_groups("all-reduce", [[0, 1]], False, False, 4, 2, 2) == [[0, 2], [4, 6], [1, 3], [5, 7]]
    assert device_groups("all-reduce", [[0, 1]], True, False, 4, 2, 2) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert device_groups("all-gather", None, True, True, 4, 2, 2) == [list(range(8))]
    assert permute_pairs([(0, 1)], False, 4, 1, 2) == [(0, 1), (2, 3)]


def test_pairs():
    assert parse_pairs("{{0,1},{1,2},{2,3},{3,0}}") == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert permute_pairs([(0, 1)], True, 2, 2) == [(0, 1), (2, 3)]
    assert permute_pairs([(0, 1)], False, 2, 2) == [(0, 2), (1, 3)]
    with pytest.raises(GroupError):
        parse_pairs("{{0,1,2}}")
