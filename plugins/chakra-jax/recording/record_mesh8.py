"""Record an 8-device program (2x4 mesh) whose groups print in the compact forms.

g(x, w) = (x @ w).sum(axis=0) with x: [R, K] sharded (``m``, ``d``) and w: [K, C] sharded
(``d``, -): the matmul's partial sums are all-reduced over ``d`` (groups {0,4},{1,5},...) and
the row sum over ``m``; this jaxlib prints the second group in the mesh-axes form with an iota
device order (``mesh[...], device_ids=([2,4]T(1,0)) {'axis_0'}``). Writes tests/data/mesh8/.
"""

from _common import record, use_devices

R, K, C = 16, 32, 8

if __name__ == "__main__":
    use_devices(8)
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("d", "m"))

    @jax.jit
    def step(x, w):
        return (x @ w).sum(axis=0)

    x = jax.device_put(jnp.ones((R, K)), NamedSharding(mesh, P("m", "d")))
    w = jax.device_put(jnp.ones((K, C)), NamedSharding(mesh, P("d", None)))
    record("mesh8", step, (x, w))
