"""Opcodes with semantic names, and the static facts passes and backends need about them.

Semantics (the interpreter in ``interp.py`` is the executable specification):

* Binary arithmetic, bitwise and min/max ops take two operands of the result's type.
  Integer arithmetic wraps (two's complement, like NumPy); float arithmetic is IEEE.
* ``FLOORDIV``/``FLOORMOD`` are Python's ``//`` and ``%`` (floor; ``x // 0 == 0`` and
  ``x % 0 == 0`` for ints, like NumPy; NaN/inf for floats like NumPy).
* ``DIV``/``REM`` truncate toward zero (C semantics); they exist only for integer operands
  that a pass has proved non-negative, or where truncation is what the source asked for.
* Comparisons take two operands of one type and give ``bool``.
* ``SELECT(c, a, b)`` is ``a if c else b`` with both arms already evaluated.
* ``CAST`` converts its operand to the result type with NumPy ``astype`` semantics
  (float->int truncates toward zero; anything->bool is ``!= 0``).
* ``MATH`` applies the function named by ``attrs["fn"]`` (see ``MATH_FUNCTIONS``).
* ``LOAD(a, i0, .., ik)`` reads a captured array at in-bounds, non-negative indices
  (Python's negative-index wrap is explicit IR, emitted by the frontend).
* ``SHAPE(a)`` with ``attrs["axis"]`` is ``a.shape[axis]`` as ``i64``.
* ``CONST`` has ``attrs["value"]`` (a Python bool/int/float of the result's type).

Local arrays (``np.zeros(K)``, ``[0.0] * K``, ``np.array([x, y])`` in the element
function; ``types.LocalType`` gives the element type and compile-time shape). They are the
IR's only mutable state, so these ops are ordered: passes neither delete, merge, reorder
nor speculate them (``LOCAL_OPS``; ``HAS_EFFECT`` for the writes):

* ``LOCAL`` makes a new array of its result's ``local<elem,shape>`` type, contents
  undefined (``np.empty``); one per execution of the op.
* ``LOCAL_LOAD(t, i0, .., ik)`` reads ``t`` at in-bounds, non-negative indices.
* ``LOCAL_STORE(t, i0, .., ik, v)`` writes ``v`` (of the element type) there; ``bool``
  (always true, like ``BARRIER``).
* ``LOCAL_FILL(t, v)`` writes ``v`` to every element; ``bool``.

An index outside the array is undefined in the default mode, like a captured array's;
with bounds checking a backend reports it (the interpreter raises ``IndexError``).

GPU tiling ops, made only by ``offload.opt.stage`` for the GPU backend (never by the
frontend, never seen by the optimiser; the CPU backends reject them). A rank-2 kernel that
holds them runs in square thread tiles of ``attrs["tile"]`` x ``attrs["tile"]`` threads, a
rank-1 kernel in lines of ``attrs["tile"]`` threads; one shared-memory tile per
``attrs["slot"]``:

* ``LANE`` with ``attrs["axis"]``: the thread's coordinate in its tile along that axis of
  the index space (0 rows, 1 columns), an integer in ``[0, tile)``.
* ``STAGE(a, i0, .., ik)`` with ``slot``, ``tile``: the thread reads ``a[i0, .., ik]`` (a
  read the element function itself makes) into its place of the slot's tile; ``bool``.
* ``STAGE(a, p, base)`` with ``slot``, ``tile`` and ``offset`` (a *window*, rank-1 kernels
  and arrays): element ``p`` reads ``a[p + base]`` at the chunk's first iteration, and the
  line's lanes stage the ``2 * tile - 1`` elements from ``a[o + base]`` (``o`` the line's
  first element) that its elements read in the chunk: the lane at ``l`` stages position
  ``l + offset`` where an element of the line reads it; ``bool``.
* ``TILE_READ(a, i0, .., ik, it)`` with ``slot``, ``along``: ``a[i0, .., ik]``, read from
  the slot's tile at position ``it`` of the loop chunk: row ``it`` of the tile's thread
  column (``along == 1``) or column ``it`` of its thread row (``along == 0``); in a rank-1
  kernel, position ``it`` of a read that varies with no index (``along == -1``) or
  position ``(p - o) + it`` of a window (``along == 0``).
* ``BARRIER``: every thread of the tile waits for the others (``__syncthreads``); ``bool``.

For one element they mean what they say without the tile: ``STAGE`` and ``BARRIER`` have no
effect, ``TILE_READ`` is ``LOAD(a, i0, .., ik)`` (what the interpreter runs), ``LANE`` is 0;
a window ``STAGE`` at ``offset`` 0 is the element's own read ``a[p + base]``.
"""

from __future__ import annotations

import enum


