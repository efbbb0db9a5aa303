"""The parser reads the printer's canonical text back exactly, and rejects bad text by line."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload.ir import Builder, Capture, Opcode, print_function
from offload.ir.core import Branch, Function, Jump, Return, Value
from offload.ir.parser import IRParseError, parse_function
from offload.ir.types import BOOL, F32, F64, I32, I64, U8, ArrayType, ScalarType
from offload.ir.verifier import verify

pytestmark = pytest.mark.unit

# Every opcode, every terminator, block arguments, forward references (^bb4 is listed
# before ^join.3 is reached), constants of every spelling, and the printer's name forms.
EVERY_HEADER = (
    'func @every(index %i.0: i64, index %j.1: i64, capture "a" %a.2: array<f32,2>, '
    'capture "s" %s.3: i32, capture "self.w" %self_w.4: array<u8,1>) -> (f32, i64, bool) {\n'
)
EVERY_OPCODE = EVERY_HEADER + textwrap.dedent(
    """\
    ^entry.0:
      %x.5 = load %a.2, %i.0, %j.1 : f32
      %6 = shape %a.2 {axis = 1} : i64
      %7 = const 0.5 : f32
      %8 = const nan : f32
      %9 = const inf : f64
      %10 = const -inf : f64
      %11 = const -3 : i32
      %12 = const true : bool
      %13 = const false : bool
      %14 = const 1e+20 : f64
      %15 = const -0.0 : f32
      %16 = add %x.5, %7 : f32
      %17 = sub %16, %8 : f32
      %18 = mul %17, %15 : f32
      %19 = truediv %18, %7 : f32
      %20 = floordiv %s.3, %11 : i32
      %21 = floormod %s.3, %11 : i32
      %22 = div %20, %21 : i32
      %23 = rem %22, %s.3 : i32
      %24 = pow %23, %11 : i32
      %25 = min %19, %x.5 : f32
      %26 = max %24, %s.3 : i32
      %27 = and %26, %11 : i32
      %28 = or %27, %11 : i32
      %29 = xor %28, %11 : i32
      %30 = shl %29, %11 : i32
      %31 = shr %30, %11 : i32
      %32 = neg %25 : f32
      %33 = invert %31 : i32
      %34 = not %12 : bool
      %35 = abs %33 : i32
      %36 = eq %35, %11 : bool
      %37 = ne %9, %10 : bool
      %38 = lt %i.0, %j.1 : bool
      %39 = le %i.0, %6 : bool
      %40 = gt %14, %9 : bool
      %41 = ge %32, %25 : bool
      %42 = select %41, %32, %25 : f32
      %43 = cast %35 : i64
      %44 = math %42 {fn = sqrt} : f32
      %45 = math %9, %10 {fn = atan2} : f64
      %46 = math %45 {fn = isnan} : bool
      %47 = load %self_w.4, %j.1 : u8
      %48 = lane {axis = 1} : i64
      %49 = stage %a.2, %i.0, %48 {slot = 0, tile = 16} : bool
      %50 = tile_read %a.2, %i.0, %j.1, %48 {along = 0, slot = 0} : f32
      %51 = barrier : bool
      %52 = local : local<f64,2x3>
      %53 = local_fill %52, %9 : bool
      %54 = local_store %52, %i.0, %j.1, %14 : bool
      %55 = local_load %52, %i.0, %j.1 : f64
      condbr %38, ^bb4(%44, %43), ^bb2
    ^bb1:
      %56 = const 2.0 : f32
      br ^join.3(%56, %i.0, %13)
    ^bb2:
      br ^join.3(%44, %43, %46)
    ^join.3(%r.57: f32, %n.58: i64, %b.59: bool):
      return %r.57, %n.58, %b.59
    ^bb4(%60: f32, %61: i64):
      br ^join.3(%60, %61, %12)
    }
    """
)


def test_every_opcode_and_terminator_round_trips_exactly() -> None:
    fn = parse_function(EVERY_OPCODE)
    assert print_function(fn) == EVERY_OPCODE


def test_parsed_text_covers_every_opcode() -> None:
    fn = parse_function(EVERY_OPCODE)
    assert {op.opcode for op in fn.ops()} == set(Opcode)
    kinds = {type(b.terminator) for b in fn.blocks}
    assert kinds == {Jump, Branch, Return}


def test_parsed_function_structure_matches_text() -> None:
    fn = parse_function(EVERY_OPCODE)
    assert fn.name == "every"
    assert fn.n_index == 2
    assert [c.name for c in fn.captures] == ["a", "s", "self.w"]
    assert fn.captures[0].type == ArrayType(F32, 2)
    assert fn.result_types == [F32, I64, BOOL]
    assert [b.hint for b in fn.blocks] == ["entry", None, None, "join", None]
    consts = {
        op.result.type.name + ":" + repr(op.attrs["value"])
        for op in fn.ops()
        if op.opcode is Opcode.CONST
    }
    assert "i32:-3" in consts and "bool:True" in consts and "f64:1e+20" in consts
    branch = fn.entry.terminator
    assert isinstance(branch, Branch)
    assert branch.then_target is fn.blocks[4]
    assert branch.else_target is fn.blocks[2]


def test_every_opcode_text_verifies_after_unreachable_block_is_allowed() -> None:
    # ^bb1 is unreachable; that is legal IR, and the rest type-checks.
    verify(parse_function(EVERY_OPCODE))


def test_forward_reference_to_a_value_defined_in_a_later_listed_block() -> None:
    text = textwrap.dedent(
        """\
        func @f(index %i.0: i64) -> (i64) {
        ^entry.0:
          br ^bb2
        ^bb1:
          %2 = add %one.1, %one.1 : i64
          return %2
        ^bb2:
          %one.1 = const 1 : i64
          br ^bb1
        }
        """
    )
    fn = parse_function(text)
    verify(fn)  # ^bb2 dominates ^bb1 although it is listed later
    assert fn.blocks[1].ops[0].operands[0] is fn.blocks[2].ops[0].result


def test_builder_made_function_round_trips() -> None:
    b = Builder("built", 1, [Capture("x", ArrayType(F64, 1)), Capture("k", I64)])
    i = b.function.index_params[0]
    x, k = b.function.capture_params
    loop = b.new_block([I64, F64], hint="loop")
    body = b.new_block(hint="body")
    done = b.new_block(hint="done")
    zero = b.const(0.0, F64)
    b.jump(loop, [i, zero])
    b.position_at_end(loop)
    n, acc = loop.args
    b.branch(b.binary(Opcode.LT, n, k), body, done)
    b.position_at_end(body)
    acc2 = b.binary(Opcode.ADD, acc, b.load(x, [n]))
    b.jump(loop, [b.binary(Opcode.ADD, n, b.const(1, I64)), acc2])
    b.position_at_end(done)
    b.ret([b.cast(acc, F32)])
    b.function.result_types.append(F32)
    text = print_function(b.function)
    again = parse_function(text)
    assert print_function(again) == text
    verify(again)


def test_value_hints_survive_and_hintless_values_stay_hintless() -> None:
    fn = parse_function(EVERY_OPCODE)
    assert fn.params[0].hint == "i"
    assert fn.entry.ops[1].result.hint is None


def test_location_comments_are_ignored() -> None:
    text = "func @f() -> (i8) {\n^entry.0:\n  %0 = const 7 : i8  # k.py:3:5\n  return %0\n}\n"
    fn = parse_function(text)
    assert fn.entry.ops[0].attrs["value"] == 7
    assert print_function(fn) == text.replace("  # k.py:3:5", "")


def test_unsigned_and_empty_results_parse() -> None:
    text = "func @g(index %i.0: i64) -> () {\n^entry.0:\n  %1 = const 255 : u8\n  return\n}\n"
    fn = parse_function(text)
    assert fn.result_types == []
    assert fn.entry.ops[0].result.type == U8
    assert print_function(fn) == text


def test_lambda_function_name_round_trips() -> None:
    text = "func @<lambda>(index %i.0: i64) -> (i64) {\n^entry.0:\n  return %i.0\n}\n"
    assert print_function(parse_function(text)) == text


def _err(body: str) -> IRParseError:
    text = "func @f(index %i.0: i64) -> (i32) {\n^entry.0:\n" + body + "}\n"
    with pytest.raises(IRParseError) as info:
        parse_function(text)
    return info.value


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("  %1 = frobnicate %i.0 : i32\n  return %1\n", 3, "unknown opcode 'frobnicate'"),
        ("  %1 = const 1 : i99\n  return %1\n", 3, "unknown type 'i99'"),
        ("  %1 = const 1.5 : i32\n  return %1\n", 3, "must be an integer"),
        ("  %1 = const 1 : bool\n  return %1\n", 3, "must be true or false"),
        ("  %1 = const true : f32\n  return %1\n", 3, "must be a number"),
        ("  %1 = const banana : f32\n  return %1\n", 3, "bad constant 'banana'"),
        ("  %1 = add %i.0, %nope.9 : i64\n  return %1\n", 3, "use of undefined value %nope.9"),
        ("  %1 = const 1 : i32\n  %1 = const 2 : i32\n  return %1\n", 4, "defined twice"),
        ("  br ^nowhere.7\n", 3, "branch to undefined block ^nowhere.7"),
        ("  %1 = const 1 : i32\n", 4, "no terminator"),
        ("  return %i.0\n  %1 = const 1 : i32\n", 4, "nothing may follow"),
        ("  jump ^entry.0\n", 3, "found 'jump'"),
        ("  %1 = add %i.0 %i.0 : i64\n  return %1\n", 3, "expected ':'"),
        ("  %1 = add %i.0, %i.0\n  return %1\n", 3, "expected ':'"),
        ("  %1 = const 1 : i32 $\n  return %1\n", 3, "unexpected character '$'"),
        ("  %1 = shape %i.0 {axis = 0, axis = 1} : i64\n  return %1\n", 3, "given twice"),
        ("  return %i.0\n^entry.0:\n  return %i.0\n", 4, "block ^entry.0 is defined twice"),
        ("  condbr %i.0, ^entry.0\n", 3, "expected ','"),
    ],
)
def test_parse_error_names_the_line_and_the_problem(body: str, line: int, message: str) -> None:
    err = _err(body)
    assert err.line == line
    assert message in str(err)
    assert f"line {line}:" in str(err)


def test_parse_error_is_a_value_error() -> None:
    assert issubclass(IRParseError, ValueError)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty text"),
        ("func @f() -> () {\n", "expected '}'"),
        ("func @f() -> () {\n}\n", "no blocks"),
        ("fun @f() -> () {\n^entry.0:\n  return\n}\n", "expected 'func'"),
        (
            'func @f(capture "a" %a.0: f32, index %i.1: i64) -> () {\n^e.0:\n  return\n}\n',
            "index parameters must come before captures",
        ),
        ("func @f(index %i.0: i32) -> () {\n^e.0:\n  return\n}\n", "must have type i64"),
        ("func @f() -> (array<f32,1>) {\n^e.0:\n  return\n}\n", "expected a scalar type"),
        ("func @f() -> () {\n  return\n}\n", "expected a block label"),
        ("func @f() -> () {\n^e.0(%x.0: i64):\n  return\n}\n", "function parameters"),
    ],
)
def test_malformed_function_text_is_rejected(text: str, message: str) -> None:
    with pytest.raises(IRParseError, match=None) as info:
        parse_function(text)
    assert message in str(info.value)


_HINTS = st.sampled_from([None, "x", "x.1", "5", "bb3", "π_θ", "loop", "_"])
_CONSTS = {
    I64: st.integers(-(2**63), 2**63 - 1),
    I32: st.integers(-(2**31), 2**31 - 1),
    U8: st.integers(0, 255),
    BOOL: st.booleans(),
    F32: st.floats(width=32).map(float),
    F64: st.floats(),
}


@st.composite
def random_function(draw: st.DrawFn) -> Function:
    """Straight-line functions plus a branch to a block with arguments, with odd hints."""
    b = Builder(
        draw(st.sampled_from(["f", "<lambda>", "g2"])),
        draw(st.integers(0, 2)),
        [Capture("a.b", ArrayType(F32, 1))],
    )
    pool: dict[ScalarType, list[Value]] = {t: [] for t in _CONSTS}
    pool[I64].extend(b.function.index_params)
    for _ in range(draw(st.integers(1, 12))):
        t = draw(st.sampled_from(list(_CONSTS)))
        hint = draw(_HINTS)
        if pool[t] and draw(st.booleans()):
            x, y = draw(st.sampled_from(pool[t])), draw(st.sampled_from(pool[t]))
            op = Opcode.XOR if t is BOOL else Opcode.MAX
            v = b.op(op, [x, y], t, hint=hint)
        else:
            v = b.op(Opcode.CONST, [], t, {"value": draw(_CONSTS[t])}, hint=hint)
        pool[t].append(v)
        if t is F32 and draw(st.booleans()):
            pool[BOOL].append(b.op(Opcode.MATH, [v], BOOL, {"fn": "isnan"}, hint=hint))
    arg_types = draw(st.lists(st.sampled_from([t for t in _CONSTS if pool[t]]), max_size=3))
    target = b.new_block(list(arg_types), hint=draw(st.sampled_from([None, "bb", "join", "x.2"])))
    args = [draw(st.sampled_from(pool[t])) for t in arg_types]
    if pool[BOOL]:
        b.branch(pool[BOOL][-1], target, target, args, args)
    else:
        b.jump(target, args)
    b.position_at_end(target)
    b.ret(list(target.args))
    b.function.result_types.extend(arg_types)
    return b.function


@given(fn=random_function())
def test_print_parse_print_is_the_identity_on_random_functions(fn: Function) -> None:
    text = print_function(fn)
    again = parse_function(text)
    assert print_function(again) == text
    verify(again)
