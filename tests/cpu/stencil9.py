"""docs/ports.md's 9-way ``if``/``elif`` float32 stencil (issue 17's compile-time case): a
5-point heat step with reflecting edges, written as such code often is, one arm per corner,
one per edge, one for the interior. ``tools/stencil9_compile.py`` times its cold compile;
``tests/cpu/test_compile_time_rules.py`` runs it."""

from __future__ import annotations

from typing import Any

import numpy as np


def make_stencil9(u: np.ndarray[Any, Any]) -> Any:
    """The element function over the float32 grid ``u`` (captured by the closure)."""
    r = np.float32(0.2)

    def stencil9(i: int, j: int) -> Any:
        n = u.shape[0] - 1
        m = u.shape[1] - 1
        c = u[i, j]
        if i == 0 and j == 0:
            v = c + r * (2 * u[1, 0] + 2 * u[0, 1] - 4 * c)
        elif i == 0 and j == m:
            v = c + r * (2 * u[1, m] + 2 * u[0, m - 1] - 4 * c)
        elif i == n and j == 0:
            v = c + r * (2 * u[n - 1, 0] + 2 * u[n, 1] - 4 * c)
        elif i == n and j == m:
            v = c + r * (2 * u[n - 1, m] + 2 * u[n, m - 1] - 4 * c)
        elif i == 0:
            v = c + r * (2 * u[1, j] + u[0, j - 1] + u[0, j + 1] - 4 * c)
        elif i == n:
            v = c + r * (2 * u[n - 1, j] + u[n, j - 1] + u[n, j + 1] - 4 * c)
        elif j == 0:
            v = c + r * (u[i - 1, 0] + u[i + 1, 0] + 2 * u[i, 1] - 4 * c)
        elif j == m:
            v = c + r * (u[i - 1, m] + u[i + 1, m] + 2 * u[i, m - 1] - 4 * c)
        else:
            v = c + r * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4 * c)
        return v

    return stencil9
