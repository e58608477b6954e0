"""``check_bounds``: refuse a program that would read or write outside an array.

``te.compute((n,), lambda i: A[i + 1])`` reads past the end of ``A``. Where the loop bounds
decide it, that is known before any code runs: every access of every block is bounded over
the block's iteration domain, and an access that provably leaves the buffer's (constant) shape
raises a :class:`~mlc.errors.LoweringError` naming the block, the buffer, the dimension, its
index and the value it reaches::

    block "B" reads A[vi + 1] with vi in [0, 1024): its index in dimension 0 (vi + 1)
    reaches 1024, but A has shape (1024,) ...

What only the run decides (indices read from data, symbolic sizes) is checked while the
kernel runs (``check_index``, the code generators' checks).

Accesses under a condition (``te.if_then_else``, a reduction's ``where=``, a guard) are not
checked: the condition is what keeps them in bounds, as in a padded convolution.
"""

from __future__ import annotations

from typing import Any

from mlc.errors import LoweringError
from mlc.tir.arith import Analyzer
from mlc.tir.expr import BufferLoad, IntImm, PrimExpr, Range, Select, Var
from mlc.tir.functor import IRVisitor
from mlc.tir.stmt import Block, BufferStore, IfThenElse, PrimFunc


def check_bounds(func: PrimFunc) -> PrimFunc:
    """Raise LoweringError for an access outside its buffer; return ``func`` unchanged."""
    _Checker(func).visit(func.body)
    return func


class _Checker(IRVisitor):
    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.block: Block | None = None
        self.domains: dict[Var, Range] = {}  # iteration variables of the enclosing blocks

    def visit_Block(self, block: Block) -> None:
        outer, saved = self.block, dict(self.domains)
        self.block = block
        self.domains.update({iv.var: iv.dom for iv in block.iter_vars})
        self.analyzer = Analyzer()
        for var, dom in self.domains.items():
            self.analyzer.bind(var, dom)
        if block.init is not None:
            self.visit(block.init)
        self.visit(block.body)
        self.block, self.domains = outer, saved

    # under a condition the program itself keeps the access in bounds
    def visit_IfThenElse(self, op: IfThenElse) -> None:
        self.visit(op.condition)

    def visit_Select(self, op: Select) -> None:
        self.visit(op.condition)

    def visit_BufferLoad(self, op: BufferLoad) -> None:
        self._check(op, "reads")
        self.generic_visit(op)

    def visit_BufferStore(self, op: BufferStore) -> None:
        self._check(op, "writes")
        self.generic_visit(op)

    def _check(self, op: Any, verb: str) -> None:
        if self.block is None or not self.block.iter_vars:
            return
        buf = op.buffer
        for dim, (index, size) in enumerate(zip(op.indices, buf.shape)):
            if not isinstance(size, IntImm):
                continue
            lo, hi = self.analyzer.const_int_bound(index)
            if not (isinstance(lo, int) and isinstance(hi, int)):
                continue
            if lo >= 0 and hi < size.value:
                continue
            domains = ", ".join(
                f"{iv.var.name} in [{iv.dom.min}, {_end(iv.dom.min, iv.dom.extent)})"
                for iv in self.block.iter_vars
            )
            shown = ", ".join(str(i) for i in op.indices)
            bad = lo if lo < 0 else hi
            raise LoweringError(
                f'block "{self.block.name}" {verb} {buf.name}[{shown}] with {domains}: its index '
                f"in dimension {dim} ({index}) reaches {bad}, but {buf.name} has shape "
                f"{tuple(_int(s) for s in buf.shape)}. Check the index arithmetic, or guard the "
                "access with te.if_then_else(cond, value, 0.0) (e.g. for padding)."
            )


def _end(lo: PrimExpr, extent: PrimExpr) -> str:
    if isinstance(lo, IntImm) and isinstance(extent, IntImm):
        return str(lo.value + extent.value)
    return f"{lo} + {extent}"


def _int(e: PrimExpr) -> Any:
    return e.value if isinstance(e, IntImm) else str(e)
