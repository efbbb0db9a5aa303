"""backprojection (SPEC §3.4): project every voxel into a 2-D image and interpolate, (R)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.common import (
    Benchmark,
    Bound,
    Check,
    Outputs,
    combine,
    recompute,
    rel_err_check,
)


@dataclass(frozen=True)
class Params:
    vol_bits: int
    iters: int


def coefficients(vol_bits: int) -> np.ndarray[Any, Any]:
    """M = Viewport . Projection . ModelView (float64 construction, float32 result)."""
    d = float(2**vol_bits)
    eye = np.array([-d, -d, -256.0])
    center = np.array([d, d, d])
    up = np.array([0.0, 0.0, 1.0])
    nv = (eye - center) / np.linalg.norm(eye - center)
    v = up - np.dot(up, nv) * nv
    v /= np.linalg.norm(v)
    u = np.cross(v, nv)
    model = np.array([[*u, -eye @ u], [*v, -eye @ v], [*nv, -eye @ nv], [0, 0, 0, 1.0]])
    near = d * np.sqrt(3.0)
    far = near + 2 * d * np.sqrt(3.0)
    cot = 1.6
    proj = np.array([
        [cot, 0, 0, 0], [0, cot, 0, 0],
        [0, 0, (far + near) / (near - far), 2 * far * near / (near - far)], [0, 0, -1, 0],
    ])  # fmt: skip
    half = d  # the image is 2D x 2D pixels, so the viewport is centred at D
    view = np.array([[half, 0, 0, half], [0, half, 0, half], [0, 0, 0.5, 0.5], [0, 0, 0, 1.0]])
    m: np.ndarray[Any, Any] = (view @ proj @ model).astype(np.float32)
    return m


class Backprojection(Benchmark):
    name = "backprojection"
    kind = "R"
    sizes = {
        "tiny": Params(vol_bits=3, iters=2),
        "quick": Params(vol_bits=6, iters=3),
        "paper": Params(vol_bits=8, iters=100),
    }

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        side = 2 ** (params.vol_bits + 1)
        y, x = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
        raw = ((1.0 + x + side * y) / float(side * side)).astype(np.float32)
        return {"params": params, "raw": raw, "m": coefficients(params.vol_bits)}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        params: Params = inputs["params"]
        raw = inputs["raw"]
        m = np.asarray(inputs["m"])
        # 16 float32 scalars passed as kernel parameters (row 2, depth, is unused)
        c00, c01, c02, c03 = (np.float32(c) for c in m[0])
        c10, c11, c12, c13 = (np.float32(c) for c in m[1])
        c30, c31, c32, c33 = (np.float32(c) for c in m[3])
        d = 2**params.vol_bits

        def project(i: int, j: int, k: int) -> Any:
            t0 = c00 * i + c01 * j + c03
            t1 = c10 * i + c11 * j + c13
            t3 = c30 * i + c31 * j + c33
            w = 1.0 / (t3 + c32 * k)
            rl = w * (t1 + c12 * k)  # image row from matrix row 1
            rm = w * (t0 + c02 * k)  # image column from matrix row 0
            l = int(rl)  # noqa: E741 - the original's name
            n = int(rm)
            wl = rl - l
            wm = rm - n
            top = (1.0 - wm) * raw[l, n] + wm * raw[l, n + 1]
            bottom = (1.0 - wm) * raw[l + 1, n] + wm * raw[l + 1, n + 1]
            return w * w * ((1.0 - wl) * top + wl * bottom)

        return Bound(run=lambda compute: recompute(compute, (d, d, d), project, params.iters))

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        d = 2 ** inputs["params"].vol_bits
        m = np.asarray(inputs["m"], dtype=np.float64)
        raw = np.asarray(inputs["raw"], dtype=np.float64)
        i, j, k = np.meshgrid(*(np.arange(d, dtype=np.float64),) * 3, indexing="ij")
        t0 = m[0, 0] * i + m[0, 1] * j + m[0, 3]
        t1 = m[1, 0] * i + m[1, 1] * j + m[1, 3]
        t3 = m[3, 0] * i + m[3, 1] * j + m[3, 3]
        w = 1.0 / (t3 + m[3, 2] * k)
        rl = w * (t1 + m[1, 2] * k)
        rm = w * (t0 + m[0, 2] * k)
        row, n = np.trunc(rl).astype(np.int64), np.trunc(rm).astype(np.int64)
        wl, wm = rl - row, rm - n
        top = (1 - wm) * raw[row, n] + wm * raw[row, n + 1]
        bottom = (1 - wm) * raw[row + 1, n] + wm * raw[row + 1, n + 1]
        return (w * w * ((1 - wl) * top + wl * bottom),)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        got = np.asarray(outputs[0], dtype=np.float64)
        idx = np.arange(got.size) % 11111
        cs, cs_ref = float(got.ravel() @ idx), float(ref[0].ravel() @ idx)
        rel = abs(cs - cs_ref) / abs(cs_ref)
        return combine(
            rel_err_check("elementwise", got, ref[0], np.abs(ref[0]), 1e-5),
            Check(rel <= 1e-5, f"checksum {cs:.8g} (rel err {rel:.2g})"),
        )

    def flops(self, params: Params) -> float:
        return 36.0 * 8.0**params.vol_bits

    def bytes(self, params: Params) -> float:
        return 4.0 * 8.0**params.vol_bits + 4.0 * 4.0 ** (params.vol_bits + 1)


BENCHMARK = Backprojection()
