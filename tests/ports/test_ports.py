"""Kernel ports from public code (tests/ports/kernels.py), each against its original.

Accepted ports run on every target (``compute_s``/``compute_p`` in the cpu lane, the CUDA
simulator in the sim lane at small sizes, the GPU in the gpu lane) and must give the
original's values and dtype: the same bits where the port does the original's arithmetic,
else within the port's stated tolerance. Ports offload rejects today are listed in
``REJECTED`` with the rule of the first error; a test checks that each still is, with a
located ``OffloadError`` of that rule -- when a feature lands, that test fails and the
entry leaves the table (``python tools/ports_report.py`` prints the current state).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.diagnostics import OffloadError
from offload.lowering import check_and_lower
from tests.ports.kernels import PORTS, Case, Port

REJECTED: dict[str, str] = {
    "mandelbrot_complex": "unsupported-syntax",  # complex(x, y): no complex numbers
}
"""Ports rejected today -> the rule of the first error they get."""

ACCEPTED = sorted(set(PORTS) - set(REJECTED))

CPU_SIZE = 12
SIM_SIZE = 4


def _case(port: Port, n: int) -> Case:
    return port.make(n, np.random.default_rng(sum(map(ord, port.name))))


def _host(x: Any) -> np.ndarray:
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


def assert_port_result(port: Port, got: Any, want: Any) -> None:
    """``got`` is the original's result: same dtype; same bits, or within the port's
    stated tolerance."""
    gots = got if isinstance(want, tuple) else (got,)
    wants = want if isinstance(want, tuple) else (want,)
    assert len(gots) == len(wants), port.name
    for g, w in zip(gots, wants, strict=True):
        g = _host(g)
        assert g.dtype == w.dtype, f"{port.name}: dtype {g.dtype}, original {w.dtype}"
        assert g.shape == w.shape, port.name
        if port.rtol == 0.0 and port.atol == 0.0:
            np.testing.assert_array_equal(g, w, err_msg=port.name, strict=True)
        else:
            np.testing.assert_allclose(g, w, rtol=port.rtol, atol=port.atol, err_msg=port.why)


@pytest.mark.unit
def test_every_port_names_its_origin_and_the_corpus_is_large_enough():
    assert len(PORTS) >= 40
    assert all(p.origin for p in PORTS.values())
    assert "go_fast" in PORTS and "go_fast" not in REJECTED
    assert set(REJECTED) <= set(PORTS)


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(PORTS))
def test_port_in_cpython_gives_the_originals_result(name):
    """The element function itself, run by CPython over the index space, is the original:
    the ports are faithful before any target is asked to run them."""
    port = PORTS[name]
    case = _case(port, SIM_SIZE)
    with np.errstate(over="ignore"):
        rows = [case.fn(*idx) for idx in np.ndindex(*case.shape)]
    wants = case.want if isinstance(case.want, tuple) else (case.want,)
    for k, w in enumerate(wants):
        vals = [r[k] if isinstance(case.want, tuple) else r for r in rows]
        got = np.array(vals, dtype=w.dtype).reshape(case.shape)
        if port.rtol == 0.0 and port.atol == 0.0:
            np.testing.assert_array_equal(got, w, err_msg=name)
        else:
            np.testing.assert_allclose(got, w, rtol=port.rtol, atol=port.atol, err_msg=name)


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_port_is_still_rejected_with_its_rule(name):
    port = PORTS[name]
    case = _case(port, SIM_SIZE)
    with pytest.raises(OffloadError) as info:
        check_and_lower(case.fn, len(case.shape))
    first = info.value.diagnostics[0]
    assert first.rule == REJECTED[name], info.value.message
    assert first.span is not None and first.span.line > 0, info.value.message


@pytest.mark.cpu
@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p], ids=["s", "p"])
@pytest.mark.parametrize("name", ACCEPTED)
def test_port_matches_original_on_cpu(name, compute):
    port = PORTS[name]
    case = _case(port, CPU_SIZE)
    assert_port_result(port, compute(case.shape, case.fn), case.want)


@pytest.mark.sim
@pytest.mark.parametrize("name", ACCEPTED)
def test_port_matches_original_on_the_simulator(name):
    port = PORTS[name]
    case = _case(port, SIM_SIZE)
    assert_port_result(port, ol.compute_g(case.shape, case.fn), case.want)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ACCEPTED)
def test_port_matches_original_on_the_gpu(name):
    port = PORTS[name]
    case = _case(port, 64)
    assert_port_result(port, ol.compute_g(case.shape, case.fn), case.want)
