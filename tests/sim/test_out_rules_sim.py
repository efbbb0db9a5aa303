"""``out=`` under the simulator follows the same rules as on the CPU targets (read-only,
same_kind casting, any layout): ``tests/api/test_out_rules.py``'s checks on compute_g."""

from __future__ import annotations

import pytest

import offload as ol
from tests.api.test_out_rules import check_layout, check_read_only, check_same_kind

pytestmark = pytest.mark.sim


def test_a_read_only_out_is_a_value_error_naming_out():
    check_read_only(ol.compute_g)


def test_out_follows_numpys_same_kind_rule():
    check_same_kind(ol.compute_g)


@pytest.mark.parametrize("layout", ["fortran", "strided", "reversed"])
def test_out_of_any_layout_numpy_writes_is_accepted(layout):
    check_layout(ol.compute_g, layout)
