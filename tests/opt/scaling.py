"""Element functions of a given number of lines, in several shapes, written as source
files: the compile-time scaling test (``test_compile_scaling.py``) and
``tools/compile_scaling.py`` time offload on them (issue 19: N lines of
``x = x*3 + k - (x // 7)`` took time exponential in N)."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _divmod_chain(n: int) -> str:
    body = "".join(f"    x = x * 3 + {k} - (x // 7)\n" for k in range(n))
    return f"def f(i):\n    x = i\n{body}    return x\n"


def _float_chain(n: int) -> str:
    body = "".join(f"    x = x * 0.5 + {k}.25 - x / 3.0\n" for k in range(n))
    return f"def f(i):\n    x = float(i)\n{body}    return x\n"


def _elif_ladder(n: int) -> str:
    arms = "".join(
        f"    {'if' if k == 0 else 'elif'} i % {n} == {k}:\n        x = i * {k + 1}\n"
        for k in range(n // 2)
    )
    return f"def f(i):\n    x = 0\n{arms}    return x\n"


def _nested_loops(n: int) -> str:
    lines = ["def f(i):", "    x = i"]
    for k in range(n // 3):
        lines += [
            f"    for a{k} in range(2):",
            f"        for b{k} in range(2):",
            f"            x = x + a{k} * b{k} + {k}",
        ]
    return "\n".join([*lines, "    return x", ""])


SHAPES: dict[str, Callable[[int], str]] = {
    "divmod-chain": _divmod_chain,
    "float-chain": _float_chain,
    "elif-ladder": _elif_ladder,
    "nested-loops": _nested_loops,
}
"""Shape name -> the source of a function of about ``n`` lines."""


def load(shape: str, n: int, folder: Path) -> Any:
    """The function ``f`` of ``shape`` at size ``n``, imported from a source file."""
    name = f"scaling_{shape.replace('-', '_')}_{n}"
    path = folder / f"{name}.py"
    path.write_text(SHAPES[shape](n))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def ir_seconds(fn: Any) -> float:
    """Seconds to check, lower and run the common pipeline on ``fn`` (no numba)."""
    from offload.lowering import check_and_lower
    from offload.opt.manager import run_pipeline
    from offload.options import CompileOptions

    t0 = time.perf_counter()
    run_pipeline(check_and_lower(fn, 1).ir, CompileOptions())
    return time.perf_counter() - t0
