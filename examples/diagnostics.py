"""Compile-time diagnostics: an element function the language rejects raises an
``OffloadError`` before anything runs, listing every violation with ``file:line:col``,
the source line, a caret under the construct, the rule and a hint.

This function makes three mistakes: it writes to a captured array, builds a list, and
calls ``print``. The example catches the error, prints it, checks that all three are
reported, then computes the corrected function.

Run: ``python examples/diagnostics.py [s|p|g]`` (or ``OFFLOAD_EXAMPLE_TARGET``);
``OFFLOAD_EXAMPLE_SMALL=1`` picks a small size.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import offload as ol


def main(target: str | None = None, small: bool | None = None) -> str:
    target = target or os.environ.get("OFFLOAD_EXAMPLE_TARGET", "p")
    small = os.environ.get("OFFLOAD_EXAMPLE_SMALL") == "1" if small is None else small
    compute = {"s": ol.compute_s, "p": ol.compute_p, "g": ol.compute_g}[target]
    n = 16 if small else 1000
    a = np.arange(n, dtype=np.float64)

    def bad(i):
        a[i] = 0.0
        weights = np.zeros(len(a))
        print(i)
        return a[i] * weights[0]

    try:
        compute(n, bad)
    except ol.OffloadError as err:
        message = str(err)
        print(message)
    else:
        raise AssertionError("the bad function compiled")
    assert "[write]" in message and "[allocation]" in message, message
    assert "print() cannot be called" in message, message
    assert f"{__file__}:" in message or "diagnostics.py:" in message, message

    def good(i):
        w0 = 1.0
        return a[i] * w0

    np.testing.assert_array_equal(np.asarray(compute(n, good)), a)
    print(f"diagnostics on {target}: the corrected function computes")
    return message


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
