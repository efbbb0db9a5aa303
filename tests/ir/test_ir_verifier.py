"""The verifier rejects each broken invariant with a message naming it, and reports all."""

from __future__ import annotations

import textwrap

import pytest

from offload.diagnostics import OffloadError
from offload.ir import Block, Builder, Capture, Opcode
from offload.ir.core import Function, Jump, Op, Return, Value
from offload.ir.parser import parse_function
from offload.ir.types import BOOL, F32, F64, I32, ArrayType
from offload.ir.verifier import IRVerificationError, verify

pytestmark = pytest.mark.unit

HEADER = (
    'func @f(index %i.0: i64, capture "a" %a.1: array<f32,2>, capture "x" %x.2: f32) -> (f32) {\n'
)


def _problems(fn: Function) -> list[str]:
    with pytest.raises(IRVerificationError) as info:
        verify(fn)
    return info.value.problems


def _text_problems(body: str) -> list[str]:
    return _problems(parse_function(HEADER + textwrap.dedent(body) + "}\n"))


def _one(body: str, fragment: str) -> None:
    problems = _text_problems(body)
    assert any(fragment in p for p in problems), problems


def test_valid_loop_verifies() -> None:
    verify(
        parse_function(
            HEADER
            + textwrap.dedent(
                """\
                ^entry.0:
                  br ^loop.1(%i.0, %x.2)
                ^loop.1(%k.3: i64, %acc.4: f32):
                  %5 = const 0 : i64
                  %6 = gt %k.3, %5 : bool
                  condbr %6, ^body.2, ^exit.3
                ^body.2:
                  %7 = load %a.1, %k.3, %5 : f32
                  %8 = add %acc.4, %7 : f32
                  %9 = const 1 : i64
                  %10 = sub %k.3, %9 : i64
                  br ^loop.1(%10, %8)
                ^exit.3:
                  return %acc.4
                """
            )
            + "}\n"
        )
    )


def test_verification_error_is_a_compiler_bug_not_a_user_error() -> None:
    assert not issubclass(IRVerificationError, OffloadError)


# -- one test per structural check ------------------------------------------------------


def test_block_without_terminator_is_reported() -> None:
    fn = parse_function(HEADER + "^entry.0:\n  return %x.2\n}\n")
    fn.entry.terminator = None
    assert any("has no terminator" in p for p in _problems(fn))


def test_branch_to_block_outside_function_is_reported() -> None:
    fn = parse_function(HEADER + "^entry.0:\n  return %x.2\n}\n")
    fn.entry.terminator = Jump(Block())
    assert any("not in the function" in p for p in _problems(fn))


def test_branch_argument_count_mismatch_is_reported() -> None:
    _one(
        "^entry.0:\n  br ^b.1(%x.2)\n^b.1(%y.3: f32, %z.4: f32):\n  return %y.3\n",
        "passes 1 argument(s) to ^b.1, which takes 2",
    )


def test_branch_argument_type_mismatch_is_reported() -> None:
    _one(
        "^entry.0:\n  br ^b.1(%i.0)\n^b.1(%y.3: f32):\n  return %y.3\n",
        "br argument 0 to ^b.1 has type i64, expected f32",
    )


def test_entry_block_as_branch_target_is_reported() -> None:
    _one(
        "^entry.0:\n  br ^b.1\n^b.1:\n  br ^entry.0\n",
        "the entry block is a branch target of ^b.1",
    )


def test_non_bool_branch_condition_is_reported() -> None:
    _one(
        "^entry.0:\n  condbr %i.0, ^b.1, ^b.1\n^b.1:\n  return %x.2\n",
        "condbr condition has type i64, expected bool",
    )


def test_use_not_dominated_by_definition_is_reported() -> None:
    _one(
        """\
        ^entry.0:
          %3 = lt %i.0, %i.0 : bool
          condbr %3, ^t.1, ^j.2
        ^t.1:
          %y.4 = add %x.2, %x.2 : f32
          br ^j.2
        ^j.2:
          return %y.4
        """,
        "use of %y.4 is not dominated by its definition (in ^t.1)",
    )


