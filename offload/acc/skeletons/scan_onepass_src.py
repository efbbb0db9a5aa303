"""A scan in one pass over the data: each block scans a tile of chunks and finds the
combined value of the tiles before it by a decoupled look-back (Merrill and Garland,
"Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016).

The chunk tree of ``scan_src`` reads the input twice (``totals`` and ``rescan``) and writes
it once; this kernel reads it once and writes it once. A block takes tiles from a
counter, in order, until none is left (so every tile before the one it holds has been
taken by a running block: the wait below cannot deadlock). A tile is ``TB`` consecutive
chunks of ``CH`` elements of one row, staged through shared memory as ``scan_gpu_src``
stages them. The block folds each chunk (a thread a chunk), scans the chunk totals a warp
at a time (warp-synchronously) and then across the warps, and publishes the tile's total
(``status`` 1). One warp then looks back over the tiles before it in the row,
``LOOK_BACK`` statuses at a time (a lane a tile, atomic reads), to the newest tile whose
inclusive prefix is published (``status`` 2; a warp vote finds it); lane 0 combines
forward from that prefix through every later tile's total, publishes its own inclusive
prefix, and every thread rescans its chunk from its carry.

Where a predecessor's prefix is found depends on timing, but not the grouping: every
published prefix is the left fold of the tiles' totals in order (``P(T) = P(T-1) .
A(T)``, by induction whichever ``P(k)`` the walk meets), and each tile's own scan has a
fixed shape. So the bits depend on the row's length only (not on timing or addresses),
in every mode: exact for integers, deterministic (not ``compute_s``'s) for floats, which
``cross_target`` therefore keeps on the chunk tree.

Published values sit alone in their 128-byte line (``pad``), written before a
``threadfence`` and the status store, read after the status load and a fence: a
line is only ever read once its value is final, so an SM's L1 cannot hold it stale.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.acc.skeletons.scan_gpu_src import unrolled_in, unrolled_out
from offload.acc.skeletons.scan_src import _get, _indent, _names

Dt = np.dtype[Any]

LINE = 128
"""Bytes of a published value's own cache line."""
WARP = 32
"""Threads of a warp: the look-back's lanes and the span of the first scan of chunk totals."""
LOOK_BACK = 32
"""Tiles whose status the look-back reads at once (at most a warp's worth)."""
EPOCHS = 1 << 28
"""Launches one status array serves before it is zeroed: a tile's status is ``4 * epoch +
state`` (state 1: its total, 2: its inclusive prefix), so the statuses a launch of an
earlier epoch left read as "nothing published yet" (below ``4 * epoch + 1``) and need no
zeroing between launches; the last block of epoch ``EPOCHS - 1`` zeroes them (int32:
``4 * EPOCHS`` must fit)."""


