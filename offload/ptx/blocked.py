"""A register-blocked kernel and the unblocked one it falls back to on small index spaces.

A blocked kernel (``offload.opt.jam``) covers ``tile * f0`` x ``tile * f1`` elements per
thread block: 128 x 128 at 8 x 8, so a 512 x 512 result is 16 blocks, an eighth of an H100's
132 SMs, where the unblocked staged kernel would launch 1024 blocks. ``BlockedChoice``
launches the blocked kernel when its tiles fill the SMs at least once (``min_tiles``) and
otherwise the unblocked kernel of the same function, compiled the first time a launch needs
it. Both compute every element exactly as the element function does (bit-exact), so which
one runs changes the time only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from offload.ptx.config import tile_count


class BlockedChoice:
    """``blocked`` on index spaces of at least ``min_tiles`` tiles, else the unblocked
    kernel (made on first need). Attributes not defined here are the blocked kernel's."""

    def __init__(self, blocked: Any, make_unblocked: Callable[[], Any], min_tiles: int) -> None:
        self.blocked = blocked
        self.min_tiles = min_tiles
        self._make_unblocked = make_unblocked
        self._unblocked: Any = None
        self._tile: int = blocked.source.tile
        self._blocking: tuple[int, ...] = blocked.source.blocking

    @property
    def unblocked(self) -> Any:
        """The kernel without register blocking (compiled on first use)."""
        if self._unblocked is None:
            self._unblocked = self._make_unblocked()
        return self._unblocked

    def pick(self, shape: tuple[int, ...]) -> Any:
        """The kernel a launch over ``shape`` runs (through the smaller choices too)."""
        k: Any = self
        while isinstance(k, BlockedChoice):
            fills = tile_count(shape, k._tile, k._blocking) >= k.min_tiles
            k = k.blocked if fills else k.unblocked
        return k

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        """Run over ``shape`` with the kernel that fills the machine."""
        self.pick(shape).launch(shape, outs, captures)

    def config(self, shape: tuple[int, ...]) -> Any:
        """The launch configuration of the kernel a launch over ``shape`` runs."""
        return self.pick(shape).config(shape)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("blocked", "_unblocked", "_make_unblocked"):
            raise AttributeError(name)
        return getattr(self.blocked, name)