def test_use_before_definition_in_same_block_is_reported() -> None:
    _one(
        "^entry.0:\n  %4 = add %3, %x.2 : f32\n  %3 = const 1.0 : f32\n  return %4\n",
        # Printed names are renumbered in definition order: the later const is %4.
        "'%3 = add %4, %x.2 : f32': use of %4 is not dominated",
    )


def test_use_of_value_defined_nowhere_is_reported() -> None:
    fn = parse_function(HEADER + "^entry.0:\n  return %x.2\n}\n")
    fn.entry.terminator = Return([Value(F32, "ghost")])
    assert any("use of undefined value" in p for p in _problems(fn))


def test_value_defined_twice_is_reported() -> None:
    fn = parse_function(HEADER + "^entry.0:\n  %3 = const 1.0 : f32\n  return %3\n}\n")
    op = fn.entry.ops[0]
    fn.entry.ops.append(Op(Opcode.CONST, [], op.result, {"value": 2.0}))
    assert any("defined more than once" in p for p in _problems(fn))


def test_return_count_mismatch_is_reported() -> None:
    _one("^entry.0:\n  return %x.2, %x.2\n", "return gives 2 value(s), the function has 1")


def test_return_type_mismatch_is_reported() -> None:
    _one("^entry.0:\n  return %i.0\n", "return value 0 has type i64, expected f32")


def test_capture_parameter_type_must_match_capture() -> None:
    fn = parse_function(HEADER + "^entry.0:\n  return %x.2\n}\n")
    fn.captures[1] = Capture("x", F64)
    assert any("capture parameter 1 ('x') has type f32" in p for p in _problems(fn))


def test_parameter_count_must_match_captures() -> None:
    fn = parse_function(HEADER + "^entry.0:\n  return %x.2\n}\n")
    fn.captures.append(Capture("extra", I32))
    assert any("entry block has 3 argument(s)" in p for p in _problems(fn))


def test_index_parameter_must_be_i64() -> None:
    fn = parse_function(HEADER + "^entry.0:\n  return %x.2\n}\n")
    fn.entry.args[0].type = I32
    assert any("index parameter 0 has type i32" in p for p in _problems(fn))


def test_array_block_argument_outside_entry_is_reported() -> None:
    _one(
        "^entry.0:\n  br ^b.1(%a.1)\n^b.1(%c.3: array<f32,2>):\n  return %x.2\n",
        "block argument %c.3 has type array<f32,2>",
    )


