"""A helper in an installed package is a helper: calls resolve by what a function is, not by
the folder it lives in (issue 18 item 1)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from tests.scripts import run_script

pytestmark = pytest.mark.cpu

PACKAGE = '''
import math

import numpy as np


def cndf(x):
    """The cumulative normal distribution, a helper with a helper of its own."""
    return 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))


def _erf(x):
    return math.erf(x)


def kernel_of(a):
    def f(i):
        return cndf(a[i]) + np.float64(1.0)

    return f
'''

SCRIPT = """
import math
import sys

import numpy as np

import offload as ol
import tinyhelpers

assert "site-packages" in tinyhelpers.__file__, tinyhelpers.__file__
a = np.linspace(-2.0, 2.0, 7)


def user(i):
    return tinyhelpers.cndf(a[i])


want = np.array([0.5 * (1.0 + math.erf(x / math.sqrt(2.0))) for x in a])
assert np.allclose(ol.compute_s(a.shape, user), want)
assert np.allclose(ol.compute_p(a.shape, tinyhelpers.kernel_of(a)), want + 1.0)
print("ok")
"""


def _venv_with_package(root: Path) -> Path:
    """A fresh virtual environment (seeing this interpreter's packages: numpy, numba) with
    ``tinyhelpers`` installed in its own site-packages, as pip would put it."""
    env = root / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(env)],
        check=True,
        timeout=120,
    )
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    assert Path(purelib) != Path(sysconfig.get_paths()["purelib"])
    pkg = Path(purelib) / "tinyhelpers"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(PACKAGE))
    return python


def test_helpers_of_a_package_installed_in_site_packages_are_inlined(tmp_path: Path) -> None:
    python = _venv_with_package(tmp_path)
    done = run_script(tmp_path, "use_installed.py", SCRIPT, python=python)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"
