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

Accesses outside blocks (a script of plain loops, ``for i in range(100): A[i] = ...``) are
bounded over the enclosing loops' ranges, and a block's binding must stay inside the domain
its iteration variable declares (``vi = T.axis.spatial(8, i + 50)`` is refused): the check of
the block's accesses, and the code generator's, trust that domain.
"""

from __future__ import annotations

from typing import Any

from mlc.errors import LoweringError
from mlc.tir.arith import Analyzer
from mlc.tir.expr import (
    Broadcast,
    BufferLoad,
    IntImm,
    IterVar,
    Not,
    PrimExpr,
    Ramp,
    Range,
    Select,
    Var,
)
from mlc.tir.functor import IRVisitor
from mlc.tir.stmt import Block, BlockRealize, BufferStore, For, IfThenElse, PrimFunc
from mlc.transform.precision import warn_lossy_reductions


def check_bounds(func: PrimFunc) -> PrimFunc:
    """Raise LoweringError for an access outside its buffer; return ``func`` unchanged.
    Also warns for a float16 sum too long for its accumulator (``warn_lossy_reductions``):
    the first pass every build runs is where a program is judged before it changes."""
    _Checker(func).visit(func.body)
    warn_lossy_reductions(func)
    return func


class _Checker(IRVisitor):
    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.block: Block | None = None
        self.domains: dict[Var, Range] = {}  # iteration variables of the enclosing blocks
        self.loops: dict[Var, Range] = {}  # the enclosing loops (outside and inside blocks)
        self.analyzer = Analyzer()

    def visit_For(self, op: For) -> None:
        self.visit(op.min)
        self.visit(op.extent)
        if isinstance(op.extent, IntImm) and op.extent.value <= 0:
            return  # the body never runs
        saved = dict(self.loops)
        self.loops[op.loop_var] = Range(op.min, op.extent)
        self.analyzer.bind(op.loop_var, Range(op.min, op.extent))
        self.visit(op.body)
        self.loops = saved

    def visit_BlockRealize(self, op: BlockRealize) -> None:
        for value in op.iter_values:
            self.visit(value)
        self.visit(op.predicate)
        if _is_true(op.predicate):  # a predicate (a split that does not divide) may let a
            for iv, value in zip(op.block.iter_vars, op.iter_values):  # binding leave it
                self._check_binding(op.block, iv.var, iv.dom, value)
        self.visit(op.block)

    def _check_binding(self, block: Block, var: Var, dom: Range, value: PrimExpr) -> None:
        if not (isinstance(dom.min, IntImm) and isinstance(dom.extent, IntImm)):
            return
        end = dom.min.value + dom.extent.value
        for form in (value, self.analyzer.simplify(value)):  # a bound may be loose unsimplified
            lo, hi = self._bound(form)
            if not (isinstance(lo, int) and isinstance(hi, int)) or (
                    lo >= dom.min.value and hi < end):
                return
        loops = ", ".join(f"{v.name} in [{r.min}, {_end(r.min, r.extent)})"
                          for v, r in self.loops.items())
        raise LoweringError(
            f'block "{block.name}" binds its iteration variable {var.name} to {value}, which '
            f"reaches {lo if lo < dom.min.value else hi}{f' (with {loops})' if loops else ''}"
            f", but {var.name} declares the domain [{dom.min.value}, {end}). The accesses of "
            f"the block are checked over that domain: give {var.name} the domain its binding "
            f"covers (T.axis.spatial({hi + 1}, ...)) or bind it to a value inside it."
        )

    def visit_Block(self, block: Block) -> None:
        outer, saved = self.block, dict(self.domains)
        self.block = block
        self.domains.update({iv.var: iv.dom for iv in block.iter_vars})
        for var, dom in self.domains.items():
            self.analyzer.bind(var, dom)
        for buf in block.alloc_buffers:
            self.visit(buf)
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

    def _bound(self, index: PrimExpr) -> tuple[Any, Any]:
        return _lanes_bound(self.analyzer, index)

    def _check(self, op: Any, verb: str) -> None:
        buf = op.buffer
        for dim, (index, size) in enumerate(zip(op.indices, buf.shape)):
            if not isinstance(size, IntImm) or _reads_data(index):
                continue  # an index read from data (A[I[i]]) is checked when the code runs
            lo, hi = self._bound(index)
            if not (isinstance(lo, int) and isinstance(hi, int)):
                continue
            if lo >= 0 and hi < size.value:
                continue
            ranges: list[IterVar | Var] = []
            ranges += self.block.iter_vars if self.block is not None else ()
            ranges += [v for v in self.loops if _uses(index, v)]
            domains = ", ".join(
                f"{iv.var.name} in [{iv.dom.min}, {_end(iv.dom.min, iv.dom.extent)})"
                if not isinstance(iv, Var) else
                f"{iv.name} in [{self.loops[iv].min}, "
                f"{_end(self.loops[iv].min, self.loops[iv].extent)})"
                for iv in ranges
            )
            shown = ", ".join(str(i) for i in op.indices)
            bad = lo if lo < 0 else hi
            who = f'block "{self.block.name}"' if self.block is not None else "the program"
            where = f" with {domains}" if domains else ""
            raise LoweringError(
                f"{who} {verb} {buf.name}[{shown}]{where}: its index "
                f"in dimension {dim} ({index}) reaches {bad}, but {buf.name} has shape "
                f"{tuple(_int(s) for s in buf.shape)}. Check the index arithmetic, or guard the "
                "access with te.if_then_else(cond, value, 0.0) (e.g. for padding)."
            )


def _lanes_bound(analyzer: Analyzer, index: PrimExpr) -> tuple[Any, Any]:
    """The bound of an index; for a vector index ``ramp(b, s, n)``, of its first and last
    lanes (``A[ramp(6, 1, 4)]`` of an 8-element A reaches 9)."""
    if isinstance(index, Ramp):
        ends = [analyzer.const_int_bound(index.base),
                analyzer.const_int_bound(index.base + index.stride * (index.lanes - 1))]
        return min(e[0] for e in ends), max(e[1] for e in ends)
    if isinstance(index, Broadcast):
        return _lanes_bound(analyzer, index.value)
    if isinstance(index, Select):  # B[select(vi < 32, vi + 32, vi - 32)]: each value
        with analyzer.constraint_scope(index.condition):  # under its own condition
            t = _lanes_bound(analyzer, index.true_value)
        with analyzer.constraint_scope(Not(index.condition)):
            f = _lanes_bound(analyzer, index.false_value)
        return min(t[0], f[0]), max(t[1], f[1])
    return analyzer.const_int_bound(index)


def _end(lo: PrimExpr, extent: PrimExpr) -> str:
    if isinstance(lo, IntImm) and isinstance(extent, IntImm):
        return str(lo.value + extent.value)
    return f"{lo} + {extent}"


def _int(e: PrimExpr) -> Any:
    return e.value if isinstance(e, IntImm) else str(e)


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def _uses(e: PrimExpr, v: Var) -> bool:
    from mlc.tir.functor import uses_var

    return uses_var(e, lambda x: x is v)


def _reads_data(e: PrimExpr) -> bool:
    from mlc.tir.functor import contains

    return contains(e, lambda n: isinstance(n, BufferLoad))
