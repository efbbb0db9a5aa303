"""``ol.explain``'s report: a summary first, then only the passes that changed something.

``explain`` gathers sections (``== title`` then its text): the IR after lowering and after
every pass, then the target's part (kernel source; for the GPU the variant's passes, the
resources, the launch and the PTX). A two-line function gave 400-600 lines, most of them
the same IR printed again after passes that found nothing to do. ``render`` puts first::

    == summary: f over (10,) on gpu
    kernels: 1 (offload_f, variant unit32/lines: ...)
    launch: grid=(1, 1, 1) block=(32, 1, 1) blocks/SM=16 occupancy=100%
    registers: 20 (ptxas); spills: 0 bytes; shared memory: 0 bytes
    passes that changed the IR: select, dce, narrow (GPU kernel pipeline)
    passes that changed nothing: consts, simplifycfg, fold, ... (all_passes=True shows them)

and then the sections, leaving out an IR section equal to the one before it unless
``all_passes``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_IR = "IR after "
_KERNEL = re.compile(r"^GPU kernel (\S+)(?: \((.*)\))? ==$")
_RESOURCES = re.compile(r"^resources \((\w+)\): (.*)$")
_LAUNCH = re.compile(r"^launch for \S.*?: (.*)$")
_CPU = re.compile(r"^CPU kernel source \((.*)\)$")


def _sections(parts: Sequence[str]) -> list[tuple[str, str]]:
    """(title, body) of each ``== title`` line in ``parts`` (joined), in order."""
    out: list[tuple[str, list[str]]] = []
    for line in "\n".join(parts).splitlines():
        if line.startswith("== "):
            out.append((line[3:], []))
        elif out:
            out[-1][1].append(line)
        else:
            out.append(("", [line]))
    return [(title, "\n".join(body)) for title, body in out]


def render(
    parts: Sequence[str], name: str, shape: tuple[int, ...], target: str, all_passes: bool
) -> str:
    """The report of ``explain``'s ``parts`` for ``name`` over ``shape`` on ``target``."""
    sections = _sections(parts)
    changed: list[str] = []
    unchanged: list[str] = []
    kept: list[tuple[str, str]] = []
    previous: str | None = None
    kernels: list[str] = []
    facts: list[str] = []
    for title, body in sections:
        if title.startswith(_IR):
            pass_name = title[len(_IR) :]
            same = previous is not None and _ir_text(body) == _ir_text(previous)
            if title != f"{_IR}lowering":
                (unchanged if same else changed).append(pass_name)
            previous = body
            if same and not all_passes:
                continue
        elif m := _KERNEL.match(title):
            kernels.append(f"{m.group(1)}" + (f" ({m.group(2)})" if m.group(2) else ""))
        elif m := _CPU.match(title):
            kernels.append(f"kernel ({m.group(1)}): a loop nest compiled by numba")
        elif m := _RESOURCES.match(title):
            facts.append(_resources(m.group(1), m.group(2)))
        elif m := _LAUNCH.match(title):
            facts.append(f"launch: {m.group(1)}")
        kept.append((title, body))
    head = [f"== summary: {name} over {shape} on {target}"]
    head.append(f"kernels: {len(kernels)}" + (f" ({'; '.join(kernels)})" if kernels else ""))
    head.extend(facts)
    head.append(f"passes that changed the IR: {', '.join(changed) or '(none)'}")
    if unchanged:
        hidden = "" if all_passes else " (not shown; all_passes=True shows them)"
        head.append(f"passes that changed nothing: {', '.join(_unique(unchanged))}{hidden}")
    shown = [f"== {title}\n{text}" if title else text for title, text in kept]
    return "\n".join([*head, *shown])


def _ir_text(body: str) -> str:
    """The IR without its location comments (a pass that only moved a location is none)."""
    return "\n".join(line.split("  #", 1)[0].rstrip() for line in body.splitlines())


def _resources(source: str, text: str) -> str:
    values = dict(item.split("=", 1) for item in text.split(", ") if "=" in item)
    if not values:
        return f"registers: unknown ({source})"
    regs = values.get("num_regs", "?")
    spills = values.get("local_size_bytes", "?")
    shared = values.get("shared_size_bytes", "?")
    return f"registers: {regs} ({source}); spills: {spills} bytes; shared memory: {shared} bytes"


def _unique(names: Sequence[str]) -> list[str]:
    seen: dict[str, None] = {}
    for n in names:
        seen.setdefault(n, None)
    return list(seen)
