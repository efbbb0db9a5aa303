"""HostPages: which pages of a range the host has mapped (the unified-mode prefetch test)."""

from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np
import pytest

from offload.runtime.residency import EDGE_PAGES, WHOLE_READ_PAGES, HostPages

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/pagemap"),
]

PAGE = mmap.PAGESIZE


def _region(pages: int) -> tuple[mmap.mmap, int]:
    m = mmap.mmap(-1, pages * PAGE)  # anonymous: no page is present until touched
    return m, ctypes.addressof(ctypes.c_char.from_buffer(m))


def test_untouched_anonymous_memory_has_no_page_on_the_host():
    m, ptr = _region(64)
    assert HostPages().touched(ptr, 64 * PAGE) is False
    del ptr
    m.close()


def test_a_single_written_page_of_a_small_range_is_seen():
    m, ptr = _region(64)
    m[37 * PAGE + 5] = 1
    pages = HostPages()
    assert pages.touched(ptr, 64 * PAGE) is True
    assert pages.touched(ptr, 37 * PAGE) is False  # the range before it
    m.close()


@pytest.mark.parametrize("page", [0, EDGE_PAGES - 1])
def test_a_large_range_reads_the_pages_at_its_start(page):
    n = WHOLE_READ_PAGES * 4
    m, ptr = _region(n)
    m[page * PAGE] = 1
    assert HostPages().touched(ptr, n * PAGE) is True
    m.close()


@pytest.mark.parametrize("where", ["middle", "end"])
def test_a_large_range_does_not_see_a_page_touched_only_past_its_start(where):
    # The documented trade: a host access of only the middle or the end costs those
    # pages' demand faults. (16 MiB: a transparent huge page around the touched one stays
    # clear of the start.)
    n = WHOLE_READ_PAGES * 16
    m, ptr = _region(n)
    m[(n // 2 if where == "middle" else n - 1) * PAGE] = 1
    assert HostPages().touched(ptr, n * PAGE) is False
    m.close()


def test_a_large_range_that_is_all_on_the_host_is_seen():
    n = WHOLE_READ_PAGES * 4
    m, ptr = _region(n)
    m[:] = b"\1" * (n * PAGE)
    assert HostPages().touched(ptr, n * PAGE) is True
    m.close()


def test_numpy_data_written_by_the_host_is_seen():
    a = np.ones(10_000)
    assert HostPages().touched(a.ctypes.data, a.nbytes) is True


def test_empty_range_is_not_touched_and_an_unreadable_table_means_touched(tmp_path):
    assert HostPages().touched(4096, 0) is False
    missing = HostPages(str(tmp_path / "no-such-pagemap"))
    assert missing.touched(4096, 4096) is True
