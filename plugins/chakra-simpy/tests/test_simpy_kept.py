"""What runs in one process keep (programs, planners) and the system they read follow the files:
a file rewritten in place, another system or a changed system file is read anew."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from chakra_core import load_traces, open_traceset
from chakra_simpy import SimpyBackend
from chakra_simpy.backend import prepare_system
from chakra_simpy.loading import program_of
from chakra_simpy.planner import planner_for

ROOT = Path(__file__).resolve().parents[3]
SYSTEM = ROOT / "examples/system/system.yaml"
#: finish (ns) of the examples x 8 on examples/system/system.yaml, congestion-unaware
FINISH = {"dlrm_like": 9_870_895, "resnet50_like": 8_354_096}


def _write(name: str, where: Path) -> None:
    pytest.importorskip("chakra_text")
    load_traces(str(ROOT / f"examples/text/{name}.txt"), "text", {"npus": 8}).write(where / "trace")


def _finish(where: Path, system: Path = SYSTEM) -> int:
    backend = SimpyBackend()
    result = backend.run(open_traceset(str(where)), backend.check_options({"system": str(system)}), None)
    return result.summary["finish_ns"]


def test_a_set_rewritten_in_place_is_read_anew(tmp_path):
    _write("dlrm_like", tmp_path)
    assert _finish(tmp_path) == FINISH["dlrm_like"]
    assert _finish(tmp_path) == FINISH["dlrm_like"]
    other = tmp_path / "other"
    other.mkdir()
    _write("resnet50_like", other)
    for src in other.glob("trace*"):
        shutil.copyfile(src, tmp_path / src.name)
    assert _finish(tmp_path) == FINISH["resnet50_like"]


def test_a_program_is_kept_per_file_content_and_compute_settings(tmp_path):
    _write("dlrm_like", tmp_path)
    ts = open_traceset(str(tmp_path))
    replayed = prepare_system({"system": str(SYSTEM)}, 8)
    roofline = tmp_path / "roofline.yaml"
    roofline.write_text(SYSTEM.read_text().replace("compute: replay", "compute: {model: roofline, peak-perf: 100}"))
    modelled = prepare_system({"system": str(roofline)}, 8)
    assert modelled.roofline_enabled and not replayed.roofline_enabled
    first = program_of(ts[0], replayed, False, None)
    assert program_of(ts[0], replayed, False, None) is first
    assert program_of(ts[0], replayed, True, None) is not first
    assert program_of(ts[0], modelled, False, None) is not first
    assert program_of(ts[1], replayed, False, None).rank == 1


def test_a_system_file_changed_in_place_is_read_anew(tmp_path):
    system = tmp_path / "system.yaml"
    text = SYSTEM.read_text()
    system.write_text(text)
    first = prepare_system({"system": str(system)}, 8)
    first.sources["system"] = "changed by the caller"
    again = prepare_system({"system": str(system)}, 8)
    assert again.sources["system"] == str(system) and again.dimensions[0].bandwidth == 50
    system.write_text(text.replace("bandwidth: 50,", "bandwidth: 25,"))
    assert prepare_system({"system": str(system)}, 8).dimensions[0].bandwidth == 25


def test_systems_of_the_same_planning_inputs_share_a_planner(tmp_path):
    copy = tmp_path / "system.yaml"
    copy.write_text(SYSTEM.read_text())
    here = prepare_system({"system": str(SYSTEM)}, 8)
    assert planner_for(here) is planner_for(prepare_system({"system": str(SYSTEM)}, 8))
    assert planner_for(here) is not planner_for(prepare_system({"system": str(copy)}, 8))
    slower = tmp_path / "slower.yaml"
    slower.write_text(SYSTEM.read_text().replace("bandwidth: 50,", "bandwidth: 25,"))
    plan = planner_for(prepare_system({"system": str(slower)}, 8)).plan("AR", 1 << 20, None, None)
    assert plan.phases[0].cost != planner_for(here).plan("AR", 1 << 20, None, None).phases[0].cost


def test_the_least_recently_used_programs_go_past_the_byte_bound(tmp_path, monkeypatch):
    from chakra_simpy import loading

    _write("dlrm_like", tmp_path)
    ts = open_traceset(str(tmp_path))
    sd = prepare_system({"system": str(SYSTEM)}, 8)
    monkeypatch.setattr(loading, "KEPT_BYTES", 2 * Path(ts[0].file).stat().st_size)  # two ranks' files
    p0, p1, p2 = (program_of(ts[r], sd, False, None) for r in range(3))
    assert program_of(ts[2], sd, False, None) is p2 and program_of(ts[1], sd, False, None) is p1
    again = program_of(ts[0], sd, False, None)
    assert again is not p0 and again.rank == 0 and len(again) == len(p0)
    assert program_of(ts[1], sd, False, None) is p1 and program_of(ts[2], sd, False, None) is not p2


def test_the_store_drops_the_least_recently_used_past_its_bound():
    from chakra_simpy.lru import LruStore

    store: LruStore[str] = LruStore()
    store.put("a", "A", bound=10, size=4)
    store.put("b", "B", bound=10, size=4)
    assert store.get("a") == "A"  # now the most recently used
    store.put("c", "C", bound=10, size=4)  # 12 > 10: "b" goes
    assert (store.get("a"), store.get("b"), store.get("c")) == ("A", None, "C")
    made = []
    assert store.get_or_make("c", lambda: made.append(1) or "other", bound=10) == "C" and not made
    assert store.get_or_make("d", lambda: "D", bound=8) == "D"  # 4 + 4 + 1 > 8: "a" goes
    assert (store.get("a"), store.get("c"), store.get("d")) == (None, "C", "D")
