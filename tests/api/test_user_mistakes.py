"""Every argument mistake is a TypeError/ValueError (or a located OffloadError) naming the
argument, never "a bug in offload" (issue 18 item 4): a catalogue run on compute_s and
compute_p; an internal error here is a test failure, not a pass."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.cpu

A = np.arange(6.0)


def f(i):
    return A[i] * 2.0


def pair(i):
    return A[i], i


def _read_only():
    out = np.zeros(6)
    out.flags.writeable = False
    return out


MISTAKES = {
    "read_only_out": (lambda c: c(6, f, out=_read_only()), ValueError, "out= is read-only"),
    "out_of_another_shape": (lambda c: c(6, f, out=np.zeros(5)), ValueError, "out= has shape"),
    "out_not_an_array": (lambda c: c(6, f, out=[0.0] * 6), TypeError, "out= takes an array"),
    "out_tuple_of_the_wrong_length": (
        lambda c: c(6, pair, out=(np.zeros(6),)),
        ValueError,
        "out= has 1 array",
    ),
    "out_of_another_kind": (lambda c: c(6, f, out=np.zeros(6, np.int64)), TypeError, "same_kind"),
    "dtype_not_a_dtype": (lambda c: c(6, f, dtype="no-such-type"), TypeError, "data type"),
    "dtype_not_supported": (lambda c: c(6, f, dtype=np.complex128), TypeError, "dtype"),
    "dtype_count": (lambda c: c(6, pair, dtype=(np.float32,)), ValueError, "dtype= names 1"),
    "negative_shape": (lambda c: c(-1, f), ValueError, ">= 0"),
    "float_shape": (lambda c: c(2.5, f), TypeError, "shape"),
    "fn_not_callable": (lambda c: c(6, 3), TypeError, "callable"),
    "fn_missing": (lambda c: c(6), TypeError, "element function is missing"),
}


@pytest.mark.parametrize("target", ["s", "p"])
@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_an_argument_mistake_is_a_python_error_naming_it(name, target):
    call, error, text = MISTAKES[name]
    compute = ol.compute_s if target == "s" else ol.compute_p
    with pytest.raises(error) as info:
        call(compute)
    message = str(info.value)
    assert text in message, message
    assert "bug in offload" not in message