# -- one test per typing check ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("%3 = add %x.2, %i.0 : f32", "operand 1 has type i64, expected f32"),
        ("%3 = truediv %i.0, %i.0 : i64", "truediv is defined on float, not i64"),
        ("%3 = div %x.2, %x.2 : f32", "div is defined on signed int or unsigned int, not f32"),
        ("%3 = shl %x.2, %x.2 : f32", "shl is defined on signed int or unsigned int"),
        ("%c.3 = const true : bool\n  %4 = add %c.3, %c.3 : bool", "add is defined on"),
        ("%3 = not %i.0 : i64", "not is defined on bool, not i64"),
        ("%3 = neg %i.0 : f32", "operand 0 has type i64, expected f32"),
        ("%3 = lt %i.0, %x.2 : bool", "compared operands have different types i64 and f32"),
        ("%3 = lt %i.0, %i.0 : i64", "comparison result has type i64, expected bool"),
        ("%3 = select %i.0, %x.2, %x.2 : f32", "select condition has type i64, expected bool"),
        (
            "%c.3 = eq %i.0, %i.0 : bool\n  %4 = select %c.3, %x.2, %i.0 : f32",
            "select arm 1 has type i64, expected f32",
        ),
        ("%3 = cast %x.2, %x.2 : i32", "cast takes 1 operand(s), found 2"),
        ("%3 = const 300 : i8", "const 300 is out of the range of i8 [-128, 127]"),
        ("%3 = const -1 : u8", "const -1 is out of the range of u8 [0, 255]"),
        ("%3 = math %x.2 {fn = frob} : f32", "unknown math function 'frob'"),
        ("%3 = math %x.2 {fn = atan2} : f32", "math atan2 takes 2 operand(s), found 1"),
        ("%3 = math %i.0 {fn = sqrt} : i64", "math sqrt needs float operands, found i64"),
        ("%3 = math %x.2 {fn = isnan} : f32", "math isnan result has type f32, expected bool"),
        ("%3 = math %x.2 {fn = sqrt} : f64", "math sqrt result has type f64, expected f32"),
        ("%3 = shape %a.1 {axis = 2} : i64", "shape axis 2 is not in [0, 2)"),
        ("%3 = shape %x.2 {axis = 0} : i64", "shape needs an array operand"),
        ("%3 = shape %a.1 {axis = 0} : i32", "shape result has type i32, expected i64"),
        ("%3 = load %a.1, %i.0 : f32", "load of a rank-2 array has 1 index(es)"),
        (
            "%c.3 = const 0 : i16\n  %4 = load %a.1, %i.0, %c.3 : f32",
            "load index 1 has type i16, expected i64",
        ),
        ("%3 = load %a.1, %i.0, %i.0 : f64", "load result has type f64, expected the element"),
        ("%3 = load %x.2, %i.0 : f32", "load needs an array as its first operand"),
        ("%3 = add %a.1, %a.1 : f32", "operand 0 has array type array<f32,2>"),
    ],
)
def test_op_typing_violation_is_reported(line: str, fragment: str) -> None:
    _one(f"^entry.0:\n  {line}\n  return %x.2\n", fragment)


def test_const_value_of_wrong_python_type_is_reported() -> None:
    b = Builder("f", 0)
    v = b.op(Opcode.CONST, [], F32, {"value": 1})
    b.ret([v])
    b.function.result_types.append(F32)
    assert any("const value 1 (int) does not match type f32" in p for p in _problems(b.function))


def test_const_without_value_is_reported() -> None:
    b = Builder("f", 0)
    v = b.op(Opcode.CONST, [], BOOL)
    b.ret([v])
    b.function.result_types.append(BOOL)
    assert any("no 'value' attribute" in p for p in _problems(b.function))


def test_array_result_type_is_reported() -> None:
    b = Builder("f", 0, [Capture("a", ArrayType(F32, 1))])
    b.op(Opcode.CAST, [b.function.capture_params[0]], ArrayType(F32, 1))
    b.ret([])
    assert any("non-scalar type" in p for p in _problems(b.function))


def test_all_problems_are_reported_together() -> None:
    problems = _text_problems(
        "^entry.0:\n  %3 = add %x.2, %i.0 : f32\n  %4 = not %i.0 : i64\n  return %i.0\n"
    )
    assert len(problems) == 3
    message = str(IRVerificationError("f", problems))
    assert "3 problem(s)" in message


def test_error_message_names_the_op_and_block() -> None:
    problems = _text_problems("^entry.0:\n  %3 = not %i.0 : i64\n  return %x.2\n")
    assert problems == ["^entry.0: '%3 = not %i.0 : i64': not is defined on bool, not i64"]


def test_unreachable_block_may_use_any_defined_value() -> None:
    fn = parse_function(
        HEADER + "^entry.0:\n  return %x.2\n^dead.1:\n  %3 = add %x.2, %x.2 : f32\n  return %3\n}\n"
    )
    verify(fn)


def test_empty_function_is_reported() -> None:
    fn = Function("f", [], 0, [], [])
    assert _problems(fn) == ["the function has no blocks"]
