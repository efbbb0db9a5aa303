"""The scan skeleton's source: a chunked reduce-then-scan over rows of a virtual sequence.

Every scan (left or right, with or without a neutral element, segmented or not) is an
inclusive left scan of a *virtual sequence* ``v`` of length ``L`` in each row:

* ``v[0] = z`` when there is a neutral element (``has_z``), then the row's elements;
* in the source's order, or reversed (``rev``: right scans), whose results are written
  reversed too;
* combined by ``cmb``: the user's combine, its arguments swapped for a right scan
  (``scanr f`` is ``scanl (flip f)`` over the reversed row), or wrapped with a head flag
  for a segmented scan ((fa, a) . (fb, b) = (fa | fb, b if fb else a . b)).

The work is cut into chunks of ``C`` elements, ``C`` fixed by the caller from ``L``
alone. Kernel ``totals`` folds each chunk left to right; the totals are scanned by the
same two kernels, recursively (a tree whose shape depends on ``L`` and ``C`` only);
kernel ``rescan`` then folds each chunk again, left to right, starting from the previous
chunk's carry. One work item is one chunk of one row, so the same kernel text runs a
chunk per loop iteration on the CPU and per GPU thread: the same ``(L, C)`` gives the
same bits on every target.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.acc.skeletons.build import dtype_ctor, loop

Dt = np.dtype[Any]


def combine_wrapper(
    user: str, dts: tuple[Dt, ...], n_caps: int, flip: bool, segmented: bool
) -> str:
    """``def cmb(a.., b.., u..)``: ``user`` (the compiled combine's name) on components
    of ``dts`` (the flag first when ``segmented``), results cast to ``dts``."""
    m = len(dts)
    caps = [f"u{j}" for j in range(n_caps)]
    a = [f"a{k}" for k in range(m)]
    b = [f"b{k}" for k in range(m)]
    if segmented:
        fa, fb = "fa", "fb"
        params = [fa, *a, fb, *b, *caps]
    else:
        params = [*a, *b, *caps]
    x, y = (b, a) if flip else (a, b)
    call = f"r = {user}({', '.join([*x, *y, *caps])})"
    casts = [f"{dtype_ctor(dt)}(r[{k}])" for k, dt in enumerate(dts)]
    lines = [f"def cmb({', '.join(params)}):"]
    if segmented:
        keep = [f"{dtype_ctor(dt)}(b{k})" for k, dt in enumerate(dts)]
        lines += [
            "    if fb != 0:",
            f"        return (np.uint8(1), {', '.join(keep)})",
            f"    {call}",
            f"    return (np.uint8(fa), {', '.join(casts)})",
        ]
    else:
        lines += [f"    {call}", f"    return ({', '.join(casts)},)"]
    return "\n".join(lines) + "\n"


def _names(prefix: str, m: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(m)]


def _get(m: int, into: str, k: str) -> str:
    """Read virtual element ``k`` of the row into ``<into>0..``."""
    xs = _names("x", m)
    dst = _names(into, m)
    zs = _names("z", m)
    return "\n".join(
        [
            f"if has_z != 0 and {k} == 0:",
            *(f"    {d} = {z}" for d, z in zip(dst, zs, strict=True)),
            "else:",
            f"    p_ = {k} - has_z",
            "    if rev != 0:",
            "        p_ = n_ - 1 - p_",
            *(f"    {d} = {x}[row, p_]" for d, x in zip(dst, xs, strict=True)),
        ]
    )


def _apply(caps: list[str], left: list[str], right: list[str]) -> str:
    """``acc = cmb(left, right)`` into ``acc0..``."""
    out = [f"r_ = cmb({', '.join([*left, *right, *caps])})"]
    out += [f"acc{k} = r_[{k}]" for k in range(len(left))]
    return "\n".join(out)


def scan_module(target: str, combine_src: str, wrapper_src: str, m: int, n_caps: int) -> str:
    """The module text: the combine, ``cmb`` and kernels ``totals`` and ``rescan`` over
    ``m`` components (arrays ``x<k>`` of shape (rows, n), neutral ``z<k>``)."""
    caps = _names("u", n_caps)
    acc, e, ec = _names("acc", m), _names("e", m), _names("ec", m)
    xs, zs, ts, cs, os_ = (_names(p, m) for p in ("x", "z", "t", "c", "o"))
    head = "row = w // nch\nci = w - row * nch\nk0 = ci * C\nk1 = min(k0 + C, L)\nn_ = L - has_z\n"
    copy_acc = "\n".join(f"acc{k} = e{k}" for k in range(m))

    tot_body = (
        head
        + _get(m, "e", "k0")
        + "\n"
        + copy_acc
        + "\nfor k in range(k0 + 1, k1):\n"
        + _indent(_get(m, "e", "k") + "\n" + _apply(caps, acc, e))
        + "\n"
        + "\n".join(f"{t}[row, ci] = acc{k}" for k, t in enumerate(ts))
    )
    put = "q_ = k if rev == 0 else L - 1 - k\n" + "\n".join(
        f"{o}[row, q_] = acc{k}" for k, o in enumerate(os_)
    )
    carry = "\n".join(f"ec{k} = {c}[row, ci - 1]" for k, c in enumerate(cs))
    first = (
        _get(m, "e", "k0")
        + "\nif ci > 0:\n"
        + _indent(carry + "\n" + _apply(caps, ec, e))
        + "\nelse:\n"
        + _indent(copy_acc)
        + "\nk = k0\n"
        + put
    )
    res_body = (
        head
        + first
        + "\nfor k in range(k0 + 1, k1):\n"
        + _indent(_get(m, "e", "k") + "\n" + _apply(caps, acc, e) + "\n" + put)
    )
    common = ["items", "nch", "L", "C", "has_z", "rev", *xs, *zs]
    totals = f"def totals({', '.join([*common, *ts, *caps])}):\n" + loop(
        target, "items", "w", tot_body
    )
    rescan = f"def rescan({', '.join([*common, *cs, *os_, *caps])}):\n" + loop(
        target, "items", "w", res_body
    )
    return "\n\n".join([combine_src, wrapper_src, totals, rescan]) + "\n"


def fused_kernel(m: int, n_caps: int) -> str:
    """Kernel ``fused``: what ``totals``, the one-chunk scan of the totals and ``rescan``
    compute, in one pass on one thread, for rows of at most ``C`` chunks (the totals'
    scan is then one sequential chunk). Each chunk is read once and folded twice: into
    its total from its first element (``t``), and into the outputs from the previous
    chunk's carry (``acc``); the carry then takes the total (``cr``). The same combines
    in the same order as the tree: the same bits, at about a sequential scan's cost."""
    caps = _names("u", n_caps)
    acc, e, t, cr = (_names(p, m) for p in ("acc", "e", "t", "cr"))
    xs, zs, os_ = (_names(p, m) for p in ("x", "z", "o"))

    def into(dst: list[str], left: list[str], right: list[str]) -> str:
        call = f"r_ = cmb({', '.join([*left, *right, *caps])})"
        return "\n".join([call, *(f"{d} = r_[{k}]" for k, d in enumerate(dst))])

    def copy(dst: list[str], src: list[str]) -> str:
        return "\n".join(f"{d} = {x}" for d, x in zip(dst, src, strict=True))

    put = "q_ = k if rev == 0 else L - 1 - k\n" + "\n".join(
        f"{o}[row, q_] = acc{k}" for k, o in enumerate(os_)
    )
    chunk = "\n".join(
        [
            "k0 = ci * C",
            "k1 = min(k0 + C, L)",
            _get(m, "e", "k0"),
            copy(t, e),
            "if ci > 0:",
            _indent(into(acc, cr, e)),
            "else:",
            _indent(copy(acc, e)),
            "k = k0",
            put,
            "for k in range(k0 + 1, k1):",
            _indent("\n".join([_get(m, "e", "k"), into(t, t, e), into(acc, acc, e), put])),
            "if ci > 0:",
            _indent(into(cr, cr, t)),
            "else:",
            _indent(copy(cr, t)),
        ]
    )
    body = "\n".join(
        ["row = w", "n_ = L - has_z", copy(cr, zs), "for ci in range(nch):", _indent(chunk)]
    )
    params = ["items", "nch", "L", "C", "has_z", "rev", *xs, *zs, *os_, *caps]
    return f"def fused({', '.join(params)}):\n" + loop("cpu-seq", "items", "w", body)


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else "" for line in text.splitlines())
