"""The paper's two optimisations, proved on the PTX they produce (no GPU needed).

§4.2 branch avoidance (pass ``select``): a Black-Scholes cumulative normal with
``if d < 0: ... else ...`` arms loses its data-dependent branch and gains ``selp`` (arms
as large as the paper's: NVVM if-converts a one-op arm by itself, pass or no pass).
§4.3 index calculation (pass ``divmod``): a 5x5 stencil over a linear index and a 3-D index
round trip (linear -> (i, j, k) -> linear) lose 64-bit divisions; with extents from a shape
the division left is unsigned.

Each kernel is compiled with the default pipeline and with the pass switched off; the counts
come from ``benchmarks.lab.ablation.ptx_counts`` (the ablation benchmark's own counter). The
optimised and unoptimised IR also give the same results under the IR interpreter.
Counting caveat: NVVM unrolls the grid-stride loop of a straight-line body (about 4 copies
plus an unsigned trip-count division), so branches are compared as *float-predicated*
conditional branches (data-dependent divergence) and divisions as *signed* 64-bit ones
(the element function's ``//`` and ``%``), which the loop skeleton never emits at rank 1.

A real gap of the optimiser is an ``xfail(strict=True)`` naming the missing rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from benchmarks.lab.ablation import ptx_counts
from offload.frontend.lower import fetch_captures
from offload.ir.core import Function
from offload.ir.interp import compute
from offload.ir.printer import print_function
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.compile import compile_ptx
from offload.ptx.kernel_source import build_kernel_source

pytestmark = pytest.mark.ptx

INV_SQRT_2PI = 0.39894228040143270286
_RNG = np.random.default_rng(7)
N_OPT = 24
S, K, R, V, T = (
    _RNG.uniform(lo, hi, N_OPT).astype(np.float32)
    for lo, hi in ((42.0, 100.0), (40.0, 110.0), (0.0275, 0.1), (0.05, 0.65), (0.05, 1.0))
)


def cnd(d: Any) -> Any:
    """Cumulative normal with the code pushed into both ``if d < 0`` arms (the paper's §4.2
    shape), the arms alpha-equivalent up to ``-d`` vs ``d`` and the final ``1 - ...``."""
    if d < 0:
        k = 1.0 / (1.0 + 0.2316419 * -d)
        poly = k * (
            0.31938153
            + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))
        )
        r = INV_SQRT_2PI * np.exp(-0.5 * d * d) * poly
    else:
        k = 1.0 / (1.0 + 0.2316419 * d)
        poly = k * (
            0.31938153
            + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))
        )
        r = 1.0 - INV_SQRT_2PI * np.exp(-0.5 * d * d) * poly
    return r


def cnd_paper(d: Any) -> Any:
    """As :func:`cnd` but the then-arm written ``1 - c*d``: its first differing op has another
    opcode than the else-arm's (``sub`` vs ``add``)."""
    if d < 0:
        k = 1.0 / (1.0 - 0.2316419 * d)
        poly = k * (
            0.31938153
            + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))
        )
        r = INV_SQRT_2PI * np.exp(-0.5 * d * d) * poly
    else:
        k = 1.0 / (1.0 + 0.2316419 * d)
        poly = k * (
            0.31938153
            + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))
        )
        r = 1.0 - INV_SQRT_2PI * np.exp(-0.5 * d * d) * poly
    return r


def _price(normal: Callable[[Any], Any]) -> Callable[[int], Any]:
    def price(i: int) -> Any:
        s, k, r, v, t = S[i], K[i], R[i], V[i], T[i]
        den = v * np.sqrt(t)
        d1 = ((r + 0.5 * v * v) * t + np.log(s / k)) / den
        d2 = d1 - den
        return s * normal(d1) - k * np.exp(-r * t) * normal(d2)

    return price


H, W = 6, 7
SRC = _RNG.uniform(-1.0, 1.0, H * W).astype(np.float32)
WEIGHTS = _RNG.uniform(-1.0, 1.0, (5, 5)).astype(np.float32)


def stencil(t: int) -> Any:
    """A 5x5 stencil over a linear index, clamped neighbour reads of a flat source."""
    i = t // W
    j = t % W
    acc = np.float32(0.0)
    for a in range(5):
        yy = min(max(i + a - 2, 0), H - 1)
        for b in range(5):
            xx = min(max(j + b - 2, 0), W - 1)
            acc += WEIGHTS[a, b] * SRC[yy * W + xx]
    return acc


IMG = SRC.reshape(H, W)


def stencil_shape(t: int) -> Any:
    """The 5x5 stencil with its extents read from the image's shape (``>= 0``, maybe 0)."""
    h = IMG.shape[0]
    w = IMG.shape[1]
    i = t // w
    j = t % w
    acc = np.float32(0.0)
    for a in range(5):
        yy = min(max(i + a - 2, 0), h - 1)
        for b in range(5):
            xx = min(max(j + b - 2, 0), w - 1)
            acc += WEIGHTS[a, b] * IMG[yy, xx]
    return acc


VOL = np.zeros((3, 4, 5), np.float32)
FLAT = _RNG.uniform(-1.0, 1.0, VOL.size).astype(np.float32)


