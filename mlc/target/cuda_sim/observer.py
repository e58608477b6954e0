"""The observer protocol of the GPU interpreter: what it reports about every memory access
(:class:`Access`), the hooks an :class:`Observer` gets, and the source line of a statement
(:func:`stmt_line`) for the messages observers write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mlc.tir import stmt as S
from mlc.tir.printer import to_str

if TYPE_CHECKING:
    from mlc.target.cuda_sim.interp import Interpreter

@dataclass
class Access:
    """One statement's access of one buffer by the active lanes (flat element indices)."""

    kernel: S.KernelLaunch
    stmt: S.Stmt
    buffer: S.Buffer
    scope: str                 # "global", "shared" or "local"
    lanes: np.ndarray          # (K,) lane of each access
    elems: np.ndarray          # (K,) flat element index in the buffer
    is_write: bool
    epoch: int                 # barriers passed since the kernel began
    values: np.ndarray | None = None  # (K,) what a write stores (the buffer still holds the old)
    weight: float = 1.0        # iterations this one stands for (``loops=``: sampled loops)


class Observer:
    """Told about every kernel, access, barrier, warp shuffle and floating-point
    operation."""

    def begin_kernel(self, interp: Interpreter, kernel: S.KernelLaunch) -> None:
        pass

    def access(self, interp: Interpreter, a: Access) -> None:
        pass

    def barrier(self, interp: Interpreter, stmt: S.Stmt) -> None:
        pass

    def flops(self, count: float) -> None:
        pass

    def shuffle(self, interp: Interpreter, stmt: S.Stmt, warps: float) -> None:
        """A warp shuffle ran in ``warps`` warps (register to register: no memory access,
        no barrier)."""

    def end_kernel(self, interp: Interpreter, kernel: S.KernelLaunch) -> None:
        pass


def stmt_line(func: S.PrimFunc, stmt: S.Stmt) -> tuple[int, str]:
    """The 1-based line of ``stmt`` in the printed program, and the program with that line
    marked ``# <-- here``."""
    text = to_str(func, mark={stmt: "here"})
    for number, line in enumerate(text.splitlines(), 1):
        if line.rstrip().endswith("# <-- here"):
            return number, text
    return 0, text
