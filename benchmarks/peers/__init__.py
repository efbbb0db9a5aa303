"""Peers: what a user would write instead of element functions (NumPy on the CPU; CUDA C
through cupy.RawKernel, CuPy array code / cupy.fuse, JAX, cuBLAS, cupyx.scipy.ndimage on
the GPU). Every GPU import is lazy; a peer whose library is missing reports "n/a"."""

from __future__ import annotations

from benchmarks.peers.base import Peer, peers_for

__all__ = ["Peer", "peers_for"]
