"""Record loops of data-dependent trip count inside a loop and inside a branch (1 CPU device).

x, w: [N, N]; ``n``, ``m`` and ``flag`` are runtime arguments. A ``lax.while_loop`` runs ``n``
times and each of its iterations runs another ``m`` times, ``c = tanh(c @ w)``; then a
``lax.cond`` on ``flag`` picks a third ``m``-step loop of the same or ``-c``. XLA knows none of
the three trip counts (no ``known_trip_count``, and each condition compares with a loop-state
value, not a constant): the outer loop is one summarised node and the ``conditional`` another,
each holding a loop costed as one iteration. Writes tests/data/nested_while/.
"""

from _common import record, use_devices

N = 32

if __name__ == "__main__":
    use_devices(1)
    import jax
    import jax.numpy as jnp

    def step(x, w, n, m, flag):
        def inner(c):
            return jax.lax.while_loop(lambda s: s[0] < m, lambda s: (s[0] + 1, jnp.tanh(s[1] @ w)), (0, c))[1]

        c = jax.lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, inner(s[1])), (0, x))[1]
        return jax.lax.cond(flag > 0, inner, lambda a: -a, c)

    args = (jnp.ones((N, N)), jnp.ones((N, N)) / N, jnp.int32(3), jnp.int32(2), jnp.int32(1))
    record("nested_while", jax.jit(step), args)
