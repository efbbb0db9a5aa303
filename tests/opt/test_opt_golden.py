"""Golden tests: IR text in, expected IR text (or FileCheck patterns) out, per pass."""

from __future__ import annotations

import pytest

from tests.opt.golden import filecheck, run_text

pytestmark = pytest.mark.unit

H1 = "func @f(index %i.0: i64) -> (i64) {\n^entry.0:\n"
HF = 'func @f(index %i.0: i64, capture "x" %x.1: f64) -> (f64) {\n^entry.0:\n'
HA = 'func @f(index %i.0: i64, capture "a" %a.1: array<f64,1>) -> (f64) {\n^entry.0:\n'


def test_fold_evaluates_constant_integer_floor_division_like_python() -> None:
    out = run_text(
        "fold,dce",
        H1 + "  %1 = const -7 : i64\n  %2 = const 2 : i64\n"
        "  %3 = floordiv %1, %2 : i64\n  return %3\n}\n",
    )
    assert out == H1 + "  %1 = const -4 : i64\n  return %1\n}\n"


def test_fold_keeps_float_add_of_positive_zero_without_fastmath() -> None:
    src = HF + "  %2 = const 0.0 : f64\n  %3 = add %x.1, %2 : f64\n  return %3\n}\n"
    filecheck(run_text("fold", src), "CHECK: add %x.1\nCHECK: return\n")


def test_fold_drops_float_add_of_zero_under_fastmath() -> None:
    src = HF + "  %2 = const 0.0 : f64\n  %3 = add %x.1, %2 : f64\n  return %3\n}\n"
    assert run_text("fold,dce", src, fastmath=True) == HF + "  return %x.1\n}\n"


RECIP_SQRT = HF + (
    "  %2 = math %x.1 {fn = sqrt} : f64\n  %3 = const 1.0 : f64\n"
    "  %4 = truediv %3, %2 : f64\n  return %4\n}\n"
)


def test_fold_keeps_one_over_sqrt_without_fastmath() -> None:
    filecheck(run_text("fold,dce", RECIP_SQRT), "CHECK: math %x.1 {fn = sqrt}\nCHECK: truediv")


def test_fold_makes_one_over_sqrt_a_reciprocal_square_root_under_fastmath() -> None:
    out = run_text("fold,dce", RECIP_SQRT, fastmath=True)
    assert out == HF + "  %2 = math %x.1 {fn = rsqrt} : f64\n  return %2\n}\n"


def test_fold_keeps_two_over_sqrt_under_fastmath() -> None:
    src = RECIP_SQRT.replace("const 1.0", "const 2.0")
    filecheck(run_text("fold,dce", src, fastmath=True), "CHECK: truediv\nCHECK-NOT: rsqrt")


def test_fold_keeps_float_floor_division_by_one() -> None:
    # x // 1.0 is floor(x) (and NaN for inf): fuzzer seed 50663 had inf // 1.0 folded to inf
    src = HF + "  %2 = const 1.0 : f64\n  %3 = floordiv %x.1, %2 : f64\n  return %3\n}\n"
    filecheck(run_text("fold,dce", src), "CHECK: floordiv %x.1\n")


def test_fold_wraps_the_negated_constant_of_a_subtraction_into_the_type() -> None:
    # x - (-128) on int8 is x + (-128): -(-128) wraps (fuzzer seed 90039 crashed on 128)
    h8 = 'func @f(index %i.0: i64, capture "x" %x.1: i8) -> (i8) {\n^entry.0:\n'
    src = h8 + "  %2 = const -128 : i8\n  %3 = sub %x.1, %2 : i8\n  return %3\n}\n"
    filecheck(run_text("fold,dce", src), "CHECK: const -128 : i8\nCHECK: add %x.1")


def test_fold_keeps_float_multiply_by_zero_without_fastmath() -> None:
    src = HF + "  %2 = const 0.0 : f64\n  %3 = mul %x.1, %2 : f64\n  return %3\n}\n"
    filecheck(run_text("fold,dce", src), "CHECK: mul %x.1\n")


def test_fold_removes_integer_multiply_by_one_and_add_of_zero() -> None:
    src = H1 + (
        "  %1 = const 1 : i64\n  %2 = mul %i.0, %1 : i64\n  %3 = const 0 : i64\n"
        "  %4 = add %2, %3 : i64\n  return %4\n}\n"
    )
    assert run_text("fold,dce", src) == H1 + "  return %i.0\n}\n"


def test_fold_reassociates_integer_constant_offsets() -> None:
    src = H1 + (
        "  %1 = const 1 : i64\n  %2 = sub %i.0, %1 : i64\n  %3 = add %2, %1 : i64\n  return %3\n}\n"
    )
    assert run_text("fold,dce", src) == H1 + "  return %i.0\n}\n"


def test_fold_keeps_float_self_comparison_because_of_nan() -> None:
    src = HF + (
        "  %2 = eq %x.1, %x.1 : bool\n  %3 = const 1.0 : f64\n"
        "  %4 = select %2, %x.1, %3 : f64\n  return %4\n}\n"
    )
    filecheck(run_text("fold,dce", src), "CHECK: eq %x.1, %x.1\nCHECK: select\n")


def test_cse_merges_equal_loads_and_commuted_adds() -> None:
    src = HA + (
        "  %2 = load %a.1, %i.0 : f64\n  %3 = load %a.1, %i.0 : f64\n"
        "  %4 = add %2, %3 : f64\n  %5 = add %3, %2 : f64\n  %6 = mul %4, %5 : f64\n"
        "  return %6\n}\n"
    )
    assert run_text("cse,dce", src) == HA + (
        "  %2 = load %a.1, %i.0 : f64\n  %3 = add %2, %2 : f64\n  %4 = mul %3, %3 : f64\n"
        "  return %4\n}\n"
    )


