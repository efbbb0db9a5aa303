"""``offload.runtime.staging.to_device`` over the stand-in CuPy (``fake_cupy``: copies queued
on a stream run only when an event recorded after them is synchronised): every byte
arrives at sizes around the piece and ring boundaries, and a pinned piece is written again
only after the copy that read it ran (else the deferred copies would carry later bytes)."""

from __future__ import annotations

import numpy as np
import pytest

from offload.runtime import staging
from tests.stream import fake_cupy

pytestmark = pytest.mark.unit

PIECE = 1 << 12


@pytest.fixture(autouse=True)
def _small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staging, "PIECE", PIECE)
    monkeypatch.setattr(staging, "HOST_THREADS", 3)
    monkeypatch.setattr(staging, "COPY_PIECE", 1 << 10)
    monkeypatch.setattr(staging, "_RING", staging._Ring())


@pytest.mark.parametrize(
    "nbytes", [1, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE, staging.RING * PIECE + 77, 10 * PIECE + 5]
)
def test_every_byte_arrives_and_no_piece_is_reused_early(nbytes: int) -> None:
    cp = fake_cupy.cp
    stream = fake_cupy.Stream()
    x = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    out = staging.to_device(cp, x, stream.ptr)
    stream.synchronize()
    assert np.asarray(out).tobytes() == x.tobytes()


def test_back_to_back_calls_and_other_dtypes_and_shapes() -> None:
    cp = fake_cupy.cp
    stream = fake_cupy.Stream()
    xs = [np.random.default_rng(k).random((k + 1, 700)) for k in range(4)]  # float64, 2-D
    outs = [staging.to_device(cp, x, stream.ptr) for x in xs]  # nothing run yet
    stream.synchronize()
    for o, x in zip(outs, xs, strict=True):
        assert o.shape == x.shape and o.dtype == x.dtype
        assert np.array_equal(np.asarray(o), x)
