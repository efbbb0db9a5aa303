"""ndarray subclasses whose indexing differs from ndarray's (a masked array's mask,
np.matrix's 2-D rows) are refused with a clear error before compiling, never read as their
bare data; subclasses that index as ndarray does are accepted (issue 19)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import offload as ol
from offload.diagnostics import OffloadError
from offload.frontend.captures import indexing_differs

pytestmark = pytest.mark.cpu

COMPUTES = [ol.compute_s, ol.compute_p]

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # NumPy 2.5 deprecates the name
    CHARARRAY = np.char.chararray


class Tagged(np.ndarray):
    """A subclass that only adds an attribute: indexes as ndarray does."""

    unit = "m"


class Shifted(np.ndarray):
    """A user subclass with its own indexing."""

    def __getitem__(self, key):  # pragma: no cover - never called by offload
        return super().__getitem__(key) + 1


@pytest.mark.parametrize(
    ("cls", "refused"),
    [
        (np.ndarray, False),
        (np.memmap, False),
        (Tagged, False),
        (np.ma.MaskedArray, True),
        (np.matrix, True),
        (np.recarray, True),
        (CHARARRAY, True),
        (Shifted, True),
        (list, False),
    ],
)
def test_refused_subclasses_are_those_that_override_indexing(cls, refused):
    assert indexing_differs(cls) is refused


@pytest.mark.parametrize("compute", COMPUTES)
def test_masked_out_is_a_type_error_naming_out(compute):
    out = np.ma.masked_array(np.zeros(3), mask=[0, 1, 0])
    with pytest.raises(TypeError, match=r"out= is a numpy\.ma\.MaskedArray.*m\.data"):
        compute(3, lambda i: i * 2.0, out=out)
    assert out.data.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix's own
@pytest.mark.parametrize("compute", COMPUTES)
def test_matrix_in_a_tuple_out_is_a_type_error(compute):
    outs = (np.zeros((2, 2)), np.asmatrix(np.zeros((2, 2))))
    with pytest.raises(TypeError, match=r"out= is a numpy\.matrix"):
        compute((2, 2), lambda i, j: (i * 1.0, j * 1.0), out=outs)


@pytest.mark.parametrize("compute", COMPUTES)
def test_subclass_indexing_as_ndarray_is_accepted_as_out(compute):
    out = np.zeros(3).view(Tagged)
    assert compute(3, lambda i: i * 2.0, out=out) is out
    assert out.tolist() == [0.0, 2.0, 4.0]


M = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])


@pytest.mark.parametrize("compute", COMPUTES)
def test_captured_masked_array_is_refused_naming_the_variable(compute):
    with pytest.raises((TypeError, OffloadError), match=r"captured 'M' is a numpy\.ma\.Masked"):
        compute(3, lambda i: M[i] * 2.0)
