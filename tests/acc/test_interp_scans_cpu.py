"""Scans on compute_s and compute_p against their specification and NumPy.

The specification (``interp_collectives.scan_spec``, through ``fold_reference.interpret``)
runs the combine on the IR interpreter and the chunk tree in Python: the scan skeleton's
kernels are numba-compiled Python text, not IR, so the interpreter covers the user's
combine (its lowering, passes, emission and numba compilation) and the tree is checked
against its documented shape (``scan.chunk_size`` of the target mirrored).

* Every target equals the specification of its own tree bit for bit (zero signs
  included; NaN in the same places, payloads not compared: ``interp_cases.same_bits``):
  compute_s's one chunk per row, compute_p's tree (here
  ``CPU_CHUNK = 8`` and no one-chunk rule: rows of 9 to 100 are trees of 2 to 13
  chunks, two levels) and, under ``cross_target``, the GPU's chunks of 32 on both.
* NumPy's ``accumulate`` (left to right, one element at a time) is compute_s's order in
  the default mode: there ``+`` (integers wrap alike) and ``|`` on bools equal NumPy
  bit for bit (a right scan's ``x + acc`` is NumPy's ``acc + x``: ``+`` commutes). Where the
  association differs (compute_p's tree, ``cross_target``) only integers and bools are
  compared with NumPy; floats only with the specification.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from offload.acc import scan_job as SJ
from tests.acc.fold_reference import interpret
from tests.acc.interp_cases import (
    DTYPES,
    MODES,
    TARGETS,
    add,
    array,
    bitor,
    computed,
    matmul2,
    max_first_nan,
    pair_add,
    same_bits,
    scan_nodes,
    segments,
    values,
)

pytestmark = pytest.mark.cpu

FORMS = ["scanl", "scanl1", "scanl_total", "scanr", "scanr1", "scanr_total", "scanl_seg",
         "scanl1_seg"]  # fmt: skip
INNER = [0, 1, 2, 5, 8, 9, 31, 32, 33, 64, 65, 100]
"""Row lengths around the chunks: compute_p's 8 here, the GPU's 32."""
outer_shapes = st.lists(st.integers(0, 3), max_size=2).map(tuple)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """compute_p's tree on short rows (the specification reads the same constants)."""
    monkeypatch.setattr(SJ, "CPU_CHUNK", 8)
    monkeypatch.setattr(SJ, "CPU_SEQUENTIAL_BELOW", 0)


def numpy_scan(form: str, ufunc: np.ufunc, z: Any, a: np.ndarray[Any, Any], seg: Any) -> list[Any]:
    """``form`` of a commutative ``ufunc`` by ``ufunc.accumulate`` on the last axis."""
    n = a.shape[-1]

    def acc(x: np.ndarray[Any, Any], with_z: bool) -> np.ndarray[Any, Any]:
        if with_z:
            x = np.concatenate([np.full((*x.shape[:-1], 1), z, a.dtype), x], axis=-1)
        with np.errstate(all="ignore"):
            return ufunc.accumulate(x, axis=-1, dtype=a.dtype)

    if form.endswith("_seg"):
        ends = np.cumsum(seg)
        with_z = form == "scanl_seg"
        parts = [acc(a[..., e - k : e], with_z) for k, e in zip(seg, ends, strict=True)]
        if not parts:
            return [np.empty((*a.shape[:-1], 0), a.dtype)]
        return [np.concatenate(parts, axis=-1)]
    right = form.startswith("scanr")
    out = acc(a[..., ::-1] if right else a, form not in ("scanl1", "scanr1"))
    if right:
        out = out[..., ::-1]
    if form == "scanl_total":
        return [out[..., :n], out[..., n]]
    if form == "scanr_total":
        return [out[..., 1:], out[..., 0]]
    return [out]


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=6)
@given(
    data=st.data(),
    outer=outer_shapes,
    inner=st.sampled_from(INNER),
    form=st.sampled_from(FORMS),
)
def test_every_form_and_dtype_on_compute_s_equals_the_interpreter_and_numpy(
    dtype: str, data: st.DataObject, outer: tuple[int, ...], inner: int, form: str
) -> None:
    a = array(data, dtype, (*outer, inner))
    seg = segments(data, inner)
    f, ufunc = (bitor, np.logical_or) if dtype == "bool" else (add, np.add)
    z = np.dtype(dtype).type(0)
    nodes = scan_nodes(form, f, z, a, seg)
    for node, want in zip(nodes, numpy_scan(form, ufunc, z, a, seg), strict=True):
        got = ol.compute_s(node)
        spec = interpret(node)
        assert same_bits(got, spec), (form, got, spec)
        assert same_bits(spec, want), (form, spec, want)


