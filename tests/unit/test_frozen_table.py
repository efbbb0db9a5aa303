"""``offload.use``'s table of device copies (``runtime.memory.FrozenTable``), with NumPy
standing in for CuPy: a copy is made once and reused while the array stays frozen; thawing
drops it; re-freezing after a thaw makes a new record; a frozen view of a writeable array
gets no cached copy (a write through the other array would make it stale)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from offload.runtime.memory import FrozenTable

pytestmark = pytest.mark.unit

cp = types.SimpleNamespace(asarray=lambda x: np.array(x, copy=True))


def test_a_frozen_array_is_copied_once() -> None:
    table = FrozenTable()
    x = table.freeze(np.arange(4.0))
    first = table.lookup(cp, x)
    assert first is not None and table.lookup(cp, x) is first


def test_thawing_drops_the_copy_and_refreezing_makes_a_new_record() -> None:
    table = FrozenTable()
    x = table.freeze(np.arange(4.0))
    record = table.record(x)
    x.flags.writeable = True
    assert table.record(x) is None and table.lookup(cp, x) is None
    x[0] = 9.0
    table.freeze(x)
    assert table.record(x) is not record
    copy = table.lookup(cp, x)
    assert copy is not None and copy[0] == 9.0


def test_a_view_of_a_writeable_array_gets_no_cached_copy() -> None:
    table = FrozenTable()
    base = np.arange(6.0)
    view = table.freeze(base[1:4])
    assert not view.flags.writeable
    assert table.lookup(cp, view) is None
    owner = np.arange(6.0)
    frozen_view = owner[1:4]
    owner.flags.writeable = False  # the whole chain read-only: cached
    table.freeze(frozen_view)
    assert table.lookup(cp, frozen_view) is not None
