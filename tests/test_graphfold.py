"""Repeats folded in token sequences whose folding is known by construction."""

from __future__ import annotations

from chakra_core.analysis._graphfold import Fold, fold


def _shape(units: list[Fold]) -> list:
    """Singles as their element, folds as ``(count, body shape)``."""
    return [u.start if u.count == 1 and not u.body else (u.count, _shape(u.body)) for u in units]


def test_layers_of_micro_batches_fold_twice():
    layer = [1, 2, 3]
    batch = [7] + layer * 4 + [8]  # 4 layers between an embedding and a loss
    tokens = batch * 3 + [9]
    units = fold(tokens)
    assert _shape(units) == [(3, [0, (4, [1, 2, 3]), 13]), 42]
    assert units[0].size == 42 and units[1].start == 42


def test_nothing_repeated_is_left_as_it_is():
    assert _shape(fold([5, 6, 7, 5, 8])) == [0, 1, 2, 3, 4]


def test_the_repeat_covering_most_wins():
    # "1 1" would fold first by period; "1 1 2" three times covers more
    assert _shape(fold([1, 1, 2] * 3)) == [(3, [(2, [0]), 2])]
