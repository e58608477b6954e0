"""``lower_blocks``: replace every block by the plain statements it stands for.

A block is a named unit with its own iteration variables bound to the loops around it.
Lowering substitutes the bindings into the body and turns the block's extras into code::

    for i, j, k in grid(64, 64, 64):              for i, j, k in grid(64, 64, 64):
        with block("C"):                              if k == 0:
            vi, vj, vk = S(i), S(j), R(k)      ->         C[i, j] = 0.0
            with init():                              C[i, j] = C[i, j] + A[i, k] * B[k, j]
                C[vi, vj] = 0.0
            C[vi, vj] += A[vi, vk] * B[vk, vj]

* the ``init`` of a reduction runs when every reduce iteration variable is at the start of its
  domain (``if vk == 0``), just before the update;
* a predicate (``where io * 4 + ii < n``, from a split that does not divide) becomes an
  ``if`` around the block;
* buffers allocated in a block (the root block's intermediates, cache buffers) become
  ``Allocate`` statements around the block's body.
"""

from __future__ import annotations

from mlc.tir.expr import IterKind, PrimExpr, Var, convert
from mlc.tir.functor import IRMutator, substitute
from mlc.tir.stmt import Allocate, Block, BlockRealize, IfThenElse, PrimFunc, Stmt, seq
from mlc.transform._arith import is_const_true


def lower_blocks(func: PrimFunc) -> PrimFunc:
    """Turn every ``BlockRealize`` of ``func`` into loops, ifs and allocations (see the
    module docstring)."""
    return func.with_body(_BlockLowerer().visit(func.body))


class _BlockLowerer(IRMutator):
    def visit_BlockRealize(self, op: BlockRealize) -> Stmt:
        block = op.block
        mapping: dict[Var, PrimExpr] = {
            iv.var: value for iv, value in zip(block.iter_vars, op.iter_values)
        }
        body = substitute(self.visit(block.body), mapping)
        if block.init is not None:
            init = substitute(self.visit(block.init), mapping)
            first = _first_reduce_step(block, mapping)
            body = seq(init if first is None else IfThenElse(first, init), body)
        for buf in reversed(block.alloc_buffers):
            body = Allocate(buf, body)
        predicate = convert(op.predicate)
        if not is_const_true(predicate):
            body = IfThenElse(substitute(predicate, mapping), body)
        return body

    def visit_Block(self, op: Block) -> Stmt:
        # A Block outside a BlockRealize (not produced by mlc, but cheap to accept).
        return self.visit_BlockRealize(BlockRealize((), convert(True), op))


def _first_reduce_step(block: Block, mapping: dict[Var, PrimExpr]) -> PrimExpr | None:
    """``vk == k_min and ...`` over the reduce iteration variables, with values substituted;
    None when the block has no reduce variable (the init then always runs)."""
    cond: PrimExpr | None = None
    for iv in block.iter_vars:
        if iv.kind is IterKind.SPATIAL:
            continue
        value = mapping.get(iv.var, iv.var)
        term = value == substitute(iv.dom.min, mapping)
        cond = term if cond is None else cond & term
    return cond
