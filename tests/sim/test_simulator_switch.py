"""One switch turns the CUDA simulator on: ``OFFLOAD_GPU_SIMULATOR=1`` or
``ol.config.gpu_simulator = True``, before or after ``import offload``, without
``NUMBA_ENABLE_CUDASIM`` (issue 18 item 3). Each case runs in a fresh process whose
environment has no ``NUMBA_ENABLE_CUDASIM``: numba decides at the first import of numba.cuda."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import ROOT

pytestmark = pytest.mark.sim

COMPUTE = """
import numpy as np
a = np.arange(6.0)

def f(i):
    return a[i] * 2.0 if i % 2 else -a[i]

got = ol.compute_g(6, f)
assert type(got) is np.ndarray and (got == ol.compute_s(6, f)).all(), got
import sys
assert "numba.cuda.simulator_init" in sys.modules
print("ok")
"""

CASES = {
    "environment_only": ({"OFFLOAD_GPU_SIMULATOR": "1"}, "import offload as ol\n"),
    "config_after_import": ({}, "import offload as ol\nol.config.gpu_simulator = True\n"),
    "config_after_numba_was_imported": (
        {},
        "import numba\nimport offload as ol\nol.config.gpu_simulator = True\n",
    ),
}


def _run(tmp_path: Path, env_extra: dict[str, str], text: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM",)}
    env = {k: v for k, v in env.items() if not k.startswith("OFFLOAD_GPU")}
    env.update(env_extra, PYTHONPATH=str(ROOT))
    script = tmp_path / "switch.py"
    script.write_text(text)
    return subprocess.run(
        [sys.executable, "-W", "ignore", str(script)],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_switch_runs_compute_g_under_the_simulator(tmp_path: Path, case: str) -> None:
    env, prelude = CASES[case]
    done = _run(tmp_path, env, prelude + COMPUTE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


def test_switching_after_numba_cuda_was_imported_for_the_gpu_says_what_to_do(
    tmp_path: Path,
) -> None:
    text = (
        "import numba.cuda\nimport offload as ol\nol.config.gpu_simulator = True\n"
        "try:\n    ol.compute_g(3, lambda i: i)\n"
        "except ol.OffloadError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = _run(tmp_path, {}, text)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert out.startswith("GPUUnavailable"), out
    assert "already imported" in out and "OFFLOAD_GPU_SIMULATOR=1" in out, out
    assert "bug in offload" not in out
