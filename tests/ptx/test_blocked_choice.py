"""``BlockedChoice``: a register-blocked kernel launches where its tiles fill the SMs, and
gives way to the next smaller blocking, made on first need, where they would not."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from offload.ptx.blocked import BlockedChoice

from offload.ptx.config import tile_count

pytestmark = pytest.mark.unit


@dataclass
class _Source:
    tile: int | None
    blocking: tuple[int, ...]


@dataclass
class _Kernel:
    source: _Source
    launches: list[tuple[int, ...]] = field(default_factory=list)

    def launch(self, shape, outs, captures):
        self.launches.append(shape)

    def config(self, shape):
        return ("config", self.source.blocking, shape)


def test_tiles_count_the_blocked_elements_per_tile():
    assert tile_count((2048, 2048), 16, (8, 8)) == 16 * 16
    assert tile_count((129, 1), 16, (8, 8)) == 2
    assert tile_count((100, 300), 16, (4, 2)) == 2 * 10


def test_large_spaces_take_the_blocked_kernel_and_never_build_the_other():
    made = []
    blocked = _Kernel(_Source(16, (8, 8)))
    choice = BlockedChoice(blocked, lambda: made.append(1) or _Kernel(_Source(16, ())), 132)
    choice.launch((2048, 2048), [], [])
    assert blocked.launches == [(2048, 2048)] and not made
    assert choice.config((2048, 2048)) == ("config", (8, 8), (2048, 2048))
    assert choice.source is blocked.source  # everything else is the blocked kernel's


def test_small_spaces_take_the_smaller_kernel_made_once():
    made = []

    def make():
        made.append(1)
        return _Kernel(_Source(16, ()))

    blocked = _Kernel(_Source(16, (8, 8)))
    choice = BlockedChoice(blocked, make, 132)
    choice.launch((512, 512), [], [])  # 16 tiles of 128 x 128 < 132 SMs
    choice.launch((1000, 1000), [], [])  # 64 tiles
    assert not blocked.launches and made == [1]
    assert choice.unblocked.launches == [(512, 512), (1000, 1000)]
    choice.launch((1700, 1700), [], [])  # 14 x 14 = 196 tiles
    assert blocked.launches == [(1700, 1700)]


def test_a_chain_of_choices_picks_the_largest_blocking_that_fills_the_machine():
    unblocked = _Kernel(_Source(16, ()))
    four = BlockedChoice(_Kernel(_Source(16, (4, 4))), lambda: unblocked, 132)
    eight = BlockedChoice(_Kernel(_Source(16, (8, 8))), lambda: four, 132)
    assert eight.pick((2048, 2048)).source.blocking == (8, 8)
    assert eight.pick((1100, 1100)).source.blocking == (4, 4)  # 81 tiles of 8 x 8, 324 of 4 x 4
    assert eight.pick((100, 100)) is unblocked
    eight.launch((100, 100), [], [])
    assert unblocked.launches == [(100, 100)]
