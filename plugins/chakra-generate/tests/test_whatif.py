"""The what-if transforms on recorded traces (chakra-pytorch's 2-rank DDP recording) and on
generated sets, checked against what the issue's closed forms and the generator itself say."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import chakra_core as chakra
from chakra_core import CommType, NodeType, get_attr

DATA = Path(__file__).resolve().parents[2] / "chakra-pytorch" / "tests" / "data"
TINY = {"layers": 4, "hidden": 64, "heads": 4, "seq": 32, "vocab": 128, "micro_batches": 4}


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    """The recorded 2-rank DDP step as a .et set."""
    out = tmp_path_factory.mktemp("ddp") / "et"
    chakra.convert(str(DATA / "ddp"), f"{out}/")
    return out


def collectives(traces, rank):
    out = []
    for n in traces[rank].nodes():
        if n.type == NodeType.COMM_COLL_NODE:
            out.append((CommType(get_attr(n, "comm_type")).name, get_attr(n, "comm_size"),
                        tuple(traces.group_members(get_attr(n, "pg_name")))))
    return out


def peers(traces, rank):
    return [(n.type, get_attr(n, "comm_dst" if n.type == NodeType.COMM_SEND_NODE else "comm_src"),
             get_attr(n, "comm_size"), get_attr(n, "comm_tag"))
            for n in traces[rank].nodes() if n.type in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)]


def test_resize_dp_of_the_ddp_recording_to_8_ranks(ddp, tmp_path):
    before = chakra.open_traceset(str(ddp))
    after = chakra.transform(str(ddp), "resize_dp", {"dp": 8}, output=f"{tmp_path}/dp8/")
    assert len(after) == 8
    report = chakra.validate(after)
    assert report.ok, report.to_dict()["findings"][:3]
    original = [(t, s) for t, s, _ in collectives(before, 0) if t == "ALL_REDUCE"]
    assert original  # the DDP gradient all-reduces
    for r in range(8):
        grads = [(t, s, m) for t, s, m in collectives(after, r) if t == "ALL_REDUCE"]
        assert [(t, s) for t, s, _ in grads] == original  # the recorded sizes
        assert {m for _, _, m in grads} == {tuple(range(8))}  # 8 members each
        meta = {a.name: a.int64_val for a in after[r].metadata().attr if a.name == "rank"}
        assert meta == {"rank": r}
    sim = chakra.simulate(after)
    assert len(sim.ranks) == 8 and sim.summary["finish_ns"] > 0


@pytest.mark.parametrize("start,target,extra", [
    (2, 4, {"tp": 2, "pp": 2}),
    (4, 2, {"tp": 2, "pp": 2}),
    (2, 6, {"tp": 2, "pp": 2, "cp": 2, "zero": 0}),
    (4, 8, {"tp": 2, "ep": 2, "experts": 4}),
    # the expert-gradient groups (and at dp 1 the gradient groups) are left with one member,
    # where the generator makes no group and issues no collective: dropped
    (4, 2, {"tp": 2, "ep": 2, "experts": 4, "moe_every": 2}),
    (4, 2, {"ep": 2, "experts": 4, "zero": 3}),
    (4, 1, {"tp": 2}),
    # an all-gather's size is its per-rank shard: ZeRO's parameter gathers over dp (dp * cp ranks)
    # and edp are resharded (the gathered bytes split over the new group)
    (2, 4, {"tp": 2, "pp": 2, "zero": 1}),
    (4, 2, {"tp": 2, "zero": 2}),
    (2, 8, {"tp": 2, "cp": 2, "sp": True, "zero": 1}),
    (2, 4, {"cp": 2, "zero": 3}),
    (4, 8, {"ep": 2, "experts": 4, "zero": 2}),
    (2, 4, {"cp": 2, "ep": 2, "experts": 4, "zero": 3}),
])
def test_resize_dp_of_a_generated_set_equals_generating_that_width(start, target, extra):
    resized = chakra.transform(chakra.generate("transformer", {**TINY, **extra, "dp": start}), "resize_dp",
                               {"dp": target})
    direct = chakra.generate("transformer", {**TINY, **extra, "dp": target})
    assert len(resized) == len(direct)
    assert sorted(resized.process_groups.values()) == sorted(direct.process_groups.values())
    for r in direct.ranks:
        assert collectives(resized, r) == collectives(direct, r)
        assert peers(resized, r) == peers(direct, r)
        assert _groups_of(resized, r) == _groups_of(direct, r)
    assert chakra.validate(resized).ok


def test_resize_dp_reshards_from_the_padded_gather():
    # ZeRO-1 at dp 3: each parameter gather's shard is ceil(G / 3), so the gathered bytes a resize
    # can see are 3 shards, up to 2 bytes of padding over G; at dp 2 the shard is ceil(3 ceil(G/3) / 2),
    # at most ceil(3 / 2) = 2 bytes over generating dp 2 directly, ceil(G / 2)
    options = {**TINY, "layers": 2, "zero": 1, "bucket_bytes": 1}
    g3 = [s for t, s, _ in collectives(chakra.generate("transformer", {**options, "dp": 3}), 0) if t == "ALL_GATHER"]
    resized = chakra.transform(chakra.generate("transformer", {**options, "dp": 3}), "resize_dp", {"dp": 2})
    direct = chakra.generate("transformer", {**options, "dp": 2})
    got = [s for t, s, _ in collectives(resized, 0) if t == "ALL_GATHER"]
    want = [s for t, s, _ in collectives(direct, 0) if t == "ALL_GATHER"]
    assert got == [-(-3 * s // 2) for s in g3]
    assert len(got) == len(want) and all(0 <= a - b <= 2 for a, b in zip(got, want))
    assert got != want  # some gather was padded at dp 3


def test_resize_dp_reshards_a_recorded_all_gather(tmp_path):
    # the every-collective recording (2 gloo ranks, all on the world group): at 4 ranks an
    # all-gather keeps its gathered bytes, so each rank's shard halves; the rest keep their sizes
    src = tmp_path / "coll"
    chakra.convert(str(DATA / "collectives"), f"{src}/")
    before = collectives(chakra.open_traceset(str(src)), 0)
    after = collectives(chakra.transform(str(src), "resize_dp", {"dp": 4}), 0)
    assert [t for t, _, _ in after] == [t for t, _, _ in before] and "ALL_GATHER" in {t for t, _, _ in before}
    assert [s for _, s, _ in after] == [-(-s * 2 // 4) if t == "ALL_GATHER" else s for t, s, _ in before]


def _groups_of(traces, rank):
    """The members of each kind of group a generated rank's metadata names."""
    import json

    named = [json.loads(a.string_val) for a in traces[rank].metadata().attr if a.name == "parallel_groups"]
    return [{kind: traces.group_members(name) for kind, name in groups.items()} for groups in named]


