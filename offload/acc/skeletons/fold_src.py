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


def _fold(m: int, caps: list[str], has_z: bool, start: str, stop: str, step: str) -> str:  # noqa: PLR0917
    """``acc = z (else the value at start); for k in range(start, stop, step): acc =
    cmb(acc, value k)`` -- ``fold._fold_loop``'s order."""
    acc, e = _names("acc", m), _names("e", m)
    if has_z:
        head = "\n".join(f"acc{c} = z{c}" for c in range(m)) + f"\nk0 = {start}"
    else:
        head = _read(m, "acc", start) + f"\nk0 = {start} + {step}"
    body = _read(m, "e", "k") + "\n" + _apply(caps, acc, e)
    return head + f"\nfor k in range(k0, {stop}, {step}):\n" + _indent(body)


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


def fold_tail_kernel(
    dts: tuple[np.dtype[Any], ...],
    n_caps: int,
    *,
    has_z: bool,
    strided: bool,
    from_global: bool = False,
) -> str:
    """``fold_tail(items, rows, nlev, nf, ns, ps, cs, x.., z.., o.., u..)`` (``z`` only
    ``has_z``): see the module docstring. ``strided``: partial ``t`` of a stage folds
    values ``t, t + p, ...`` (else the ``c`` from ``t * c``). A row's values (at most
    ``shared_values``) are copied to shared memory once, coalesced; every stage reads one
    shared buffer and writes the other, so the sequential folds wait on shared memory,
    not on the L2. ``from_global``: the first stage reads the row from global memory
    (a first stage of at most ``GLOBAL_THREADS`` partials, launched with that many
    threads), the later ones shared memory as before."""
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
        "n0 = ns[0] if nlev > 0 else nf\n"
        "t = tid\n"
        "while t < n0:\n"
        + _indent("\n".join(f"sm{c}[t] = {x}[r, t]" for c, x in enumerate(xs)) + "\nt += nt")
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
