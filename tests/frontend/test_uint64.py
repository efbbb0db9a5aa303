"""uint64 as NumPy 2 has it (issue 17 item 7): Python ints up to ``2**64 - 1`` — literal,
folded or captured — follow NEP 50 beside a uint64 (cast to it; rejected beside a type that
cannot hold them, as NumPy raises OverflowError), so the classic 64-bit hash finalisers
compile and match NumPy's vectorised arithmetic bit for bit on every target (the simulator
runs the same cases: ``tests/sim/test_uint64_sim.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.diagnostics import TypeMismatch
from offload.frontend.lower import fetch_captures, lower
from offload.ir.interp import compute

N = 64
U = (np.arange(N, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(2**64 - 1)
K_MUL = 0xBF58476D1CE4E5B9  # a captured Python int beyond int64
FNV_PRIME = 0x100000001B3
XXH_P2 = 0xC2B2AE3D27D4EB4F
XXH_P3 = 0x165667B19E3779F9


def splitmix64(i: int) -> Any:
    z = U[i] + 0x9E3779B97F4A7C15
    z = (z ^ (z >> 30)) * K_MUL
    z = (z ^ (z >> 27)) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> 31)


def fnv1a64(i: int) -> Any:
    x = U[i]
    h = np.uint64(0xCBF29CE484222325)
    for k in range(8):
        h = (h ^ ((x >> (8 * k)) & 0xFF)) * FNV_PRIME
    return h


def fmix64(i: int) -> Any:
    k = U[i]
    k ^= k >> 33
    k *= 0xFF51AFD7ED558CCD
    k ^= k >> 33
    k *= np.uint64(0xC4CEB9FE1A85EC53)
    k ^= k >> 33
    return k


def xxh64_avalanche(i: int) -> Any:
    h = U[i]
    h ^= h >> 33
    h *= XXH_P2
    h ^= h >> 29
    h *= XXH_P3
    h ^= h >> 32
    return h


def _ref_splitmix64(u: np.ndarray) -> np.ndarray:
    z = u + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(K_MUL)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _ref_fnv1a64(u: np.ndarray) -> np.ndarray:
    h = np.full(u.shape, 0xCBF29CE484222325, dtype=np.uint64)
    for k in range(8):
        h = (h ^ ((u >> np.uint64(8 * k)) & np.uint64(0xFF))) * np.uint64(FNV_PRIME)
    return h


def _ref_fmix64(u: np.ndarray) -> np.ndarray:
    k = u ^ (u >> np.uint64(33))
    k = k * np.uint64(0xFF51AFD7ED558CCD)
    k = k ^ (k >> np.uint64(33))
    k = k * np.uint64(0xC4CEB9FE1A85EC53)
    return k ^ (k >> np.uint64(33))


def _ref_xxh64_avalanche(u: np.ndarray) -> np.ndarray:
    h = u ^ (u >> np.uint64(33))
    h = h * np.uint64(XXH_P2)
    h = h ^ (h >> np.uint64(29))
    h = h * np.uint64(XXH_P3)
    return h ^ (h >> np.uint64(32))


HASHES: list[tuple[str, Callable[[int], Any], np.ndarray]] = [
    ("splitmix64", splitmix64, _ref_splitmix64(U)),
    ("fnv1a64", fnv1a64, _ref_fnv1a64(U)),
    ("murmur3_fmix64", fmix64, _ref_fmix64(U)),
    ("xxh64_avalanche", xxh64_avalanche, _ref_xxh64_avalanche(U)),
]
IDS = [h[0] for h in HASHES]


def assert_bits(got: Any, want: np.ndarray) -> None:
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, want)


@pytest.mark.unit
@pytest.mark.parametrize("case", HASHES, ids=IDS)
def test_hash_finaliser_matches_numpy_in_the_interpreter(case: Any) -> None:
    _, fn, want = case
    lowered = lower(fn, 1)
    (got,) = compute(lowered.ir, (N,), fetch_captures(fn, lowered))
    assert_bits(got, want)


@pytest.mark.cpu
@pytest.mark.parametrize("compute_x", [ol.compute_s, ol.compute_p], ids=["s", "p"])
@pytest.mark.parametrize("case", HASHES, ids=IDS)
def test_hash_finaliser_matches_numpy_on_the_cpu(case: Any, compute_x: Any) -> None:
    _, fn, want = case
    assert_bits(compute_x((N,), fn), want)


def _interp(fn: Callable[..., Any], n: int = 4) -> np.ndarray:
    lowered = lower(fn, 1)
    (got,) = compute(lowered.ir, (n,), fetch_captures(fn, lowered))
    return got  # type: ignore[no-any-return]


@pytest.mark.unit
def test_uint64_of_a_literal_beyond_int64_is_that_uint64() -> None:
    def f(i: int) -> Any:
        return np.uint64(18446744073709551615) - np.uint64(i)

    got = _interp(f)
    assert got.dtype == np.uint64
    assert list(got) == [2**64 - 1 - i for i in range(4)]


@pytest.mark.unit
def test_python_int_beyond_int64_folds_and_stays_weak_beside_uint64() -> None:
    def f(i: int) -> Any:
        return U[i] & (0x8000000000000000 + 0xFF)

    got = _interp(f)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, U[:4] & np.uint64(0x80000000000000FF))


@pytest.mark.unit
def test_python_int_beyond_int64_beside_a_float32_is_that_float32() -> None:
    x = np.float32([1.0, 2.0, 3.0, 4.0])

    def f(i: int) -> Any:
        return x[i] * 0x9E3779B97F4A7C15

    got = _interp(f)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x * np.float32(0x9E3779B97F4A7C15))


@pytest.mark.unit
def test_python_int_beyond_int64_compares_exactly_with_an_int64() -> None:
    a = np.array([-5, 0, 2**63 - 1, 7], dtype=np.int64)

    def f(i: int) -> Any:
        return (a[i] < 0x9E3779B97F4A7C15, a[i] == 18446744073709551615, 0x9E3779B97F4A7C15 > a[i])

    lowered = lower(f, 1)
    got = compute(lowered.ir, (4,), fetch_captures(f, lowered))
    for r, g in enumerate(got):
        assert g.dtype == np.bool_
        np.testing.assert_array_equal(g, [f(i)[r] for i in range(4)])


@pytest.mark.unit
def test_python_int_beyond_int64_beside_an_int64_is_numpys_overflow() -> None:
    a = np.arange(4, dtype=np.int64)

    def f(i: int) -> Any:
        return a[i] * 0xBF58476D1CE4E5B9

    with pytest.raises(OverflowError):
        a[0] * 0xBF58476D1CE4E5B9  # noqa: B018  (what NumPy 2 does)
    with pytest.raises(TypeMismatch, match="Python int 13787848793156543929 does not fit int64"):
        lower(f, 1)


@pytest.mark.unit
def test_python_int_beyond_uint64_is_rejected_naming_both_widths() -> None:
    def f(i: int) -> Any:
        return U[i] * 0x1_0000_0000_0000_0000

    with pytest.raises(TypeMismatch, match="does not fit int64 or uint64") as info:
        lower(f, 1)
    assert "^^^" in str(info.value)


@pytest.mark.unit
def test_a_uint64_operand_is_never_said_not_to_fit_int64() -> None:
    def f(i: int) -> Any:
        return U[i] * 0xBF58476D1CE4E5B9 + np.uint64(0x9E3779B97F4A7C15) * K_MUL

    lowered = lower(f, 1)  # no error at all
    assert "u64" in str(lowered.ir.result_types[0])


@pytest.mark.cpu
def test_captured_int_beyond_int64_is_frozen_and_rebinding_it_recompiles() -> None:
    global K_MUL
    saved = K_MUL
    try:
        first = ol.compute_s((N,), splitmix64)
        K_MUL = 0x94D049BB133111EB
        second = ol.compute_s((N,), splitmix64)
    finally:
        K_MUL = saved
    assert_bits(first, _ref_splitmix64(U))
    z = U + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0x94D049BB133111EB)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    assert_bits(second, z ^ (z >> np.uint64(31)))


@pytest.mark.ptx
@pytest.mark.parametrize("case", HASHES, ids=IDS)
def test_hash_finaliser_compiles_to_ptx_with_64_bit_multiplies(case: Any) -> None:
    import io

    _, fn, _ = case
    text = ol.explain(fn, (N,), target="gpu", file=io.StringIO())
    ptx = text[text.find("== PTX ==") :]
    assert ".entry" in ptx
    assert "mul.lo.s64" in ptx or "mul.lo.u64" in ptx
