"""Compile options: one frozen value passed down every stage (never read from globals)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CompileOptions:
    """Everything that changes the compiled code; part of every kernel cache key."""

    pipeline: str | None = None
    """Pass pipeline text (``"fold,cse,dce"``); ``None`` means the default pipeline."""
    disabled_passes: frozenset[str] = field(default_factory=frozenset[str])
    """Passes removed from whichever pipeline runs (benchmarks switch passes off this way)."""
    bounds_check: bool = False
    """Check every captured-array read; an out-of-bounds read raises ``IndexError``."""
    fastmath: bool = False
    """Allow float reassociation and other value-changing float rewrites."""
    verify: bool = False
    """Run the IR verifier after every pass (on in tests and debug mode)."""
    select_threshold: int = 4
    """Branch->select merging: most mismatching instructions tolerated (paper §4.2)."""
    print_after: frozenset[str] = field(default_factory=frozenset[str])
    """Print the IR after these passes (``"all"`` for every pass), whichever target's
    pipeline runs them."""
    print_kernels: frozenset[str] = field(default_factory=frozenset[str])
    """Print each compiled kernel's ``"source"`` (the generated Python) and/or ``"ptx"``."""

    def key(self) -> str:
        """A stable text form for cache keys."""
        return (
            f"pipeline={self.pipeline};off={','.join(sorted(self.disabled_passes))};"
            f"bounds={int(self.bounds_check)};fast={int(self.fastmath)};"
            f"sel={self.select_threshold}"
        )
