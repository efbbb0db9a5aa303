"""The benchmark suite's element functions mean what the NumPy references compute.

Every benchmark is run through ``python_compute`` (CPython at every index, the meaning of
``compute_*``) at the tiny size and validated with SPEC's rule; then through
``offload.compute_s`` at the quick size (the integrator's check once the CPU backend works).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.runner import main as bench_main
from benchmarks.suite import ALL
from benchmarks.suite.common import python_compute

pytestmark = pytest.mark.cpu

NAMES = list(ALL)


@pytest.mark.parametrize("name", NAMES)
def test_element_functions_match_numpy_reference_under_cpython(name: str) -> None:
    bench = ALL[name]
    inputs = bench.make_inputs(bench.sizes["tiny"])
    bound = bench.bind(inputs)
    outputs = bound.run(python_compute)
    check = bench.validate(outputs, bench.reference(inputs), inputs)
    assert check.ok, check.detail
    if bound.extra is not None:
        extra = bound.extra(python_compute)
        assert extra.ok, extra.detail


@pytest.mark.parametrize("name", NAMES)
def test_validation_rejects_a_perturbed_output(name: str) -> None:
    # the validation rule is not a tautology: one wrong element fails it
    bench = ALL[name]
    inputs = bench.make_inputs(bench.sizes["tiny"])
    outputs = [np.array(o, copy=True) for o in bench.bind(inputs).run(python_compute)]
    flat = outputs[0].reshape(-1)
    flat[0] = flat[0] + (1 if flat.dtype.kind in "iu" else 0.5 + abs(flat[0]))
    check = bench.validate(tuple(outputs), bench.reference(inputs), inputs)
    assert not check.ok, check.detail


def test_spec_reference_transcriptions_hold_for_1d_convolution() -> None:
    bench = ALL["1d-convolution"]
    inputs = bench.make_inputs(bench.sizes["paper"])
    re, im = bench.reference(inputs)
    assert float(re.sum() + im.sum()) == 294_912_000_000.0
    assert (re[0], im[0]) == (-16384.0, 65532.0)


def test_runner_writes_json_and_markdown_for_cpython_target(tmp_path: object) -> None:
    rc = bench_main(
        [
            "dotp",
            "treesearch",
            "--size",
            "tiny",
            "--targets",
            "py,cpu-peers",
            "--repeat",
            "2",
            "--out",
            str(tmp_path),
            "--no-plots",
        ]
    )
    assert rc == 0
    (result,) = list(tmp_path.glob("*/results-tiny.json"))  # type: ignore[attr-defined]
    data = json.loads(result.read_text())
    configs = {(r["name"], c["config"]): c for r in data["benchmarks"] for c in r["configs"]}
    assert configs[("dotp", "cpython")]["status"] == "ok"
    assert configs[("treesearch", "numpy")]["status"] == "ok"
    assert configs[("treesearch", "cpython")]["per_iter_s"] > 0


@pytest.mark.parametrize("name", NAMES)
def test_quick_size_validates_through_compute_s(name: str) -> None:
    import offload as ol

    bench = ALL[name]
    params = bench.sizes["quick"]
    if hasattr(params, "iters"):  # fewer iterations keep the lane fast; the check is the same
        import dataclasses

        params = dataclasses.replace(params, iters=min(params.iters, 2))
    inputs = bench.make_inputs(params)
    bound = bench.bind(inputs)
    check = bench.validate(bound.run(ol.compute_s), bench.reference(inputs), inputs)
    assert check.ok, check.detail
    if bound.extra is not None:
        extra = bound.extra(ol.compute_s)
        assert extra.ok, extra.detail


def test_runner_bounds_check_option_runs_checked_kernels_and_records_it(tmp_path, monkeypatch):
    import offload as ol

    monkeypatch.setattr(ol.config, "bounds_check", ol.config.bounds_check)  # restored after
    monkeypatch.setenv("OFFLOAD_BOUNDS_CHECK", "0")  # the runner sets it: restored after
    argv = ["dotp", "--size", "tiny", "--targets", "s", "--repeat", "1"]
    rc = bench_main([*argv, "--out", str(tmp_path), "--no-plots", "--bounds-check"])
    assert rc == 0 and ol.config.bounds_check is True
    (result,) = list(tmp_path.glob("*/results-tiny.json"))
    data = json.loads(result.read_text())
    assert data["bounds_check"] is True
    assert [c["status"] for c in data["benchmarks"][0]["configs"]] == ["ok"]