def test_resize_dp_of_the_p2p_recording_writes_own_endpoints(tmp_path):
    # the every-collective recording (2 gloo ranks) sends and receives between its two ranks,
    # recording both endpoints; at dp=4 ranks 2 and 3 are copies of 0 and 1
    src = tmp_path / "coll"
    chakra.convert(str(DATA / "collectives"), f"{src}/")
    after = chakra.transform(str(src), "resize_dp", {"dp": 4}, output=f"{tmp_path}/dp4/")
    for r in range(4):
        ends = [(n.type, get_attr(n, "comm_src"), get_attr(n, "comm_dst")) for n in after[r].nodes()
                if n.type in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)]
        peer = r ^ 1
        assert ends and all((s, d) == ((r, peer) if t == NodeType.COMM_SEND_NODE else (peer, r)) for t, s, d in ends)
    assert chakra.validate(after).ok

    def old_bug(rank):  # the source rank's own endpoint kept, as resize_dp once wrote it
        nodes = list(after[rank].nodes())
        for n in nodes:
            if n.type in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE):
                chakra.set_attr(n, "comm_src" if n.type == NodeType.COMM_SEND_NODE else "comm_dst", rank % 2)
        return chakra.MemoryRank(rank, after[rank].metadata(), nodes)
    buggy = chakra.TraceSet([old_bug(r) for r in range(4)], process_groups=after.process_groups)
    found = {(f.rule, f.rank) for f in chakra.validate(buggy) if f.severity == "error"}
    assert found == {("own-endpoint", 2), ("own-endpoint", 3)}


