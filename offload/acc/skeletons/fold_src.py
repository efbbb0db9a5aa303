"""The GPU fold's tail: every stage of a reduction tree after the first, and the last
sequential fold, in one launch (a block per row, stages apart by ``syncthreads``).

The first stage of a long fold (``plan.stages``) is an element kernel fused with the
fold's producer and reads the whole input; the stages after it read a few thousand
partials each, and as element kernels they cost a launch (and its host work) apiece: four
launches for a sum over 2^28 elements. ``fold_tail`` computes exactly what those kernels
and the final ``Fold`` compute -- the same partials, each folded in the same order from
the same start -- so the bits are the same as the staged tree (and as ``compute_s`` under
``cross_target``), with two launches in all.

Parameters: ``rows`` rows of ``x<k>`` (the partials of the stages before, each row at
most ``shared_values`` long); ``nlev`` stages, stage ``j`` folding ``ns[j]`` values per
row into ``ps[j]`` partials of (at most) ``cs[j]`` values; then thread 0 folds the last
``nf`` values of the row into ``o<k>[row]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from offload.acc.skeletons.scan_src import _apply, _indent, _names

THREADS = 256
"""Threads of a tail block."""
SHARED_BYTES = 40 * 1024
"""Static shared memory of a tail block: two buffers of a row's values per component."""


def shared_values(itemsizes: int) -> int:
    """The most values of a row the tail holds in one shared buffer, for components of
    ``itemsizes`` bytes in all (a power of two: 4096 float32, 512 tuples of four int64)."""
    n = SHARED_BYTES // (2 * max(1, itemsizes))
    return 1 << (n.bit_length() - 1)


def _read(m: int, into: str, k: str) -> str:
    """Value ``k`` of the current level's input (shared, at ``inoff``) into ``<into>0..``."""
    return "\n".join(f"{into}{c} = sm{c}[inoff + {k}]" for c in range(m))


SHARED_UNROLL = 8
"""Values of a sequential fold over shared memory read before they are combined (the
loads are independent of the accumulator: their latencies overlap, and the combines, in
the same order, wait for none but the first)."""


