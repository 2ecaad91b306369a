"""Record a step with data-dependent control flow (2 CPU devices): ``lax.cond`` and a
``fori_loop`` whose trip count is a runtime argument.

x: [R, C] sharded by rows. The cond picks ``x @ w`` (w: [C, C]) or ``tanh(x)``; the loop runs
``n`` times (n given at run time, so XLA knows no trip count); a psum ends the step.
Writes tests/data/control/.
"""

from _common import record, use_devices

R, C = 16, 32

if __name__ == "__main__":
    use_devices(2)
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("x",))

    def body(x, w, n):
        y = jax.lax.cond(x.sum() > 0, lambda a: a @ w, jnp.tanh, x)
        y = jax.lax.fori_loop(0, n[0], lambda i, a: jnp.sin(a) * 2.0, y)
        return jax.lax.psum(y, "x")

    step = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P(), P()), out_specs=P()))
    record("control", step, (jnp.ones((R, C)), jnp.ones((C, C)), jnp.array([3], dtype=jnp.int32)))
