"""Compile-and-run: the dispatch table between the public API and the backends.

Cold path: source -> restriction checks -> lowering -> result casts -> optimiser ->
backend compile. Warm path (every later call with the same code and capture types): fetch
the captured values, check their types, allocate, launch -- no parsing, no hashing of
source or IR.

The warm path's fastest lane is an entry's ``Memo`` (``offload.warm_lane``), found by the
identity of the element function's code object alone: it keeps the previous call's
specialisation and a generated ``read`` that re-reads every captured value and checks, in
one straight-line function, that the values still have the types the kernel was compiled
for (type, plus dtype and rank for arrays) and that every helper and module built into the
kernel is still what its name leads to. Values are always re-read, so a changed scalar or
array is never stale; a changed *type*, a rebound helper, other options,
``dtype=``/``out=`` arguments or rank all miss the lane and take the full path, which
checks, lowers and compiles as needed.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from offload.acc.base import Recorder
from offload.backend import Backend
from offload.config import config
from offload.frontend.lower import Lowered, capture_type_key, delayed_key
from offload.frontend.reader import (
    Fetcher,
    Reader,
    make_fetcher,
    make_reader,
    make_resolution_test,
)
from offload.hoisted import compile_kernel
from offload.ir.core import Capture, ConstArray, Function
from offload.ir.resultcast import cast_results
from offload.ir.types import ScalarType, scalar_of_dtype
from offload.lowering import Typings, check_and_lower
from offload.opt.manager import Trace, run_pipeline
from offload.options import CompileOptions
from offload.out_rules import converts_twice, copy_into, outputs, wanted_dtypes
from offload.runtime.overlap import overlapping
from offload.steps import Launch
from offload.warm_lane import LANE_MEMOS, Compiled, Memo
from offload.warm_lane import LANES as _LANES


@dataclass
class Entry:
    """Everything known about one element function (or delayed-array structure)."""

    lowered: Lowered
    """The first lowering: gives the capture paths, which depend only on the code."""
    rank: int
    """The rank it was checked and lowered for (another rank takes the checking path)."""
    compiled: dict[tuple[Any, ...], Compiled] = field(default_factory=dict)
    fetch: Fetcher | None = None
    """Reads the current captured values (generated from ``lowered.captures``)."""
    memo: Memo | None = None
    """The last specialisation used (replaced whole, so concurrent callers see either)."""
    still_valid: Callable[[Any], bool] | None = None
    """Whether the helpers and modules built into the kernels are still what the target's
    names lead to (``None``: nothing was resolved at compile time)."""
    readers: dict[tuple[Any, ...], Reader | None] = field(default_factory=dict)
    """Capture type key and the values' exact types -> their memo reader (``None``: no type
    guard). A frozen host array and a CuPy array share a capture type key (one kernel serves
    both), but a reader tests each value's exact type, so the key alone would hand one the
    other's reader, which fails on every call (the full path every time)."""
    plans: dict[Any, Any] = field(default_factory=dict)
    """A delayed tree's recorded schedules, by what its captured values look like (the
    replay lane: ``offload.replay``)."""
    typings: Typings | None = None
    """Its lowerings by capture types (``lowered`` is the first call's)."""


def _new_entry(lowered: Lowered, rank: int, target: Any) -> Entry:
    fetch = make_fetcher(lowered.captures)
    return Entry(
        lowered,
        rank,
        fetch=fetch,
        still_valid=make_resolution_test(lowered.resolved),
        typings=Typings(lowered, target, fetch),
    )


_TABLE: dict[tuple[Backend, Any], Entry] = {}
_GENERATION = [0]
"""Bumped whenever an entry of ``_TABLE`` is replaced or dropped (not when one is added):
a tree's remembered entry (``tree_entry``) from an older generation is looked up again."""
_TREE_MEMO = "_offload_tree_entry"
"""The attribute of a delayed tree that remembers its entry: (backend, generation, entry)."""

MAX_PINNED_KERNELS = 8
"""Kernels an entry compiles before it stops specialising on pinned array contents
(``Backend.pinned_captures``): a small frozen array whose contents change from call to
call would otherwise cost a compile per call."""

_FUNCTION = types.FunctionType


def _table_key(target: Any) -> Any:
    if isinstance(target, types.FunctionType):
        # Keyed on the code object: a lambda re-created in a loop is the same kernel, and
        # its captures are re-read on every call (capture paths are by closure slot/name).
        return (target.__code__, id(target.__globals__))
    return delayed_key(target)


