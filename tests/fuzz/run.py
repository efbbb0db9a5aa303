"""Run one generated program on every target and compare with CPython.

``run_program(program, folder, targets)`` writes the program's module to ``folder`` (so
offload reads it from a real source file), imports it, computes the reference by calling
``f`` at every index under CPython (NumPy 2 scalar semantics), then runs each target:
``interp`` (the IR interpreter on the lowered function and on the optimised one),
``compute_s``, ``compute_p`` and ``compute_g`` (under the simulator only when
``NUMBA_ENABLE_CUDASIM=1``). A target's result must equal the reference in value and dtype:
NaN equals NaN, and the sign of a zero matters. Outcomes per target: ``ok``, ``mismatch``,
``internal`` (a crash or an "internal error in offload"), ``rejected`` (a located
``OffloadError``, ``TypeError`` or ``ValueError``: allowed, but counted).
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.fuzz.gen import Program
from tests.scripts import import_path

CPU_TARGETS = ("interp", "compute_s", "compute_p")
SIM_TARGETS = ("compute_g",)


@dataclass
class Outcome:
    """What one program did: ``skipped`` (CPython rejected it) or one verdict per target."""

    seed: int
    path: str
    skipped: str = ""
    verdicts: dict[str, str] = field(default_factory=dict[str, str])
    details: dict[str, str] = field(default_factory=dict[str, str])

    @property
    def findings(self) -> dict[str, str]:
        """Targets that gave a wrong answer or an internal error, with what happened."""
        return {
            t: self.details.get(t, v)
            for t, v in self.verdicts.items()
            if v in ("mismatch", "internal")
        }


def load_module(source: str, folder: Path, name: str) -> Any:
    """Write ``source`` to ``folder/name.py`` and import it under a unique module name."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(source)
    return import_path(path, name)


def _np_value(v: Any) -> np.generic | None:
    if isinstance(v, bool | np.bool_):
        return np.bool_(v)
    if isinstance(v, int):
        return np.int64(v) if -(2**63) <= v < 2**63 else None
    if isinstance(v, float):
        return np.float64(v)
    if isinstance(v, np.generic):
        return v
    return None


def reference(fn: Any, shape: tuple[int, ...]) -> np.ndarray | str:
    """CPython's answer (an array of the result's dtype), or why there is none."""
    values: list[np.generic] = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for idx in np.ndindex(*shape):
            try:
                v = fn(*(int(k) for k in idx))
            except RecursionError:
                return "recursion"
            except Exception as err:
                return f"cpython raised {type(err).__name__}"
            nv = _np_value(v)
            if nv is None:
                return f"result {type(v).__name__} outside the model"
            values.append(nv)
    dtypes = {v.dtype for v in values}
    if len(dtypes) > 1:
        return "the result's type depends on the index"
    dtype = dtypes.pop() if dtypes else np.dtype(np.float64)
    return np.array(values, dtype=dtype).reshape(shape)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtypes and values; NaN equals NaN, -0.0 differs from 0.0."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        return bool(
            np.array_equal(nan_a, nan_b)
            and np.array_equal(a[~nan_a], b[~nan_b])
            and np.array_equal(np.signbit(a[~nan_a]), np.signbit(b[~nan_b]))
        )
    return bool(np.array_equal(a, b))


def _describe(expected: np.ndarray, got: Any) -> str:
    got = np.asarray(got)
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype}, expected {expected.dtype}"
    flat_e, flat_g = expected.ravel(), got.ravel()
    for k, (e, g) in enumerate(zip(flat_e, flat_g, strict=False)):
        if not same(np.array([e]), np.array([g])):
            idx = np.unravel_index(k, expected.shape)
            return f"at {tuple(int(x) for x in idx)}: {g!r}, expected {e!r}"
    return "shape differs"


def _classify(err: BaseException) -> tuple[str, str]:
    from offload.diagnostics import OffloadError

    text = f"{type(err).__name__}: {err}"
    if "internal error" in str(err):
        return "internal", text
    if isinstance(err, OffloadError | TypeError | ValueError):
        return "rejected", text
    return "internal", text + "\n" + "".join(traceback.format_exception(err)[-6:])


def _interp(fn: Any, shape: tuple[int, ...]) -> np.ndarray:
    from offload.frontend.lower import fetch_captures
    from offload.ir.interp import compute
    from offload.lowering import check_and_lower
    from offload.opt.manager import run_pipeline
    from offload.options import CompileOptions

    lowered = check_and_lower(fn, len(shape))
    captures = fetch_captures(fn, lowered)
    with np.errstate(all="ignore"):
        (before,) = compute(lowered.ir, shape, captures)
        optimised = run_pipeline(lowered.ir, CompileOptions())
        (after,) = compute(optimised, shape, captures)
    if not same(before, after):
        raise AssertionError(f"the pipeline changed the result: {_describe(before, after)}")
    return before


def _target(name: str) -> Any:
    import offload as ol

    if name == "interp":
        return _interp
    return {
        "compute_s": lambda fn, shape: ol.compute_s(shape, fn),
        "compute_p": lambda fn, shape: ol.compute_p(shape, fn),
        "compute_g": lambda fn, shape: ol.compute_g(shape, fn),
    }[name]


def default_targets() -> tuple[str, ...]:
    """The CPU targets, and ``compute_g`` where the simulator is on."""
    sim = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    return CPU_TARGETS + (SIM_TARGETS if sim else ())


def run_program(program: Program, folder: Path, targets: tuple[str, ...]) -> Outcome:
    """The outcome of ``program`` on ``targets`` (its module is written to ``folder``)."""
    name = f"fuzz_{program.seed}"
    out = Outcome(program.seed, str(folder / f"{name}.py"))
    try:
        module = load_module(program.source, folder, name)
    except Exception as err:
        out.skipped = f"import failed: {type(err).__name__}: {err}"
        return out
    fn = module.f
    expected = reference(fn, program.shape)
    if isinstance(expected, str):
        out.skipped = expected
        return out
    for target in targets:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = _target(target)(fn, program.shape)
        except AssertionError as err:
            out.verdicts[target], out.details[target] = "mismatch", str(err)
            continue
        except Exception as err:
            out.verdicts[target], out.details[target] = _classify(err)
            continue
        if isinstance(got, tuple) or not same(expected, np.asarray(got)):
            out.verdicts[target] = "mismatch"
            out.details[target] = _describe(expected, got)
        else:
            out.verdicts[target] = "ok"
    sys.modules.pop(name, None)
    return out
