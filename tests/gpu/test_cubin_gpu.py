"""Cached cubins on a real GPU: a fresh process loads each cached kernel from its cubin (no
driver JIT) and computes what the IR interpreter computes; a cubin the driver cannot use
falls back to the PTX."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from offload.options import CompileOptions
from offload.ptx.backend import GPUBackend
from offload.ptx.cubin import link_cubin
from offload.runtime.gpu import device_info
from tests.ptx.irfixtures import ALL, ratio_f32, saxpy_f32
from tests.ptx.semantic import assert_matches_interpreter, fixture_case, run_backend

pytestmark = pytest.mark.gpu

FRESH = """
import json, sys
import numpy as np
from offload.options import CompileOptions
from offload.ptx.backend import GPUBackend
from tests.ptx.irfixtures import ALL
from tests.ptx.semantic import assert_matches_interpreter, fixture_case, run_backend

be = GPUBackend(cache_dir=sys.argv[1])
images = {}
for name, make in sorted(ALL.items()):
    fn = make()
    images[name] = be.compile(fn, CompileOptions()).leading().image
    shape, caps = fixture_case(name, np.random.default_rng(0))
    assert_matches_interpreter(run_backend(be, fn, shape, caps), fn, shape, caps)
s = be.cache.stats
print(json.dumps({"images": images, "disk_hits": s.disk_hits, "misses": s.misses,
                  "cubin_loads": s.cubin_loads, "ptx_loads": s.ptx_loads}))
"""


def _fresh(cache_dir: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", FRESH, cache_dir],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_fresh_process_loads_each_cached_kernel_from_its_cubin_with_the_right_values(tmp_path):
    first = _fresh(str(tmp_path))  # compiles: PTX and cubin, the cubin loaded at once
    n = len(ALL)
    assert first["misses"] == n and first["images"] == dict.fromkeys(ALL, "cubin")
    assert len(list(tmp_path.glob("*.cubin"))) == n
    second = _fresh(str(tmp_path))  # a warm cache: nothing compiled, nothing JIT-compiled
    assert second["disk_hits"] == n and second["misses"] == 0
    assert second["images"] == dict.fromkeys(ALL, "cubin")
    assert second["cubin_loads"] == n and second["ptx_loads"] == 0


def test_cached_cubin_the_driver_cannot_use_falls_back_to_the_ptx(tmp_path):
    GPUBackend(cache_dir=tmp_path).compile(saxpy_f32(), CompileOptions())
    [path] = tmp_path.glob("*.cubin")
    # A valid cubin for this GPU, but of another kernel: the driver loads it and finds no
    # saxpy entry in it (as a cubin from too new an nvJitLink fails to load at all).
    from offload.ptx.compile import compile_ptx
    from offload.ptx.kernel_source import build_kernel_source

    cc = device_info().cc
    other = link_cubin(compile_ptx(build_kernel_source(ratio_f32()), "ratio", cc), cc)
    assert other is not None
    path.write_bytes(other)
    meta_path = path.with_suffix(".json")
    meta = json.loads(meta_path.read_text())
    meta["cubin_sha256"] = hashlib.sha256(other).hexdigest()
    meta_path.write_text(json.dumps(meta))

    be = GPUBackend(cache_dir=tmp_path)
    fn = saxpy_f32()
    kernel = be.compile(fn, CompileOptions()).leading()
    assert kernel.image == "ptx" and kernel.cubin_error is not None and not be.cubins
    shape, caps = fixture_case("saxpy", np.random.default_rng(0))
    assert_matches_interpreter(run_backend(be, fn, shape, caps), fn, shape, caps)
