"""Record a ``lax.scan`` whose body branches and loops (1 CPU device).

x: [N, N]. Each of the scan's 3 steps picks ``c @ c`` or ``-c`` with ``lax.cond`` on a runtime
flag, then runs a ``fori_loop`` of 4 steps of ``tanh(c @ w)`` (w: [N, N]). Converted with
``unroll_limit`` below 3, the scan is one summarised node whose cost holds its body's branch and
inner loop. Writes tests/data/scan_cond/.
"""

from _common import record, use_devices

N = 64

if __name__ == "__main__":
    use_devices(1)
    import jax
    import jax.numpy as jnp

    def step(x, w, flag):
        def body(c, _):
            c = jax.lax.cond(flag > 0, lambda a: a @ a, lambda a: -a, c)
            c = jax.lax.fori_loop(0, 4, lambda i, a: jnp.tanh(a @ w), c)
            return c, None
        return jax.lax.scan(body, x, None, length=3)[0]

    record("scan_cond", jax.jit(step), (jnp.ones((N, N)), jnp.ones((N, N)), jnp.float32(1)))
