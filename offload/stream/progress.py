"""The progress line of a long streamed run (``ol.config.progress``).

``None`` (the default) shows it when standard error is a terminal and the run has taken more
than ``DELAY`` seconds; ``True`` always, ``False`` never. It is a ``tqdm`` bar where tqdm is
installed, else one line of standard error rewritten in place.
"""

from __future__ import annotations

import sys
import time
from typing import Any

DELAY = 1.0
"""Seconds a run must have taken before the automatic progress line appears."""


class Progress:
    """Counts chunks (and bytes moved) of one streamed run."""

    def __init__(self, total: int, setting: bool | None, label: str = "offload stream") -> None:
        self.total = total
        self.done = 0
        self.bytes = 0
        self.label = label
        self.start = time.perf_counter()
        self.setting = setting
        self._bar: Any = None
        self._line = False

    def _wanted(self) -> bool:
        if self.setting is not None:
            return self.setting
        return sys.stderr.isatty() and time.perf_counter() - self.start > DELAY

    def update(self, nbytes: int) -> None:
        """One more chunk done, ``nbytes`` moved for it."""
        self.done += 1
        self.bytes += nbytes
        if self._bar is None and not self._line and not self._wanted():
            return
        if self._bar is None and not self._line:
            try:
                from tqdm import tqdm  # type: ignore[import-untyped]  # (optional)
            except ImportError:
                self._line = True
            else:
                self._bar = tqdm(total=self.total, desc=self.label, unit="chunk", leave=False)
                self._bar.update(self.done - 1)
        if self._bar is not None:
            self._bar.update(1)
            return
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        rate = self.bytes / elapsed / 1e9
        sys.stderr.write(
            f"\r{self.label}: {self.done}/{self.total} chunks, {self.bytes / 1e9:.2f} GB, "
            f"{rate:.2f} GB/s"
        )
        sys.stderr.flush()

    def close(self) -> None:
        """End the bar or the line."""
        if self._bar is not None:
            self._bar.close()
        elif self._line:
            sys.stderr.write("\n")
            sys.stderr.flush()
