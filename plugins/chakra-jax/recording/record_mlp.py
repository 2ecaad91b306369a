"""Record a jitted data+tensor-parallel MLP training step on a 2x2 mesh (4 CPU devices).

x, y: [B, D] sharded by rows over ``data``; w1: [D, H] sharded by columns over ``model``;
w2: [H, D] sharded by rows over ``model`` (Megatron-style). Writes tests/data/mlp/.
"""

import tempfile

from _common import record, use_devices

B, D, H = 16, 32, 64

if __name__ == "__main__":
    dump = tempfile.mkdtemp()
    use_devices(4, dump_to=dump)
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("data", "model"))

    def loss(params, x, y):
        h = jnp.tanh(x @ params["w1"])
        return jnp.mean((h @ params["w2"] - y) ** 2)

    @jax.jit
    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), value

    def put(a, spec):
        return jax.device_put(a, NamedSharding(mesh, spec))

    params = {"w1": put(jnp.ones((D, H)), P(None, "model")), "w2": put(jnp.ones((H, D)), P("model", None))}
    x = put(jnp.ones((B, D)), P("data", None))
    y = put(jnp.zeros((B, D)), P("data", None))
    record("mlp", step, (params, x, y), dump_dir=dump)