class Opcode(enum.Enum):
    # constants
    CONST = "const"
    # arithmetic (operands and result of one type)
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    TRUEDIV = "truediv"  # float only
    FLOORDIV = "floordiv"
    FLOORMOD = "floormod"
    DIV = "div"  # truncating, ints only
    REM = "rem"  # truncating, ints only
    POW = "pow"
    MIN = "min"
    MAX = "max"
    # bitwise (ints and bools)
    AND = "and"
    OR = "or"
    XOR = "xor"
    SHL = "shl"
    SHR = "shr"  # arithmetic for signed, logical for unsigned
    # unary
    NEG = "neg"
    INVERT = "invert"  # ~x on ints
    NOT = "not"  # logical not on bool
    ABS = "abs"
    # comparisons -> bool
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    # other
    SELECT = "select"
    CAST = "cast"
    MATH = "math"
    LOAD = "load"
    SHAPE = "shape"
    # small local arrays (see "Local arrays" above)
    LOCAL = "local"
    LOCAL_LOAD = "local_load"
    LOCAL_STORE = "local_store"
    LOCAL_FILL = "local_fill"
    # GPU tiling (offload.opt.stage only)
    LANE = "lane"
    STAGE = "stage"
    TILE_READ = "tile_read"
    BARRIER = "barrier"

    def __str__(self) -> str:
        return self.value


BINARY_ARITH = frozenset(
    {
        Opcode.ADD,
        Opcode.SUB,
        Opcode.MUL,
        Opcode.TRUEDIV,
        Opcode.FLOORDIV,
        Opcode.FLOORMOD,
        Opcode.DIV,
        Opcode.REM,
        Opcode.POW,
        Opcode.MIN,
        Opcode.MAX,
        Opcode.AND,
        Opcode.OR,
        Opcode.XOR,
        Opcode.SHL,
        Opcode.SHR,
    }
)
UNARY = frozenset({Opcode.NEG, Opcode.INVERT, Opcode.NOT, Opcode.ABS})
COMPARE = frozenset({Opcode.EQ, Opcode.NE, Opcode.LT, Opcode.LE, Opcode.GT, Opcode.GE})
COMMUTATIVE = frozenset(  # (MIN/MAX only on ints: see ``commutes``)
    {Opcode.ADD, Opcode.MUL, Opcode.MIN, Opcode.MAX, Opcode.AND, Opcode.OR, Opcode.XOR}
    | {Opcode.EQ, Opcode.NE}
)


def commutes(opcode: Opcode, float_operands: bool) -> bool:
    """Whether swapping the operands of ``opcode`` never changes its result. ``MIN``/``MAX``
    on floats do not commute: Python's first operand wins ties and NaN comparisons
    (``min(-0.0, 0.0)`` is ``-0.0``, ``min(0.0, -0.0)`` is ``0.0``)."""
    if opcode in (Opcode.MIN, Opcode.MAX):
        return not float_operands
    return opcode in COMMUTATIVE


TILE_OPS = frozenset({Opcode.LANE, Opcode.STAGE, Opcode.TILE_READ, Opcode.BARRIER})
"""The GPU tiling ops (see the module docstring)."""

LOCAL_OPS = frozenset({Opcode.LOCAL, Opcode.LOCAL_LOAD, Opcode.LOCAL_STORE, Opcode.LOCAL_FILL})
"""The local-array ops: never deleted while used, merged, reordered or speculated."""

HAS_EFFECT = frozenset({Opcode.LOCAL_STORE, Opcode.LOCAL_FILL})
"""Ops that must run even when nothing uses their result (writes to a local array)."""

MAY_FAULT = frozenset(
    {Opcode.LOAD, Opcode.STAGE, Opcode.TILE_READ, Opcode.LOCAL_LOAD, Opcode.LOCAL_STORE}
)
"""Ops that may fault if speculated (an out-of-bounds read). Integer division by zero does
not fault in this IR (it gives 0, like NumPy), so it is safe to speculate."""

# name -> arity. Float-valued functions take float operands of the result type, except
# the predicates (isnan, isinf, isfinite) which give bool, and round/floor/ceil/trunc which
# keep the operand's float type (the frontend casts to int where Python's builtin does).
MATH_FUNCTIONS: dict[str, int] = {
    "sqrt": 1,
    "rsqrt": 1,  # 1/sqrt(x): made only by fastmath's ``fold`` (no user spelling)
    "exp": 1,
    "exp2": 1,
    "expm1": 1,
    "log": 1,
    "log2": 1,
    "log10": 1,
    "log1p": 1,
    "sin": 1,
    "cos": 1,
    "tan": 1,
    "asin": 1,
    "acos": 1,
    "atan": 1,
    "sinh": 1,
    "cosh": 1,
    "tanh": 1,
    "asinh": 1,
    "acosh": 1,
    "atanh": 1,
    "erf": 1,
    "erfc": 1,
    "gamma": 1,  # C tgamma: +-inf at +-0, NaN at negative integers and -inf
    "lgamma": 1,  # log|gamma|: inf at the poles
    "fabs": 1,
    "floor": 1,
    "ceil": 1,
    "trunc": 1,
    "rint": 1,  # round half to even (Python's round, NumPy's rint)
    "isnan": 1,
    "isinf": 1,
    "isfinite": 1,
    "atan2": 2,
    "hypot": 2,
    "copysign": 2,
    "fmod": 2,
}
MATH_PREDICATES = frozenset({"isnan", "isinf", "isfinite"})
