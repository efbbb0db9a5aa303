"""The GPU fold's tail: every stage of a reduction tree after the first, and the last
sequential fold, in one launch (a block per row, stages apart by ``syncthreads``).

The first stage of a long fold (``plan.stages``) is an element kernel fused with the
fold's producer and reads the whole input; the stages after it read a few thousand
partials each, and as element kernels they cost a launch (and its host work) apiece: four
launches for a sum over 2^28 elements. ``fold_tail`` computes exactly what those kernels
and the final ``Fold`` compute -- the same partials, each folded in the same order from
the same start -- so the bits are the same as the staged tree (and as ``compute_s`` under
``cross_target``), with two launches in all.

Parameters: ``rows`` rows; ``nlev`` stages, stage ``j`` folding ``ns[j]`` values per row
into ``ps[j]`` partials of (at most) ``cs[j]`` values, its output at ``offs[j] + row *
ps[j]`` of the flat scratch arrays ``st<k>``; the first stage reads ``x<k>[row, k]``
(the first kernel's partials), later ones the previous stage's output; then thread 0
folds the last ``nf`` values of the row into ``o<k>[row]``.
"""

from __future__ import annotations

from offload.acc.skeletons.scan_src import _apply, _indent, _names

THREADS = 256
"""Threads of a tail block."""


def _read(m: int, into: str, k: str) -> str:
    """Value ``k`` of the current level's input row into ``<into>0..``."""
    xs, sts = _names("x", m), _names("st", m)
    return "\n".join(
        [
            "if j == 0:",
            *(f"    {into}{c} = {x}[r, {k}]" for c, x in enumerate(xs)),
            "else:",
            *(f"    {into}{c} = {s}[src + {k}]" for c, s in enumerate(sts)),
        ]
    )


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


def fold_tail_kernel(m: int, n_caps: int, *, has_z: bool, strided: bool) -> str:
    """``fold_tail(items, rows, nlev, nf, ns, ps, cs, offs, x.., z.., st.., o.., u..)``
    (``z`` only ``has_z``): see the module docstring. ``strided``: partial ``t`` of a
    stage folds values ``t, t + p, ...`` (else the ``c`` from ``t * c``)."""
    caps = _names("u", n_caps)
    xs, zs, sts, os_ = (_names(p, m) for p in ("x", "z", "st", "o"))
    if strided:
        part = _fold(m, caps, has_z, "t", "n", "p")
    else:
        part = (
            "lo = t * c\nhi = min(lo + c, n)\n"
            + _fold(m, caps, has_z, "lo", "hi", "1")
        )  # fmt: skip
    store = "\n".join(f"{s}[dst + t] = acc{c}" for c, s in enumerate(sts))
    level = (
        "n = ns[j]\np = ps[j]\nc = cs[j]\n"
        "src = offs[j - 1] + r * ns[j] if j > 0 else 0\n"
        "dst = offs[j] + r * p\n"
        "t = tid\n"
        "while t < p:\n" + _indent(part + "\n" + store + "\nt += nt") + "\n"
        "cuda.syncthreads()"
    )
    final = (
        "j = nlev\nn = nf\n"
        "src = offs[j - 1] + r * nf if j > 0 else 0\n"
        + _fold(m, caps, has_z, "0", "n", "1")
        + "\n"
        + "\n".join(f"{o}[r] = acc{c}" for c, o in enumerate(os_))
    )
    body = (
        "tid = np.int64(cuda.threadIdx.x)\n"
        "nt = np.int64(cuda.blockDim.x)\n"
        "r = np.int64(cuda.blockIdx.x)\n"
        "while r < rows:\n"
        + _indent(
            "for j in range(nlev):\n"
            + _indent(level)
            + "\nif tid == 0:\n"
            + _indent(final)
            + "\ncuda.syncthreads()\nr += np.int64(cuda.gridDim.x)"
        )
    )
    params = ["items", "rows", "nlev", "nf", "ns", "ps", "cs", "offs", *xs]
    params += [*(zs if has_z else []), *sts, *os_, *caps]
    return f"def fold_tail({', '.join(params)}):\n" + _indent(body) + "\n"