def _entry(backend: Backend, target: Any, rank: int) -> Entry:
    tkey = (backend, _table_key(target))
    entry = _TABLE.get(tkey)
    if entry is not None and entry.still_valid is not None and not entry.still_valid(target):
        entry = None  # a helper or module was rebound since: its kernels are stale
    if entry is None or entry.rank != rank:
        replaced = tkey in _TABLE
        entry = _new_entry(check_and_lower(target, rank), rank, target)
        _TABLE[tkey] = entry
        if replaced:
            _GENERATION[0] += 1
    return entry


def specialise(
    lowered: Lowered,
    dtypes: Sequence[np.dtype[Any]] | None,
    options: CompileOptions,
    constants: Mapping[int, ConstArray] | None = None,
    trace: Trace | None = None,
) -> Function:
    """Result casts (``dtype=``/``out=``), the contents of ``constants`` (capture position
    -> the array contents it is specialised on), then the common optimiser pipeline
    (``trace`` sees each pass; a backend's ``compile`` runs its own kernel passes)."""
    fn = with_constants(lowered.ir, constants or {})
    if dtypes is not None:
        targets: list[ScalarType] = []
        for dt in dtypes:
            st = scalar_of_dtype(dt)
            if st is None:
                raise TypeError(f"unsupported result dtype {dt}")
            targets.append(st)
        fn = cast_results(fn, targets)
    return run_pipeline(fn, options, trace)


def with_constants(fn: Function, constants: Mapping[int, ConstArray]) -> Function:
    """``fn`` specialised on the contents of the captured arrays in ``constants`` (capture
    position -> contents; ``Capture.value``)."""
    if not constants:
        return fn
    caps = [Capture(c.name, c.type, constants.get(k)) for k, c in enumerate(fn.captures)]
    return dataclasses.replace(fn, captures=caps)


def run(  # noqa: PLR0917  (the public call's arguments, passed through)
    backend: Backend,
    target: Any,
    shape: tuple[int, ...],
    dtype: Any = None,
    out: Any = None,
    options: CompileOptions | None = None,
    *,
    record: Recorder | None = None,
) -> Any:
    """Compute ``target`` over ``shape`` on ``backend``; returns an array or tuple of arrays.

    ``options``: the compile options (default: ``config.compile_options()``); ``record``:
    told the kernel's launch as a step (the replay lane, ``offload.replay``)."""
    if options is None:
        options = config.compile_options()
    if dtype is not None and out is not None and converts_twice(dtype, out):
        return _through_dtype(backend, target, shape, dtype, out, options)
    if record is not None:
        return _run(backend, target, shape, dtype, out, options, record)
    if type(target) is _FUNCTION:
        # The warm lane: the same code (a memo holds its code, so no other live object
        # has its id), globals, backend, options and rank as the memo's call, values of
        # the same types, the same kind of dtype=/out= (see ``Memo``).
        lane = _LANES.get(id(target.__code__))
        if lane is None:
            return _run(backend, target, shape, dtype, out, options)
        for memo in (lane, *lane.others) if lane.others else (lane,):
            if not (
                memo.backend is backend
                and memo.options is options
                and memo.globals is target.__globals__
                and memo.rank == len(shape)
            ):
                continue
            values = memo.read(target)
            if values is None:
                continue
            if out is None:
                if dtype is memo.dtype_arg:
                    outs = backend.allocate(shape, memo.dtypes)
                    if 0 not in shape:
                        memo.launch(shape, outs, values)
                    return outs[0] if memo.single else tuple(outs)
            elif (
                type(out) is memo.out_type
                and out.shape == shape
                and (out.dtype is memo.dtypes[0] or out.dtype == memo.dtypes[0])
                and backend.writable(out)
                and not (memo.arrays and overlapping((out,), values, memo.arrays))
            ):
                outs = [out]
                backend.prepare_outputs(outs)
                if 0 not in shape:
                    memo.launch(shape, outs, values)
                return out
            elif memo.out_types is not None and _warm_outs(out, shape, memo, backend):
                outs = list(out)
                if not (memo.arrays and overlapping(outs, values, memo.arrays)):
                    backend.prepare_outputs(outs)
                    if 0 not in shape:
                        memo.launch(shape, outs, values)
                    return out
    return _run(backend, target, shape, dtype, out, options)


