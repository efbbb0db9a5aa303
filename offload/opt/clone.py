"""Deep copies of functions for passes (re-exported from ``offload.ir.clone``).

Every pass copies the function it is handed before changing anything, so that no pass
mutates IR it was not handed (STYLE.md rule 6).
"""

from __future__ import annotations

from offload.ir.clone import clone_function

__all__ = ["clone_function"]
