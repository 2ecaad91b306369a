"""Record a ``lax.ragged_all_to_all`` step over 4 CPU devices: the program as JAX lowers it.

XLA:CPU cannot compile ``ragged-all-to-all`` (its thunk emitter refuses the opcode), so this
script keeps the HLO text of ``jitted.lower(...)`` before compilation (no profile): the
``shard_map`` body is a computation called from the entry, the module header states no device
count, and the collective's ``channel_id`` makes its ids partitions. Per device: input
f32[64, 8], output f32[128, 8] and the four s32[4] offset and size arrays.
Writes tests/data/ragged/program.hlo.txt.
"""

import sys

from _common import DATA, REPO, use_devices

DEVICES, ROWS, COLS = 4, 64, 8

if __name__ == "__main__":
    use_devices(DEVICES)
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("x",))

    def body(x, out, in_offsets, send_sizes, out_offsets, recv_sizes):
        return jax.lax.ragged_all_to_all(x, out, in_offsets, send_sizes, out_offsets, recv_sizes, axis_name="x")

    step = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("x"),) * 6, out_specs=P("x")))
    sizes = jnp.full((DEVICES * DEVICES,), ROWS // DEVICES, dtype=jnp.int32)
    offsets = jnp.tile(jnp.arange(DEVICES, dtype=jnp.int32) * (ROWS // DEVICES), DEVICES)
    args = (jnp.ones((DEVICES * ROWS, COLS)), jnp.zeros((DEVICES * 2 * ROWS, COLS)), offsets, sizes, offsets, sizes)
    out = DATA / "ragged"
    out.mkdir(parents=True, exist_ok=True)
    text = step.lower(*args).as_text(dialect="hlo")
    (out / "program.hlo.txt").write_text(text.replace(f'"{REPO}/', '"'))
    print(f"wrote {out}", file=sys.stderr)
