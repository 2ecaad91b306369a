"""TraceSet discovery (prefix, directory, glob, list), gaps, and process groups."""

from __future__ import annotations

import pytest

from chakra_core.base._errors import TraceFormatError
from chakra_core.io._etio import write_et
from chakra_core.io._schema import GlobalMetadata, Node
from chakra_core.trace._traceset import open_traceset


def _write(tmp_path, prefix, ranks):
    for r in ranks:
        write_et(tmp_path / f"{prefix}.{r}.et", GlobalMetadata(version="0.0.4"), [Node(id=1, name=f"r{r}", type=4)])


def test_open_by_prefix_dir_glob_list(tmp_path):
    _write(tmp_path, "job", range(3))
    by_prefix = open_traceset(str(tmp_path / "job"))
    by_dir = open_traceset(tmp_path)
    by_glob = open_traceset(str(tmp_path / "job.*.et"))
    by_list = open_traceset([str(tmp_path / f"job.{r}.et") for r in (2, 0, 1)])
    for ts in (by_prefix, by_dir, by_glob, by_list):
        assert ts.ranks == [0, 1, 2]
        assert [next(ts[r].nodes()).name for r in ts.ranks] == ["r0", "r1", "r2"]


def test_gap_is_an_error(tmp_path):
    _write(tmp_path, "job", [0, 1, 3])
    with pytest.raises(TraceFormatError, match="missing ranks 2"):
        open_traceset(str(tmp_path / "job"))


def test_two_prefixes_in_a_directory(tmp_path):
    _write(tmp_path, "a", [0])
    _write(tmp_path, "b", [0])
    with pytest.raises(TraceFormatError, match="several trace sets"):
        open_traceset(tmp_path)


def test_nothing_there(tmp_path):
    with pytest.raises(TraceFormatError, match="no such file"):
        open_traceset(str(tmp_path / "nothing"))


def test_process_groups_travel_in_metadata(tmp_path, dp_set):
    from chakra_core.trace._traceset import TraceSet

    ts = TraceSet(list(dp_set), process_groups={"1": [0], "2": [1]})
    ts.write(tmp_path / "pg")
    back = open_traceset(str(tmp_path / "pg"))
    assert back.process_groups == {"1": [0], "2": [1]}
    assert back.group_members("2") == [1] and back.group_members("0") == [0, 1]


def _listed(meta) -> dict:
    import json

    text = next((a.string_val for a in meta.attr if a.name == "process_groups"), None)
    return {} if text is None else {d["pg_name"]: d["ranks"] for d in json.loads(text)}


def test_each_rank_file_lists_its_own_groups_and_the_set_their_union(tmp_path):
    # every rank carried every group: at 4,096 generated ranks 92 KB of each 110 KB file
    from chakra_core.trace._traceset import MemoryRank, TraceSet

    n, tp = 64, 8
    groups = {str(10 + g): list(range(g * tp, (g + 1) * tp)) for g in range(n // tp)}  # tensor parallel
    groups.update({str(100 + k): list(range(k, n, tp)) for k in range(tp)})  # data parallel
    groups["everyone"] = []  # PyTorch's "ranks": [] for a group of every rank
    ts = TraceSet([MemoryRank(r, GlobalMetadata(), [Node(id=1, name="x")]) for r in range(n)], groups)
    ts.write(tmp_path / "pg")
    back = open_traceset(str(tmp_path / "pg"))
    for r in back.ranks:
        own = _listed(back[r].metadata())
        assert own == {k: v for k, v in groups.items() if r in v or not v}
        assert list(own) == [str(10 + r // tp), str(100 + r % tp), "everyone"]  # by number, then by name
    assert back.process_groups == groups
    again = tmp_path / "again"
    back.write(again / "pg")  # written again from the union: the same bytes
    for r in range(n):
        assert (again / f"pg.{r}.et").read_bytes() == (tmp_path / f"pg.{r}.et").read_bytes()


def test_a_group_two_ranks_list_with_other_members_is_an_error(tmp_path):
    from chakra_core.trace._traceset import MemoryRank, TraceSet, with_process_groups

    for r, members in ((0, [0, 1]), (1, [1, 2])):
        TraceSet([MemoryRank(r, with_process_groups(GlobalMetadata(), {"5": members}), [Node(id=1, name="x")])],
                 ).write_ranks(tmp_path, [r], "t")
    with pytest.raises(TraceFormatError, match=r"process group '5' has the ranks \[1, 2\] here but \[0, 1\]"):
        _ = open_traceset(str(tmp_path / "t")).process_groups


def test_process_groups_from_pytorch_metadata_node(golden_path):
    assert open_traceset(golden_path).process_groups == {"0": [0, 1]}


def test_empty_process_groups_mean_none_without_reading_nodes():
    from chakra_core.io._schema import GlobalMetadata
    from chakra_core.trace._traceset import GeneratedRank, TraceSet

    def boom():
        raise AssertionError("nodes were read to look for groups")

    ts = TraceSet([GeneratedRank(0, GlobalMetadata(), boom)], process_groups={})
    assert ts.process_groups == {}
