"""Graph rules: folding, schedule stream, async spans, while unrolling, FLOPs, both program inputs."""

from __future__ import annotations

import gzip

import pytest

from chakra_core import (
    CommType,
    ConfigError,
    NodeAttrs,
    NodeType,
    TraceFormatError,
    detect_format,
    load_traces,
    validate,
)

F32 = 4


def _by_name(rank):
    return {n.name: n for n in rank.nodes()}


def _reaches(rank, source_id, target_id):
    """True when ``target_id`` waits (through data or control deps) on ``source_id``."""
    nodes = {n.id: n for n in rank.nodes()}
    seen, pending = set(), [target_id]
    while pending:
        n = nodes[pending.pop()]
        for d in list(n.data_deps) + list(n.ctrl_deps):
            if d == source_id:
                return True
            if d not in seen:
                seen.add(d)
                pending.append(d)
    return False


def test_async_pairs_are_one_node_overlapping_the_compute_between(jax_data):
    ts = load_traces(str(jax_data / "handmade" / "async.hlo.txt"), format="jax")
    assert ts.ranks == [0, 1, 2, 3]
    for r in ts.ranks:
        rank = ts[r]
        nodes = _by_name(rank)
        assert "ard" not in nodes and "agd" not in nodes and "rsd" not in nodes
        ar, ag, rs = NodeAttrs(nodes["ars"]), NodeAttrs(nodes["ags"]), NodeAttrs(nodes["rss"])
        assert (ar.get_int("comm_type"), ar.get_int("comm_size")) == (CommType.ALL_REDUCE, 64 * F32)
        assert (ag.get_int("comm_type"), ag.get_int("comm_size")) == (CommType.ALL_GATHER, 32 * F32)
        assert (rs.get_int("comm_type"), rs.get_int("comm_size")) == (CommType.REDUCE_SCATTER, 64 * F32)
        assert ts.group_members(ar.get_str("pg_name")) == sorted({r, r ^ 1})
        assert ts.group_members(ag.get_str("pg_name")) == [0, 1, 2, 3]
        send, recv = nodes["cps:send"], nodes["cps:recv"]
        assert NodeAttrs(send).get_int("comm_dst") == r ^ 1 and NodeAttrs(recv).get_int("comm_src") == r ^ 1
        # compute scheduled between a start and its done does not wait for the collective ...
        assert not _reaches(rank, nodes["ars"].id, nodes["f1"].id)
        assert not _reaches(rank, nodes["ags"].id, nodes["f2"].id)
        # ... and what comes after the done does
        assert _reaches(rank, nodes["ars"].id, nodes["f2"].id)
        assert _reaches(rank, nodes["ags"].id, nodes["sum2"].id)
        assert _reaches(rank, nodes["rss"].id, nodes["sum2"].id)
        assert _reaches(rank, recv.id, nodes["sum2"].id)
    assert validate(ts) == []


def test_schedule_off_keeps_data_dependencies_only(jax_data):
    ts = load_traces(str(jax_data / "handmade" / "async.hlo.txt"), format="jax", options={"schedule": False})
    nodes = _by_name(ts[0])
    assert all(not n.ctrl_deps for n in nodes.values())
    assert list(nodes["sum2"].data_deps) == [nodes["cps:recv"].id, nodes["f2"].id]


def test_unknown_instruction_is_a_compute_node_with_a_note(jax_data, tmp_path):
    text = (jax_data / "handmade" / "async.hlo.txt").read_text()
    text = text.replace("%sum2 = f32[64]{0} add(%cpd, %f2)", "%sum2 = f32[64]{0} brand-new-op(%cpd, %f2)")
    path = tmp_path / "unknown.hlo.txt"
    path.write_text(text)
    node = _by_name(load_traces(str(path), format="jax")[0])["sum2"]
    assert node.type == NodeType.COMP_NODE
    assert "brand-new-op" in NodeAttrs(node).get_str("note")


