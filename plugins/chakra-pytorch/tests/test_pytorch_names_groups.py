"""Ranks from file names and process groups in the metadata, on recorded and public traces.

Names: PyTorch's profiler names a trace ``<worker_name>.<ms timestamp>.pt.trace.json`` (PARAM's
DLRM rank 0: ``worker0_step_12.1694128201545.pt.trace.json``); the numbers of a worker name may
be a worker index, a step, a pid, so a trace that does not say its rank is given one from them
only with a warning that says which, and a clear marker (``rank3``, ``NAME.3``) wins.
Groups: each rank's metadata in the converted set is the metadata written for it (.et and JSON
alike), its own groups only."""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path

import pytest

from chakra_core import TraceFormatError, jsonize, load_traces, open_traceset
from chakra_pytorch import PyTorchTraceWarning, find_rank_files, open_pytorch
from chakra_pytorch.kineto_only import find_kineto_ranks, open_kineto_only
from chakra_pytorch.sniff import rank_from_name

DATA = Path(__file__).resolve().parent / "data"
#: PARAM's DLRM rank 0 under the profiler's own name (public/README.md)
DLRM_KINETO = DATA / "public" / "dlrm" / "worker0_step_12.1694128201545.pt.trace.json.gz"
STAMP = "1694128201545"