def test_dce_removes_unused_load_and_unused_block_argument() -> None:
    src = HA + (
        "  %2 = load %a.1, %i.0 : f64\n  %3 = const 1.0 : f64\n  br ^b.1(%2, %3)\n"
        "^b.1(%4: f64, %5: f64):\n  return %5\n}\n"
    )
    filecheck(run_text("dce", src), "CHECK-NOT: load\nCHECK: ^b.1(%{{.*}}: f64):\n")


def test_simplifycfg_folds_constant_branch_and_merges_chain() -> None:
    src = H1 + (
        "  %1 = const true : bool\n  condbr %1, ^a.1, ^b.2\n^a.1:\n  br ^c.3(%i.0)\n"
        "^b.2:\n  %2 = const 0 : i64\n  br ^c.3(%2)\n^c.3(%3: i64):\n  return %3\n}\n"
    )
    assert run_text("simplifycfg,dce", src) == H1 + "  return %i.0\n}\n"


def test_copyprop_replaces_block_argument_with_one_incoming_value() -> None:
    src = H1 + (
        "  %1 = const 0 : i64\n  %2 = lt %i.0, %1 : bool\n  condbr %2, ^a.1, ^b.2\n"
        "^a.1:\n  br ^c.3(%i.0)\n^b.2:\n  br ^c.3(%i.0)\n^c.3(%3: i64):\n  return %3\n}\n"
    )
    filecheck(run_text("copyprop", src), "CHECK: ^c.3:\nCHECK-NEXT: return %i.0\n")


DIAMOND = (
    HA
    + """\
  %2 = load %a.1, %i.0 : f64
  %3 = const 0.5 : f64
  %4 = gt %2, %3 : bool
  condbr %4, ^then.1, ^else.2
^then.1:
  %5 = mul %2, %2 : f64
  %6 = const 2.0 : f64
  %7 = add %5, %6 : f64
  br ^join.3(%7)
^else.2:
  %8 = mul %2, %2 : f64
  %9 = const 3.0 : f64
  %10 = add %8, %9 : f64
  br ^join.3(%10)
^join.3(%11: f64):
  return %11
}
"""
)


def test_branch_merge_turns_diamond_into_select_with_shared_ops_once() -> None:
    out = run_text("select,cse,dce", DIAMOND)
    filecheck(
        out,
        """\
        CHECK: %[[X:.*]] = load
        CHECK: %[[C:.*]] = gt %[[X]]
        CHECK: %[[SQ:.*]] = mul %[[X]], %[[X]] : f64
        CHECK-NOT: mul
        CHECK: %[[K:.*]] = select %[[C]], %{{.*}}, %{{.*}} : f64
        CHECK: %[[R:.*]] = add %[[SQ]], %[[K]] : f64
        CHECK: return %[[R]]
        CHECK-NOT: condbr
        """,
    )


def test_branch_merge_respects_mismatch_threshold() -> None:
    out = run_text(
        "select",
        DIAMOND.replace("add %8", "sub %8")
        .replace("mul %2, %2", "neg %2")
        .replace("neg %2 : f64\n  %6", "neg %2 : f64\n  %6"),
        select_threshold=0,
    )
    filecheck(out, "CHECK: condbr\n")


def test_branch_merge_does_not_speculate_guarded_load() -> None:
    src = (
        HA
        + """\
  %2 = const 0 : i64
  %3 = gt %i.0, %2 : bool
  %4 = const 0.0 : f64
  condbr %3, ^then.1, ^join.2(%4)
^then.1:
  %5 = const 1 : i64
  %6 = sub %i.0, %5 : i64
  %7 = load %a.1, %6 : f64
  br ^join.2(%7)
^join.2(%8: f64):
  return %8
}
"""
    )
    filecheck(run_text("select", src), "CHECK: condbr\nCHECK: load\n")


def test_branch_merge_pairs_loads_of_both_arms_over_a_selected_index() -> None:
    src = (
        HA
        + """\
  %2 = const 0 : i64
  %3 = gt %i.0, %2 : bool
  condbr %3, ^then.1, ^else.2
^then.1:
  %4 = const 1 : i64
  %5 = sub %i.0, %4 : i64
  %6 = load %a.1, %5 : f64
  br ^join.3(%6)
^else.2:
  %7 = load %a.1, %i.0 : f64
  br ^join.3(%7)
^join.3(%8: f64):
  return %8
}
"""
    )
    filecheck(
        run_text("select", src),
        "CHECK: %[[I:.*]] = select\nCHECK: load %a.1, %[[I]]\nCHECK-NOT: condbr\n",
    )


def test_licm_hoists_invariant_math_out_of_counted_loop() -> None:
    src = (
        HF
        + """\
  %2 = const 0 : i64
  %3 = const 0.0 : f64
  br ^loop.1(%2, %3)
^loop.1(%4: i64, %5: f64):
  %6 = const 3 : i64
  %7 = lt %4, %6 : bool
  condbr %7, ^body.2, ^done.3
^body.2:
  %8 = math %x.1 {fn = sqrt} : f64
  %9 = add %5, %8 : f64
  %10 = const 1 : i64
  %11 = add %4, %10 : i64
  br ^loop.1(%11, %9)
^done.3:
  return %5
}
"""
    )
    filecheck(
        run_text("licm", src),
        "CHECK: ^entry.0:\nCHECK: math %x.1 {fn = sqrt}\nCHECK: ^loop\nCHECK-NOT: math\n",
    )
