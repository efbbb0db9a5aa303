"""What a type checker sees of the public API: ``compute_*`` return an array for a scalar
element function, a tuple of arrays for a tuple-valued one, ``out=``'s own type when given,
and reject an element function whose result offload cannot compute. One mypy run (the
project's configuration) over a snippet, one ``assert_type`` or call per line."""

from __future__ import annotations

import os
import re
import typing
from pathlib import Path

import pytest

import offload as ol

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = """\
from typing import Any, assert_type

import numpy as np
from numpy.typing import NDArray

import offload as ol

a: NDArray[np.float64] = np.zeros(10)
b: NDArray[np.int64] = np.zeros(10, dtype=np.int64)


def scalar(i: int) -> float:
    return i * 2.0


def pair(i: int) -> tuple[int, float]:
    return i, i * 2.0


def plane(i: int, j: int) -> np.float32:
    return np.float32(i + j)


def unknown(i: Any) -> Any:
    return i


def text(i: int) -> str:
    return str(i)


def complex_valued(i: int) -> complex:
    return i * 1j

"""

# (case, line): each line must type-check cleanly.
ACCEPTED = [
    ("scalar_function_gives_ndarray", "assert_type(ol.compute_s(10, scalar), NDArray[Any])"),
    ("compute_p_scalar_gives_ndarray", "assert_type(ol.compute_p(10, scalar), NDArray[Any])"),
    ("rank_2_shape_gives_ndarray", "assert_type(ol.compute_s((3, 4), plane), NDArray[Any])"),
    ("list_shape_is_accepted", "assert_type(ol.compute_s([3, 4], plane), NDArray[Any])"),
    ("numpy_int_shape_is_accepted", "assert_type(ol.compute_s(np.int64(3), scalar), NDArray[Any])"),
    (
        "tuple_function_gives_tuple_of_arrays",
        "assert_type(ol.compute_s(10, pair), tuple[NDArray[Any], ...])",
    ),
    (
        "tuple_out_gives_the_same_tuple",
        "assert_type(ol.compute_s(10, pair, out=(b, a)), "
        "tuple[NDArray[np.int64], NDArray[np.float64]])",
    ),
    (
        "array_out_gives_the_same_array",
        "assert_type(ol.compute_p(10, scalar, out=a), NDArray[np.float64])",
    ),
    ("out_none_is_no_out", "assert_type(ol.compute_s(10, scalar, out=None), NDArray[Any])"),
    ("dtype_is_accepted", "assert_type(ol.compute_s(10, scalar, dtype=np.float32), NDArray[Any])"),
    (
        "dtype_per_result_is_accepted",
        "assert_type(ol.compute_s(10, pair, dtype=(np.int32, 'f4')), tuple[NDArray[Any], ...])",
    ),
    ("unknown_result_type_gives_any", "assert_type(ol.compute_s(10, unknown), Any)"),
    ("delayed_array_gives_any", "assert_type(ol.compute_p(ol.map(scalar, a)), Any)"),
    (
        "delayed_out_gives_out",
        "assert_type(ol.compute_s(ol.map(scalar, a), out=a), NDArray[np.float64])",
    ),
    # compute_g: NumPy (unified memory) or CuPy (device memory), a run-time setting.
    ("compute_g_array_is_any", "assert_type(ol.compute_g(10, scalar), Any)"),
    ("compute_g_tuple_is_a_tuple", "assert_type(ol.compute_g(10, pair), tuple[Any, ...])"),
    ("use_returns_its_array", "assert_type(ol.use(a), NDArray[np.float64])"),
]

# (case, line, the function mypy's error names): offload rejects these at run time too.
# (Which error mypy gives, "no overload variant" or "incompatible type", is its own choice.)
REJECTED = [
    ("string_result_is_rejected", "ol.compute_s(10, text)", '"compute_s"'),
    ("complex_result_is_rejected", "ol.compute_p(10, complex_valued)", '"compute_p"'),
    ("delayed_with_function_is_rejected", "ol.compute_s(ol.map(scalar, a), scalar)", '"compute_s"'),
    ("use_of_a_list_is_rejected", "ol.use([1.0, 2.0])", '"use"'),
]


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[str]]:
    """The snippet's mypy errors by line (errors in offload itself are ``mypy offload``'s
    business, not this test's)."""
    api = pytest.importorskip("mypy.api")
    lines = [line for _, line in ACCEPTED] + [line for _, line, _ in REJECTED]
    snippet = tmp_path_factory.mktemp("types") / "snippet.py"
    snippet.write_text(PRELUDE + "\n".join(lines) + "\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)  # mypy looks for `offload` in the working directory
        stdout, stderr, _ = api.run(
            [
                "--config-file",
                str(ROOT / "pyproject.toml"),
                "--cache-dir",
                os.devnull,
                "--show-error-codes",
                "--no-error-summary",
                str(snippet),
            ]
        )
    assert not stderr, stderr
    errors: dict[int, list[str]] = {}
    for m in re.finditer(rf"^{re.escape(str(snippet))}:(\d+): error: (.*)$", stdout, re.M):
        errors.setdefault(int(m[1]), []).append(m[2])
    first = PRELUDE.count("\n") + 1
    prelude_errors = {n: e for n, e in errors.items() if n < first}
    assert not prelude_errors, prelude_errors
    return {n - first: e for n, e in errors.items() if n >= first}


@pytest.mark.parametrize(
    ("index", "line"), list(enumerate(line for _, line in ACCEPTED)), ids=[c for c, _ in ACCEPTED]
)
def test_call_type_checks_with_the_expected_result_type(
    mypy_errors: dict[int, list[str]], index: int, line: str
) -> None:
    assert mypy_errors.get(index, []) == [], line


@pytest.mark.parametrize(
    ("index", "line", "message"),
    [(len(ACCEPTED) + k, line, msg) for k, (_, line, msg) in enumerate(REJECTED)],
    ids=[c for c, _, _ in REJECTED],
)
def test_call_offload_cannot_run_is_a_type_error(
    mypy_errors: dict[int, list[str]], index: int, line: str, message: str
) -> None:
    found = mypy_errors.get(index, [])
    assert any(message in e for e in found), (line, found)


@pytest.mark.parametrize("fn", [ol.compute_s, ol.compute_p, ol.compute_g, ol.use])
def test_public_annotations_resolve_at_run_time(fn: typing.Any) -> None:
    # typing.get_type_hints (documentation tools, runtime checkers) must resolve every
    # overload's string annotations in the defining module.
    for variant in [*typing.get_overloads(fn), fn]:
        hints = typing.get_type_hints(variant)
        assert "return" in hints