def round_trip(t: int) -> Any:
    """linear -> (i, j, k) -> linear, extents read from an array's shape (Repa's
    ``toIndex sh (fromIndex sh t)``)."""
    m = VOL.shape[1]
    n = VOL.shape[2]
    i = t // (m * n)
    r = t % (m * n)
    j = r // n
    k = r % n
    return FLAT[(i * m + j) * n + k]


def round_trip_literal(t: int) -> Any:
    """The same round trip over literal extents (4 x 5)."""
    i = t // 20
    r = t % 20
    j = r // 5
    k = r % 5
    return FLAT[(i * 4 + j) * 5 + k]


KERNELS: dict[str, tuple[Callable[..., Any], int]] = {
    "cnd": (_price(cnd), N_OPT),
    "cnd_paper": (_price(cnd_paper), N_OPT),
    "stencil": (stencil, H * W),
    "stencil_shape": (stencil_shape, H * W),
    "round_trip": (round_trip, VOL.size),
    "round_trip_literal": (round_trip_literal, VOL.size),
}


@functools.cache
def _optimised(name: str, disabled: frozenset[str]) -> Function:
    fn, _ = KERNELS[name]
    lowered = check_and_lower(fn, 1)
    return run_pipeline(lowered.ir, CompileOptions(disabled_passes=disabled, verify=True))


@functools.cache
def _counts(name: str, disabled: frozenset[str]) -> dict[str, int]:
    ir = _optimised(name, disabled)
    ptx = compile_ptx(build_kernel_source(ir, bounds_check=False), name, (9, 0))
    return ptx_counts(ptx)


def _on_off(name: str, pass_name: str) -> tuple[dict[str, int], dict[str, int], str]:
    on = _counts(name, frozenset())
    off = _counts(name, frozenset({pass_name}))
    return on, off, f"{name}: with {pass_name} {on}\nwithout {pass_name} {off}"


def test_select_merging_removes_the_float_branch_of_black_scholes_cnd() -> None:
    on, off, msg = _on_off("cnd", "select")
    assert off["float_branches"] >= 1, msg  # the branch is there to remove
    assert on["float_branches"] < off["float_branches"], msg
    assert on["selp"] > off["selp"], msg


def test_select_merging_removes_the_float_branch_of_the_papers_cnd() -> None:
    on, off, msg = _on_off("cnd_paper", "select")
    assert off["float_branches"] >= 1, msg
    assert on["float_branches"] < off["float_branches"], msg
    assert on["selp"] > off["selp"], msg


def test_divmod_reduces_the_divisions_of_a_linear_index_stencil() -> None:
    on, off, msg = _on_off("stencil", "divmod")
    assert on["divrem_s64"] < off["divrem_s64"], msg


def test_divmod_makes_the_divisions_of_a_shape_indexed_stencil_unsigned() -> None:
    # t >= 0 and an extent >= 0: `t // w` becomes div {nonneg} (emitted unsigned: div.u64
    # or div.u32 after NVVM's bypass), `t % w` reuses it. No signed division is left.
    on, off, msg = _on_off("stencil_shape", "divmod")
    assert off["divrem_s64"] >= 2, msg
    assert on["divrem_s64"] == 0, msg
    ir_text = print_function(_optimised("stencil_shape", frozenset()))
    assert ir_text.count("{nonneg = true}") == 1 and "rem" not in ir_text, ir_text


def test_divmod_reduces_the_divisions_of_a_3d_index_round_trip() -> None:
    on, off, msg = _on_off("round_trip", "divmod")
    assert on["divrem_s64"] < off["divrem_s64"], msg
    assert on["divrem"] < off["divrem"], msg


def test_divmod_removes_every_division_of_a_3d_index_round_trip() -> None:
    on, off, msg = _on_off("round_trip", "divmod")
    assert on["divrem_s64"] == 0, msg


def test_divmod_turns_a_3d_round_trip_over_literal_extents_into_the_linear_index() -> None:
    # NVVM strength-reduces division by a constant, so PTX has no div either way: the win
    # is in the IR (no floor division left) and in the instruction count.
    ir_text = print_function(_optimised("round_trip_literal", frozenset()))
    assert "floordiv" not in ir_text and "floormod" not in ir_text, ir_text
    on, off, msg = _on_off("round_trip_literal", "divmod")
    assert on["instructions"] < off["instructions"], msg


def _interp(name: str, disabled: frozenset[str] | None) -> tuple[np.ndarray[Any, Any], ...]:
    fn, n = KERNELS[name]
    lowered = check_and_lower(fn, 1)
    ir = lowered.ir if disabled is None else _optimised(name, disabled)
    return compute(ir, (n,), fetch_captures(fn, lowered))


@pytest.mark.parametrize(
    ("name", "pass_name"),
    [
        ("cnd", "select"),
        ("cnd_paper", "select"),
        ("stencil", "divmod"),
        ("stencil_shape", "divmod"),
        ("round_trip", "divmod"),
        ("round_trip_literal", "divmod"),
    ],
)
def test_pass_on_and_off_and_unoptimised_ir_agree_under_the_interpreter(
    name: str, pass_name: str
) -> None:
    unopt = _interp(name, None)
    for disabled in (frozenset(), frozenset({pass_name})):
        got = _interp(name, disabled)
        for a, b in zip(unopt, got, strict=True):
            assert np.array_equal(a, b, equal_nan=True), (name, sorted(disabled), a, b)
    if name.startswith("round_trip"):
        assert np.array_equal(unopt[0], FLAT)  # the round trip is the identity
