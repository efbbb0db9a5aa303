"""A capture path's steps as one Python expression: the single translation shared by the
generated code that re-reads captured values on every call.

``offload.frontend.captures.make_fetcher`` (the full path's fetcher) and
``offload.runtime.reader.make_reader`` (the warm lane's reader) both generate straight-line
functions that read ``root``'s captured values. The translation lives here because ``ir`` is
the one package that both ``frontend`` and ``runtime`` may import (tests/unit/test_layering.py);
it depends on nothing but the step vocabulary below.
"""

from __future__ import annotations

from collections.abc import Sequence

Steps = Sequence[tuple[str, object]]
"""A capture path's steps (``offload.frontend.captures.CapturePath.steps``): ``("closure",
k)`` reads cell ``k``, ``("global", name)`` a global, ``("attr", name)`` an attribute,
``("const", obj)`` replaces the current object by ``obj``."""


def steps_expr(
    steps: Steps, tag: str, namespace: dict[str, object], hoisted: dict[str, str] | None = None
) -> str:
    """The Python expression that follows ``steps`` from the name ``root``.

    Objects the expression needs (global names, attribute names, constants) are added to
    ``namespace`` as ``_<kind initial><tag>_<step>`` (``tag`` keeps paths apart), and
    ``getattr`` as ``_getattr``. With ``hoisted``, a first step through the root's closure or
    globals reads ``_c``/``_g`` instead and records ``_c = root.__closure__`` /
    ``_g = root.__globals__`` in ``hoisted`` (name -> expression), for the caller to
    assign once before the reads."""
    expr = "root"
    for j, (kind, arg) in enumerate(steps):
        name = f"_{kind[0]}{tag}_{j}"
        if kind == "closure":
            if hoisted is not None and j == 0:  # one closure tuple for every capture
                hoisted["_c"] = "root.__closure__"
                expr = f"_c[{int(arg)}].cell_contents"  # type: ignore[call-overload]
            else:
                expr = f"{expr}.__closure__[{int(arg)}].cell_contents"  # type: ignore[call-overload]
        elif kind == "global":
            namespace[name] = arg
            if hoisted is not None and j == 0:
                hoisted["_g"] = "root.__globals__"
                expr = f"_g[{name}]"
            else:
                expr = f"{expr}.__globals__[{name}]"
        elif kind == "attr":
            namespace["_getattr"] = getattr
            namespace[name] = str(arg)
            expr = f"_getattr({expr}, {name})"
        else:
            namespace[name] = arg
            expr = name
    return expr