def test_resize_dp_of_the_pipeline_dp_recording_keeps_its_stages(tmp_path):
    # 2 stages x 2 replicas on 4 gloo ranks: gradient groups {0, 2} and {1, 3}, sends 0 -> 1 and
    # 2 -> 3.  dp=4 is 4 replicas of the 2 stages (8 ranks), not 4 ranks (one rank a replica)
    src = tmp_path / "pdp"
    chakra.convert(str(DATA / "pipeline_dp"), f"{src}/")
    before = chakra.open_traceset(str(src))
    assert sorted(before.process_groups.values()) == [[0, 2], [1, 3]]
    with pytest.warns(UserWarning, match="taken as 2 data-parallel replicas of 2 ranks"):
        after = chakra.transform(str(src), "resize_dp", {"dp": 4}, output=f"{tmp_path}/dp4/")
    assert len(after) == 8
    assert sorted(after.process_groups.values()) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    for r in range(8):
        stage, old = r % 2, r % 4  # the source: the same stage of replica r // 2 mod 2
        assert [(t, s) for t, s, _ in collectives(after, r)] == [(t, s) for t, s, _ in collectives(before, old)]
        assert {m for _, _, m in collectives(after, r)} == {(0, 2, 4, 6) if stage == 0 else (1, 3, 5, 7)}
        sends = [p for t, p, _, _ in peers(after, r) if t == NodeType.COMM_SEND_NODE]
        assert sends and set(sends) == {r + 1 if stage == 0 else r - 1}  # its own replica's other stage
    assert chakra.validate(after).ok
    # one rank a replica, as before, when asked
    plain = chakra.transform(str(src), "resize_dp", {"dp": 8, "replica_ranks": 1})
    assert len(plain) == 8 and sorted(plain.process_groups.values()) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    with pytest.raises(chakra.ConfigError, match="replica_ranks=3 does not divide the set's 4 ranks"):
        chakra.transform(str(src), "resize_dp", {"dp": 2, "replica_ranks": 3})


def _pg_init_groups(rt):
    """The groups of a rank's ``## process_group:init ##`` node, read as PyTorch writes it (a
    Python list holding one JSON string): ``{pg_name: (ranks, pg_desc)}``."""
    import ast
    import json

    node = next(n for n in rt.nodes() if n.name == chakra.PG_INIT_NAME)
    assert node.inputs.types == "['String']"
    return {d["pg_name"]: (d["ranks"], d.get("pg_desc")) for d in json.loads(ast.literal_eval(node.inputs.values)[0])}


def test_resize_dp_writes_the_process_group_node_as_pytorch_does(tmp_path):
    # the 2-stage x 2-replica recording: its node lists the default group "0" (with a pg_desc)
    # and a gradient group; at dp=4 (8 ranks) it lists "0" over the 8 ranks and the new groups
    src = tmp_path / "pdp"
    chakra.convert(str(DATA / "pipeline_dp"), f"{src}/")
    before = _pg_init_groups(chakra.open_traceset(str(src))[0])
    with pytest.warns(UserWarning, match="replicas"):
        after = chakra.transform(str(src), "resize_dp", {"dp": 4}, output=f"{tmp_path}/dp4/")
    want = {"0": (list(range(8)), before["0"][1]), **{k: (v, None) for k, v in after.process_groups.items()}}
    assert before["0"][1] is not None and len(want) == 3
    assert all(_pg_init_groups(after[r]) == want for r in range(8))


def test_replica_size_from_the_groups():
    from chakra_generate.resize import replica_size

    assert replica_size({"0": [0, 1, 2, 3]}, 4) == 1  # DDP: all ranks
    assert replica_size({"1": [0, 2], "2": [1, 3], "3": [0, 1], "4": [2, 3]}, 4) == 2  # stride-2 classes
    assert replica_size({"1": [0, 3, 6], "2": [1, 4, 7], "3": [2, 5, 8]}, 9) == 3
    assert replica_size({"1": [0, 2]}, 4) == 1  # one class of two is not a partition
    with pytest.raises(chakra.ConfigError, match="replica_ranks=K"):  # mod 2 and mod 4: which is dp?
        replica_size({"a": [0, 2, 4, 6], "b": [1, 3, 5, 7], "c": [0, 4], "d": [1, 5], "e": [2, 6], "f": [3, 7]}, 8)
    with pytest.raises(chakra.ConfigError, match="replica_ranks is for a recording"):
        chakra.transform(chakra.generate("transformer", {**TINY, "dp": 2}), "resize_dp", {"dp": 4, "replica_ranks": 2})


def test_resize_dp_refuses_a_set_without_data_parallelism():
    with pytest.raises(chakra.ConfigError, match="no data parallelism"):
        chakra.transform(chakra.generate("transformer", {**TINY, "tp": 2}), "resize_dp", {"dp": 4})


def test_resize_dp_refuses_a_width_that_breaks_expert_groups():
    traces = chakra.generate("transformer", {**TINY, "dp": 2, "ep": 2, "experts": 2})
    with pytest.raises(chakra.ConfigError, match="not a multiple of 2"):
        chakra.transform(traces, "resize_dp", {"dp": 3})


