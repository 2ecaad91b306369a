"""Profile-matched durations: every op the recorded profiles have, on every device.

The expected durations are computed here from the Chrome-trace JSON export of each profile
(read with json and gzip), independently of the converter, which reads the xplane.
"""

from __future__ import annotations

import gzip
import json

import pytest

from chakra_core import ConfigError, NodeType, get_str
from chakra_jax.hlo_text import parse_hlo_text

PROGRAMS = ["mlp", "shard_map", "scan", "mesh8"]


def _json_events(path, module):
    """``{(device, hlo_op): [(run_id, start us, duration us)]}`` of one module."""
    out: dict[tuple[int, str], list[tuple[str, float, float]]] = {}
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    for e in events:
        args = e.get("args") or {}
        if e.get("ph") == "X" and args.get("hlo_module") == module and "hlo_op" in args:
            out.setdefault((int(args["device_ordinal"]), args["hlo_op"]), []).append(
                (args["run_id"], e["ts"], e["dur"]))
    return out


def _us(values):
    return max(1, int(sum(values) / len(values) + 0.5))


def _profiled_op(node):
    return node.name.rsplit("/", 1)[-1].split(":")[0]


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_profiled_op_gets_its_mean_duration(jax_data, jax_convert, name):
    module = parse_hlo_text(jax_data / name / "program.hlo.txt")
    events = _json_events(jax_data / name / "profile.trace.json.gz", module.name)
    ts = jax_convert(name, "profile.xplane.pb")
    opcode = {i.name: i.opcode for c in module.computations.values() for i in c.instructions}
    matched = set()
    for r in ts.ranks:
        for node in ts[r].nodes():
            if node.name == "[idle]":
                continue
            key = (r, _profiled_op(node))
            if key in events:
                assert node.duration_micros == _us([d for _, _, d in events[key]]), (r, node.name)
                matched.add(key)
            else:
                assert node.duration_micros == 0, (r, node.name)
    unmatched = {op for _, op in set(events) - matched}
    # only folded instructions (partition-id) and the while container (whose body ops are matched
    # per iteration) have events without a node
    assert {opcode[op] for op in unmatched} <= {"partition-id", "while"}
    meta = ts[0].metadata()
    assert get_str(meta, "profile_kind") == "xplane"


def test_chrome_trace_json_gives_the_same_durations(jax_convert):
    from_xplane = jax_convert("shard_map", "profile.xplane.pb")
    from_json = jax_convert("shard_map", "profile.trace.json.gz")
    for r in from_xplane.ranks:
        a = [(n.name, n.duration_micros) for n in from_xplane[r].nodes()]
        b = [(n.name, n.duration_micros) for n in from_json[r].nodes()]
        assert a == b
    assert get_str(from_json[0].metadata(), "profile_kind") == "chrome-trace"


def test_collectives_carry_their_measured_duration(jax_data, jax_convert):
    events = _json_events(jax_data / "shard_map" / "profile.trace.json.gz", "jit_body")
    ts = jax_convert("shard_map", "profile.xplane.pb")
    comm = [n for n in ts[2].nodes() if n.type in (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE,
                                                   NodeType.COMM_RECV_NODE)]
    assert comm
    for n in comm:
        assert n.duration_micros == _us([d for _, _, d in events[(2, _profiled_op(n))]])


def test_step_option_picks_one_execution(jax_data, jax_convert):
    events = _json_events(jax_data / "mlp" / "profile.trace.json.gz", "jit_step")
    first_run = min((start, run) for occ in events.values() for run, start, _ in occ)[1]
    ts = jax_convert("mlp", "profile.xplane.pb", step=0)
    for node in ts[1].nodes():
        occ = [d for run, _, d in events.get((1, _profiled_op(node)), []) if run == first_run]
        if occ:
            assert node.duration_micros == _us(occ)
    with pytest.raises(ConfigError, match="step=7"):
        list(jax_convert("mlp", "profile.xplane.pb", step=7)[0].nodes())