def pad(dt: Dt) -> int:
    """Elements between two tiles' published values of dtype ``dt``."""
    return max(1, LINE // max(1, dt.itemsize))


def _into(dst: list[str], left: list[str], right: list[str], caps: list[str]) -> str:
    """``dst = cmb(left, right)``, componentwise."""
    call = f"r_ = cmb({', '.join([*left, *right, *caps])})"
    return "\n".join([call, *(f"{d} = r_[{k}]" for k, d in enumerate(dst))])


def _copy(dst: list[str], src: list[str]) -> str:
    return "\n".join(f"{d} = {s}" for d, s in zip(dst, src, strict=True))


def _positions(inner: str) -> str:
    """``inner`` for each staged position ``p`` of the tile whose element ``kk`` exists."""
    return (
        "for j in range(CH):\n"
        "    p = j * TB + tid\n"
        "    wl = p // CH\n"
        "    kk = (c0 + wl) * CH + (p - wl * CH)\n"
        "    if kk < L:\n" + _indent(_indent(inner))
    )


def _stage(whole: str, fast: str, general: str) -> str:
    """``fast`` for a whole tile (``whole``), else ``general`` at each position."""
    return f"if {whole}:\n" + _indent(fast) + "\nelse:\n" + _indent(_positions(general))


def _with(cy: list[str], reads: list[str], caps: list[str], *, later: bool) -> str:
    """The carry ``cy`` (held where ``hc``) combined with the values ``reads`` -- as its
    right operand where they come ``later``, else its left -- or set to them."""
    a = _names("a", len(cy))
    both = _into(cy, cy, a, caps) if later else _into(cy, a, cy, caps)
    return (
        "\n".join(f"{x} = {r}" for x, r in zip(a, reads, strict=True))
        + "\nif hc != 0:\n"
        + _indent(both)
        + "\nelse:\n"
        + _indent(_copy(cy, a))
        + "\nhc = 1"
    )


def _warp_totals(dst: list[str], upto: str, caps: list[str]) -> str:
    """``dst`` = the combined totals of the tile's warps before warp ``upto`` (>= 1), left
    to right (each warp's total is its last chunk's warp-inclusive value)."""
    m = len(dst)
    return (
        "\n".join(f"{d} = sc{k}[WARP - 1]" for k, d in enumerate(dst))
        + f"\nv_ = 1\nwhile v_ < {upto}:\n"
        + _indent(
            "\n".join(f"e{k} = sc{k}[v_ * WARP + WARP - 1]" for k in range(m))
            + "\n"
            + _into(dst, dst, _names("e", m), caps)
            + "\nv_ += 1"
        )
    )


def _warp_scan(m: int, caps: list[str], sync_warp: str) -> str:
    """Each warp's chunk totals ``sc`` scanned in place (inclusive), warp-synchronously."""
    a, e, acc = _names("a", m), _names("e", m), _names("acc", m)
    return "off = 1\nwhile off < WARP:\n" + _indent(
        "ok = tid < nv and lane >= off\n"
        "if ok:\n"
        + _indent(
            "\n".join(f"a{k} = sc{k}[tid - off]" for k in range(m))
            + "\n"
            + "\n".join(f"e{k} = sc{k}[tid]" for k in range(m))
            + "\n"
            + _into(acc, a, e, caps)
        )
        + f"\n{sync_warp}\nif ok:\n"
        + _indent("\n".join(f"sc{k}[tid] = acc{k}" for k in range(m)))
        + f"\n{sync_warp}\noff *= 2"
    )


def _find(sim: bool, sync_warp: str) -> str:
    """``jf``: the first lane (the newest tile) of the look-back window whose status is 2
    (an inclusive prefix), or -1; the same in every lane of the warp."""
    if not sim:
        return (
            f"{sync_warp}\n"
            "b_ = cuda.ballot_sync(0xFFFFFFFF, s == 2)\n"
            "jf = np.int64(cuda.ffs(b_)) - 1"
        )
    # (the simulator has no warp vote: the statuses pass through shared memory)
    return (
        f"ls[tid] = s\n{sync_warp}\n"
        "jf = np.int64(-1)\nq = 0\nwhile q < LB:\n"
        "    if ls[q] == 2:\n        jf = q\n        break\n    q += 1\n"
        f"{sync_warp}"
    )


def _finish() -> str:
    """The block that finishes last (a count of finished blocks in ``ctr[1]``: every
    block took its last tile number before it counts) sets both counters back to zero and
    starts the next epoch, zeroing the statuses first where the epochs are spent; so the
    next launch on the stream finds them as it needs them, without a launch of its own."""
    return (
        "if tid == 0:\n"
        "    if cuda.atomic.add(ctr, 1, 1) == cuda.gridDim.x - 1:\n"
        "        ctr[0] = 0\n"
        "        ctr[1] = 0\n"
        "        e_ = ctr[2] + 1\n"
        "        if e_ >= EPOCHS:\n"
        "            q = 0\n"
        "            while q < tiles:\n"
        "                status[q] = 0\n"
        "                q += 1\n"
        "            e_ = 0\n"
        "        ctr[2] = e_"
    )


def onepass_module(
    combine_src: str,
    wrapper_src: str,
    dts: tuple[Dt, ...],
    n_caps: int,
    *,
    tb: int,
    ch: int,
    sim: bool = False,
) -> str:
    """Kernel ``onepass(tiles, nch, L, C, has_z, rev, tpr, sd, x.., z.., o.., status,
    ctr, ag.., inc.., seed.., u..)``: the inclusive scan of every row (``scan_src``'s
    virtual rows: ``has_z``, ``rev``) of ``nch`` chunks, ``tpr`` tiles a row, launched
    with ``TB`` threads a block and any number of blocks (each takes tiles until none is
    left). ``status`` (int32, a tile each) holds statuses of epochs before ``ctr[2]``
    (``EPOCHS``) or zeros; ``ctr`` (int32: the tile counter, the finished blocks, the
    epoch) starts as ``[0, 0, epoch]`` and is left as ``[0, 0, next epoch]``;
    ``ag<k>``/``inc<k>`` hold ``pad`` elements a tile. With ``sd`` nonzero a row's first
    tile starts from the prefix ``seed<k>[0]`` (a streamed row's previous chunk's) as a
    later tile from its predecessor's. ``sim``: the text for the simulator (a block is
    one warp there; no warp vote)."""
    if sim and tb != WARP:
        raise ValueError(f"the simulator's one-pass scan runs blocks of one warp, not {tb}")
    m = len(dts)
    caps = _names("u", n_caps)
    acc, e, a, cy, t, v, r = (_names(p, m) for p in ("acc", "e", "a", "cy", "t", "v", "r"))
    xs, zs, os_, ags, incs = (_names(p, m) for p in ("x", "z", "o", "ag", "inc"))
    pads = [pad(dt) for dt in dts]
    sync_warp = "cuda.syncthreads()" if sim else "cuda.syncwarp()"
    shared = "\n".join(
        f"sm{k} = cuda.shared.array({tb * (ch + 1)}, np.{dt.name})\n"
        f"sc{k} = cuda.shared.array({tb}, np.{dt.name})\n"
        f"pf{k} = cuda.shared.array(1, np.{dt.name})\n"
        f"lw{k} = cuda.shared.array(WARP, np.{dt.name})"
        for k, dt in enumerate(dts)
    )
    whole = "has_z == 0 and rev == 0 and (jt + 1) * (TB * CH) <= L"
    stage_in = _stage(
        whole,
        unrolled_in(m, ch, tb, row="row", tile="jt"),
        _get(m, "e", "kk") + "\n" + "\n".join(f"sm{k}[p + wl] = e{k}" for k in range(m)),
    )
    # (unsigned offsets: no wraparound select per access)
    read_e = "\n".join(f"e{k} = sm{k}[base + np.uint64(k)]" for k in range(m))
    fold_chunk = (
        "cnt = min(CH, L - ci * CH)\n"
        + "\n".join(f"acc{k} = sm{k}[base]" for k in range(m))
        + "\nk = 1\nwhile k < cnt:  # (a counted while: numba's range iterator costs selects)\n"
        + _indent(read_e + "\n" + _into(acc, acc, e, caps) + "\nk += 1")
        + "\n"
        + "\n".join(f"sc{k}[tid] = acc{k}" for k in range(m))
    )

    def publish(arrays: list[str], values: list[str], state: int) -> str:
        return (
            "\n".join(f"{g}[T * {p}] = {x}" for g, p, x in zip(arrays, pads, values, strict=True))
            + f"\ncuda.threadfence()\ncuda.atomic.max(status, T, np.int32(ep4 + {state}))"
        )

    def load(from_: list[str], kb: str) -> str:
        return "\n".join(
            f"lw{k}[tid] = {g}[{kb} * {p}]"
            for k, (g, p) in enumerate(zip(from_, pads, strict=True))
        )

    def chain(first: str, last: str) -> str:
        """Lane 0: ``r`` combined with the window's values ``lw[first]`` down to
        ``lw[last]``, newest last (the tiles in order)."""
        return f"q = {first}\nwhile q >= {last}:\n" + _indent(
            "\n".join(f"v{k} = lw{k}[q]" for k in range(m))
            + "\n"
            + _into(r, r, v, caps)
            + "\nq -= 1"
        )

    # Lane 0: the tile's total, published (a row's first tile: as its inclusive prefix).
    total = (
        "nw = (nv + WARP - 1) // WARP\n"
        "if nw == 1:\n"
        + _indent("\n".join(f"t{k} = sc{k}[nv - 1]" for k in range(m)))
        + "\nelse:\n"
        + _indent(
            _warp_totals(t, "nw - 1", caps)
            + "\n"
            + "\n".join(f"e{k} = sc{k}[nv - 1]" for k in range(m))
            + "\n"
            + _into(t, t, e, caps)
        )
        + "\nif jt > 0:\n"
        + _indent(publish(ags, t, 1))
        + "\nelif sd != 0:\n"
        + _indent(
            "\n".join(f"r{k} = seed{k}[0]\npf{k}[0] = r{k}" for k in range(m))
            + "\n"
            + _into(a, r, t, caps)
            + "\n"
            + publish(incs, a, 2)
        )
        + "\nelse:\n"
        + _indent(publish(incs, t, 2))
    )
    # Warp 0 walks back a window of LB tiles at a time, a lane a tile (an atomic read of
    # its status: ordered before the fence and the value's load, which numba's ``ldcv``,
    # an inline assembly without memory effects, is not), to the newest inclusive prefix
    # (a row's first tile has one). Lane 0 then combines forward from it: that prefix,
    # then every later tile's total in order -- the left fold of the tiles' totals, the
    # same bits whichever predecessor's prefix the walk meets first.
    walk = (
        "kb = kbase - tid\n"
        "s = np.int64(3)\n"
        "if tid < LB and kb >= lo:\n"
        + _indent(
            "s = np.int64(cuda.atomic.add(status, kb, 0)) - ep4\n"
            "while s <= 0:  # (nothing published in this epoch yet)\n"
            "    s = np.int64(cuda.atomic.add(status, kb, 0)) - ep4\n"
            "cuda.threadfence()\n"
            "if s == 2:\n" + _indent(load(incs, "kb")) + "\nelse:\n" + _indent(load(ags, "kb"))
        )
        + "\n"
        + _find(sim, sync_warp)
        + "\nif jf >= 0:\n    break\nkbase -= LB"
    )
    forward = (
        f"{sync_warp}\n"
        "kb = kbase - tid\n"
        "if tid < LB:\n" + _indent(load(ags, "kb")) + f"\n{sync_warp}\n"
        "if tid == 0:\n" + _indent(chain("LB - 1", "0")) + "\nkbase += LB"
    )
    look_back = "if jt > 0:\n" + _indent(
        "lo = row * tpr\nkbase = T - 1\nwhile True:\n"
        + _indent(walk)
        + "\nif tid == 0:\n"
        + _indent("\n".join(f"r{k} = lw{k}[jf]" for k in range(m)) + "\n" + chain("jf - 1", "0"))
        + "\nkbase += LB\nwhile kbase < T:\n"
        + _indent(forward)
        + "\nif tid == 0:\n"
        + _indent(
            "\n".join(f"pf{k}[0] = r{k}" for k in range(m))
            + "\n"
            + _into(a, r, t, caps)
            + "\n"
            + publish(incs, a, 2)
        )
    )
    store = "\n".join(f"sm{k}[base + np.uint64(k)] = acc{k}" for k in range(m))
    # Each thread's carry: the tile's prefix, then the warps before its own, then the
    # chunks before its own in its warp.
    carry = (
        "\n".join(f"cy{k} = sm{k}[base]" for k in range(m))
        + "\nhc = 0\nwi = tid // WARP\nif wi > 0:\n"
        + _indent(_warp_totals(cy, "wi", caps) + "\nhc = 1")
        + "\nif lane > 0:\n"
        + _indent(_with(cy, [f"sc{k}[tid - 1]" for k in range(m)], caps, later=True))
        + "\nif hp != 0:\n"
        + _indent(_with(cy, [f"pf{k}[0]" for k in range(m)], caps, later=False))
    )
    rescan = (
        "cnt = min(CH, L - ci * CH)\n"
        + carry
        + "\nk = 0\n"
        + read_e
        + "\nif hc != 0:\n"
        + _indent(_into(acc, cy, e, caps))
        + "\nelse:\n"
        + _indent(_copy(acc, e))
        + "\n"
        + store
        + "\nk = 1\nwhile k < cnt:\n"
        + _indent(read_e + "\n" + _into(acc, acc, e, caps) + "\n" + store + "\nk += 1")
    )
    stage_out = _stage(
        whole,
        unrolled_out(m, ch, tb, row="row", tile="jt"),
        "q_ = kk if rev == 0 else L - 1 - kk\n"
        + "\n".join(f"{o}[row, q_] = sm{k}[p + wl]" for k, o in enumerate(os_)),
    )
    tile = "\n".join(
        [
            "if tid == 0:",
            "    tt[0] = np.int64(cuda.atomic.add(ctr, 0, 1))",
            "cuda.syncthreads()",
            "T = tt[0]",
            "if T >= tiles:",
            "    break",
            "row = T // tpr",
            "jt = T - row * tpr",
            "c0 = jt * TB",
            "nv = min(np.int64(TB), nch - c0)",
            stage_in,
            "cuda.syncthreads()",
            "base = np.uint64(tid * (CH + 1))",
            "ci = c0 + tid",
            "if tid < nv:",
            _indent(fold_chunk),
            sync_warp,
            _warp_scan(m, caps, sync_warp),
            "cuda.syncthreads()",
            "if tid < WARP:",
            _indent("if tid == 0:\n" + _indent(total) + "\n" + look_back),
            "cuda.syncthreads()",
            "hp = 0 if jt == 0 and sd == 0 else 1",
            "if tid < nv:",
            _indent(rescan),
            "cuda.syncthreads()",
            stage_out,
            "cuda.syncthreads()  # (the next tile reuses the shared arrays)",
        ]
    )
    # A block takes tiles from the counter until none is left: on the GPU the grid has a
    # block a tile (each takes one), under the simulator a few blocks take them all.
    body = "\n".join(
        [
            shared,
            "tt = cuda.shared.array(1, np.int64)",
            *(["ls = cuda.shared.array(WARP, np.int32)"] if sim else []),
            "tid = np.int64(cuda.threadIdx.x)",
            "lane = tid & (WARP - 1)",
            "n_ = L - has_z",
            "ep4 = np.int64(ctr[2]) * 4",
            "while True:",
            _indent(tile),
            _finish(),
        ]
    )
    params = ["tiles", "nch", "L", "C", "has_z", "rev", "tpr", "sd", *xs, *zs, *os_]
    params += ["status", "ctr", *ags, *incs, *_names("seed", m), *caps]
    kernel = f"def onepass({', '.join(params)}):\n" + _indent(body)
    consts = f"TB = {tb}\nCH = {ch}\nWARP = {WARP}\nLB = {min(LOOK_BACK, WARP, tb)}\n"
    consts += f"EPOCHS = {EPOCHS}\n"
    return "\n\n".join([consts, combine_src, wrapper_src, kernel]) + "\n"