def _warm_outs(out: Any, shape: tuple[int, ...], memo: Memo, backend: Backend) -> bool:
    """Whether ``out`` is a tuple of writable arrays of the memo's out= types, one per
    result, each of ``shape`` and its result's dtype (the warm lane's tuple out=)."""
    types_ = memo.out_types
    if type(out) is not tuple or types_ is None or len(out) != len(types_):
        return False
    items: tuple[Any, ...] = out
    for o, t, dt in zip(items, types_, memo.dtypes, strict=True):
        same_type = type(o) is t  # first: an element of another type may have no .shape
        if not same_type or o.shape != shape or not (o.dtype is dt or o.dtype == dt):
            return False
        if not backend.writable(o):
            return False
    return True


def _run(  # noqa: PLR0917
    backend: Backend,
    target: Any,
    shape: tuple[int, ...],
    dtype: Any,
    out: Any,
    options: CompileOptions,
    record: Recorder | None = None,
) -> Any:
    """``run`` by the full path: entry lookup, argument checks, specialisation lookup."""
    entry = _entry(backend, target, len(shape))
    assert entry.fetch is not None
    try:
        values = entry.fetch(target)
    except Exception:
        # A captured global was deleted or a closure cell emptied since the entry was
        # lowered: lowering again reports it, located at its use.
        _TABLE.pop((backend, _table_key(target)), None)
        _GENERATION[0] += 1
        check_and_lower(target, len(shape))
        raise
    if dtype is None and out is None:
        want = None
    else:
        assert entry.typings is not None
        typed = entry.typings.of(target, len(shape), values)
        want = wanted_dtypes(dtype, out, typed.ir.result_types)
    memo = entry.memo
    fresh = None
    read: Reader | None
    if memo is not None and memo.options is options and (memo.want is want or memo.want == want):
        fresh = memo.read(target)
    if fresh is not None:
        assert memo is not None
        compiled, read, values = memo.compiled, memo.read, fresh
    else:
        compiled, read = _specialisation(backend, target, shape, entry, values, want, options)
    if read is not None:
        memo = Memo(backend, target, len(shape), options, want, compiled, read, dtype, out, values)
        entry.memo = memo
        if memo.code is not None:
            older = _LANES.get(id(memo.code))
            if older is not None:
                style = memo.style()
                kept = (m for m in (older, *older.others) if m.style() != style)
                memo.others = tuple(kept)[: LANE_MEMOS - 1]
            _LANES[id(memo.code)] = memo
    outs = outputs(backend, shape, compiled.dtypes, out)
    targets = outs
    if out is not None:
        targets = _staged(backend, shape, compiled.dtypes, outs, values, compiled.arrays)
    if 0 not in shape:
        compiled.kernel.launch(shape, targets, backend.prepare_captures(values))
    if out is not None:
        for o, t in zip(outs, targets, strict=True):
            if o is not t:
                copy_into(o, t)
        return out
    result = outs[0] if len(outs) == 1 else tuple(outs)
    if record is not None:
        if dtype is not None or any(c.value is not None for c in compiled.ir.captures):
            record.refuse("the kernel was specialised on this call's dtype= or array contents")
        else:
            record.step(Launch(backend, compiled.kernel, compiled.dtypes, shape), values, result)
    return result


def tree_entry(backend: Backend, root: Any) -> Entry:
    """The entry of a delayed tree ``root`` (checked and lowered on first use): its
    ``fetch`` reads every value the tree captures (the replay lane's inputs).

    A tree computed again (a loop over one node) finds its entry on itself: the
    structural key walks the whole tree (``delayed_key``, a few µs a node). A node's
    structure cannot change (nodes are frozen), so the remembered entry holds while no
    entry of the table was replaced since (``_GENERATION``) and the helpers built into
    its kernels are still what their names lead to (``still_valid``, tested as the full
    lookup tests it)."""
    memo = getattr(root, _TREE_MEMO, None)
    if memo is not None and memo[0] is backend and memo[1] == _GENERATION[0]:
        entry: Entry = memo[2]
        if entry.still_valid is None or entry.still_valid(root):
            return entry
    entry = _entry(backend, root, len(root.shape))
    try:  # noqa: SIM105  (contextlib.suppress costs ~0.4 us: every call of a new node)
        object.__setattr__(root, _TREE_MEMO, (backend, _GENERATION[0], entry))
    except (AttributeError, TypeError):  # (a node that holds no attribute)
        pass
    return entry


