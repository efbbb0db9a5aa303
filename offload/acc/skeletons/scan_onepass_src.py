"""A scan in one pass over the data: each block scans a tile of chunks and finds the
combined value of the tiles before it by a decoupled look-back (Merrill and Garland,
"Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016).

The chunk tree of ``scan_src`` reads the input twice (``totals`` and ``rescan``) and writes
it once; this kernel reads it once and writes it once. A block takes tiles from a
counter, in order, until none is left (so every tile before the one it holds has been
taken by a running block: the wait below cannot deadlock). A tile is ``TB`` consecutive
chunks of ``CH`` elements of one row, staged through shared memory as ``scan_gpu_src``
stages them. The block folds each chunk (a thread a chunk), scans the chunk totals across
the block, and publishes the tile's total (``status`` 1). It then looks back over the
tiles before it in the row, ``LOOK_BACK`` statuses at a time (atomic reads), thread 0
combining their published values until it meets a tile whose inclusive prefix is
published (``status`` 2); it publishes its own inclusive prefix, and every thread rescans
its chunk from its carry.

Where a predecessor's prefix is found depends on timing, so the grouping of the combines
does too. That is exact for integer components (wrapping arithmetic, an associative
combine: any grouping gives the same bits) -- used there in every mode -- and for floats
only in ``determinism = "fast"``, whose results may differ in the last bits from run to
run, as CUB's scan's do.

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
LOOK_BACK = 32
"""Tiles whose status a block reads at once while it looks back (a warp's worth)."""


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


def onepass_module(
    combine_src: str, wrapper_src: str, dts: tuple[Dt, ...], n_caps: int, *, tb: int, ch: int
) -> str:
    """Kernel ``onepass(tiles, nch, L, C, has_z, rev, tpr, x.., z.., o.., status, ctr,
    ag.., inc.., u..)``: the inclusive scan of every row (``scan_src``'s virtual rows:
    ``has_z``, ``rev``) of ``nch`` chunks, ``tpr`` tiles a row, launched with ``TB``
    threads a block and any number of blocks (each takes tiles until none is left).
    ``status`` (int32, a tile each) and ``ctr`` (int32, one) start at zero;
    ``ag<k>``/``inc<k>`` hold ``pad`` elements a tile."""
    m = len(dts)
    caps = _names("u", n_caps)
    acc, e, a, cy, t, v, r = (_names(p, m) for p in ("acc", "e", "a", "cy", "t", "v", "r"))
    xs, zs, os_, ags, incs = (_names(p, m) for p in ("x", "z", "o", "ag", "inc"))
    pads = [pad(dt) for dt in dts]
    shared = "\n".join(
        f"sm{k} = cuda.shared.array({tb * (ch + 1)}, np.{dt.name})\n"
        f"sc{k} = cuda.shared.array({2 * tb}, np.{dt.name})\n"
        f"pf{k} = cuda.shared.array(1, np.{dt.name})\n"
        f"lw{k} = cuda.shared.array(LB, np.{dt.name})"
        for k, dt in enumerate(dts)
    )
    whole = "has_z == 0 and rev == 0 and (jt + 1) * (TB * CH) <= L"

    def whole_or_positions(fast: str, general: str) -> str:
        """``fast`` for a whole tile (``whole``), else ``general`` at each position."""
        return f"if {whole}:\n" + _indent(fast) + "\nelse:\n" + _indent(_positions(general))

    stage_in = whole_or_positions(
        unrolled_in(m, ch, tb, row="row", tile="jt"),
        _get(m, "e", "kk") + "\n" + "\n".join(f"sm{k}[p + wl] = e{k}" for k in range(m)),
    )
    read_e = "\n".join(f"e{k} = sm{k}[base + k]" for k in range(m))
    fold_chunk = (
        "cnt = min(CH, L - ci * CH)\n"
        + "\n".join(f"acc{k} = sm{k}[base]" for k in range(m))
        + "\nfor k in range(1, cnt):\n"
        + _indent(read_e + "\n" + _into(acc, acc, e, caps))
        + "\n"
        + "\n".join(f"sc{k}[tid] = acc{k}" for k in range(m))
    )
    block_scan = "src = np.int64(0)\noff = np.int64(1)\nwhile off < nv:\n" + _indent(
        "dst = TB - src\n"
        "if tid < nv:\n"
        + _indent(
            "if tid >= off:\n"
            + _indent(
                "\n".join(f"a{k} = sc{k}[src + tid - off]" for k in range(m))
                + "\n"
                + "\n".join(f"e{k} = sc{k}[src + tid]" for k in range(m))
                + "\n"
                + _into(acc, a, e, caps)
            )
            + "\nelse:\n"
            + _indent("\n".join(f"acc{k} = sc{k}[src + tid]" for k in range(m)))
            + "\n"
            + "\n".join(f"sc{k}[dst + tid] = acc{k}" for k in range(m))
        )
        + "\ncuda.syncthreads()\nsrc = dst\noff *= 2"
    )

    def publish(arrays: list[str], values: list[str], state: int) -> str:
        return (
            "\n".join(f"{g}[T * {p}] = {x}" for g, p, x in zip(arrays, pads, values, strict=True))
            + f"\ncuda.threadfence()\ncuda.atomic.max(status, T, {state})"
        )

    def values(into: str, at: str) -> str:
        """The published values of tile ``kb`` (inclusive where ``s == 2``) into ``into``."""
        inc = "\n".join(
            f"{into}{k}[{at}] = {g}[kb * {p}]"
            for k, (g, p) in enumerate(zip(incs, pads, strict=True))
        )
        agg = "\n".join(
            f"{into}{k}[{at}] = {g}[kb * {p}]"
            for k, (g, p) in enumerate(zip(ags, pads, strict=True))
        )
        return "if s == 2:\n" + _indent(inc) + "\nelse:\n" + _indent(agg)

    # Thread 0 publishes the tile's total (or, for a row's first tile, its inclusive prefix).
    publish_total = (
        "\n".join(f"t{k} = sc{k}[src + nv - 1]" for k in range(m))
        + "\nif jt == 0:\n"
        + _indent(publish(incs, t, 2))
        + "\nelse:\n"
        + _indent(publish(ags, t, 1))
    )
    # The block walks back over windows of LB tiles: threads below LB read one tile's
    # status each (an atomic read: ordered before the fence and the value's load, which
    # numba's ``ldcv``, an inline assembly without memory effects, is not), waiting while
    # it is 0, and its value; thread 0 combines the window, newest first, up to the first
    # inclusive prefix.
    window = (
        "if tid < LB:\n"
        + _indent(
            "kb = kbase - tid\n"
            "s = np.int32(3)\n"
            "if kb >= row * tpr:\n"
            + _indent(
                "s = cuda.atomic.add(status, kb, 0)\n"
                "while s == 0:\n"
                "    s = cuda.atomic.add(status, kb, 0)\n"
                "cuda.threadfence()\n" + values("lw", "tid")
            )
            + "\nls[tid] = s"
        )
        + "\ncuda.syncthreads()\n"
        "if tid == 0:\n"
        + _indent(
            "j = 0\n"
            "while j < LB:\n"
            + _indent(
                "s = ls[j]\n"
                "if s == 3:\n"
                "    tt[2] = 1\n"
                "    break\n"
                + "\n".join(f"v{k} = lw{k}[j]" for k in range(m))
                + "\nif have == 0:\n"
                + _indent(_copy(r, v) + "\nhave = 1")
                + "\nelse:\n"
                + _indent(_into(r, v, r, caps))
                + "\nif s == 2:\n    tt[2] = 1\n    break\nj += 1"
            )
        )
        + "\ncuda.syncthreads()\n"
        "if tt[2] != 0:\n    break\n"
        "kbase -= LB"
    )
    look_back = "if jt == 0:\n    hp = 0\nelse:\n" + _indent(
        "if tid == 0:\n"
        + _indent(_copy(r, t) + "\ntt[2] = 0")
        + "\nhave = 0\nkbase = T - 1\ncuda.syncthreads()\nwhile True:\n"
        + _indent(window)
        + "\nif tid == 0:\n"
        + _indent(
            "\n".join(f"pf{k}[0] = r{k}" for k in range(m))
            + "\n"
            + _into(a, r, t, caps)
            + "\n"
            + publish(incs, a, 2)
        )
        + "\nhp = 1"
    )
    store = "\n".join(f"sm{k}[base + k] = acc{k}" for k in range(m))
    rescan = (
        "cnt = min(CH, L - ci * CH)\n"
        + "\n".join(f"cy{k} = sm{k}[base]" for k in range(m))
        + "\nhc = 0\nif tid > 0:\n"
        + _indent(
            "\n".join(f"cy{k} = sc{k}[src + tid - 1]" for k in range(m))
            + "\nhc = 1\nif hp != 0:\n"
            + _indent(
                "\n".join(f"a{k} = pf{k}[0]" for k in range(m)) + "\n" + _into(cy, a, cy, caps)
            )
        )
        + "\nelif hp != 0:\n"
        + _indent("\n".join(f"cy{k} = pf{k}[0]" for k in range(m)) + "\nhc = 1")
        + "\nk = 0\n"
        + read_e
        + "\nif hc != 0:\n"
        + _indent(_into(acc, cy, e, caps))
        + "\nelse:\n"
        + _indent(_copy(acc, e))
        + "\n"
        + store
        + "\nfor k in range(1, cnt):\n"
        + _indent(read_e + "\n" + _into(acc, acc, e, caps) + "\n" + store)
    )
    stage_out = whole_or_positions(
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
            "base = tid * (CH + 1)",
            "ci = c0 + tid",
            "if tid < nv:",
            _indent(fold_chunk),
            "cuda.syncthreads()",
            block_scan,
            "if tid == 0:",
            _indent(publish_total),
            look_back,
            "cuda.syncthreads()",
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
            "tt = cuda.shared.array(3, np.int64)",
            "ls = cuda.shared.array(LB, np.int32)",
            "tid = np.int64(cuda.threadIdx.x)",
            "n_ = L - has_z",
            "while True:",
            _indent(tile),
        ]
    )
    params = ["tiles", "nch", "L", "C", "has_z", "rev", "tpr", *xs, *zs, *os_, "status", "ctr"]
    params += [*ags, *incs, *caps]
    kernel = f"def onepass({', '.join(params)}):\n" + _indent(body)
    consts = f"TB = {tb}\nCH = {ch}\nLB = {min(LOOK_BACK, tb)}\n"
    return "\n\n".join([consts, combine_src, wrapper_src, kernel]) + "\n"
