"""The permute and filter skeletons' source.

Permute runs in two steps. Kernel ``dests`` evaluates the index function once per source
element and writes the destination's linear index (``-1`` for ``IGNORE``; an index
outside the result records a fault instead of writing anywhere). Then one of:

* ``accumulate`` (CPU): one pass in source order, ``out[d] = f(x[s], out[d])``;
* ``groups`` (GPU, deterministic): over the source positions stably sorted by
  destination, the first position of each destination folds its group in source order
  -- the CPU's order, so every target gives the same bits;
* ``atomic_native`` / ``atomic_cas`` (GPU): ``cuda.atomic.add/min/max`` where the
  combine is one of those on a type the hardware has; else a compare-and-swap loop on
  the value's bits (Accelerate's ``atomicCAS`` loop), floats and 64-bit included.

``compute_p`` may instead fold slices of the sources into per-task rows (``partials``) and
the rows into the outputs (``merge``): ``offload.acc.permute.cpu_tasks``.

Filter on the GPU: kernel ``flags`` evaluates the predicate, a scan of the flags gives each
kept element's position, kernel ``place`` writes it there. On the CPU: kernel ``keep``
(byte flags and a count per chunk), then ``compact`` (each chunk's kept elements to their
places).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.acc.skeletons.build import dtype_ctor, loop

Dt = np.dtype[Any]

IGNORE = -(2**63)
"""The destination coordinate that drops a source element (``permute``'s ``IGNORE``)."""


def _names(prefix: str, m: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(m)]


def combine_new_old(user: str, dts: tuple[Dt, ...], n_caps: int) -> str:
    """``def cmb(new.., old.., u..)``: the user's ``f(new, old)`` cast to ``dts``."""
    m = len(dts)
    caps = _names("u", n_caps)
    a, b = _names("a", m), _names("b", m)
    casts = [f"{dtype_ctor(dt)}(r[{k}])" for k, dt in enumerate(dts)]
    return (
        f"def cmb({', '.join([*a, *b, *caps])}):\n"
        f"    r = {user}({', '.join([*a, *b, *caps])})\n"
        f"    return ({', '.join(casts)},)\n"
    )


DESTS_BLOCK = 4096
"""Source elements per work item of ``compute_p``'s ``dests`` kernel."""


def dests_kernel(target: str, src_rank: int, dst_rank: int, n_caps: int) -> str:
    """``dests(items, sh.., dn.., dst, err, u..)``: destinations of the source elements.
    On ``cpu-par`` a work item is a block of ``DESTS_BLOCK`` elements, so that numba's
    parallel loop costs what the sequential one does on one thread (one element per
    item: 1.25x, measured 2^20 sources, 1-D)."""
    caps = _names("u", n_caps)
    sh, dn = _names("sh", src_rank), _names("dn", dst_rank)
    # (s < the product of the extents: the outermost index is what is left, no division)
    body = ["q_ = s"]
    for k in reversed(range(1, src_rank)):
        body += [f"i{k} = q_ % sh{k}", f"q_ = q_ // sh{k}"]
    body += ["i0 = q_"] if src_rank else []
    if src_rank == 0:
        body = []
    idx = ", ".join([*_names("i", src_rank), *caps])
    body.append(f"r_ = ixf({idx})")
    body += [f"d{k} = np.int64(r_[{k}])" for k in range(dst_rank)]
    # (numba cannot type the literal -2**63: it is built from int64 parts)
    body.append(f"ign_ = np.int64({IGNORE + 1}) - np.int64(1)")
    ignored = " or ".join(f"d{k} == ign_" for k in range(dst_rank))
    outside = " or ".join(f"d{k} < 0 or d{k} >= dn{k}" for k in range(dst_rank))
    linear = "d0"
    for k in range(1, dst_rank):
        linear = f"({linear}) * dn{k} + d{k}"
    if target in ("gpu", "gpu-sim"):  # one faulting element wins the record
        fault = ["if cuda.atomic.cas(err, 0, 0, s + 1) == 0:"]
    else:
        fault = ["if err[0] == 0:", "    err[0] = s + 1"]
    fault += [f"    err[{1 + k}] = d{k}" for k in range(dst_rank)]
    out = "dd[j]" if target == "cpu-par" else "dst[s]"
    body += [
        f"if {ignored}:",
        f"    {out} = -1",
        f"elif {outside}:",
        f"    {out} = -1",
        *("    " + line for line in fault),
        "else:",
        f"    {out} = {linear}",
    ]
    params = ["items", *sh, *dn, "dst", "err", *caps]
    head = f"def dests({', '.join(params)}):\n"
    if target != "cpu-par":
        return head + loop(target, "items", "s", "\n".join(body))
    blocked = [
        "lo = b * B_",
        "hi = min(lo + B_, items)",
        "dd = dst[lo:hi]",
        "for j in range(hi - lo):",
        "    s = lo + j",
        *("    " + line for line in body),
    ]
    return (
        head
        + f"    B_ = np.int64({DESTS_BLOCK})\n"
        + "    nb_ = (items + B_ - 1) // B_\n"
        + loop(target, "nb_", "b", "\n".join(blocked))
    )


def accumulate_kernel(m: int, n_caps: int) -> str:
    """``accumulate(items, dst, x.., out.., u..)``: sequential, in source order (CPU)."""
    caps = _names("u", n_caps)
    xs, outs = _names("x", m), _names("o", m)
    args = [f"{x}[s]" for x in xs] + [f"{o}[d]" for o in outs] + caps
    stores = "\n".join(f"            {o}[d] = r_[{k}]" for k, o in enumerate(outs))
    return (
        f"def accumulate({', '.join(['items', 'dst', *xs, *outs, *caps])}):\n"
        "    for s in range(items):\n"
        "        d = dst[s]\n"
        "        if d >= 0:\n"
        f"            r_ = cmb({', '.join(args)})\n"
        f"{stores}\n"
    )


def groups_kernel(target: str, m: int, n_caps: int) -> str:
    """``groups(items, order, dst, x.., out.., u..)``: each destination's group (source
    positions stably sorted by destination) folded in source order by one thread."""
    caps = _names("u", n_caps)
    xs, outs, acc = _names("x", m), _names("o", m), _names("acc", m)
    body = [
        "s0 = order[p]",
        "d = dst[s0]",
        "if d >= 0 and (p == 0 or dst[order[p - 1]] != d):",
        *(f"    {a} = {o}[d]" for a, o in zip(acc, outs, strict=True)),
        "    q = p",
        "    while q < items:",
        "        s1 = order[q]",
        "        if dst[s1] != d:",
        "            break",
        f"        r_ = cmb({', '.join([*(f'{x}[s1]' for x in xs), *acc, *caps])})",
        *(f"        {a} = r_[{k}]" for k, a in enumerate(acc)),
        "        q += 1",
        *(f"    {o}[d] = {a}" for a, o in zip(acc, outs, strict=True)),
    ]
    params = ["items", "order", "dst", *xs, *outs, *caps]
    return f"def groups({', '.join(params)}):\n" + loop(target, "items", "p", "\n".join(body))


def atomic_native_kernel(target: str, op: str) -> str:
    """``atomic_native(items, dst, x0, o0)``: ``cuda.atomic.<op>`` per source element."""
    body = f"d = dst[s]\nif d >= 0:\n    cuda.atomic.{op}(o0, d, x0[s])"
    return "def atomic_native(items, dst, x0, o0):\n" + loop(target, "items", "s", body)


def atomic_cas_kernel(target: str, n_caps: int) -> str:
    """``atomic_cas(items, dst, x0, o0, bits0, u..)``: the compare-and-swap loop over the
    bits (``bits0`` is ``o0`` viewed as an integer array of its width)."""
    caps = _names("u", n_caps)
    body = "\n".join(
        [
            "d = dst[s]",
            "if d >= 0:",
            "    old = o0[d]",
            "    while True:",
            f"        r_ = cmb({', '.join(['x0[s]', 'old', *caps])})",
            "        want = to_bits(old)",
            "        seen = cuda.atomic.cas(bits0, d, want, to_bits(r_[0]))",
            "        if seen == want:",
            "            break",
            "        old = from_bits(seen)",
        ]
    )
    params = ["items", "dst", "x0", "o0", "bits0", *caps]
    return f"def atomic_cas({', '.join(params)}):\n" + loop(target, "items", "s", body)


def bit_functions(dt: Dt, simulator: bool) -> tuple[str, dict[str, Any]]:
    """Source of ``to_bits``/``from_bits`` for a CAS on ``dt`` (identity on integers),
    and the names it needs in the module namespace."""
    if dt.kind in "iu":
        return "def to_bits(v):\n    return v\n\n\ndef from_bits(v):\n    return v\n", {}
    ibits = np.dtype(f"i{dt.itemsize}")
    src = "def to_bits(v):\n    return as_int(v)\n\n\ndef from_bits(v):\n    return as_float(v)\n"
    if simulator:

        def as_int(v: Any) -> Any:
            return np.asarray(v, dt).view(ibits)[()]

        def as_float(v: Any) -> Any:
            return np.asarray(v, ibits).view(dt)[()]

        return src, {"as_int": as_int, "as_float": as_float}
    from numba import cuda

    lib = cuda.libdevice
    if dt.itemsize == 4:
        return src, {"as_int": lib.float_as_int, "as_float": lib.int_as_float}
    return src, {"as_int": lib.double_as_longlong, "as_float": lib.longlong_as_double}


def flags_kernel(target: str, m: int, n_caps: int) -> str:
    """``flags(items, x.., flg, u..)``: 1 where the predicate holds, else 0."""
    caps = _names("u", n_caps)
    xs = _names("x", m)
    args = ", ".join([*(f"{x}[s]" for x in xs), *caps])
    body = f"r_ = pred({args})\nif r_[0]:\n    flg[s] = 1\nelse:\n    flg[s] = 0"
    params = ["items", *xs, "flg", *caps]
    return f"def flags({', '.join(params)}):\n" + loop(target, "items", "s", body)


def place_kernel(target: str, m: int) -> str:
    """``place(items, flg, pos, x.., out..)``: kept elements to their positions."""
    xs, outs = _names("x", m), _names("o", m)
    stores = "\n".join(f"    {o}[pos[s]] = {x}[s]" for x, o in zip(xs, outs, strict=True))
    body = f"if flg[s] != 0:\n{stores}"
    params = ["items", "flg", "pos", *xs, *outs]
    return f"def place({', '.join(params)}):\n" + loop(target, "items", "s", body)


def partials_kernels(m: int, n_caps: int, marked: bool = True) -> str:
    """``partials(n, T, per, dst, x.., P.., H, u..)`` (cpu-par): task ``t`` folds its
    slice of the ``n`` sources, in order, into its own row ``P[t]`` (``H[t, d]``: row
    ``t`` holds a value for ``d``); ``merge(W, NB, B, D, T, P.., H, out.., u..)`` folds
    the rows into the outputs in task order, block ``b`` of ``B`` destinations at a time
    (the rows read along their length; ``W``, the rows' values, is the work it is
    measured by). Unless ``marked``, there is no ``H``: the rows start from the
    combine's neutral element, and every value is combined. Slices and row views index
    the inner loops from zero, so numba drops its negative-index handling (a loop from
    ``t * per`` ran 1.8x slower)."""
    caps = _names("u", n_caps)
    xs, ps, outs = _names("x", m), _names("P", m), _names("o", m)
    xx, pp = _names("xx", m), _names("pr", m)
    held = ["H"] if marked else []
    new = ", ".join([*(f"{x}[s]" for x in xx), *(f"{p}[d]" for p in pp), *caps])
    update = [f"r_ = cmb({new})", *(f"{p}[d] = r_[{k}]" for k, p in enumerate(pp))]
    if marked:
        update = [
            "if h[d] != 0:",
            *("    " + line for line in update),
            "else:",
            *(f"    {p}[d] = {x}[s]" for p, x in zip(pp, xx, strict=True)),
            "    h[d] = 1",
        ]
    body = "\n".join(
        [
            "lo = t * per",
            "hi = min(lo + per, n)",
            "dd = dst[lo:hi]",
            *(f"{a} = {x}[lo:hi]" for a, x in zip(xx, xs, strict=True)),
            *(f"{a} = {p}[t]" for a, p in zip(pp, ps, strict=True)),
            *(["h = H[t]"] if marked else []),
            "for s in range(hi - lo):",
            "    d = dd[s]",
            "    if d >= 0:",
            *("        " + line for line in update),
        ]
    )
    part = f"def partials({', '.join(['n', 'T', 'per', 'dst', *xs, *ps, *held, *caps])}):\n"
    part += loop("cpu-par", "T", "t", body)
    oo = _names("oo", m)
    fold = ", ".join([*(f"{p}[k]" for p in pp), *(f"{o}[k]" for o in oo), *caps])
    merge_one = [f"r_ = cmb({fold})", *(f"{o}[k] = r_[{j}]" for j, o in enumerate(oo))]
    if marked:
        merge_one = ["if h[k] != 0:", *("    " + line for line in merge_one)]
    mbody = "\n".join(
        [
            "lo = b * B",
            "hi = min(lo + B, D)",
            *(f"{a} = {o}[lo:hi]" for a, o in zip(oo, outs, strict=True)),
            "for t in range(T):",
            *(f"    {a} = {p}[t, lo:hi]" for a, p in zip(pp, ps, strict=True)),
            *(["    h = H[t, lo:hi]"] if marked else []),
            "    for k in range(hi - lo):",
            *("        " + line for line in merge_one),
        ]
    )
    params = ["W", "NB", "B", "D", "T", *ps, *held, *outs, *caps]
    merge = f"def merge({', '.join(params)}):\n" + loop("cpu-par", "NB", "b", mbody)
    return part + "\n\n" + merge


def keep_kernel(target: str, m: int, n_caps: int) -> str:
    """``keep(n, nch, C, x.., flg, cnt, u..)`` (CPU filter): chunk ``c`` (elements
    ``c * C`` up to ``c * C + C`` of ``n``) evaluates the predicate, 1 or 0 into ``flg``,
    and counts its kept elements into ``cnt[c]``."""
    caps = _names("u", n_caps)
    xs, xx = _names("x", m), _names("xx", m)
    args = ", ".join([*(f"{x}[s]" for x in xx), *caps])
    body = "\n".join(
        [
            "lo = c * C",
            "hi = min(lo + C, n)",
            *(f"{a} = {x}[lo:hi]" for a, x in zip(xx, xs, strict=True)),
            "f = flg[lo:hi]",
            "k = np.int64(0)",
            "for s in range(hi - lo):",
            f"    r_ = pred({args})",
            "    if r_[0]:",
            "        f[s] = 1",
            "        k += 1",
            "    else:",
            "        f[s] = 0",
            "cnt[c] = k",
        ]
    )
    params = ["n", "nch", "C", *xs, "flg", "cnt", *caps]
    return f"def keep({', '.join(params)}):\n" + loop(target, "nch", "c", body)


def compact_kernel(target: str, m: int) -> str:
    """``compact(n, nch, C, flg, start, x.., out..)`` (CPU filter): chunk ``c`` writes its
    kept elements, in order, from ``out[start[c]]`` up to ``start[c + 1]``. Every element
    is written at the next free place and the place advances only past a kept one (no
    branch to mispredict: a dropped element is overwritten by the next kept one), and
    the chunk stops at its last kept element (the next place is the next chunk's)."""
    xs, outs, xx = _names("x", m), _names("o", m), _names("xx", m)
    body = "\n".join(
        [
            "lo = c * C",
            "hi = min(lo + C, n)",
            "k = start[c]",
            "end = start[c + 1]",
            *(f"{a} = {x}[lo:hi]" for a, x in zip(xx, xs, strict=True)),
            "f = flg[lo:hi]",
            "for s in range(hi - lo):",
            "    if k >= end:",
            "        break",
            *(f"    {o}[k] = {x}[s]" for o, x in zip(outs, xx, strict=True)),
            "    k += f[s]",
        ]
    )
    params = ["n", "nch", "C", "flg", "start", *xs, *outs]
    return f"def compact({', '.join(params)}):\n" + loop(target, "nch", "c", body)
