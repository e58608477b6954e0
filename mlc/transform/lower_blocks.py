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

from mlc.errors import ScheduleError
from mlc.tir.arith import Analyzer
from mlc.tir.expr import IntImm, IterKind, PrimExpr, Range, Var, convert
from mlc.tir.functor import IRMutator, substitute
from mlc.tir.schedule import Schedule, state
from mlc.tir.schedule.region import mentions
from mlc.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    For,
    ForKind,
    IfThenElse,
    PrimFunc,
    Stmt,
    seq,
)
from mlc.transform._arith import is_const_true


def lower_blocks(func: PrimFunc) -> PrimFunc:
    """Turn every ``BlockRealize`` of ``func`` into loops, ifs and allocations (see the
    module docstring)."""
    func = separate_inits_of_maybe_empty_reductions(func)
    return func.with_body(_BlockLowerer().visit(func.body))


def separate_inits_of_maybe_empty_reductions(func: PrimFunc) -> PrimFunc:
    """``decompose_reduction`` at the outermost reduction loop of every reduction block
    whose reduction may have no step: a reduction loop not known to run at least once, or a
    predicate on the reduction loops (``where k_1 < n`` after rfactor with a tail). Where the
    init cannot be separated (a loop fused from spatial and reduction loops), a guarded nest
    before those loops writes the init over the block's whole spatial domain when the
    reduction domain is empty."""
    names = [
        loc.stmt.block.name
        for loc in state.walk(func.body)
        if isinstance(loc.stmt, BlockRealize) and loc.stmt.block.init is not None
    ]
    current = func
    for name in names:
        loc = state.find_block(current, name)
        if loc is None or not isinstance(loc.stmt, BlockRealize):
            continue
        realize = loc.stmt
        reduce_vals = [
            v
            for iv, v in zip(realize.block.iter_vars, realize.iter_values)
            if iv.kind is IterKind.REDUCE
        ]
        loops = [f for f in loc.enclosing_loops() if mentions(reduce_vals, [f.loop_var])]
        if not loops:
            continue
        nonempty = all(isinstance(f.extent, IntImm) and f.extent.value >= 1 for f in loops)
        if nonempty and _first_step_runs(realize, loc.enclosing_loops(), loops):
            continue
        sch = Schedule(current)
        try:
            sch.decompose_reduction(sch.get_block(name), sch._loop_rv(loops[0].loop_var))
            current = sch.mod
        except ScheduleError:
            current = _init_when_empty(current, realize, loops[0])
    return current


def _first_step_runs(realize: BlockRealize, enclosing: list[For], loops: list[For]) -> bool:
    """Does the block's predicate hold at the first step of its reduction loops (so the
    init, which runs there, is not skipped)? ``k_0 * 4 + k_1 < 64`` of a split that does not
    divide does; ``k_1 < n`` (rfactor with a tail, n may be 0) need not."""
    reduce_vars = [f.loop_var for f in loops]
    if not mentions(realize.predicate, reduce_vars):
        return True
    ana = Analyzer()
    for f in enclosing:
        ana.bind(f.loop_var, Range(f.min, f.extent))
    first = substitute(realize.predicate, {f.loop_var: f.min for f in loops})
    return ana.can_prove(first)


def _init_when_empty(func: PrimFunc, realize: BlockRealize, first: For) -> PrimFunc:
    """``if <a reduction domain is empty>: for <spatial domain>: init`` before ``first``."""
    block = realize.block
    if block.init is None:
        return func
    empty: PrimExpr | None = None
    loops: list[tuple[Var, PrimExpr, PrimExpr]] = []
    mapping: dict[Var, PrimExpr] = {}
    for iv in block.iter_vars:
        if iv.kind is not IterKind.REDUCE:
            v = Var(iv.var.name + "_init", iv.var.dtype)
            mapping[iv.var] = v
            loops.append((v, iv.dom.min, iv.dom.extent))
        else:
            term = iv.dom.extent <= 0
            empty = term if empty is None else empty | term
    if empty is None:
        return func
    nest: Stmt = substitute(block.init, mapping)
    for v, lo, extent in reversed(loops):
        nest = For(v, lo, extent, ForKind.SERIAL, nest)
    return state.replace(func, first, seq(IfThenElse(empty, nest), first))


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
        if iv.kind is not IterKind.REDUCE:  # a scan's ordered step is not a reduction step
            continue
        value = mapping.get(iv.var, iv.var)
        term = value == substitute(iv.dom.min, mapping)
        cond = term if cond is None else cond & term
    return cond
