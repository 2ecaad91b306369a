"""Collectives of the recorded shard_map step (record_shard_map.py): kinds, sizes, groups, peers.

Each of the 4 devices holds A[N/4, F] float32 (N=32, F=16), so every per-device buffer is
8 x 16 x 4 = 512 bytes; the sizes below are computed from those shapes.
"""

from __future__ import annotations

from chakra_core import CommType, NodeType, load_traces, validate

N, F, DEVICES, F32 = 32, 16, 4, 4
BLOCK = N // DEVICES * F * F32


def test_collective_kinds_and_sizes(jax_convert, comm_nodes):
    ts = jax_convert("shard_map")
    assert ts.ranks == list(range(DEVICES))
    expected = sorted([
        (CommType.REDUCE_SCATTER, BLOCK),          # the full input
        (CommType.ALL_REDUCE, 2 * BLOCK),          # psum and pmean: one variadic all-reduce, bytes summed
        (CommType.ALL_GATHER, BLOCK // DEVICES),   # the per-rank input shard (the scattered block)
        (CommType.ALL_TO_ALL, BLOCK),              # the whole send buffer (4 tuple operands)
    ])
    for r in ts.ranks:
        colls = [(ix.get_int("comm_type"), ix.get_int("comm_size")) for n, ix in comm_nodes(ts[r])
                 if n.type == NodeType.COMM_COLL_NODE]
        assert sorted(colls) == expected


def test_added_replicas_keep_every_collective(jax_convert, comm_nodes):
    """devices=8: two replicas of the 4-partition program; the groups that use global device ids
    (flattened) repeat in the second, so devices 4-7 run the same collectives among themselves."""
    ts = jax_convert("shard_map", devices=8)
    expected = sorted([(CommType.REDUCE_SCATTER, BLOCK), (CommType.ALL_REDUCE, 2 * BLOCK),
                       (CommType.ALL_GATHER, BLOCK // DEVICES), (CommType.ALL_TO_ALL, BLOCK)])
    for r in ts.ranks:
        colls = [(ix.get_int("comm_type"), ix.get_int("comm_size"), ts.group_members(ix.get_str("pg_name")))
                 for n, ix in comm_nodes(ts[r]) if n.type == NodeType.COMM_COLL_NODE]
        copy = list(range(r // DEVICES * DEVICES, r // DEVICES * DEVICES + DEVICES))
        assert sorted(c[:2] for c in colls) == expected
        assert all(c[2] == copy for c in colls)


def test_ragged_all_to_all_sends_its_input_only(jax_data, comm_nodes):
    """record_ragged.py: ragged-all-to-all(input f32[64, 8], output f32[128, 8], four s32[4]
    offset and size arrays) on 4 devices: the send buffer is the input, 64 x 8 x 4 bytes."""
    ts = load_traces(str(jax_data / "ragged" / "program.hlo.txt"), format="jax")
    assert ts.ranks == list(range(DEVICES))
    for r in ts.ranks:
        assert [(ix.get_int("comm_type"), ix.get_int("comm_size"), ts.group_members(ix.get_str("pg_name")))
                for _, ix in comm_nodes(ts[r])] == [(CommType.ALL_TO_ALL, 64 * 8 * F32, [0, 1, 2, 3])]


def test_groups_hold_every_device(jax_convert, comm_nodes):
    ts = jax_convert("shard_map")
    for r in ts.ranks:
        for n, ix in comm_nodes(ts[r]):
            if n.type == NodeType.COMM_COLL_NODE:
                assert ts.group_members(ix.get_str("pg_name")) == [0, 1, 2, 3]
                assert ix.get_str("pg_name") in ts.process_groups


def test_permutes_are_send_recv_pairs(jax_convert, comm_nodes):
    ts = jax_convert("shard_map")
    ring = {d: ((d + 1) % DEVICES, (d - 1) % DEVICES) for d in range(DEVICES)}
    half_targets = {0: 2, 1: 3}
    half_sources = {2: 0, 3: 1}
    for r in ts.ranks:
        sends = [(ix.get_int("comm_dst"), ix.get_int("comm_size")) for n, ix in comm_nodes(ts[r])
                 if n.type == NodeType.COMM_SEND_NODE]
        recvs = [(ix.get_int("comm_src"), ix.get_int("comm_size")) for n, ix in comm_nodes(ts[r])
                 if n.type == NodeType.COMM_RECV_NODE]
        want_sends = [(ring[r][0], BLOCK)] + ([(half_targets[r], BLOCK)] if r in half_targets else [])
        want_recvs = [(ring[r][1], BLOCK)] + ([(half_sources[r], BLOCK)] if r in half_sources else [])
        assert sorted(sends) == sorted(want_sends)
        assert sorted(recvs) == sorted(want_recvs)
        for n, ix in comm_nodes(ts[r]):
            if n.type == NodeType.COMM_SEND_NODE:
                assert ix.get_int("comm_src") == r
            if n.type == NodeType.COMM_RECV_NODE:
                assert ix.get_int("comm_dst") == r


def test_users_of_a_skipped_permute_depend_on_its_inputs(jax_convert):
    ts = jax_convert("shard_map")
    for r in ts.ranks:
        nodes = list(ts[r].nodes())
        ids = {n.id for n in nodes}
        for n in nodes:
            assert set(n.data_deps) <= ids and set(n.ctrl_deps) <= ids
    assert validate(ts) == []


def test_mlp_groups_follow_the_mesh(jax_convert, comm_nodes):
    """2x2 mesh (data, model), device = 2 * data + model; B=16, D=32, H=64 float32."""
    b, d, h = 16, 32, 64
    ts = jax_convert("mlp")
    model_group = {r: sorted({r, r ^ 1}) for r in range(4)}
    data_group = {r: sorted({r, r ^ 2}) for r in range(4)}
    for r in ts.ranks:
        colls = [(ix.get_int("comm_type"), ix.get_int("comm_size"), ts.group_members(ix.get_str("pg_name")))
                 for n, ix in comm_nodes(ts[r])]
        forward = (b // 2) * d * F32                        # partial sums of h @ w2 over the model axis
        grads = (d * h // 2) * F32 * 2 + F32                # dw1 and dw2 shards and the loss, one tuple
        assert colls == [(CommType.ALL_REDUCE, forward, model_group[r]),
                         (CommType.ALL_REDUCE, grads, data_group[r])]


def test_mesh8_groups_in_the_mesh_axes_form(jax_convert, comm_nodes):
    """2x4 mesh (d, m), device = 4 * d + m: partial sums over d, then the row sum over m."""
    ts = jax_convert("mesh8")
    assert ts.ranks == list(range(8))
    for r in ts.ranks:
        groups = [ts.group_members(ix.get_str("pg_name")) for n, ix in comm_nodes(ts[r])]
        over_d = sorted({r % 4, r % 4 + 4})
        over_m = [4 * (r // 4) + m for m in range(4)]
        assert groups == [over_d, over_m]
    assert validate(ts) == []


def test_iota_form_gives_the_same_groups(jax_data, tmp_path, comm_nodes):
    """This jaxlib prints explicit and mesh-axes groups; the iota form (what other XLA versions
    and GPU/TPU dumps print) is made here by rewriting the recorded program's two groups into
    it, so the fixture is the recorded program with only the group syntax changed."""
    from chakra_core import load_traces

    text = (jax_data / "mesh8" / "program.hlo.txt").read_text()
    explicit = "replica_groups={{0,4},{1,5},{2,6},{3,7}}"
    mesh = "replica_groups=mesh['axis_0'=4,'axis_1'=1,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_0'}"
    assert explicit in text and mesh in text
    text = text.replace(explicit, "replica_groups=[4,2]<=[2,4]T(1,0)").replace(mesh, "replica_groups=[2,4]<=[8]")
    path = tmp_path / "iota.hlo.txt"
    path.write_text(text)
    iota = load_traces(str(path), format="jax")
    recorded = load_traces(str(jax_data / "mesh8" / "program.hlo.txt"), format="jax")
    for r in range(8):
        got = [iota.group_members(ix.get_str("pg_name")) for n, ix in comm_nodes(iota[r])]
        want = [recorded.group_members(ix.get_str("pg_name")) for n, ix in comm_nodes(recorded[r])]
        assert got == want == [sorted({r % 4, r % 4 + 4}), [4 * (r // 4) + m for m in range(4)]]
