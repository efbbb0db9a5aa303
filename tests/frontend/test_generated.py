"""Functions offload writes itself (offload.frontend.generated): compiled once per text,
found by ``inspect`` and the frontend as a file's, and compiled like a user's own."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import offload as ol
from offload.frontend import generated

TEXT = (
    "def make(f, lo):\n"
    "    def shifted(i0, i1, i2, i3, i4):\n"
    "        return f(i0 + lo, i1, i2, i3, i4)\n\n"
    "    return shifted\n"
)


def weigh(i, j, k, m, q):
    return i * 10000 + j * 1000 + k * 100 + m * 10 + q


@pytest.mark.unit
def test_one_text_is_compiled_once_and_its_source_is_found():
    make = generated.factory("make", TEXT)
    assert generated.factory("make", TEXT) is make
    a, b = make(weigh, 1), make(weigh, 2)
    assert a.__code__ is b.__code__ and a(0, 1, 2, 3, 4) == 11234 and b(0, 0, 0, 0, 0) == 20000
    assert "return f(i0 + lo, i1, i2, i3, i4)" in inspect.getsource(a)
    assert a.__code__.co_filename.startswith("<offload-generated make ")
    assert generated.params("b", 3) == "b0, b1, b2"


@pytest.mark.cpu
def test_a_generated_wrapper_compiles_like_the_users_function():
    shifted = generated.factory("make", TEXT)(weigh, 3)
    got = ol.compute_s((2, 2, 2, 2, 2), shifted)
    want = np.fromfunction(lambda *ix: weigh(ix[0] + 3, *ix[1:]), (2, 2, 2, 2, 2), dtype=int)
    assert np.array_equal(got, want) and got.dtype == np.int64
