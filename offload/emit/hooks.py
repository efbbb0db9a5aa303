"""The target-specific parts of emission: how a backend reads captures and stores results.

The emitter (``offload.emit.structure.emit_body``) produces the statements that evaluate an
element function for one index; everything that depends on how the kernel is laid out
(array arguments vs raw pointers, output arrays, loop variables) is asked of an
``EmitHooks`` object. ``BaseHooks`` gives defaults for the optional hooks.

Name discipline: the emitter's own variables either end in ``_<digits>`` (SSA values) or
start with ``_`` (temporaries, the block-id variable). Names a backend chooses (parameters,
loop variables, outputs) must do neither; ``np`` and ``math`` are the NumPy and math modules.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Protocol

from offload.diagnostics import CompileError, Span
from offload.emit.template import const, expr, wrap
from offload.ir.ops import Opcode
from offload.ir.types import LocalType, ScalarType

MAGIC_RINT = {"f32": 2.0**23, "f64": 2.0**52}
"""Adding and subtracting 2**(p-1) rounds a float of magnitude below it to an integer with
the hardware's round-half-to-even; at or above it the float is already integral."""

_NSW_PYOP = {Opcode.ADD: "+", Opcode.SUB: "-", Opcode.MUL: "*"}


class EmitHooks(Protocol):
    """What the emitter asks of a backend (CPU: numba arrays; GPU: raw pointers)."""

    def param_name(self, k: int) -> str:
        """The name of the ``k``-th Function parameter (index params, then captured scalars;
        captured arrays are only reached through ``load``/``shape``)."""
        ...

    def load(
        self, capture_index: int, index_exprs: list[ast.expr], narrow: Sequence[bool] = ()
    ) -> ast.expr:
        """Read captured array ``capture_index`` (position in ``Function.captures``) at
        in-bounds, non-negative indices. ``narrow[k]`` says index ``k`` is an int32 (only
        in the GPU's 32-bit kernel; the emitter passes ``narrow`` only then)."""
        ...

    def shape(self, capture_index: int, axis: int) -> ast.expr:
        """The extent of captured array ``capture_index`` along ``axis``, as an int64."""
        ...

    def ret(self, values: list[ast.expr]) -> list[ast.stmt]:
        """Statements that store the element's results (one per ``result_types`` entry);
        the emitter adds the control transfer that ends the element."""
        ...

    def math(self, fn: str, args: list[ast.expr], t: ScalarType) -> ast.expr:
        """``MATH fn`` (a ``MATH_FUNCTIONS`` name, or ``pow``) on float operands of type
        ``t``; the result has type ``t`` (``bool`` for the predicates)."""
        ...

    def int_nsw(self, code: Opcode, a: ast.expr, b: ast.expr, t: ScalarType) -> ast.expr:
        """Integer ``ADD``/``SUB``/``MUL`` of type ``t`` marked ``nsw`` (``offload.opt.narrow``
        proved it cannot overflow): a backend may tell its code generator so. The default
        is the ordinary wrapping ``t(a op b)``."""
        ...

    def lane(self, axis: int) -> ast.expr:
        """The thread's coordinate in its tile along ``axis`` (GPU tiling ops only)."""
        ...

    def barrier(self) -> list[ast.stmt]:
        """Wait for every thread of the tile."""
        ...

    def stage(self, slot: int, value: ast.expr) -> list[ast.stmt]:
        """Store ``value`` at the thread's own place of ``slot``'s tile."""
        ...

    def stage_window(self, slot: int, offset: int, capture: int, base: ast.expr) -> list[ast.stmt]:
        """Stage position ``lane + offset`` of a rank-1 line's window of ``capture`` (the
        element ``origin + base + lane + offset``), where an element of the line reads it."""
        ...

    def tile_read(self, slot: int, along: int, it: ast.expr) -> ast.expr:
        """Row ``it`` of the thread's column (``along == 1``) or column ``it`` of its row;
        in a rank-1 kernel, position ``it`` (``along == -1``) or the window's ``lane + it``."""
        ...

    def bounds_fail(
        self, capture_index: int, index_exprs: list[ast.expr], span: Span | None
    ) -> list[ast.stmt]:
        """Statements run when a read of ``capture_index`` is out of bounds; an empty list
        means reads are not checked. When checking, the failed read yields 0 instead of
        touching memory, so the statements only have to record the fault."""
        ...

    def local_array(self, t: LocalType) -> ast.expr:
        """A new local array of ``t``'s shape and element type (contents undefined)."""
        ...

    def local_bounds_fail(
        self, t: LocalType, index_exprs: list[ast.expr], span: Span | None
    ) -> list[ast.stmt]:
        """Statements run when an access to a local array of type ``t`` is out of bounds;
        an empty list means local accesses are not checked. When checking, a failed read
        yields 0 and a failed write is skipped."""
        ...


def portable_math(fn: str, args: list[ast.expr], t: ScalarType) -> ast.expr:
    """``MATH fn`` through the ``math`` module, which numba types as ``t`` for float32 and
    float64 on both the CPU and the CUDA target; ``rint`` (which ``math`` lacks) is built
    from arithmetic that rounds half to even."""
    if fn == "rsqrt":
        return expr("one / math.sqrt(x)", one=const(1.0, t), x=args[0])
    if fn == "rint":
        x = args[0]
        m = const(MAGIC_RINT[t.name], t)
        # |x| + M - M rounds |x| < M to an integer (ties to even); copysign keeps -0.0.
        return expr("math.copysign(abs(x) + M - M, x) if abs(x) < M else x", x=x, M=m)
    return ast.Call(ast.Attribute(ast.Name("math", ast.Load()), fn, ast.Load()), args, [])


class BaseHooks:
    """Defaults for the optional hooks; backends subclass it and implement the rest."""

    def lane(self, axis: int) -> ast.expr:
        raise _no_tiles()

    def barrier(self) -> list[ast.stmt]:
        raise _no_tiles()

    def stage(self, slot: int, value: ast.expr) -> list[ast.stmt]:
        raise _no_tiles()

    def stage_window(self, slot: int, offset: int, capture: int, base: ast.expr) -> list[ast.stmt]:
        raise _no_tiles()

    def tile_read(self, slot: int, along: int, it: ast.expr) -> ast.expr:
        raise _no_tiles()

    def math(self, fn: str, args: list[ast.expr], t: ScalarType) -> ast.expr:
        return portable_math(fn, args, t)

    def int_nsw(self, code: Opcode, a: ast.expr, b: ast.expr, t: ScalarType) -> ast.expr:
        return wrap(expr(f"a {_NSW_PYOP[code]} b", a=a, b=b), t)

    def bounds_fail(
        self, capture_index: int, index_exprs: list[ast.expr], span: Span | None
    ) -> list[ast.stmt]:
        return []

    def local_array(self, t: LocalType) -> ast.expr:
        return local_array_numpy(t)

    def local_bounds_fail(
        self, t: LocalType, index_exprs: list[ast.expr], span: Span | None
    ) -> list[ast.stmt]:
        return []


def local_array_numpy(t: LocalType) -> ast.expr:
    """``np.empty(shape, np.<dtype>)`` (numba: a heap array; see cpu/loopnest.py)."""
    shape = t.shape[0] if len(t.shape) == 1 else t.shape
    return expr(f"np.empty({shape!r}, np.{t.elem.dtype.name})")


def _no_tiles() -> CompileError:
    return CompileError("shared-memory tiling ops exist only in GPU kernels (offload.opt.stage)")