CASES: dict[str, tuple[Any, Any, tuple[str, ...], st.SearchStrategy[Any] | None, list[str]]] = {
    # combine, neutral element, component dtypes, elements (None: ``values``), forms; few
    # skeleton modules (left, right, segmented) per case: compute_p's take seconds to compile
    "add float32": (add, 0.0, ("float32",), None, FORMS),
    "matmul2 float64": (
        matmul2, (1.0, 0.0, 0.0, 1.0), ("float64",) * 4, st.floats(-1.25, 1.25),
        ["scanr", "scanr1"],
    ),
    "max_first_nan float64": (max_first_nan, -math.inf, ("float64",), None, ["scanl1_seg"]),
    "pair float32 int16": (pair_add, (0.0, 0), ("float32", "int16"), None, ["scanr_total"]),
}  # fmt: skip


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("case", CASES)
@settings(max_examples=8)
@given(data=st.data(), outer=outer_shapes, inner=st.sampled_from(INNER))
def test_scans_on_both_targets_and_modes_equal_the_interpreter(
    case: str, data: st.DataObject, outer: tuple[int, ...], inner: int
) -> None:
    f, z, dts, elements, forms = CASES[case]
    shape = (*outer, inner)
    comps = []
    for dt in dts:
        n = math.prod(shape)
        items = data.draw(
            st.lists(values(dt) if elements is None else elements, min_size=n, max_size=n)
        )
        comps.append(np.array(items, dtype=dt).reshape(shape))
    a = comps[0] if len(comps) == 1 else tuple(comps)
    seg = segments(data, inner)
    form = data.draw(st.sampled_from(forms))
    for node in scan_nodes(form, f, z, a, seg):
        for mode in MODES:
            for target in TARGETS:
                got = computed(target, node, mode)
                spec = interpret(node, mode, like=target)
                assert same_bits(got, spec), (form, target, mode, got, spec)


def test_total_forms_of_a_tuple_array_through_compute() -> None:
    # was: OffloadError "a collective reads arrays or delayed arrays, not tuple" -- the
    # scheduler took the pair (tuple of scans, tuple of totals) for one tuple array
    a = (
        np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3),
        np.arange(6, dtype=np.int16).reshape(2, 3),
    )
    for form in ("scanl_total", "scanr_total"):
        scans, totals = getattr(ol, form)(pair_add, (0.0, 0), a)
        for node in (scans, totals):
            assert same_bits(ol.compute_s(node), interpret(node))
        assert same_bits(
            ol.compute_s(totals), (np.array([6.0, 15.0], np.float32), np.array([3, 12], np.int16))
        )


def test_matrix_scans_on_integers_equal_python_loops() -> None:
    rng = np.random.default_rng(31)
    comps = tuple(rng.integers(-3, 4, (2, 45), dtype=np.int64) for _ in range(4))
    for right in (False, True):
        node = (ol.scanr1 if right else ol.scanl1)(matmul2, comps)
        want = comps_scan(matmul2, comps, right)
        assert same_bits(interpret(node), want)
        assert same_bits(ol.compute_s(node), want)


