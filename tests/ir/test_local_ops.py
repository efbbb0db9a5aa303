"""The local-array ops (``local``, ``local_load``, ``local_store``, ``local_fill``): typed
by the verifier, run by the interpreter, printed and parsed back, and kept in order by
every common pass (a store is never deleted while its array is read, two loads around a
store are never merged, nothing is hoisted out of a loop or speculated into a select)."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest

from offload.ir.interp import compute
from offload.ir.ops import LOCAL_OPS, Opcode
from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.ir.verifier import IRVerificationError, verify
from offload.opt.manager import run_pipeline
from offload.opt.registry import COMMON, DEFAULT_PIPELINE
from offload.opt.scalarize import ScalarizeLocalArrays
from offload.options import CompileOptions

pytestmark = pytest.mark.unit

HEADER = 'func @f(index %i.0: i64, capture "a" %a.1: array<f64,1>) -> (f64) {\n'


def _fn(body: str) -> Any:
    return parse_function(HEADER + textwrap.dedent(body) + "}\n")


# t = zeros(3); t[1] = a[i]; x = t[1]; t[1] = 2 * x; return t[1] + x  (== 3 * a[i])
STORE_LOAD_STORE = """\
^entry.0:
  %t.2 = local : local<f64,3>
  %3 = const 0.0 : f64
  %4 = local_fill %t.2, %3 : bool
  %5 = const 1 : i64
  %6 = load %a.1, %i.0 : f64
  %7 = local_store %t.2, %5, %6 : bool
  %8 = local_load %t.2, %5 : f64
  %9 = const 2.0 : f64
  %10 = mul %9, %8 : f64
  %11 = local_store %t.2, %5, %10 : bool
  %12 = local_load %t.2, %5 : f64
  %13 = add %12, %8 : f64
  return %13
"""

# s = zeros(1); for k in range(i): s[0] += a[k]; return s[0]  (a loop with a store)
LOOP = """\
^entry.0:
  %s.2 = local : local<f64,1>
  %3 = const 0.0 : f64
  %4 = local_fill %s.2, %3 : bool
  %5 = const 0 : i64
  br ^head.1(%5)
^head.1(%k.6: i64):
  %7 = lt %k.6, %i.0 : bool
  condbr %7, ^body.2, ^exit.3
^body.2:
  %8 = const 0 : i64
  %9 = local_load %s.2, %8 : f64
  %10 = load %a.1, %k.6 : f64
  %11 = add %9, %10 : f64
  %12 = local_store %s.2, %8, %11 : bool
  %13 = const 1 : i64
  %14 = add %k.6, %13 : i64
  br ^head.1(%14)
^exit.3:
  %15 = const 0 : i64
  %16 = local_load %s.2, %15 : f64
  return %16
"""

# t = zeros(2); if a[i] > 0: t[0] = a[i]; return t[0]  (a store in one arm: no select)
BRANCH = """\
^entry.0:
  %t.2 = local : local<f64,2>
  %3 = const 0.0 : f64
  %4 = local_fill %t.2, %3 : bool
  %5 = load %a.1, %i.0 : f64
  %6 = gt %5, %3 : bool
  condbr %6, ^then.1, ^join.2
^then.1:
  %7 = const 0 : i64
  %8 = local_store %t.2, %7, %5 : bool
  br ^join.2
^join.2:
  %9 = const 0 : i64
  %10 = local_load %t.2, %9 : f64
  return %10