def _specialisation(  # noqa: PLR0917  (the full path's state, passed without a bag)
    backend: Backend,
    target: Any,
    shape: tuple[int, ...],
    entry: Entry,
    values: list[object],
    want: tuple[np.dtype[Any], ...] | None,
    options: CompileOptions,
) -> tuple[Compiled, Reader | None]:
    """The kernel for these capture types, options and result dtypes (compiled on a miss),
    and the reader that re-validates the capture types on later calls (``None``: the
    types cannot be checked by a guard, every call takes this path)."""
    tkey = capture_type_key(values)
    pinned = backend.pinned_captures(values)
    pkey = tuple((k, p.value) for k, p in pinned.items())
    ckey = (tkey, options, want, pkey)
    compiled = entry.compiled.get(ckey)
    if compiled is None and pinned and len(entry.compiled) >= MAX_PINNED_KERNELS:
        # Contents that keep changing would compile a kernel per call: the general one.
        pinned, pkey = {}, ()
        ckey = (tkey, options, want, pkey)
        compiled = entry.compiled.get(ckey)
    if compiled is None:
        assert entry.typings is not None
        lowered = entry.typings.of(target, len(shape), values)  # (typed for these values)
        ir = specialise(lowered, want, options, {k: p.value for k, p in pinned.items()})
        kernel = compile_kernel(backend, ir, options)
        dtypes = tuple(t.dtype for t in ir.result_types)
        compiled = Compiled(ir, kernel, dtypes)
        entry.compiled[ckey] = compiled
    rkey = (tkey, *map(type, values))
    if rkey in entry.readers and not pinned:
        read = entry.readers[rkey]
    else:
        low, same = entry.lowered, [(k, p.same) for k, p in pinned.items()]
        read = make_reader(low.captures, values, low.resolved, same)
        if not pinned:  # a pinned reader tests particular arrays: made for each miss
            entry.readers[rkey] = read
    return compiled, read


def _through_dtype(  # noqa: PLR0917  (the public call's arguments, passed through)
    backend: Backend,
    target: Any,
    shape: tuple[int, ...],
    dtype: Any,
    out: Any,
    options: CompileOptions,
) -> Any:
    """``run`` with ``dtype=`` and an ``out=`` of other dtypes: the result of ``dtype`` is
    computed, then stored into ``out`` (checked first under NumPy's ``same_kind`` rule from
    ``dtype``, as a ufunc's ``out=``)."""
    outs = out if isinstance(out, tuple) else (out,)
    dts = dtype if isinstance(dtype, tuple | list) else (dtype,) * len(outs)
    wanted_dtypes(None, out, [np.dtype(d) for d in dts])
    outputs(backend, shape, (), out)  # (the shape check)
    fresh = run(backend, target, shape, dtype, None, options)
    for o, r in zip(outs, fresh if isinstance(fresh, tuple) else (fresh,), strict=True):
        copy_into(o, r)
    return out


def _staged(  # noqa: PLR0917  (the full path's state)
    backend: Backend,
    shape: tuple[int, ...],
    dtypes: Sequence[np.dtype[Any]],
    outs: list[Any],
    values: Sequence[Any],
    arrays: Sequence[int],
) -> list[Any]:
    """``outs`` where the kernel can write them (made ready to be written), fresh outputs
    where it cannot: where the backend cannot write an array, or where it may overlap an
    array the function reads (``offload.runtime.overlap``; the copy back happens after)."""

    def direct(o: Any) -> bool:
        return backend.writable(o) and not overlapping((o,), values, arrays)

    if all(direct(o) for o in outs):
        backend.prepare_outputs(outs)
        return outs
    fresh = backend.allocate(shape, dtypes)
    staged = [o if direct(o) else f for o, f in zip(outs, fresh, strict=True)]
    backend.prepare_outputs([o for o, f in zip(outs, staged, strict=True) if o is f])
    return staged


def forget_plans() -> None:
    """Forget every recorded schedule of the replay lane (the kernels stay)."""
    for entry in list(_TABLE.values()):
        entry.plans.clear()


def clear_dispatch_table() -> None:
    """Forget every compiled kernel of this process (tests use it)."""
    _TABLE.clear()
    _GENERATION[0] += 1
    _LANES.clear()
