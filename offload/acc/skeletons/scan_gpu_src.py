"""The GPU's scan kernels with coalesced memory access: the same chunk tree and the same
per-chunk order as ``scan_src`` (so the same bits), with each block's chunks staged
through shared memory.

A block of ``TB`` threads takes ``TB`` consecutive work items (chunks of ``CH``
elements). Reading a chunk per thread directly makes a warp's 32 loads touch 32
different cache lines; instead the block first copies its ``TB * CH`` elements into shared
memory with consecutive threads reading consecutive elements, then each thread folds its
own chunk from shared memory (rows padded by one element, so the threads' strided reads
fall in different banks). ``rescan`` writes its results back through shared memory the
same way. The block loop is uniform per block (``syncthreads`` needs every thread).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.acc.skeletons.scan_src import _apply, _get, _indent, _names

Dt = np.dtype[Any]

SHARED_BYTES = 48 * 1024
"""Static shared memory a block may use."""


def staged_threads(dts: tuple[Dt, ...], chunk: int, most: int) -> int | None:
    """Threads per block of the staged kernels for components ``dts`` (a power of two,
    at most ``most``), or ``None`` where a warp's worth does not fit (or a component is
    a bool, which shared memory does not hold here)."""
    if any(dt.kind == "b" for dt in dts):
        return None
    per_thread = (chunk + 1) * sum(dt.itemsize for dt in dts)
    t = most
    while t >= 32 and t * per_thread > SHARED_BYTES:
        t //= 2
    return t if t >= 32 else None


def split(row: str, col: str, w: str, n: str, one_row: str) -> str:
    """``row, col = divmod(w, n)`` as kernel text, without the 64-bit division (dozens of
    instructions on a GPU, once per element) where ``one_row`` holds: a scan of one row,
    the usual case, whose work item is its column."""
    return (
        f"if {one_row}:\n    {row} = 0\n    {col} = {w}\n"
        f"else:\n    {row} = {w} // {n}\n    {col} = {w} - {row} * {n}"
    )


def _tile_positions(inner: str) -> str:
    """``inner`` for each staged position ``p`` of the block's tile whose element ``kk``
    of row ``row`` exists (``wl``: the work item's place in the tile)."""
    return (
        "for j in range(CH):\n"
        "    p = j * TB + tid\n"
        "    wl = p // CH\n"
        "    w = tile * TB + wl\n"
        "    if w < items:\n"
        + _indent(_indent(split("row", "ci", "w", "nch", "items == nch")))
        + "\n        kk = ci * CH + (p - wl * CH)\n"
        "        if kk < L:\n" + _indent(_indent(_indent(inner)))
    )


WHOLE_TILE = "items == nch and has_z == 0 and rev == 0 and (tile + 1) * (TB * CH) <= L"
"""A tile of a one-row forward scan without a neutral element whose every element exists:
its element ``kk`` is ``x[0, kk]`` and position ``p`` of the tile is element ``tile * TB
* CH + p`` (the common ``scanl1``)."""


def _whole_tile_or(fast: str, general: str) -> str:
    return f"if {WHOLE_TILE}:\n" + _indent(fast) + "\nelse:\n" + _indent(general)


def unrolled_in(m: int, ch: int, tb: int, row: str = "0", tile: str = "tile") -> str:
    """A whole tile's loads, unrolled: all ``ch`` loads of a thread are issued before the
    first shared store waits on one (a loop stalls the warp on every load in turn). The
    tile is number ``tile`` of row ``row`` (kernel text). The offsets are unsigned (an
    index numba cannot prove non-negative costs a wraparound select per access) and the
    shared ones a constant apart: thread ``t`` stores load ``j`` at ``j * tb + t`` plus
    its padding, ``(j * tb + t) // CH``, which is ``j * tb // CH + t // CH``."""
    lines = [
        f"base_ = np.uint64({tile} * (TB * CH) + tid)",
        "sat_ = np.uint64(tid + tid // CH)",
    ]
    for j in range(ch):
        lines += [f"e{k}_{j} = x{k}[{row}, base_ + np.uint64({j * tb})]" for k in range(m)]
    for j in range(ch):
        at = f"sat_ + np.uint64({j * tb + j * tb // ch})"
        lines += [f"sm{k}[{at}] = e{k}_{j}" for k in range(m)]
    return "\n".join(lines)


def unrolled_out(m: int, ch: int, tb: int, row: str = "0", tile: str = "tile") -> str:
    """A whole tile's stores, unrolled (the shared loads first; offsets as ``unrolled_in``)."""
    lines = [
        f"base_ = np.uint64({tile} * (TB * CH) + tid)",
        "sat_ = np.uint64(tid + tid // CH)",
    ]
    for j in range(ch):
        at = f"sat_ + np.uint64({j * tb + j * tb // ch})"
        lines += [f"e{k}_{j} = sm{k}[{at}]" for k in range(m)]
    for j in range(ch):
        lines += [f"o{k}[{row}, base_ + np.uint64({j * tb})] = e{k}_{j}" for k in range(m)]
    return "\n".join(lines)


def staged_scan_module(
    combine_src: str, wrapper_src: str, dts: tuple[Dt, ...], n_caps: int, *, tb: int, ch: int
) -> str:
    """Kernels ``totals`` and ``rescan`` with the parameters of ``scan_src``'s (``C``
    must equal ``ch``), staged through shared memory, for blocks of ``tb`` threads."""
    m = len(dts)
    caps = _names("u", n_caps)
    acc, e, ec = _names("acc", m), _names("e", m), _names("ec", m)
    xs, zs, ts, cs, os_ = (_names(p, m) for p in ("x", "z", "t", "c", "o"))
    shared = "\n".join(
        f"sm{k} = cuda.shared.array({tb * (ch + 1)}, np.{dt.name})" for k, dt in enumerate(dts)
    )
    prologue = (
        f"{shared}\n"
        "tid = np.int64(cuda.threadIdx.x)\n"
        "n_ = L - has_z\n"
        "ntiles = (items + TB - 1) // TB\n"
        "tile = np.int64(cuda.blockIdx.x)\n"
    )
    stage_in = _whole_tile_or(
        unrolled_in(m, ch, tb),
        _tile_positions(
            _get(m, "e", "kk") + "\n" + "\n".join(f"sm{k}[p + wl] = e{k}" for k in range(m))
        ),
    )
    mine = (
        "w = tile * TB + tid\n"
        "if w < items:\n"
        + _indent(split("row", "ci", "w", "nch", "items == nch"))
        + "\n    cnt = min(CH, L - ci * CH)\n"
        "    base = np.uint64(tid * (CH + 1))\n"
    )
    # (unsigned offsets and counted while loops: numba's signed indices and range
    # iterators cost selects per element)
    read_e = "\n".join(f"e{k} = sm{k}[base + np.uint64(k)]" for k in range(m))
    fold_tot = (
        "\n".join(f"acc{k} = sm{k}[base]" for k in range(m))
        + "\nk = 1\nwhile k < cnt:\n"
        + _indent(read_e + "\n" + _apply(caps, acc, e) + "\nk += 1")
        + "\n"
        + "\n".join(f"{t}[row, ci] = acc{k}" for k, t in enumerate(ts))
    )
    store = "\n".join(f"sm{k}[base + np.uint64(k)] = acc{k}" for k in range(m))
    fold_res = (
        "k = 0\n"
        + read_e
        + "\nif ci > 0:\n"
        + _indent(
            "\n".join(f"ec{k} = {c}[row, ci - 1]" for k, c in enumerate(cs))
            + "\n"
            + _apply(caps, ec, e)
        )
        + "\nelse:\n"
        + _indent("\n".join(f"acc{k} = e{k}" for k in range(m)))
        + "\n"
        + store
        + "\nk = 1\nwhile k < cnt:\n"
        + _indent(read_e + "\n" + _apply(caps, acc, e) + "\n" + store + "\nk += 1")
    )
    stage_out = _whole_tile_or(
        unrolled_out(m, ch, tb),
        _tile_positions(
            "q_ = kk if rev == 0 else L - 1 - kk\n"
            + "\n".join(f"{o}[row, q_] = sm{k}[p + wl]" for k, o in enumerate(os_))
        ),
    )
    sync = "cuda.syncthreads()\n"
    step = "tile += np.int64(cuda.gridDim.x)\n"
    tot_loop = stage_in + "\n" + sync + mine + _indent(fold_tot) + "\n" + sync + step
    res_loop = (
        stage_in + "\n" + sync + mine + _indent(fold_res) + "\n" + sync + stage_out + "\n"
        + sync + step
    )  # fmt: skip
    common = ["items", "nch", "L", "C", "has_z", "rev", *xs, *zs]
    totals = (
        f"def totals({', '.join([*common, *ts, *caps])}):\n"
        + _indent(prologue + "while tile < ntiles:\n" + _indent(tot_loop))
    )  # fmt: skip
    rescan = (
        f"def rescan({', '.join([*common, *cs, *os_, *caps])}):\n"
        + _indent(prologue + "while tile < ntiles:\n" + _indent(res_loop))
    )  # fmt: skip
    consts = f"TB = {tb}\nCH = {ch}\n"
    return "\n\n".join([consts, combine_src, wrapper_src, totals, rescan]) + "\n"


TAIL_MAX = 1 << 12
"""Rows x length of a chunk-totals scan that one block finishes in one launch (``tail``)."""


def tail_kernel(m: int, n_caps: int, ch: int) -> str:
    """``tail(items, rows, nlev, lens, offs, x.., c.., st.., sc.., u..)``: the whole chunk
    tree of the (rows, lens[0]) array ``x`` -- what ``ScanJob._level`` does in one launch
    per level -- in one block, levels apart by ``syncthreads``: the same chunks, the same
    order, the same bits. ``st``/``sc`` are flat scratch arrays holding each level's
    inputs and inclusive scans at ``offs[j]`` (level ``j`` has rows x ``lens[j]``
    elements, the last at most ``ch``)."""
    caps = _names("u", n_caps)
    acc, e, ec = _names("acc", m), _names("e", m), _names("ec", m)
    xs, cs, sts, scs = (_names(p, m) for p in ("x", "c", "st", "sc"))

    def each(count: str, body: str) -> str:
        return f"w = tid\nwhile w < {count}:\n" + _indent(body + "\nw += nt") + "\nsyncthreads()"

    def read(into: list[str], at: str) -> str:
        return "\n".join(f"{v} = {s}[{at}]" for v, s in zip(into, sts, strict=True))

    def write(at: str) -> str:
        return "\n".join(f"{s}[{at}] = acc{k}" for k, s in enumerate(scs))

    copy_in = each(
        "rows * lens[0]",
        split("r", "k", "w", "lens[0]", "rows == 1")
        + "\n"
        + "\n".join(f"{s}[w] = {x}[r, k]" for s, x in zip(sts, xs, strict=True)),
    )
    chunk_head = (
        split("r", "ci", "w", "ln", "rows == 1")
        + "\nk0 = ci * CH\nk1 = min(k0 + CH, lj)\nrow0 = oj + r * lj\n"
    )
    down = each(
        "rows * ln",
        chunk_head
        + read(acc, "row0 + k0")
        + "\nfor k in range(k0 + 1, k1):\n"
        + _indent(read(e, "row0 + k") + "\n" + _apply(caps, acc, e))
        + "\n"
        + "\n".join(f"{s}[on + w] = acc{k}" for k, s in enumerate(sts)),
    )
    bottom = each(
        "rows",
        "row0 = oj + w * lj\n"
        + read(acc, "row0")
        + "\n"
        + write("row0")
        + "\nfor k in range(1, lj):\n"
        + _indent(read(e, "row0 + k") + "\n" + _apply(caps, acc, e) + "\n" + write("row0 + k")),
    )
    up = each(
        "rows * ln",
        chunk_head
        + read(e, "row0 + k0")
        + "\nif ci > 0:\n"
        + _indent(
            "\n".join(f"{v} = {s}[on + w - 1]" for v, s in zip(ec, scs, strict=True))
            + "\n"
            + _apply(caps, ec, e)
        )
        + "\nelse:\n"
        + _indent("\n".join(f"acc{k} = e{k}" for k in range(m)))
        + "\n"
        + write("row0 + k0")
        + "\nfor k in range(k0 + 1, k1):\n"
        + _indent(read(e, "row0 + k") + "\n" + _apply(caps, acc, e) + "\n" + write("row0 + k")),
    )
    copy_out = each(
        "rows * lens[0]",
        split("r", "k", "w", "lens[0]", "rows == 1")
        + "\n"
        + "\n".join(f"{c}[r, k] = {s}[w]" for c, s in zip(cs, scs, strict=True)),
    )
    level = "lj = lens[j]\nln = lens[j + 1]\noj = offs[j]\non = offs[j + 1]\n"
    body = (
        "tid = np.int64(cuda.threadIdx.x)\n"
        "nt = np.int64(cuda.blockDim.x)\n"
        f"{copy_in}\n"
        "for j in range(nlev - 1):\n"
        + _indent(level + down)
        + "\nj = nlev - 1\nlj = lens[j]\noj = offs[j]\n"
        + bottom
        + "\nfor jj in range(nlev - 1):\n"
        + _indent("j = nlev - 2 - jj\n" + level + up)
        + f"\n{copy_out}\n"
    )
    body = body.replace("syncthreads()", "cuda.syncthreads()")
    params = ["items", "rows", "nlev", "lens", "offs", *xs, *cs, *sts, *scs, *caps]
    return f"CH = {ch}\n\n\ndef tail({', '.join(params)}):\n" + _indent(body)
