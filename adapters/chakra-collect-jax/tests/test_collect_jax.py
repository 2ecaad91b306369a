"""collect() on a real jitted step with 4 CPU devices, in a subprocess (XLA_FLAGS must be set
before jax starts its CPU backend)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from chakra_core import CommType, ConfigError, NodeAttrs, NodeType, open_traceset, validate

SCRIPT = """
import json, sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from chakra_collect_jax import collect
mesh = Mesh(np.array(jax.devices()), ("x",))
step = jax.jit(lambda a: jnp.tanh(a).sum(axis=0))
a = jax.device_put(jnp.ones((64, 16)), NamedSharding(mesh, P("x", None)))
got = collect(step, (a,), sys.argv[1], steps=2, warmup=1)
print(json.dumps([str(got.program), str(got.profile), [str(p) for p in got.traces]]))
"""


def test_collect_writes_program_profile_and_ets(tmp_path):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    program, profile, traces = json.loads(run.stdout.strip().splitlines()[-1])
    assert program.endswith("program.hlo.txt") and profile.endswith("profile.xplane.pb")
    assert len(traces) == 4
    ts = open_traceset(tmp_path / "et")
    assert validate(ts) == []
    for r in ts.ranks:
        colls = [NodeAttrs(n) for n in ts[r].nodes() if n.type == NodeType.COMM_COLL_NODE]
        # the column sums of a [64, 16] float32 array sharded by rows: one all-reduce of 16 floats
        assert [(ix.get_int("comm_type"), ix.get_int("comm_size")) for ix in colls] == [(CommType.ALL_REDUCE, 64)]
        assert any(n.duration_micros > 0 for n in ts[r].nodes())
    meta = {a.name: a for a in ts[0].metadata().attr}
    assert meta["profile_steps"].int64_val == 2


@pytest.mark.parametrize("options, convert, message", [
    ({"bogus": 1}, True, "unknown option 'bogus'"),
    ({"step": "last"}, True, "option 'step' wants int"),
    ({"device": "a100"}, True, "option device times compute without a profile"),
    ({"step": -1}, False, "convert=False converts nothing"),
])
def test_bad_options_are_refused_before_anything_runs(tmp_path, options, convert, message):
    """The options are checked before compiling: the step here cannot even be compiled, and the
    output folder is not created."""
    from chakra_collect_jax import collect

    with pytest.raises(ConfigError, match=message):
        collect(lambda a: a, (1.0,), tmp_path / "out", convert=convert, options=options)
    assert not (tmp_path / "out").exists()
