"""Whether a managed range has pages on the host: the test before a unified-mode prefetch.

Unified mode prefetches a managed array to the GPU before a kernel reads it. Prefetching
pages that are already on the GPU is not free: the driver walks them, ~1.3 us of host time
per MiB on the H100 (``benchmarks/lab/unified_probe.py``: 84 us for 64 MiB, 320 us for
256 MiB), which doubled the time of a ping-pong stencil step. Skipping the prefetch when
the host *has* touched the pages is worse: the kernel then migrates them by demand faults,
~7x slower than a prefetch.

CUDA's managed-memory driver unmaps a page from the CPU's page table when it migrates the
page to the GPU and maps it again when the CPU touches it (on systems without hardware
coherence, i.e. x86 + PCIe). So a page that a prefetch would move is a page that is present
in ``/proc/self/pagemap`` (bit 63 of its entry). ``HostPages.touched`` reads the entries of
the range's pages -- all of them for small ranges, else the first ``EDGE_PAGES``: one
``pread`` either way -- and says whether any is present. Host code that reads or writes a
NumPy array touches its start (printing, reductions, copies, comparisons, fills all begin
at the first element); an access of only its middle or its end is missed, and costs only
the demand faults of the pages it touched. Where pagemap cannot be read (not Linux, a restricted
``/proc``) every range counts as touched, i.e. prefetched as before.

Cost: a ``pread`` of the table took 1.5-3 us on the H200 host (``unified_probe``, run
22: 3.1-5.3 us a check of two reads), the largest part of a unified call's host time
(volume-rendering checks three arrays a call); nine scattered reads a buffer (run 12)
became two edge reads, then one.
"""

from __future__ import annotations

import os

PRESENT = 0x80
"""Bit 63 of a pagemap entry (little-endian: the top bit of its last byte)."""
WHOLE_READ_PAGES = 256
"""Ranges of at most this many pages are checked page by page in one read."""
EDGE_PAGES = 8
"""Pages read at the start of a larger range."""


class HostPages:
    """Reads the host page table of this process (reopened after a fork)."""

    def __init__(self, path: str = "/proc/self/pagemap") -> None:
        self.path = path
        self._fd = -1
        self._pid = -1
        self.page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

    def _open(self) -> int:
        pid = os.getpid()
        if self._pid != pid:
            self._pid = pid
            try:
                self._fd = os.open(self.path, os.O_RDONLY)
            except (OSError, AttributeError):
                self._fd = -1
        return self._fd

    def touched(self, ptr: int, nbytes: int) -> bool:
        """Whether any read page of ``[ptr, ptr + nbytes)`` is mapped on the host
        (``True`` when that cannot be read)."""
        if nbytes <= 0:
            return False
        fd = self._open()
        if fd < 0:
            return True
        first = ptr // self.page
        count = (ptr + nbytes - 1) // self.page - first + 1
        if count > WHOLE_READ_PAGES:
            count = EDGE_PAGES
        try:
            entries = os.pread(fd, 8 * count, 8 * first)
        except OSError:
            return True
        return len(entries) < 8 * count or max(entries[7::8]) >= PRESENT


HOST_PAGES = HostPages()
"""The process-wide reader ``offload.runtime.memory.prefetch`` consults."""
