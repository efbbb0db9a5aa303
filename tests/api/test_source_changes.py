"""What offload compiles is what Python runs: a source file edited after import, a deleted
captured global, ``async def`` and ``functools.wraps`` wrappers (issue 19)."""

from __future__ import annotations

import functools
import linecache
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import offload as ol
from tests.scripts import import_path

pytestmark = pytest.mark.cpu


def _edit(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))
    linecache.checkcache(str(path))


@pytest.fixture
def module(tmp_path: Path, request: pytest.FixtureRequest):
    name = f"offload_edited_{request.node.name.replace('[', '_').replace(']', '')}"
    path = tmp_path / f"{name}.py"

    def make(text: str) -> tuple[types.ModuleType, Path]:
        path.write_text(text)
        return import_path(path, name), path

    yield make
    sys.modules.pop(name, None)


def test_an_element_function_edited_after_import_is_refused_with_its_location(module):
    m, path = module("def f(i):\n    return i + 1\n")
    _edit(path, "i + 1", "i + 1000")
    with pytest.raises(ol.SourceUnavailable, match="no longer matches the code that runs") as e:
        ol.compute_s(3, m.f)
    assert f"{path}:1:1" in str(e.value)


def test_an_inlined_helper_edited_after_import_is_refused(module):
    m, path = module("def h(x):\n    return x + 1\n\n\ndef f(i):\n    return h(i) * 2\n")
    _edit(path, "x + 1", "x - 1")
    with pytest.raises(ol.SourceUnavailable, match="'h' .* no longer matches"):
        ol.compute_s(3, m.f)


def test_an_edit_that_leaves_the_function_alone_still_compiles(module):
    m, path = module("def f(i):\n    return i + 1  # one\n\n\ndef g(i):\n    return i\n")
    _edit(path, "# one", "# a longer comment")
    _edit(path, "return i\n", "return i * 7\n")
    np.testing.assert_array_equal(ol.compute_s(3, m.f), [1, 2, 3])


X_DELETED = 5


def _reads_deleted_global(i):
    return i + X_DELETED


def test_a_captured_global_deleted_between_calls_is_a_located_name_error():
    np.testing.assert_array_equal(ol.compute_s(3, _reads_deleted_global), [5, 6, 7])
    del globals()["X_DELETED"]
    try:
        with pytest.raises(ol.OffloadError, match="name 'X_DELETED' is not defined") as e:
            ol.compute_s(3, _reads_deleted_global)
        assert "test_source_changes.py:" in str(e.value) and "^^^^^^^^^" in str(e.value)
    finally:
        globals()["X_DELETED"] = 5
    np.testing.assert_array_equal(ol.compute_s(3, _reads_deleted_global), [5, 6, 7])


async def _coroutine(i):
    return i


def test_async_def_is_a_located_rejection():
    with pytest.raises(ol.OffloadError, match="'async def _coroutine' cannot be") as e:
        ol.compute_s(3, _coroutine)
    assert "test_source_changes.py:" in str(e.value)


def _twice(fn):
    @functools.wraps(fn)
    def wrapper(i):
        return fn(i) * 2

    return wrapper


@_twice
def _wrapped(i):
    return i + 1


def _any_args(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)

    return wrapper


@_any_args
def _wrapped_variadic(i):
    return i


def test_a_functools_wraps_wrapper_compiles_the_wrapper_that_runs():
    np.testing.assert_array_equal(ol.compute_s(3, _wrapped), [_wrapped(i) for i in range(3)])


def test_a_variadic_functools_wraps_wrapper_is_a_located_rejection():
    with pytest.raises(ol.OffloadError, match="variadic parameter 'args'") as e:
        ol.compute_s(3, _wrapped_variadic)
    assert "test_source_changes.py:" in str(e.value)
