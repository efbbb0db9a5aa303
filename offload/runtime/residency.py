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
a sample of the range's pages -- all of them for small ranges, else the first, the last and
evenly spaced ones -- and says whether any is present. A sample that misses a host-touched
page costs only that page's demand fault; where pagemap cannot be read (not Linux, a
restricted ``/proc``) every range counts as touched, i.e. prefetched as before.
"""

from __future__ import annotations

import os

PRESENT = 0x80
"""Bit 63 of a pagemap entry (little-endian: the top bit of its last byte)."""
WHOLE_READ_PAGES = 256
"""Ranges of at most this many pages are checked page by page in one read."""
SAMPLES = 9
"""Pages sampled in a larger range (first, last and evenly spaced between)."""


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
        """Whether any sampled page of ``[ptr, ptr + nbytes)`` is mapped on the host
        (``True`` when that cannot be read)."""
        if nbytes <= 0:
            return False
        fd = self._open()
        if fd < 0:
            return True
        first = ptr // self.page
        count = (ptr + nbytes - 1) // self.page - first + 1
        try:
            if count <= WHOLE_READ_PAGES:
                entries = os.pread(fd, 8 * count, 8 * first)
                return len(entries) < 8 * count or max(entries[7::8]) >= PRESENT
            for k in range(SAMPLES):
                page = first + k * (count - 1) // (SAMPLES - 1)
                entry = os.pread(fd, 8, 8 * page)
                if len(entry) < 8 or entry[7] & PRESENT:
                    return True
        except OSError:
            return True
        return False


HOST_PAGES = HostPages()
"""The process-wide reader ``offload.runtime.memory.prefetch`` consults."""
