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
  domain (``if vk == 0``), just before the update; when a reduction loop may run zero times
  (a symbolic extent, or 0), that step never comes, so the init is first moved out into its
  own nest before the reduction loops (``decompose_reduction``): an empty sum is 0, an empty
  max is -inf, as in numpy;
* a predicate (``where io * 4 + ii < n``, from a split that does not divide) becomes an
  ``if`` around the block;
* buffers allocated in a block (the root block's intermediates, cache buffers) become
  ``Allocate`` statements around the block's body.
"""

from __future__ import annotations

from mlc.errors import LoweringError, ScheduleError
from mlc.tir.expr import IntImm, IterKind, PrimExpr, Var, convert
from mlc.tir.functor import IRMutator, substitute
from mlc.tir.schedule import Schedule, state
from mlc.tir.schedule.region import mentions
from mlc.tir.stmt import Allocate, Block, BlockRealize, IfThenElse, PrimFunc, Stmt, seq
from mlc.transform._arith import is_const_true


def lower_blocks(func: PrimFunc) -> PrimFunc:
    """Turn every ``BlockRealize`` of ``func`` into loops, ifs and allocations (see the
    module docstring)."""
    func = _separate_inits_of_maybe_empty_reductions(func)
    return func.with_body(_BlockLowerer().visit(func.body))


def _separate_inits_of_maybe_empty_reductions(func: PrimFunc) -> PrimFunc:
    """``decompose_reduction`` at the outermost reduction loop of every reduction block
    whose reduction loops are not all known to run at least once."""
    names = [
        loc.stmt.block.name
        for loc in state.walk(func.body)
        if isinstance(loc.stmt, BlockRealize) and loc.stmt.block.init is not None
    ]
    sch: Schedule | None = None
    for name in names:
        current = sch.mod if sch is not None else func
        loc = state.find_block(current, name)
        if loc is None:
            continue
        realize = loc.stmt
        if not isinstance(realize, BlockRealize):
            continue
        reduce_vals = [
            v
            for iv, v in zip(realize.block.iter_vars, realize.iter_values)
            if iv.kind is not IterKind.SPATIAL
        ]
        loops = [f for f in loc.enclosing_loops() if mentions(reduce_vals, [f.loop_var])]
        if all(isinstance(f.extent, IntImm) and f.extent.value >= 1 for f in loops):
            continue
        if sch is None:
            sch = Schedule(func)
        try:
            sch.decompose_reduction(sch.get_block(name), sch._loop_rv(loops[0].loop_var))
        except ScheduleError as err:
            raise LoweringError(
                f"the reduction of block {name!r} runs over loops that may be empty "
                f"({', '.join(f.loop_var.name for f in loops)}), so its init must run before "
                f"them, and it cannot be separated: {err.args[0] if err.args else err}. "
                "Keep spatial and reduction loops apart (do not fuse them) or give the "
                "reduction a constant extent."
            ) from err
    return sch.mod if sch is not None else func


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
