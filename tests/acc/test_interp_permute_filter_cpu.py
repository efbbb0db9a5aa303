"""permute, scatter and filter on compute_s and compute_p against their specification and
NumPy.

The specification (``interp_collectives``, through ``fold_reference.interpret``) runs the
user's functions on the IR interpreter -- permute's index function and combine, filter's
predicate -- and the skeleton around them in Python: the skeletons' kernels (``dests``,
``accumulate``, ``partials``/``merge``, ``keep``/``compact``) are numba-compiled Python
text, not IR, and the chunk starts of the CPU filter are a NumPy ``cumsum``.

* compute_s applies ``f(new, old)`` in source order; so does compute_p under
  ``cross_target``, and in the default mode with fewer sources than ``PARTIALS_MIN``;
  above it, per-task rows folded in task order. Here ``PARTIALS_MIN = 16``,
  ``PARTIAL_TASK = 8`` and ``ROW_SOURCES = 1``, so 16 to 60 sources take 2 to 7 rows,
  and ``SEQUENTIAL_BELOW = 0`` (compute_p's blocked ``dests`` kernel). Every target
  equals the specification of its order bit for bit (``interp_cases.same_bits``).
* NumPy: ``np.add.at`` adds in index order, one element at a time -- the source order:
  for ``+`` it equals the specification of the source order bit for bit; with compute_p's
  rows only integers are compared with it (floats associate differently).
* filter does no arithmetic: every target and mode equals NumPy's boolean indexing (here
  with ``FILTER_CHUNK = 7``: several chunks, chunks without a kept element).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from offload.acc import filter as F
from offload.acc import permute as P
from tests.acc.fold_reference import interpret
from tests.acc.interp_cases import (
    MODES,
    TARGETS,
    add,
    array,
    bitor,
    computed,
    later,
    max_first_nan,
    pair_add,
    same_bits,
)

pytestmark = pytest.mark.cpu

IGNORE = ol.IGNORE


@pytest.fixture
def small_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """compute_p's per-task rows and parallel destinations on small permutes (the
    specification reads the same constants through ``permute.cpu_tasks``)."""
    monkeypatch.setattr(P, "PARTIALS_MIN", 16)
    monkeypatch.setattr(P, "PARTIAL_TASK", 8)
    monkeypatch.setattr(P, "ROW_SOURCES", 1)
    monkeypatch.setattr(P, "SEQUENTIAL_BELOW", 0)


def keys(data: st.DataObject, n: int, bound: int) -> np.ndarray[Any, Any]:
    """``n`` destinations in ``[0, bound)``, some ``IGNORE``."""
    ks = st.integers(0, bound - 1) | st.just(IGNORE)
    return np.array(data.draw(st.lists(ks, min_size=n, max_size=n)), np.int64)


def index_function(ks: list[np.ndarray[Any, Any]], src_rank: int) -> Any:
    """``ix`` reading the destination of each source index from ``ks`` (one array of
    coordinates per result axis)."""
    k0, k1 = ks[0], ks[-1]
    if src_rank == 1 and len(ks) == 1:

        def ix(i: int) -> Any:
            return k0[i]

    elif src_rank == 1:

        def ix(i: int) -> Any:
            return (k0[i], k1[i])

    elif len(ks) == 1:

        def ix(i: int, j: int) -> Any:
            return k0[i, j]

    else:

        def ix(i: int, j: int) -> Any:
            return (k0[i, j], k1[i, j])

    return ix


PERMUTES: dict[str, tuple[Any, tuple[str, ...], int, int]] = {
    # combine, component dtypes, source rank, result rank
    "later float64": (later, ("float64",), 1, 1),
    "add int8": (add, ("int8",), 2, 1),
    "add float32": (add, ("float32",), 1, 1),
    "max_first_nan float32": (max_first_nan, ("float32",), 2, 1),
    "pair float32 int16": (pair_add, ("float32", "int16"), 1, 2),
    "bitor bool": (bitor, ("bool",), 1, 1),
}


@pytest.mark.usefixtures("small_tasks")
@pytest.mark.parametrize("case", PERMUTES)
@settings(max_examples=8)
@given(data=st.data(), n=st.sampled_from([0, 1, 2, 7, 16, 17, 33, 60]), dests=st.integers(1, 9))
def test_permute_on_both_targets_and_modes_equals_the_interpreter_and_numpy(
    case: str, data: st.DataObject, n: int, dests: int
) -> None:
    f, dts, src_rank, dst_rank = PERMUTES[case]
    sshape = (n,) if src_rank == 1 else (n // 4, 4)
    dshape = (dests,) if dst_rank == 1 else (dests, 2)
    comps = [array(data, dt, sshape) for dt in dts]
    defaults = [array(data, dt, dshape) for dt in dts]
    ks = [keys(data, math.prod(sshape), k).reshape(sshape) for k in dshape]
    ix = index_function(ks, src_rank)
    pack = (lambda c: c[0]) if len(dts) == 1 else tuple
    node = ol.permute(f, pack(defaults), ix, pack(comps))
    for mode in MODES:
        for target in TARGETS:
            got = computed(target, node, mode)
            spec = interpret(node, mode, like=target)
            assert same_bits(got, spec), (target, mode, got, spec)
    if f is add:
        kept = np.all([k != IGNORE for k in ks], axis=0)
        want = defaults[0].copy()
        with np.errstate(all="ignore"):
            np.add.at(want, ks[0][kept], comps[0][kept])
        assert same_bits(interpret(node), want)
        if dts[0].startswith("int"):
            assert same_bits(interpret(node, like="cpu-par"), want)


@pytest.mark.usefixtures("small_tasks")
def test_compute_ps_rows_are_another_order_and_it_keeps_to_it() -> None:
    rng = np.random.default_rng(41)
    ks = rng.integers(0, 3, 60)
    vals = rng.standard_normal(60)

    def ix(i: int) -> Any:
        return ks[i]

    node = ol.permute(later, np.zeros(3), ix, vals)
    rows, ordered = interpret(node, like="cpu-par"), interpret(node)
    assert P.cpu_tasks(60, 3) == 7 and not same_bits(rows, ordered)
    assert same_bits(ol.compute_p(node), rows) and same_bits(ol.compute_s(node), ordered)
    assert same_bits(computed("cpu-par", node, "cross_target"), ordered)


@settings(max_examples=15)
@given(data=st.data(), n=st.integers(0, 40), m=st.integers(1, 8))
def test_scatter_equals_the_interpreter_and_a_python_loop(
    data: st.DataObject, n: int, m: int
) -> None:
    to = keys(data, n, m)
    a = array(data, "float64", (n,))
    defaults = array(data, "float64", (m,))
    want = defaults.copy()
    for i, d in enumerate(to):
        if d != IGNORE:
            want[d] = a[i]  # the last write wins
    node = ol.scatter(to, defaults, a)
    assert same_bits(interpret(node), want)
    for target in TARGETS:
        assert same_bits(computed(target, node, "deterministic"), want)


@pytest.mark.usefixtures("small_tasks")
@pytest.mark.parametrize("target", TARGETS)
def test_an_index_outside_the_result_is_the_same_error_everywhere(target: str) -> None:
    def ix(i: int) -> Any:
        return 4 if i == 19 else i % 3

    node = ol.permute(add, np.zeros(4 - 1), ix, np.ones(40))
    with pytest.raises(P.PermuteIndexError, match=r"source element \(19,\) to \(4,\)"):
        interpret(node)
    with pytest.raises(P.PermuteIndexError, match=r"source element \(19,\) to \(4,\)"):
        TARGETS[target](node)


@pytest.mark.usefixtures("small_tasks")
@pytest.mark.parametrize("target", TARGETS)
def test_permute_gives_the_same_bits_at_every_offset_and_run(target: str) -> None:
    rng = np.random.default_rng(43)
    n = 50
    ks = rng.integers(0, 5, n)

    def ix(i: int) -> Any:
        return ks[i] if i % 9 else IGNORE

    base = rng.standard_normal(n).astype(np.float32)
    want = interpret(ol.permute(add, np.zeros(5, np.float32), ix, base), like=target)
    buf = np.empty(n + 32, np.float32)
    for off in (0, 1, 5, 17, 0):
        moved = buf[off : off + n]
        moved[...] = base
        got = computed(target, ol.permute(add, np.zeros(5, np.float32), ix, moved), "deterministic")
        assert same_bits(got, want), off
        buf[...] = rng.standard_normal(buf.shape).astype(np.float32)


@pytest.mark.usefixtures("small_tasks")
def test_cross_target_permutes_are_the_same_bits_on_every_cpu_target_and_the_interpreter() -> None:
    rng = np.random.default_rng(47)
    ks = rng.integers(0, 4, 60)
    vals = rng.standard_normal(60).astype(np.float32)

    def ix(i: int) -> Any:
        return ks[i]

    node = ol.permute(add, np.full(4, 0.25, np.float32), ix, vals)
    spec = interpret(node, "cross_target")
    assert same_bits(computed("cpu-seq", node, "cross_target"), spec)
    assert same_bits(computed("cpu-par", node, "cross_target"), spec)
    assert not same_bits(interpret(node, like="cpu-par"), spec)  # (the rows: another order)


@pytest.fixture
def small_filter_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(F, "FILTER_CHUNK", 7)
    monkeypatch.setattr(F, "SEQUENTIAL_BELOW", 0)


def positive(x: Any) -> Any:
    return x > 0


def is_nan(x: Any) -> Any:
    return x != x  # noqa: PLR0124


def itself(x: Any) -> Any:
    return x


def first_below_second(kv: Any) -> Any:
    return kv[0] < kv[1]


FILTERS: dict[str, tuple[Any, tuple[str, ...], Any]] = {
    # predicate, component dtypes, NumPy's mask of the components
    "positive int8": (positive, ("int8",), lambda c: c[0] > 0),
    "positive uint64": (positive, ("uint64",), lambda c: c[0] > 0),
    "nan float32": (is_nan, ("float32",), lambda c: np.isnan(c[0])),
    "itself bool": (itself, ("bool",), lambda c: c[0]),
    "pair int16 float64": (first_below_second, ("int16", "float64"), lambda c: c[0] < c[1]),
}


@pytest.mark.usefixtures("small_filter_chunks")
@pytest.mark.parametrize("case", FILTERS)
@settings(max_examples=8)
@given(data=st.data(), n=st.sampled_from([0, 1, 6, 7, 8, 30, 51]))
def test_filter_on_both_targets_equals_the_interpreter_and_boolean_indexing(
    case: str, data: st.DataObject, n: int
) -> None:
    pred, dts, mask = FILTERS[case]
    comps = [array(data, dt, (n,)) for dt in dts]
    node = ol.filter(pred, comps[0] if len(comps) == 1 else tuple(comps))
    kept = [c[mask(comps)] for c in comps]
    want = kept[0] if len(kept) == 1 else tuple(kept)
    assert same_bits(interpret(node), want)
    for target in TARGETS:
        assert same_bits(computed(target, node, "deterministic"), want)
