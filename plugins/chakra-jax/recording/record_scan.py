"""Record a step with a lax.scan over layers (4 CPU devices, 2x2 mesh).

ws: [L, D, D] sharded over ``model`` on its last dimension, x: [B, D] sharded over ``data``;
each layer is h = tanh(h @ w). XLA turns the scan into a while loop with known_trip_count L
whose body all-gathers the layer's weight shard. Writes tests/data/scan/.
"""

from _common import record, use_devices

L, B, D = 6, 16, 32

if __name__ == "__main__":
    use_devices(4)
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("data", "model"))

    def layer(h, w):
        return jnp.tanh(h @ w), None

    @jax.jit
    def step(ws, x):
        h, _ = jax.lax.scan(layer, x, ws)
        return h.sum()

    ws = jax.device_put(jnp.ones((L, D, D)), NamedSharding(mesh, P(None, None, "model")))
    x = jax.device_put(jnp.ones((B, D)), NamedSharding(mesh, P("data", None)))
    record("scan", step, (ws, x))