"""
A = np.array([1.5, -2.0, 3.0, 0.25, -1.0])
WANT = {
    "store_load_store": 3 * A,
    "loop": np.array([A[:i].sum() for i in range(5)]),
    "branch": np.where(A > 0, A, 0.0),
}
PROGRAMS = {"store_load_store": STORE_LOAD_STORE, "loop": LOOP, "branch": BRANCH}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_local_ops_verify_interpret_and_round_trip(name: str) -> None:
    fn = _fn(PROGRAMS[name])
    verify(fn)
    assert print_function(parse_function(print_function(fn))) == print_function(fn)
    (got,) = compute(fn, (5,), [A])
    np.testing.assert_array_equal(got, WANT[name])


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("pipeline", [*COMMON, DEFAULT_PIPELINE])
def test_every_common_pass_keeps_local_array_order(name: str, pipeline: str) -> None:
    fn = _fn(PROGRAMS[name])
    out = run_pipeline(fn, CompileOptions(verify=True), pipeline=pipeline)
    (got,) = compute(out, (5,), [A])
    np.testing.assert_array_equal(got, WANT[name])
    kept = [op.opcode for op in out.ops()]
    assert Opcode.LOCAL_STORE in kept  # its array is read: never dead
    assert Opcode.SELECT not in kept or name != "branch"  # no store was speculated


def test_cse_keeps_both_loads_around_a_store() -> None:
    out = run_pipeline(_fn(STORE_LOAD_STORE), CompileOptions(verify=True), pipeline="cse")
    assert [op.opcode for op in out.ops()].count(Opcode.LOCAL_LOAD) == 2


def test_licm_leaves_the_loop_body_local_ops_in_the_loop() -> None:
    out = run_pipeline(_fn(LOOP), CompileOptions(verify=True), pipeline="licm")
    body = next(b for b in out.blocks if b.hint == "body")
    assert {op.opcode for op in body.ops} >= {Opcode.LOCAL_LOAD, Opcode.LOCAL_STORE}


def test_writes_to_an_array_never_read_are_dead() -> None:
    fn = _fn(
        """\
        ^entry.0:
          %t.2 = local : local<f64,4>
          %3 = load %a.1, %i.0 : f64
          %4 = local_fill %t.2, %3 : bool
          return %3
        """
    )
    out = run_pipeline(fn, CompileOptions(verify=True), pipeline="dce")
    assert [op.opcode for op in out.ops()] == [Opcode.LOAD]


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("%t.2 = local : local<f64,2000>", "at most 1024 elements"),
        ("%t.2 = local : f64", "expected local<elem,shape>"),
        ("%t.2 = local_load %a.1, %i.0 : f64", "needs a local array"),
    ],
)
def test_verifier_rejects_bad_local_ops(line: str, fragment: str) -> None:
    fn = _fn(f"^entry.0:\n  {line}\n  %3 = const 0.0 : f64\n  return %3\n")
    with pytest.raises(IRVerificationError) as info:
        verify(fn)
    assert any(fragment in p for p in info.value.problems), info.value.problems


def test_verifier_rejects_a_store_of_the_wrong_type_and_a_float_index() -> None:
    fn = _fn(
        """\
        ^entry.0:
          %t.2 = local : local<f64,2x2>
          %3 = const 0.5 : f64
          %4 = const 1 : i32
          %5 = local_store %t.2, %3, %4, %4 : bool
          return %3
        """
    )
    with pytest.raises(IRVerificationError) as info:
        verify(fn)
    text = "\n".join(info.value.problems)
    assert "index 0 has type f64" in text and "stores a i32, expected the element type f64" in text


def test_scalarize_turns_a_constant_index_array_into_values() -> None:
    registry = {**COMMON, ScalarizeLocalArrays.name: ScalarizeLocalArrays}
    out = run_pipeline(
        _fn(STORE_LOAD_STORE), CompileOptions(verify=True), pipeline="scalarize,dce",
        registry=registry,
    )  # fmt: skip
    assert not {op.opcode for op in out.ops()} & LOCAL_OPS
    (got,) = compute(out, (5,), [A])
    np.testing.assert_array_equal(got, WANT["store_load_store"])


@pytest.mark.parametrize("name", ["loop", "branch"])
def test_scalarize_leaves_arrays_accessed_in_several_blocks(name: str) -> None:
    registry = {**COMMON, ScalarizeLocalArrays.name: ScalarizeLocalArrays}
    out = run_pipeline(
        _fn(PROGRAMS[name]), CompileOptions(verify=True), pipeline="scalarize", registry=registry
    )
    assert Opcode.LOCAL_STORE in {op.opcode for op in out.ops()}
    (got,) = compute(out, (5,), [A])
    np.testing.assert_array_equal(got, WANT[name])


def test_scalarize_reads_zero_for_an_element_never_written() -> None:
    fn = _fn(
        """\
        ^entry.0:
          %t.2 = local : local<f64,2>
          %3 = const 1 : i64
          %4 = local_load %t.2, %3 : f64
          return %4
        """
    )
    registry = {**COMMON, ScalarizeLocalArrays.name: ScalarizeLocalArrays}
    out = run_pipeline(fn, CompileOptions(verify=True), pipeline="scalarize", registry=registry)
    assert [op.opcode for op in out.ops()] == [Opcode.CONST, Opcode.CONST]