def comps_scan(f: Any, comps: tuple[Any, ...], right: bool) -> tuple[Any, ...]:
    """An inclusive scan of 4-tuples by a Python loop (``f(x, acc)`` for a right scan)."""
    outs = tuple(np.empty_like(c) for c in comps)
    for r in range(comps[0].shape[0]):
        order = range(comps[0].shape[1] - 1, -1, -1) if right else range(comps[0].shape[1])
        acc = None
        for j in order:
            x = tuple(c[r, j] for c in comps)
            acc = x if acc is None else tuple(f(x, acc) if right else f(acc, x))
            for o, v in zip(outs, acc, strict=True):
                o[r, j] = v
    return outs


@pytest.mark.usefixtures("small_chunks")
def test_the_trees_associate_differently_and_each_target_keeps_its_own() -> None:
    a = np.random.default_rng(5).standard_normal((2, 100)).astype(np.float32)
    node = ol.scanl1(add, a)
    seq, par = interpret(node, like="cpu-seq"), interpret(node, like="cpu-par")
    wide = interpret(node, "cross_target", like="cpu-seq")
    assert not same_bits(seq, par) and not same_bits(seq, wide) and not same_bits(par, wide)
    assert same_bits(ol.compute_s(node), seq) and same_bits(ol.compute_p(node), par)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("target", TARGETS)
def test_scans_give_the_same_bits_at_every_offset_and_run(target: str) -> None:
    rng = np.random.default_rng(17)
    n = 100
    base = rng.standard_normal((2, n)).astype(np.float32)
    mats = tuple(rng.uniform(-1.25, 1.25, n) for _ in range(4))
    want = {
        "add": interpret(ol.scanl1(add, base), like=target),
        "seg": interpret(ol.scanl_seg(add, 0.0, base, np.array([0, 40, 60])), like=target),
        "matmul2": interpret(ol.scanr1(matmul2, mats), like=target),
    }
    buf = np.empty(2 * n + 64, np.float32)
    mbuf = np.empty((4, n + 8), np.float64)
    for off in (0, 1, 3, 17, 0):
        moved = buf[off : off + 2 * n].reshape(2, n)
        moved[...] = base  # the same values at another address (and alignment)
        mm = tuple(mbuf[k, off % 8 : off % 8 + n] for k in range(4))
        for m, v in zip(mm, mats, strict=True):
            m[...] = v
        got = {
            "add": computed(target, ol.scanl1(add, moved), "deterministic"),
            "seg": computed(
                target, ol.scanl_seg(add, 0.0, moved, np.array([0, 40, 60])), "deterministic"
            ),
            "matmul2": computed(target, ol.scanr1(matmul2, mm), "deterministic"),
        }
        for k, spec in want.items():
            assert same_bits(got[k], spec), (k, off)
        buf[...] = rng.standard_normal(buf.shape).astype(np.float32)


@pytest.mark.usefixtures("small_chunks")
def test_cross_target_scans_are_the_same_bits_on_every_cpu_target_and_the_interpreter() -> None:
    rng = np.random.default_rng(23)
    a = rng.standard_normal((3, 97)).astype(np.float32)
    mats = tuple(rng.uniform(-1.25, 1.25, 97) for _ in range(4))
    nodes = [
        ol.scanl(add, 0.5, a),
        ol.scanr1(add, a),
        ol.scanl_total(add, 0.0, a)[1],
        ol.scanl1_seg(add, a, np.array([5, 0, 60, 32])),
        ol.scanr(matmul2, (1.0, 0.0, 0.0, 1.0), mats),
    ]
    for node in nodes:
        spec = interpret(node, "cross_target")
        assert same_bits(computed("cpu-seq", node, "cross_target"), spec)
        assert same_bits(computed("cpu-par", node, "cross_target"), spec)
        assert not same_bits(interpret(node), spec)  # (the default tree is another one)
