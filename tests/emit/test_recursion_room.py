"""``recursion_room`` from several threads at once (Dask's threaded scheduler compiles in
parallel): the limit covers the largest room held, and is the original one once every
holder has left, in either order of leaving."""

from __future__ import annotations

import sys
import threading

import pytest

from offload.emit.recursion import recursion_room

pytestmark = pytest.mark.unit


def _hold(frames: int, entered: threading.Event, leave: threading.Event) -> None:
    with recursion_room(frames):
        entered.set()
        leave.wait(10)


@pytest.mark.parametrize("first_out", ["small", "large"])
def test_overlapping_holders_put_the_limit_back(first_out: str) -> None:
    before = sys.getrecursionlimit()
    events = {k: (threading.Event(), threading.Event()) for k in ("small", "large")}
    threads = {
        "small": threading.Thread(target=_hold, args=(100, *events["small"])),
        "large": threading.Thread(target=_hold, args=(5000, *events["large"])),
    }
    threads["small"].start()
    events["small"][0].wait(10)
    assert sys.getrecursionlimit() == before + 100
    threads["large"].start()
    events["large"][0].wait(10)
    assert sys.getrecursionlimit() == before + 5000
    second = "large" if first_out == "small" else "small"
    events[first_out][1].set()
    threads[first_out].join(10)
    assert sys.getrecursionlimit() == before + (5000 if first_out == "small" else 100)
    events[second][1].set()
    threads[second].join(10)
    assert sys.getrecursionlimit() == before


def test_nested_room_in_one_thread() -> None:
    before = sys.getrecursionlimit()
    with recursion_room(10):
        with recursion_room(30):
            assert sys.getrecursionlimit() == before + 30
        assert sys.getrecursionlimit() == before + 10
    assert sys.getrecursionlimit() == before


def test_a_limit_another_caller_set_meanwhile_is_left_to_them() -> None:
    before = sys.getrecursionlimit()
    try:
        with recursion_room(10):
            sys.setrecursionlimit(before + 777)  # e.g. Hypothesis entering its own context
        assert sys.getrecursionlimit() == before + 777
    finally:
        sys.setrecursionlimit(before)
