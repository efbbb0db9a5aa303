"""The fold extension point (offload.stream.fold): the combine tree's shape is fixed."""

from __future__ import annotations

import numpy as np
import pytest

from offload.stream.fold import SequentialFold, combine_tree

pytestmark = pytest.mark.unit

BRACKETS = SequentialFold(lambda a, b: f"({a}{b})" if a else b, "")
"""Shows the order of the combines (associative up to brackets, not commutative)."""


def test_the_combine_tree_folds_groups_of_split_every_left_to_right():
    assert combine_tree(BRACKETS, list("abcdefg"), split_every=3) == "((((ab)c)((de)f))g)"
    assert combine_tree(BRACKETS, list("ab"), split_every=8) == "(ab)"
    assert combine_tree(BRACKETS, [], split_every=8) == ""


def test_a_sequential_partial_is_a_left_fold_in_row_major_order():
    block = np.array([[1, 2], [3, 4]])
    assert BRACKETS.partial(block.astype(str)) == "(((12)3)4)"
