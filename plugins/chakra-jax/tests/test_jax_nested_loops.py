"""Loops of unknown trip count inside summarised loops and conditionals (recording/record_nested_while.py).

The recorded program on [32, 32]: a ``while_loop`` of runtime trip count ``n`` whose body runs
another of runtime trip count ``m`` of ``c = tanh(c @ w)``, then a ``cond`` whose costlier branch
runs a third such loop. XLA knows none of the three counts, so each is costed as one iteration:
one iteration of the inner body is a matmul (2 x 32^3 FLOPs), a tanh (32^2) and the counter's
add (1).
"""

from __future__ import annotations

import pytest

from chakra_core import NodeAttrs

INNER = 2 * 32 ** 3 + 32 * 32 + 1  # one iteration of the inner body


def _notes(ts):
    return [a.string_val for a in ts[0].metadata().attr if a.name == "note"]


def _node(ts, name):
    return NodeAttrs(next(n for n in ts[0].nodes() if n.name == name))


def test_every_loop_of_unknown_trip_count_is_counted_in_the_warning(jax_convert):
    with pytest.warns(UserWarning, match="3 loops of unknown trip count costed as one iteration"):
        ts = jax_convert("nested_while")
    assert ("1 while loop summarised (unroll_limit=1024) as 1 compute node; "
            "3 loops of unknown trip count costed as one iteration") in _notes(ts)


def test_a_summarised_node_says_the_loops_of_unknown_trip_count_it_holds(jax_convert):
    ts = jax_convert("nested_while")
    outer, cond = _node(ts, "while.23"), _node(ts, "cond.3.clone")
    assert outer.get_int("num_ops") == INNER + 1  # one outer iteration: the inner loop once, the outer's add
    assert outer.get_str("note") == ("while loop summarised: trip count unknown (no known_trip_count): the cost of "
                                     "one iteration; 1 loop of unknown trip count in it costed as one iteration")
    assert cond.get_int("num_ops") == INNER  # the loop's branch, not the other's negation (32^2)
    assert cond.get_str("note") == ("conditional summarised: the most expensive of its 2 branches; "
                                    "1 loop of unknown trip count in it costed as one iteration")