def _combine_run(  # noqa: PLR0917  (a loop's parts)
    m: int, caps: list[str], at: Callable[[str], str], k: str, stop: str, step: str
) -> str:
    """``while k < stop: acc = cmb(acc, value at(k)); k += step``, ``SHARED_UNROLL``
    (fewer for wide tuples) values loaded at a time."""
    acc = _names("acc", m)
    u = max(2, SHARED_UNROLL // m)
    loads = "\n".join(
        f"e{j}_{q} = sm{q}[{at(f'{k} + {j} * {step}' if j else k)}]"
        for j in range(u)
        for q in range(m)
    )
    combines = "\n".join(_apply(caps, acc, [f"e{j}_{q}" for q in range(m)]) for j in range(u))
    one = "\n".join(f"e0_{q} = sm{q}[{at(k)}]" for q in range(m))
    one += "\n" + _apply(caps, acc, [f"e0_{q}" for q in range(m)])
    return (
        f"while {k} + {u - 1} * {step} < {stop}:\n"
        + _indent(loads + "\n" + combines + f"\n{k} += {u} * {step}")
        + f"\nwhile {k} < {stop}:\n"
        + _indent(one + f"\n{k} += {step}")
    )


def _copy_rows(
    m: int, k: str, stop: str, dst: Callable[[int, str], str], src: Callable[[int, str], str]
) -> str:
    """``while k < stop: dst[k] = src[k]; k += nt`` for each component, ``SHARED_UNROLL``
    (fewer for wide tuples) loads issued before their stores: a store waits for its
    load, so one at a time a thread would wait a memory latency per value."""
    u = max(2, SHARED_UNROLL // m)
    at = [k if j == 0 else f"{k} + {j} * nt" for j in range(u)]
    loads = "\n".join(f"v{j}_{c} = {src(c, at[j])}" for j in range(u) for c in range(m))
    stores = "\n".join(f"{dst(c, at[j])} = v{j}_{c}" for j in range(u) for c in range(m))
    one = "\n".join(f"{dst(c, k)} = {src(c, k)}" for c in range(m))
    return (
        f"while {k} + {u - 1} * nt < {stop}:\n"
        + _indent(f"{loads}\n{stores}\n{k} += {u} * nt")
        + f"\nwhile {k} < {stop}:\n"
        + _indent(f"{one}\n{k} += nt")
    )


def _fold(m: int, caps: list[str], has_z: bool, start: str, stop: str, step: str) -> str:  # noqa: PLR0917
    """``acc = z (else the value at start); for k in range(start, stop, step): acc =
    cmb(acc, value k)`` -- ``fold._fold_loop``'s order."""
    if has_z:
        head = "\n".join(f"acc{c} = z{c}" for c in range(m)) + f"\nk = {start}"
    else:
        head = _read(m, "acc", start) + f"\nk = {start} + {step}"
    return head + "\n" + _combine_run(m, caps, lambda i: f"inoff + {i}", "k", stop, step)


GLOBAL_LOAD_BYTES = 16
"""Bytes a thread loads at once in a first stage read from global memory (4 float32, 2
of anything wider; the order of the combines is unchanged, as ``fold.STRIDED_UNROLL``).
64 bytes (16 float32) were also measured on an H200, in another call on a host of
another speed (run 20: 2^16 sum 3.8 µs over ``cupy.sum`` by events, against 6.0 with 16
bytes); a same-call comparison is still to do."""


def global_unroll(itemsizes: int) -> int:
    """Values a thread loads at once from global memory, for components of ``itemsizes``
    bytes in all: ``GLOBAL_LOAD_BYTES`` of them, at least 2."""
    return max(2, GLOBAL_LOAD_BYTES // max(1, itemsizes))


GLOBAL_THREADS = 1024
"""Threads of a tail block that reads its first stage from global memory: it does so
where that stage has at most this many partials, a partial a thread -- as many latency
rounds as the element kernel of that stage would take, one launch fewer. (Launched with
this bound, so that the compiler keeps to 64 registers a thread.)"""


def _global_part(m: int, caps: list[str], has_z: bool, strided: bool, u: int) -> str:
    """One partial ``t`` of the first stage, read from ``x<k>[r, ...]``: ``_fold``'s
    combines in the same order, with ``u`` loads issued before them."""
    acc = _names("acc", m)
    xs = _names("x", m)
    if strided:
        head, stop, step = "k = t", "n", "p"
    else:
        head, stop, step = "k = t * c\nhi = min(k + c, n)", "hi", "1"
    if has_z:
        head += "\n" + "\n".join(f"acc{c} = z{c}" for c in range(m))
    else:
        head += "\n" + "\n".join(f"acc{c} = {x}[r, k]" for c, x in enumerate(xs))
        head += f"\nk += {step}"
    loads = "\n".join(
        f"e{j}_{c} = {x}[r, k + {j} * {step}]" for j in range(u) for c, x in enumerate(xs)
    )
    combines = "\n".join(_apply(caps, acc, [f"e{j}_{c}" for c in range(m)]) for j in range(u))
    one = "\n".join(f"e0_{c} = {x}[r, k]" for c, x in enumerate(xs))
    one += "\n" + _apply(caps, acc, [f"e0_{c}" for c in range(m)])
    return (
        head
        + f"\nwhile k + {u - 1} * {step} < {stop}:\n"
        + _indent(loads + "\n" + combines + f"\nk += {u} * {step}")
        + f"\nwhile k < {stop}:\n"
        + _indent(one + f"\nk += {step}")
    )


SPREAD_SLAB = 32
"""Partials a block of the spread first stage folds (a strided slab's rows of 32
consecutive values: 128 bytes of float32, one coalesced load a warp). A power of two, a
constant of the kernel's text: the staging's divisions by it are shifts."""
SLAB_SHIFT = SPREAD_SLAB.bit_length() - 1

STAGE_UNROLL = 4
"""Values a thread loads at once where the spread first stage stages its slab (loads at
clamped indices, stores under their guards: the loads of a batch are in flight together,
not one memory latency each)."""


def _staged_loads(m: int, xs: list[str], index: str, ok: str, total: str) -> str:
    """``sm<q>[kk] = x<q>[r, <index>]`` where ``<ok>``, for ``kk = tid, tid + nt, ...``
    below ``total``: ``STAGE_UNROLL`` loads (at ``min(<index>, n - 1)``, always in the
    row) issued before their guarded stores. ``index`` and ``ok`` are expressions of
    ``kk``, written with the name ``KK``."""
    u = STAGE_UNROLL
    lines: list[str] = []
    for j in range(u):
        kk = "kk" if j == 0 else f"kk{j}"
        if j:
            lines.append(f"{kk} = kk + {j} * nt")
        at = index.replace("KK", kk)
        lines.append(f"e{j} = {at}")
        lines.append(f"ok{j} = {kk} < {total} and {ok.replace('KK', kk).replace('E', f'e{j}')}")
        lines += [f"v{j}_{q} = {x}[r, min(e{j}, n - 1)]" for q, x in enumerate(xs)]
    for j in range(u):
        kk = "kk" if j == 0 else f"kk{j}"
        lines.append(
            f"if ok{j}:\n" + _indent("\n".join(f"sm{q}[{kk}] = v{j}_{q}" for q in range(m)))
        )
    return f"kk = tid\nwhile kk < {total}:\n" + _indent("\n".join(lines) + f"\nkk += {u} * nt")


def _spread_part(m: int, caps: list[str], has_z: bool, strided: bool) -> str:
    """Partial ``t`` of the first stage from the slab staged in shared memory (``sm``,
    from 0; ``_spread_first``): ``_global_part``'s combines in the same order."""
    if strided:
        head, first = "kn = (n - t + p - 1) // p", "t - t0"

        def at(k: str) -> str:
            return f"(({k}) << {SLAB_SHIFT}) + (t - t0)"
    else:
        head, first = "kn = min(t * c + c, n) - t * c", "(t - t0) * c"

        def at(k: str) -> str:
            return f"(t - t0) * c + {k}"

    if has_z:
        head += "\n" + "\n".join(f"acc{q} = z{q}" for q in range(m)) + "\nk = 0"
    else:
        head += "\n" + "\n".join(f"acc{q} = sm{q}[{first}]" for q in range(m)) + "\nk = 1"
    return head + "\n" + _combine_run(m, caps, at, "k", "kn", "1")


def _spread_first(m: int, caps: list[str], has_z: bool, strided: bool) -> str:
    """The first stage of row ``r``'s slab of partials ``t0 .. t1`` (``SPREAD_SLAB``): the
    values they fold staged in shared memory by every thread (coalesced, all loads in
    flight at once), each partial folded from there into the scratch row ``w<k>[r]``."""
    xs = _names("x", m)
    if strided:
        # value k of the slab's partial j (from 0) is element t0 + j + k * p, staged at
        # k * G + j (G = SPREAD_SLAB)
        stage = "kn = (n - t0 + p - 1) // p\n" + _staged_loads(
            m,
            xs,
            f"t0 + (KK & {SPREAD_SLAB - 1}) + (KK >> {SLAB_SHIFT}) * p",
            f"t0 + (KK & {SPREAD_SLAB - 1}) < t1 and E < n",
            f"(kn << {SLAB_SHIFT})",
        )
    else:
        stage = "lo = t0 * c\nhi = min(t1 * c, n)\n" + _staged_loads(
            m, xs, "lo + KK", "True", "(hi - lo)"
        )
    store = "\n".join(f"w{q}[r, t] = acc{q}" for q in range(m))
    return (
        stage
        + "\ncuda.syncthreads()\nt = t0 + tid\nwhile t < t1:\n"
        + _indent(_spread_part(m, caps, has_z, strided) + "\n" + store + "\nt += nt")
    )


def fold_tail_kernel(
    dts: tuple[np.dtype[Any], ...],
    n_caps: int,
    *,
    has_z: bool,
    strided: bool,
    from_global: bool = False,
    spread: bool = False,
) -> str:
    """``fold_tail(items, rows, nlev, nf, ns, ps, cs, x.., z.., o.., u..)`` (``z`` only
    ``has_z``): see the module docstring. ``strided``: partial ``t`` of a stage folds
    values ``t, t + p, ...`` (else the ``c`` from ``t * c``). A row's values (at most
    ``shared_values``) are copied to shared memory once, coalesced; every stage reads one
    shared buffer and writes the other, so the sequential folds wait on shared memory,
    not on the L2. ``from_global``: the first stage reads the row from global memory
    (a first stage of at most ``GLOBAL_THREADS`` partials, launched with that many
    threads), the later ones shared memory as before. ``spread`` (with ``from_global``):
    the first stage is cut into slabs of ``SPREAD_SLAB`` partials, a block a slab
    (``_spread_first``: many multiprocessors read a row, not one), each writing its
    partials to the scratch row ``w<k>[r]``; the block that finishes a row's last slab
    (``count[r]``, an atomic counter it resets to 0) runs the later stages and the final
    fold as above."""
    m = len(dts)
    sh = shared_values(sum(dt.itemsize for dt in dts))
    u = global_unroll(sum(dt.itemsize for dt in dts))
    caps = _names("u", n_caps)
    xs, zs, os_ = (_names(p, m) for p in ("x", "z", "o"))
    if strided:
        part = _fold(m, caps, has_z, "t", "n", "p")
    else:
        part = (
            "lo = t * c\nhi = min(lo + c, n)\n"
            + _fold(m, caps, has_z, "lo", "hi", "1")
        )  # fmt: skip
    shared = "\n".join(
        f"sm{c} = cuda.shared.array({2 * sh}, np.{dt.name})" for c, dt in enumerate(dts)
    )
    copy_in = (
        "n0 = ns[0] if nlev > 0 else nf\nt = tid\n"
        + _copy_rows(m, "t", "n0", lambda c, k: f"sm{c}[{k}]", lambda c, k: f"x{c}[r, {k}]")
        + "\ncuda.syncthreads()"
    )
    store = "\n".join(f"sm{c}[outoff + t] = acc{c}" for c in range(m))
    level = (
        f"n = ns[j]\np = ps[j]\nc = cs[j]\ninoff = (j % 2) * {sh}\noutoff = {sh} - inoff\n"
        "t = tid\n"
        "while t < p:\n" + _indent(part + "\n" + store + "\nt += nt") + "\n"
        "cuda.syncthreads()"
    )
    first = (
        f"n = ns[0]\np = ps[0]\nc = cs[0]\noutoff = {sh}\nt = tid\nwhile t < p:\n"
        + _indent(_global_part(m, caps, has_z, strided, u) + "\n" + store + "\nt += nt")
        + "\ncuda.syncthreads()"
    )
    final = (
        f"n = nf\ninoff = (nlev % 2) * {sh}\n"
        + _fold(m, caps, has_z, "0", "n", "1")
        + "\n"
        + "\n".join(f"{o}[r] = acc{c}" for c, o in enumerate(os_))
    )
    if spread:
        return _spread_kernel(m, caps, has_z, strided, shared, sh, level, final)
    body = (
        f"{shared}\n"
        "tid = np.int64(cuda.threadIdx.x)\n"
        "nt = np.int64(cuda.blockDim.x)\n"
        "r = np.int64(cuda.blockIdx.x)\n"
        "while r < rows:\n"
        + _indent(
            (
                first + "\nfor j in range(1, nlev):\n"
                if from_global
                else copy_in + "\nfor j in range(nlev):\n"
            )
            + _indent(level)
            + "\nif tid == 0:\n"
            + _indent(final)
            + "\ncuda.syncthreads()\nr += np.int64(cuda.gridDim.x)"
        )
    )
    params = ["items", "rows", "nlev", "nf", "ns", "ps", "cs", *xs]
    params += [*(zs if has_z else []), *os_, *caps]
    return f"def fold_tail({', '.join(params)}):\n" + _indent(body) + "\n"


def _spread_kernel(  # noqa: PLR0917  (the parts fold_tail_kernel made)
    m: int,
    caps: list[str],
    has_z: bool,
    strided: bool,
    shared: str,
    sh: int,
    level: str,
    final: str,
) -> str:
    """``fold_tail`` with a spread first stage (``fold_tail_kernel``'s ``spread``): the
    block that counts a row's last slab reads the row's partials back (after a fence:
    each slab stored them, then fenced, then counted) and finishes the row."""
    xs, zs, os_, ws = (_names(q, m) for q in ("x", "z", "o", "w"))
    finish = (
        "cuda.threadfence()\nt = tid\n"
        + _copy_rows(m, "t", "p", lambda q, k: f"sm{q}[{sh} + {k}]", lambda q, k: f"w{q}[r, {k}]")
        + "\ncuda.syncthreads()\nfor j in range(1, nlev):\n"
        + _indent(level)
        + "\nif tid == 0:\n"
        + _indent(final + "\ncount[r] = np.int32(0)")
    )
    body = (
        f"{shared}\n"
        "last = cuda.shared.array(1, np.int32)\n"
        "tid = np.int64(cuda.threadIdx.x)\n"
        "nt = np.int64(cuda.blockDim.x)\n"
        f"slabs = (ps[0] + {SPREAD_SLAB - 1}) >> {SLAB_SHIFT}\n"
        "w = np.int64(cuda.blockIdx.x)\n"
        "while w < rows * slabs:\n"
        + _indent(
            "n = ns[0]\np = ps[0]\nc = cs[0]\n"  # (the later stages set them)
            f"r = w // slabs\nt0 = (w - r * slabs) << {SLAB_SHIFT}\n"
            f"t1 = min(t0 + {SPREAD_SLAB}, p)\n"
            + _spread_first(m, caps, has_z, strided)
            + "\ncuda.threadfence()\ncuda.syncthreads()\n"
            "if tid == 0:\n"
            "    last[0] = np.int32(cuda.atomic.add(count, r, 1) == slabs - 1)\n"
            "cuda.syncthreads()\n"
            "if last[0] == 1:\n"
            + _indent(finish)
            + "\ncuda.syncthreads()\nw += np.int64(cuda.gridDim.x)"
        )
    )
    params = ["items", "rows", "nlev", "nf", "ns", "ps", "cs", *xs]
    params += [*(zs if has_z else []), *os_, *ws, "count", *caps]
    return f"def fold_tail({', '.join(params)}):\n" + _indent(body) + "\n"
