"""Record a shard_map step calling psum, pmean, psum_scatter, all_gather, ppermute and all_to_all.

4 CPU devices on a 1-D mesh ``x``; the input A: [N, F] is sharded by rows, so each device
holds [N/4, F]. The ring permutation sends device i's block to device (i+1) % 4, and a second
permutation pairs devices 0->2 and 1->3 only (devices 2 and 3 send nothing, 0 and 1 receive
nothing). Writes tests/data/shard_map/.
"""

from _common import record, use_devices

N, F, DEVICES = 32, 16, 4

if __name__ == "__main__":
    use_devices(DEVICES)
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("x",))

    def body(a):
        total = jax.lax.psum(a, "x")
        mean = jax.lax.pmean(a * 2, "x")
        scattered = jax.lax.psum_scatter(a, "x", scatter_dimension=0, tiled=True)
        gathered = jax.lax.all_gather(scattered, "x", axis=0, tiled=True)
        ring = jax.lax.ppermute(a, "x", perm=[(i, (i + 1) % DEVICES) for i in range(DEVICES)])
        half = jax.lax.ppermute(a * 3, "x", perm=[(0, 2), (1, 3)])
        swapped = jax.lax.all_to_all(a, "x", split_axis=0, concat_axis=0, tiled=True)
        return total + mean + gathered + ring + half + swapped

    step = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
    record("shard_map", step, (jnp.ones((N, F)),))