def _without_rank(src: Path, dst: Path) -> str:
    """The Kineto trace ``src`` written to ``dst`` with its ``distributedInfo`` taken out: a
    trace that does not say its rank, as a single-process run or an older PyTorch writes it."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc.pop("distributedInfo")
    dst.write_text(json.dumps(doc))
    return str(dst)


def _said(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, PyTorchTraceWarning)]


def test_clear_markers_in_a_profiler_name():
    # the worker name of <worker_name>.<ms>.pt.trace.json is read as a whole file name is
    assert rank_from_name(f"trainer.3.{STAMP}.pt.trace.json", strict=True) == 3
    assert rank_from_name(f"worker0_rank_12_step_3.{STAMP}.pt.trace.json.gz", strict=True) == 12
    assert rank_from_name(DLRM_KINETO.name, strict=True) is None
    assert rank_from_name(DLRM_KINETO.name) == 12  # the last number, only when nothing clearer


def test_lone_trace_named_by_its_worker_says_the_rank_it_assumed(tmp_path):
    # PARAM's DLRM rank 0 without distributedInfo, under its own name: rank 0 was taken without
    # a word, though 0 and 12 of worker0_step_12 could each be the rank
    path = _without_rank(DLRM_KINETO, tmp_path / DLRM_KINETO.name.removesuffix(".gz"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (kr,), world = find_kineto_ranks([path])
    assert (kr.rank, world) == (0, 1)
    assert _said(caught) == [f"{path}: rank 0 assumed: the trace does not say its rank and the number 12 in "
                             "the file name is not clearly one (rankN, NAME.N.json)"]


def test_lone_trace_with_a_rank_before_the_timestamp(tmp_path):
    # NAME.3.<ms>.pt.trace.json: the worker name ends in .3, as NAME.3.json does (it was rank 0)
    path = _without_rank(DLRM_KINETO, tmp_path / f"dlrm.3.{STAMP}.pt.trace.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyTorchTraceWarning)
        (kr,), world = find_kineto_ranks([path])
    assert (kr.rank, world) == (3, 4)


def test_kineto_set_without_ranks_says_what_it_assumed(tmp_path):
    # the DDP recording's Kineto traces without distributedInfo, named by worker and step: both
    # were read as rank 12 without a word before "two Kineto traces claim rank 12"
    paths = [_without_rank(DATA / "ddp" / f"kineto.{r}.json.gz", tmp_path / f"worker{r}_step_12.{STAMP}.pt.trace.json")
             for r in (0, 1)]
    with warnings.catch_warnings(record=True) as caught, pytest.raises(TraceFormatError, match="claim rank 12"):
        warnings.simplefilter("always")
        find_kineto_ranks(paths)
    assert _said(caught) == [f"{p}: rank 12 assumed from the last number of the file name: the trace does not say "
                             "its rank and the name gives none clearly (rankN, NAME.N.json); rename the file if "
                             "that is not its rank" for p in paths]
    # a clear marker beside the worker name's numbers is the rank, without a warning
    marked = [shutil.copy(p, tmp_path / Path(p).name.replace("_step", f"_rank{r}_step")) for r, p in enumerate(paths)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyTorchTraceWarning)
        ranks, world = find_kineto_ranks([str(p) for p in marked])
    assert [(kr.rank, Path(kr.path).name) for kr in ranks] == [(r, Path(marked[r]).name) for r in (0, 1)]
    assert world == 2


def test_host_ets_named_by_worker_pair_by_their_process(tmp_path):
    # the DDP recording (gloo: the host ETs do not say their rank, the Kineto traces do) under
    # worker-and-step names: both host ETs were read as rank 12 ("two host traces claim rank
    # 12"); they now take the rank of the Kineto trace of their own process, without a word
    for r in (0, 1):
        shutil.copy(DATA / "ddp" / f"pytorch_et.{r}.json.gz", tmp_path / f"et_worker{r}_step_12.json.gz")
        shutil.copy(DATA / "ddp" / f"kineto.{r}.json.gz", tmp_path / f"worker{r}_step_12.{STAMP}.pt.trace.json.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyTorchTraceWarning)
        pairs, dist = find_rank_files([str(tmp_path)])
    assert dist["world_size"] == 2
    assert [(p.rank, Path(p.host).name, Path(p.kineto or "").name) for p in pairs] == [
        (r, f"et_worker{r}_step_12.json.gz", f"worker{r}_step_12.{STAMP}.pt.trace.json.gz") for r in (0, 1)]


@pytest.mark.parametrize("name, groups", [
    ("pipeline_dp", {"1": [0, 2], "2": [1, 3]}),
    ("collectives", {"1": [0, 1]}),
    ("ddp", {}),  # only the default group "0": all ranks, not listed (docs/formats.md)
])
def test_each_rank_carries_what_is_written_for_it(tmp_path, name, groups):
    # every rank of the converted set carried every group in its metadata, the .et and JSON
    # files each rank's own: the converted set and the files disagreed, and `chakra jsonize`
    # of the recording said it added groups "which the input's metadata did not" carry
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyTorchTraceWarning)
        converted = open_pytorch([str(DATA / name)])
        converted.write(tmp_path / "et" / "trace")
        notes = jsonize(str(DATA / name), f"{tmp_path}/js/").notes
    assert converted.process_groups == groups
    assert notes == []
    written, as_json = open_traceset(str(tmp_path / "et")), load_traces(str(tmp_path / "js"))
    for r in converted.ranks:
        assert converted[r].metadata() == written[r].metadata() == as_json[r].metadata()
    if name == "pipeline_dp":  # each rank lists the one group it is in
        assert [_listed(converted[r].metadata()) for r in converted.ranks] == [
            [{"pg_name": "1", "ranks": [0, 2]}], [{"pg_name": "2", "ranks": [1, 3]}]] * 2


def test_each_kineto_only_rank_carries_what_is_written_for_it(tmp_path):
    # the Kineto traces alone gave every rank every group, as the host ET route did
    kinetos = sorted(str(p) for p in (DATA / "pipeline_dp").glob("kineto.*.json.gz"))
    for p in kinetos:
        shutil.copy(p, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyTorchTraceWarning)
        converted = open_kineto_only(kinetos)
        notes = jsonize(str(tmp_path), f"{tmp_path}/js/").notes
    assert notes == []
    assert [_listed(converted[r].metadata()) for r in converted.ranks] == [
        [{"pg_name": "1", "ranks": [0, 2]}], [{"pg_name": "2", "ranks": [1, 3]}]] * 2


def _listed(meta) -> list[dict]:
    return next(json.loads(a.string_val) for a in meta.attr if a.name == "process_groups")


@pytest.mark.xfail(strict=True, reason="chakra_core's set discovery reads the default group '0' from PyTorch's "
                   "## process_group:init ## node when no rank lists groups (TraceSet.process_groups leaves "
                   "'0' out otherwise); the plugin cannot change it")
def test_default_group_read_back_as_converted(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyTorchTraceWarning)
        converted = open_pytorch([str(DATA / "ddp")])
        converted.write(tmp_path / "et" / "trace")
    assert open_traceset(str(tmp_path / "et")).process_groups == converted.process_groups