def _gap(n):
    """An idle gap of the PyTorch input (no compute: only kinds=idle selects it)."""
    return n.name == "[idle]" and get_attr(n, "idle") is True


def test_straggler_multiplies_one_ranks_compute(ddp):
    before = chakra.open_traceset(str(ddp))
    after = chakra.transform(str(ddp), "straggler", {"ranks": [1], "factor": 3})
    for r in (0, 1):
        old = [(n.duration_micros, _gap(n)) for n in before[r].nodes() if n.type == NodeType.COMP_NODE]
        new = [n.duration_micros for n in after[r].nodes() if n.type == NodeType.COMP_NODE]
        assert new == ([max(1, round(d * 3)) if d and not gap else d for d, gap in old] if r == 1
                       else [d for d, _ in old])
    assert sum(gap for _, gap in old) > 10  # the recording's idle gaps, kept as recorded
    slow = chakra.simulate(after).summary["finish_ns"]
    assert slow > chakra.simulate(before).summary["finish_ns"]


def test_straggler_rank_outside_the_set(ddp, tmp_path, chakra_cli):
    status, _, err = chakra_cli("transform", str(ddp), "straggler", "-O", "ranks=5", "-o", f"{tmp_path}/x/")
    assert status == 2 and "rank 5 is not in the set" in err


def test_retime_to_another_device_equals_generating_on_it():
    h100 = chakra.generate("transformer", {**TINY, "hidden": 1024, "heads": 8, "seq": 512, "device": "h100"})
    a100 = chakra.generate("transformer", {**TINY, "hidden": 1024, "heads": 8, "seq": 512, "device": "a100"})
    retimed = chakra.transform(h100, "retime", {"device": "a100"})
    durations = [[n.duration_micros for n in ts[0].nodes()] for ts in (retimed, a100, h100)]
    assert durations[0] == durations[1] != durations[2]


def test_retime_of_a_recording_scales_by_the_peaks(ddp):
    before = chakra.open_traceset(str(ddp))
    after = chakra.transform(str(ddp), "retime", {"device": "h100", "from_device": "a100", "dtype": "fp32"})
    ratio = 19.5 / 66.9
    old = [(n.duration_micros, _gap(n)) for n in before[0].nodes() if n.type == NodeType.COMP_NODE]
    new = [n.duration_micros for n in after[0].nodes() if n.type == NodeType.COMP_NODE]
    # an idle gap is no compute of the device (retime scaled the gaps too, by 66.9/19.5)
    assert new == [max(1, round(d * ratio)) if d and not gap else d for d, gap in old]


def test_retime_warns_of_the_nodes_it_cannot_retime(ddp):
    from chakra_generate.retime import RetimeWarning

    # the recording's CPU operators have no num_ops: without from_device they are kept, and said
    before = chakra.open_traceset(str(ddp))
    work = [n for r in before.ranks for n in before[r].nodes() if n.type == NodeType.COMP_NODE and not _gap(n)]
    assert work and all(get_attr(n, "num_ops") is None for n in work)
    with pytest.warns(RetimeWarning, match=f"retime: {len(work)} selected compute node"):
        after = chakra.transform(str(ddp), "retime", {"device": "a100"})
    assert [n.duration_micros for n in after[0].nodes()] == [n.duration_micros for n in before[0].nodes()]


@pytest.mark.parametrize("kinds", ["communication", "memory", "idle"])
def test_retime_refuses_kinds_it_cannot_retime(ddp, tmp_path, chakra_cli, kinds):
    status, out, err = chakra_cli("transform", str(ddp), "retime", "-O", f"kinds={kinds}", "-o", f"{tmp_path}/x/")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert f"kinds: {kinds!r} has no roofline" in err and not (tmp_path / "x").exists()


def test_idle_gaps_are_selected_by_kind_idle_alone(ddp):
    before = chakra.open_traceset(str(ddp))
    for kinds, gaps, compute in ((["idle"], True, False), (["compute", "idle"], True, True), ([], False, True),
                                 (["accelerator"], False, True), (["compute"], False, True)):
        after = chakra.transform(str(ddp), "scale", {"compute_speedup": 2, "kinds": kinds})
        for old, new in zip(before[0].nodes(), after[0].nodes()):
            if old.type != NodeType.COMP_NODE or old.duration_micros < 2:
                continue
            hit = gaps if _gap(old) else compute and (kinds != ["accelerator"] or not get_attr(old, "is_cpu_op"))
            assert new.duration_micros == (round(old.duration_micros / 2) if hit else old.duration_micros), kinds