def test_scan_is_unrolled_by_its_trip_count(jax_convert):
    """L=6 layers; x [B, D] over data, ws [L, D, D] over model on its last dimension (B=16, D=32)."""
    layers, b, d = 6, 16, 32
    ts = jax_convert("scan")
    for r in ts.ranks:
        gathers = [n for n in ts[r].nodes() if n.type == NodeType.COMM_COLL_NODE and "all-gather" in n.name]
        assert [n.name for n in gathers] == [f"while.8[{i}]/all-gather" for i in range(layers)]
        for n in gathers:
            ix = NodeAttrs(n)
            assert ix.get_int("comm_type") == CommType.ALL_GATHER
            assert ix.get_int("comm_size") == (b // 2) * (d // 2) * F32
            assert ts.group_members(ix.get_str("pg_name")) == sorted({r, r ^ 1})
        dots = [NodeAttrs(n).get_int("num_ops") for n in ts[r].nodes() if n.name.endswith("/ynn_fusion")]
        assert dots == [2 * (b // 2) * (d // 2) * d] * layers
    assert validate(ts) == []


def test_long_loop_is_one_summed_node(jax_convert):
    unrolled = jax_convert("scan")
    summed = jax_convert("scan", unroll_limit=3)
    nodes = _by_name(summed[0])
    loop = nodes["while.8"]
    assert "unroll_limit=3" in NodeAttrs(loop).get_str("note")
    assert not any("[" in name for name in nodes)
    body_flops = sum(NodeAttrs(n).get_int("num_ops", 0) for n in unrolled[0].nodes() if n.name.startswith("while.8["))
    assert NodeAttrs(loop).get_int("num_ops") == body_flops
    assert validate(summed) == []


def test_mlp_flops_from_shapes(jax_convert):
    """Every matmul of the MLP step on one device is [8 x 32] by [32 x 32]: 2 * 8 * 32 * 32 FLOPs."""
    nodes = _by_name(jax_convert("mlp")[0])
    for name in ("ynn_fusion.2", "ynn_fusion.1", "ynn_fusion", "dot.4", "dot.3"):
        assert NodeAttrs(nodes[name]).get_int("num_ops") == 2 * 8 * 32 * 32
    # folded away: parameters, constants, get-tuple-element, tuple
    assert not any(name.startswith(("param", "constant", "get-tuple-element", "tuple")) for name in nodes)
    # tuple elements are tracked: each update depends on its own gradient's all-reduce only
    assert list(nodes["copy_subtract_fusion"].data_deps) == [nodes["all-reduce.4"].id]


def test_hlo_proto_converts_like_the_text(jax_data):
    text = load_traces(str(jax_data / "mlp" / "program.hlo.txt"), format="jax")
    proto = load_traces(str(jax_data / "mlp" / "program.hlo.pb"), format="jax")
    assert proto.ranks == text.ranks == [0, 1, 2, 3]
    assert proto.process_groups == text.process_groups
    for r in text.ranks:
        assert list(proto[r].nodes()) == list(text[r].nodes())


def test_detection(jax_data):
    d = jax_data / "shard_map"
    assert detect_format([str(d / "program.hlo.txt")]) == "jax"
    assert detect_format([str(d / "program.hlo.txt"), str(d / "profile.xplane.pb")]) == "jax"
    assert detect_format([str(jax_data / "mlp" / "program.hlo.pb")]) == "jax"


def test_a_gzipped_program_is_detected_and_converts_like_the_text(jax_data, tmp_path):
    # a .hlo.txt.gz used to convert only with format="jax": detection read its compressed bytes
    gz = tmp_path / "program.hlo.txt.gz"
    gz.write_bytes(gzip.compress((jax_data / "shard_map" / "program.hlo.txt").read_bytes()))
    assert detect_format([str(gz)]) == "jax"
    text = load_traces(str(jax_data / "shard_map" / "program.hlo.txt"), format="jax")
    packed = load_traces(str(gz))
    assert packed.ranks == text.ranks and len(text.ranks) > 1
    assert all(list(packed[r].nodes()) == list(text[r].nodes()) for r in text.ranks)


def test_a_folder_of_two_programs_names_them(jax_data):
    with pytest.raises(TraceFormatError, match=r"got 2 programs \(program.hlo.pb, program.hlo.txt\)") as err:
        load_traces(str(jax_data / "mlp"), format="jax")
    assert err.value.where == str(jax_data / "mlp")


def test_devices_override(jax_convert, jax_data):
    ts = jax_convert("shard_map", devices=8)   # two replicas of the 4-partition program
    assert ts.ranks == list(range(8))
    assert validate(ts) == []
    for devices in (2, 6):   # not a whole number of copies of the 4 partitions
        with pytest.raises(ConfigError, match=f"devices={devices} is not a multiple of the module's 4 devices "
                           r"\(replica_count=1 x num_partitions=4\)"):
            jax_convert("shard_map", devices=devices)
    # torch_xla's GPT-2 of 2 replicas: 1 or 3 devices is no whole number of copies either (one
    # was taken as fewer replicas, 3 as one copy and a half)
    gpt2 = jax_data / "public" / "torch_xla_neuron" / "gpt2_tp2.hlo.txt"
    for devices in (1, 3):
        with pytest.raises(ConfigError, match=r"of the module's 2 devices \(replica_count=2 x num_partitions=1\)"):
            load_traces(str(gpt2), format="jax", options={"devices": devices})
    assert load_traces(str(gpt2), format="jax", options={"devices": 4}).ranks == [0, 1, 2, 3]


def test_send_recv_pairs_match_by_channel(jax_data):
    """Device i sends 64 floats to i + 1: device 0 only sends, device 3 only receives."""
    ts = load_traces(str(jax_data / "handmade" / "p2p.hlo.txt"), format="jax")
    for r in ts.ranks:
        nodes = _by_name(ts[r])
        sends = [NodeAttrs(n) for n in nodes.values() if n.type == NodeType.COMM_SEND_NODE]
        recvs = [NodeAttrs(n) for n in nodes.values() if n.type == NodeType.COMM_RECV_NODE]
        assert [(ix.get_int("comm_src"), ix.get_int("comm_dst"), ix.get_int("comm_tag"), ix.get_int("comm_size"))
                for ix in sends] == ([(r, r + 1, 5, 64 * F32)] if r < 3 else [])
        assert [(ix.get_int("comm_src"), ix.get_int("comm_dst"), ix.get_int("comm_tag"), ix.get_int("comm_size"))
                for ix in recvs] == ([(r - 1, r, 5, 64 * F32)] if r > 0 else [])
        assert not _reaches(ts[r], nodes["send"].id, nodes["busy"].id) if r < 3 else True
        if r > 0:
            assert _reaches(ts[r], nodes["recv"].id, nodes["sum"].id)
    assert validate(ts) == []


def test_conditional_and_unknown_trip_count_are_summarised(jax_data, jax_convert):
    """record_control.py: x [8, 32] per device; the cond's branches are x @ w (w [32, 32]) and
    tanh(x); the fori_loop's bound is a runtime argument, so its while has no trip count."""
    import gzip
    import json

    ts = jax_convert("control", "profile.trace.json.gz")
    nodes = _by_name(ts[0])
    cond = NodeAttrs(nodes["conditional.1.clone"])
    assert "most expensive of its 2 branches" in cond.get_str("note")
    assert cond.get_int("num_ops") == 2 * 8 * 32 * 32          # the matmul branch, not tanh's 8 * 32
    loop = NodeAttrs(nodes["while.9"])
    assert "trip count unknown" in loop.get_str("note")
    assert loop.get_int("num_ops") == 8 * 32 * 2 + 1            # one iteration: sin and multiply per element, the counter
    with gzip.open(jax_data / "control" / "profile.trace.json.gz", "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if (e.get("args") or {}).get("hlo_op") == "while.9"
                  and e["args"].get("device_ordinal") == "0"]
    assert nodes["while.9"].duration_micros == max(1, int(sum(e["dur"] for e in events) / len(events) + 0.5))
    assert [ts.group_members(NodeAttrs(n).get_str("pg_name")) for n in nodes.values()
            if n.type == NodeType.COMM_COLL_NODE] == [[0, 1]]
    assert validate(ts) == []


def _notes(ts):
    return [a.string_val for a in ts[0].metadata().attr if a.name == "note"]


def test_what_summarised_loops_hide_is_said_once(jax_convert):
    """scan with unroll_limit=0: its while (6 layers, each all-gathering an f32[8, 16] shard) is one
    compute node, so 6 x 8 x 16 x 4 bytes of collectives are not communication; control's
    fori_loop has no trip count, so it is costed as one iteration. Each is one line of the notes,
    printed as a warning."""
    with pytest.warns(UserWarning, match="1 while loop summarised"):
        scan = jax_convert("scan", unroll_limit=0)
    assert ("1 while loop summarised (unroll_limit=0) as 1 compute node; "
            f"{6 * 8 * 16 * 4:,} bytes of collectives in their bodies not emitted as communication nodes") in _notes(scan)
    control = jax_convert("control")
    assert ("1 while loop summarised (unroll_limit=1024) as 1 compute node; "
            "1 loop of unknown trip count costed as one iteration") in _notes(control)
    assert not any("summarised" in n for n in _notes(jax_convert("scan")))


def test_a_summarised_loop_counts_the_branches_and_loops_of_its_body(jax_convert):
    """record_scan_cond.py: a scan of 3 steps whose body picks c @ c or -c (lax.cond) and then runs
    4 steps of tanh(c @ w), on [64, 64]. Summarised (unroll_limit=2), the scan costs 3 x (the
    matmul branch + 4 x (matmul + tanh + the counter's add) + its own counter's add), the same as
    the nodes of the unrolled program together (their bytes too)."""
    def totals(ts):
        attrs = [NodeAttrs(n) for n in ts[0].nodes() if "while" in n.name]
        return sum(a.get_int("num_ops", 0) for a in attrs), sum(a.get_int("tensor_size", 0) for a in attrs)

    mm = 2 * 64 ** 3
    summarised, unrolled = jax_convert("scan_cond", unroll_limit=2), jax_convert("scan_cond")
    loop = NodeAttrs(_by_name(summarised[0])["while.17"])
    assert "trip count 3 is above unroll_limit=2" in loop.get_str("note")
    assert loop.get_int("num_ops") == 3 * (mm + 4 * (mm + 64 * 64 + 1) + 1)
    assert totals(summarised) == totals(unrolled)
