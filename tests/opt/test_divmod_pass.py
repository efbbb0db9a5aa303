"""Where the divmod pass applies the rules that share a quotient (divmod-pair), drop the
zero-divisor guard of a mod by a multiple (zero-divisor-select) and mark non-negative
divisions (nonneg) -- and where it must not. The algebra is proved in test_divmod_rules.py;
here each rewrite is also run under the interpreter against the original."""

from __future__ import annotations

import numpy as np
import pytest

from offload.ir.interp import compute
from offload.ir.parser import parse_function
from tests.opt.golden import filecheck, run_text

pytestmark = pytest.mark.unit

# %w: a captured int of any sign (may be 0); %a: an array whose extents are >= 0
HEAD = (
    'func @f(index %t.0: i64, capture "w" %w.1: i64, capture "a" %a.2: array<f64,2>)'
    " -> (i64) {\n^entry.0:\n"
)


def _agree(src: str, out: str, w_values: tuple[int, ...] = (-3, 0, 1, 4)) -> None:
    ts = np.arange(13, dtype=np.int64)
    for w in w_values:
        for shape in ((2, 0), (3, 5)):
            a = np.zeros(shape)
            want = compute(parse_function(src), ts.shape, [np.int64(w), a])
            got = compute(parse_function(out), ts.shape, [np.int64(w), a])
            assert np.array_equal(want[0], got[0]), (w, shape, want, got)


def _linear(divisor: str, mod_first: bool = False) -> str:
    div = f"  %i = floordiv %t.0, {divisor} : i64\n"
    mod = f"  %j = floormod %t.0, {divisor} : i64\n"
    return (
        HEAD
        + "  %n = shape %a.2 {axis = 1} : i64\n"
        + (mod + div if mod_first else div + mod)
        + "  %c = const 3 : i64\n  %k = mul %j, %c : i64\n  %r = add %i, %k : i64\n"
        + "  return %r\n}\n"
    )


def test_mod_of_a_signed_divisor_reuses_its_quotient_and_guards_a_zero_divisor() -> None:
    src = _linear("%w.1")
    out = run_text("divmod,cse,dce", src)
    filecheck(
        out,
        """\
        CHECK: %[[Q:.*]] = floordiv %t.0, %w.1
        CHECK: mul %[[Q]], %w.1
        CHECK: eq %w.1
        CHECK: select
        CHECK-NOT: floormod
        """,
    )
    _agree(src, out)


def test_division_by_an_extent_is_marked_nonneg_and_its_mod_reuses_it() -> None:
    src = _linear("%n")
    out = run_text("divmod,cse,dce", src)
    filecheck(
        out,
        "CHECK: div %t.0, %n.{{.*}} {nonneg = true}\nCHECK-NOT: floor\nCHECK-NOT: rem\n",
    )
    _agree(src, out)


def test_mod_computed_before_its_quotient_still_needs_one_division() -> None:
    src = _linear("%w.1", mod_first=True)
    out = run_text("divmod,cse,dce", src)
    assert out.count("floordiv") == 1 and "floormod" not in out, out
    _agree(src, out)


def test_mod_keeps_its_division_when_the_quotient_is_in_another_branch() -> None:
    src = (
        HEAD
        + """\
  %z = const 0 : i64
  %p = gt %t.0, %z : bool
  condbr %p, ^l.1, ^r.2
^l.1:
  %i = floordiv %t.0, %w.1 : i64
  br ^j.3(%i)
^r.2:
  %m = floormod %t.0, %w.1 : i64
  br ^j.3(%m)
^j.3(%x: i64):
  return %x
}
"""
    )
    filecheck(run_text("divmod", src), "CHECK: floordiv\nCHECK: floormod\n")


def test_mod_of_a_constant_is_left_to_strength_reduction() -> None:
    src = _linear("%c7").replace("  %n = shape", "  %c7 = const 7 : i64\n  %n = shape")
    out = run_text("divmod", src)
    assert "mul %i" not in out and ("rem" in out or "floormod" in out), out


def test_index_round_trip_over_three_extents_loses_every_division() -> None:
    src = """\
func @f(index %t.0: i64, capture "v" %v.1: array<f64,3>) -> (i64) {
^entry.0:
  %m = shape %v.1 {axis = 1} : i64
  %n = shape %v.1 {axis = 2} : i64
  %mn = mul %m, %n : i64
  %i = floordiv %t.0, %mn : i64
  %r = floormod %t.0, %mn : i64
  %j = floordiv %r, %n : i64
  %k = floormod %r, %n : i64
  %a = mul %i, %m : i64
  %b = add %a, %j : i64
  %c = mul %b, %n : i64
  %d = add %c, %k : i64
  return %d
}
"""
    out = run_text("divmod,fold,cse,dce", src)
    filecheck(out, "CHECK-NOT: div\nCHECK-NOT: rem\nCHECK-NOT: floor\nCHECK: return\n")
    ts = np.arange(70, dtype=np.int64)
    for shape in ((2, 3, 4), (1, 0, 4), (5, 1, 1)):
        v = np.zeros(shape)
        want = compute(parse_function(src), ts.shape, [v])
        assert np.array_equal(want[0], compute(parse_function(out), ts.shape, [v])[0]), shape


@pytest.mark.parametrize(
    ("modulus", "removed"),
    [("%mn", True), ("%n", True), ("%mpn", False)],
)
def test_zero_divisor_guard_goes_only_for_a_mod_by_a_multiple(modulus: str, removed: bool) -> None:
    src = (
        'func @f(index %t.0: i64, capture "w" %w.1: i64, capture "u" %u.2: i64) -> (i64) {\n'
        "^entry.0:\n"
        "  %m = add %u.2, %u.2 : i64\n  %n = add %w.1, %u.2 : i64\n"
        "  %mn = mul %m, %n : i64\n  %mpn = add %m, %n : i64\n"
        "  %six = const 6 : i64\n  %l = sub %t.0, %six : i64\n"
        f"  %r = floormod %l, {modulus} : i64\n"
        "  %z = const 0 : i64\n  %e = eq %n, %z : bool\n  %s = select %e, %z, %r : i64\n"
        "  return %s\n}\n"
    )
    out = run_text("divmod,dce", src)
    assert ("select" not in out) is removed, out
    for w, u in ((0, 0), (2, -2), (3, 1), (-1, 4)):  # l = t - 6 spans [-6, 6]
        args = [np.int64(w), np.int64(u)]
        want = compute(parse_function(src), (13,), args)
        got = compute(parse_function(out), (13,), args)
        assert np.array_equal(want[0], got[0]), (w, u)


def test_existing_truncating_division_of_nonnegative_operands_is_marked() -> None:
    src = HEAD + "  %n = shape %a.2 {axis = 0} : i64\n  %d = rem %t.0, %n : i64\n  return %d\n}\n"
    filecheck(run_text("divmod", src), "CHECK: rem %t.0, %n.{{.*}} {nonneg = true}\n")


def test_truncating_division_of_a_signed_capture_is_not_marked() -> None:
    src = HEAD + "  %d = div %t.0, %w.1 : i64\n  return %d\n}\n"
    out = run_text("divmod", src)
    assert "div %t.0, %w.1 : i64" in out and "nonneg" not in out, out