def test_scale_selects_by_kind_name_and_rank(ddp):
    before = chakra.open_traceset(str(ddp))
    after = chakra.transform(str(ddp), "scale", {"compute_speedup": 2, "comm_scale": 2, "kinds": ["compute"],
                                                 "names": "^aten::(addmm|mm)$", "ranks": ["1-1"]})
    for r in (0, 1):
        for old, new in zip(before[r].nodes(), after[r].nodes()):
            hit = r == 1 and old.type == NodeType.COMP_NODE and old.name in ("aten::addmm", "aten::mm")
            want = max(1, round(old.duration_micros / 2)) if hit and old.duration_micros else old.duration_micros
            assert new.duration_micros == want, (r, old.name)
            if old.type == NodeType.COMM_COLL_NODE:
                assert get_attr(new, "comm_size") == get_attr(old, "comm_size")  # communication not selected
    assert any(n.name in ("aten::addmm", "aten::mm") for n in before[1].nodes())


def test_scale_communication_only_on_cpu_kind(ddp):
    before = chakra.open_traceset(str(ddp))
    after = chakra.transform(str(ddp), "scale", {"comm_scale": 4, "kinds": ["communication", "cpu"]})
    sizes = [(get_attr(o, "comm_size"), get_attr(n, "comm_size")) for o, n in zip(before[0].nodes(), after[0].nodes())
             if o.type == NodeType.COMM_COLL_NODE]
    assert sizes and all(new == 4 * old for old, new in sizes)  # the recording's collectives are CPU-side (gloo)


@pytest.mark.parametrize("options,message", [
    ({"kinds": ["gpu"]}, "kinds: 'gpu' is not one of"),
    ({"names": "("}, "is not a regular expression"),
    ({"ranks": ["3-1"]}, "is not a rank or an 'a-b' range"),
])
def test_scale_bad_selection(ddp, options, message):
    with pytest.raises(chakra.ConfigError, match=message):
        chakra.transform(str(ddp), "scale", options)


def test_pipeline_generator_then_whatif_transforms(tmp_path):
    import yaml

    pipe = tmp_path / "p.yaml"
    pipe.write_text(yaml.safe_dump({
        "input": {"generator": "transformer", "options": {**TINY, "tp": 2, "dp": 2}},
        "transforms": [{"name": "resize_dp", "options": {"dp": 4}},
                       {"name": "straggler", "options": {"ranks": [0], "factor": 2}}],
        "backends": [{"name": "et", "output": "out/et"}, {"name": "simpy", "output": "out/sim"}],
    }))
    summary = chakra.run_pipeline(pipe)
    sim = summary["backends"][1]["result"]
    assert len(sim["ranks"]) == 8
    stages = [(i["stage"], i["name"]) for i in sim["provenance"]["implementations"]]
    assert stages == [("input", "transformer"), ("transform", "resize_dp"), ("transform", "straggler"),
                      ("backend", "simpy")]
    direct = chakra.generate("transformer", {**TINY, "tp": 2, "dp": 4})
    written = chakra.open_traceset(str(tmp_path / "out/et"))
    for r in (0, 1):
        got = [n.duration_micros for n in written[r].nodes() if n.type == NodeType.COMP_NODE]
        want = [n.duration_micros * (2 if r == 0 else 1) for n in direct[r].nodes() if n.type == NodeType.COMP_NODE]
        assert got == want


@pytest.mark.parametrize("values, said", [
    ("['[{\"pg_name\": \"0\", ']", "bad process-group description: not JSON (line 1, column 19: "),
    ("['[{\"ranks\": [0, 1]}]']", 'bad process-group description: not a list of {"pg_name": NAME, ...} objects'),
])
def test_resize_dp_words_a_bad_process_group_node(tmp_path, values, said):
    # the recording's groups are in its metadata, so only resize_dp reads the node it rewrites;
    # it printed Python's own text ("Expecting property name enclosed in double quotes", "'pg_name'")
    src = tmp_path / "pdp"
    chakra.convert(str(DATA / "pipeline_dp"), f"{src}/")

    def broken(_rank, n):
        if n.name == chakra.PG_INIT_NAME:
            n.inputs.values = values
        return n

    chakra.open_traceset(str(src)).map_nodes(broken).write(tmp_path / "bad" / "t")
    with pytest.raises(chakra.TraceFormatError) as caught, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chakra.transform(str(tmp_path / "bad"), "resize_dp", {"dp": 4}, output=f"{tmp_path}/dp4/")
    assert said in str(caught.value), caught.value
