"""The base of every pass, whichever target runs it (``offload.opt.manager`` runs them).

A pass is a frozen dataclass deriving from ``FunctionPass``: a ``name``, options as fields,
``from_options`` (the defaults unless it reads the compile options) and ``rewrite``, which
may change the function it is given in place: ``run`` -- what the manager and direct callers
call -- gives it a clone, so no pass changes IR it was not handed.
"""

from __future__ import annotations

import abc
from typing import ClassVar, Self

from offload.ir.core import Function
from offload.opt.clone import clone_function
from offload.options import CompileOptions


class FunctionPass(abc.ABC):
    """One pass over one function (see the module doc)."""

    name: ClassVar[str]

    @classmethod
    def from_options(cls, options: CompileOptions) -> Self:
        """The pass as the compile options configure it (default: its field defaults)."""
        return cls()

    def run(self, fn: Function) -> Function:
        """``fn`` after the pass; ``fn`` itself is left as it was."""
        return self.rewrite(clone_function(fn))

    @abc.abstractmethod
    def rewrite(self, fn: Function) -> Function:
        """Rewrite ``fn`` (a clone the caller owns) and return the result."""
