"""``lower_cross_thread_reduction``: a reduction whose reduce loop is bound to ``threadIdx``
becomes a tree reduction in shared memory (TVM's "Reduction" tutorial).

After ``sch.bind(k_inner, "threadIdx.x")`` on a reduction loop, the threads of a block each
run part of one reduction. The block is rewritten (still as blocks, so the usual lowering
follows) into: every thread folds its part into its own slot of a shared buffer, the slots
are combined pairwise in ``log2(n)`` steps, and thread 0 writes the total::

    for tx in thread_binding(16, "threadIdx.x"):         for tx in thread_binding(16, ...):
        with block("B"):                                     B_red[tx] = 0.0
            vk = axis.reduce(16, tx)                          B_red[tx] += A[i, tx]
            with init():  B[vi] = 0.0           ->       for tx in ...: if tx < 8:
            B[vi] += A[vi, vk]                               B_red[tx] += B_red[tx + 8]
                                                         ... (4, 2, 1)
                                                         for tx in ...: if tx == 0:
                                                             B[vi] = 0.0; B[vi] += B_red[0]

The GPU passes then put a barrier between the steps (they read what other threads wrote).
Reduce loops outside the thread loop stay loops around all of this; reduce loops inside it
fold into the thread's slot first.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mlc.errors import LoweringError
from mlc.te.intrin import max_value, min_value
from mlc.tir.expr import (
    Add,
    BufferLoad,
    IntImm,
    IterKind,
    IterVar,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Var,
    const,
)
from mlc.tir.functor import IRMutator, substitute, uses_var
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)

REDUCERS: tuple[type, ...] = (Add, Mul, Max, Min)


def lower_cross_thread_reduction(func: PrimFunc) -> PrimFunc:
    """Rewrite every reduction whose reduce loop is bound to a ``threadIdx`` axis (see the
    module docstring); other programs come back unchanged."""
    lowerer = _Lowerer()
    body = lowerer.visit(func.body)
    if not lowerer.new_buffers:
        return func
    assert isinstance(body, BlockRealize)  # the root block holds the new shared buffers
    root = body.block
    root = dataclasses.replace(root, alloc_buffers=(*root.alloc_buffers, *lowerer.new_buffers))
    return func.with_body(dataclasses.replace(body, block=root))


def _uses(e: Any, var: Var) -> bool:
    return uses_var(e, lambda v: v is var)


def _uses_any(e: Any, loops: list[For]) -> bool:
    ids = {id(f.loop_var) for f in loops}
    return uses_var(e, lambda v: id(v) in ids)


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    from mlc.tir.expr import And

    if isinstance(e, And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def _identity(op: type, dtype: str) -> PrimExpr:
    if op is Add:
        return const(0, dtype)
    if op is Mul:
        return const(1, dtype)
    return min_value(dtype) if op is Max else max_value(dtype)


def _point(buf: Buffer, idx: tuple[PrimExpr, ...]) -> BufferRegion:
    return BufferRegion(buf, tuple(Range(i, const(1, i.dtype)) for i in idx))


class _Lowerer(IRMutator):
    def __init__(self) -> None:
        self.stack: list[For] = []
        self.new_buffers: list[Buffer] = []
        self.names: set[str] = set()

    def visit_For(self, op: For) -> Any:
        tag = op.thread_binding or ""
        if op.kind is ForKind.THREAD_BINDING and tag.startswith("threadIdx."):
            found = self._reduction_under(op)
            if found is not None:
                return self._rewrite(op, *found)
        self.stack.append(op)
        try:
            return self.generic_visit(op)
        finally:
            self.stack.pop()

    # -- finding the reduction

    def _reduction_under(self, f: For) -> tuple[int, list[For], BlockRealize] | None:
        """(position in f's body, loops between, the block) of a reduction block that
        reduces over ``f``; None if there is none."""
        items = list(f.body.seq) if isinstance(f.body, SeqStmt) else [f.body]
        for pos, item in enumerate(items):
            inner: list[For] = []
            node: Stmt = item
            while isinstance(node, For):
                inner.append(node)
                node = node.body
            if not isinstance(node, BlockRealize):
                continue
            b = node.block
            if b.init is None:
                continue
            if any(
                iv.kind is not IterKind.SPATIAL and _uses(v, f.loop_var)
                for iv, v in zip(b.iter_vars, node.iter_values)
            ):
                return pos, inner, node
        return None

    # -- the rewrite

    def _fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def _rewrite(self, f: For, pos: int, inner: list[For], br: BlockRealize) -> Stmt:
        b = br.block
        tag = f.thread_binding or "threadIdx.x"
        where = f"block {b.name!r} reduces across the threads of loop {f.loop_var.name!r} ({tag})"
        if not isinstance(f.extent, IntImm) or not isinstance(f.min, IntImm):
            raise LoweringError(f"{where}, whose extent {f.extent} is not a constant")
        items = list(f.body.seq) if isinstance(f.body, SeqStmt) else [f.body]
        if pos != len(items) - 1:
            raise LoweringError(
                f"{where}; nothing may follow it inside {f.loop_var.name!r} (move the "
                "statements after it out of the thread loop)"
            )
        store, cond, op, value = _reducer(b, where)
        spatial_values = [v for iv, v in zip(b.iter_vars, br.iter_values)
                          if iv.kind is IterKind.SPATIAL]
        for g in inner:
            if g.kind is ForKind.THREAD_BINDING or _uses_any(spatial_values, [g]):
                raise LoweringError(
                    f"{where}, but loop {g.loop_var.name!r} inside it "
                    + ("is bound to a thread axis too" if g.kind is ForKind.THREAD_BINDING
                       else f"runs over a spatial variable of {b.name!r}")
                    + f"; reorder so that {f.loop_var.name!r} is the innermost loop over "
                    "spatial variables"
                )
        others = [g for g in self.stack if (g.thread_binding or "").startswith("threadIdx.")]
        for g in others:
            if not isinstance(g.extent, IntImm):
                raise LoweringError(f"{where}; loop {g.loop_var.name!r} needs a constant extent")
        n = f.extent.value
        dtype = store.buffer.dtype
        red = Buffer(
            self._fresh(f"{store.buffer.name}_red"),
            (*[g.extent for g in others], f.extent),
            dtype,
            "shared",
        )
        self.new_buffers.append(red)
        ident = _identity(op, dtype)

        def slot_vars(prefix: str) -> list[IterVar]:
            return [
                IterVar(Var(f"v{prefix}{k}", "int32"), Range(g.min, g.extent), IterKind.SPATIAL)
                for k, g in enumerate([*others, f])
            ]

        def slot_values(tid: Var) -> tuple[PrimExpr, ...]:
            return (*[g.loop_var for g in others], tid)

        def shifted(ivs: list[IterVar], last: PrimExpr) -> tuple[PrimExpr, ...]:
            return (*[iv.var for iv in ivs[:-1]], last - f.min)

        # 1. every thread folds its part into its slot
        ivs = slot_vars("t")
        slot = shifted(ivs, ivs[-1].var)
        init_block = Block(
            self._fresh(f"{b.name}_red_init"), tuple(ivs), (), (_point(red, slot),),
            BufferStore(red, ident, slot),
        )
        init = BlockRealize(slot_values(f.loop_var), const(True), init_block)
        ivs2 = slot_vars("u")
        slot2 = shifted(ivs2, ivs2[-1].var)
        update: Stmt = BufferStore(red, op(BufferLoad(red, slot2), value), slot2)
        if cond is not None:
            update = IfThenElse(cond, update)
        fold_block = Block(
            self._fresh(f"{b.name}_red"),
            (*b.iter_vars, *ivs2),
            (*[r for r in b.reads if r.buffer is not store.buffer], _point(red, slot2)),
            (_point(red, slot2),),
            update,
        )
        fold: Stmt = BlockRealize(
            (*br.iter_values, *slot_values(f.loop_var)), br.predicate, fold_block
        )
        for g in reversed(inner):
            fold = dataclasses.replace(g, body=fold)
        partial = dataclasses.replace(f, body=seq(*[self.visit(s) for s in items[:-1]], init, fold))
        # 2. pairwise steps: slot t += slot t + s while t < s
        steps: list[Stmt] = []
        half = 1
        while half * 2 < n:
            half *= 2
        while half >= 1:
            tv = Var(self._fresh(f"{f.loop_var.name}_s{half}"), f.loop_var.dtype)
            ivs3 = slot_vars("s")
            me = shifted(ivs3, ivs3[-1].var)
            other = (*me[:-1], me[-1] + half)
            step_block = Block(
                self._fresh(f"{b.name}_red_step{half}"), tuple(ivs3),
                (_point(red, me), _point(red, other)), (_point(red, me),),
                BufferStore(red, op(BufferLoad(red, me), BufferLoad(red, other)), me),
            )
            rel = tv - f.min
            pred = (rel < half) & (rel + half < n)
            steps.append(dataclasses.replace(
                f, loop_var=tv, body=BlockRealize(slot_values(tv), pred, step_block)))
            half //= 2
        # 3. thread 0 combines the total into the output (with the block's init before the
        #    first step of the reduce loops outside the threads)
        tw = Var(self._fresh(f"{f.loop_var.name}_w"), f.loop_var.dtype)
        dropped = [f, *inner]
        fin_ivs: list[IterVar] = []
        fin_vals: list[PrimExpr] = []
        outer_reduce: list[For] = []
        for iv, v in zip(b.iter_vars, br.iter_values):
            if iv.kind is IterKind.SPATIAL or not _uses_any(v, dropped):
                fin_ivs.append(iv)
                fin_vals.append(v)
            else:
                outer_reduce += [g for g in self.stack if _uses(v, g.loop_var)
                                 and all(g is not o for o in outer_reduce)]
        for g in outer_reduce:
            fin_ivs.append(IterVar(Var(f"v{g.loop_var.name}", g.loop_var.dtype),
                                   Range(g.min, g.extent), IterKind.REDUCE))
            fin_vals.append(g.loop_var)
        ivs4 = slot_vars("w")[:-1]
        total = (*[iv.var for iv in ivs4], const(0, "int32"))
        fin_store = BufferStore(
            store.buffer, op(BufferLoad(store.buffer, store.indices), BufferLoad(red, total)),
            store.indices,
        )
        keep = [p for p in _conjuncts(br.predicate)
                if not isinstance(p, IntImm) and not _uses_any(p, dropped)]
        fin_pred: PrimExpr = tw == f.min
        for p in keep:
            fin_pred = fin_pred & p
        # the partial-sum block keeps the original iteration variables: this one gets its
        # own (a variable is defined by one block only)
        own = {iv.var: Var(iv.var.name, iv.var.dtype) for iv in fin_ivs if iv in b.iter_vars}
        fin_ivs = [IterVar(own.get(iv.var, iv.var), iv.dom, iv.kind) for iv in fin_ivs]
        writes = tuple(substitute(w, own) for w in b.writes)
        fin_block = Block(
            b.name, (*fin_ivs, *ivs4),
            (_point(red, total), *writes), writes, substitute(fin_store, own),
            substitute(b.init, own) if b.init is not None else None,
        )
        fin = dataclasses.replace(f, loop_var=tw, body=BlockRealize(
            (*fin_vals, *[g.loop_var for g in others]), fin_pred, fin_block))
        return seq(partial, *steps, fin)


def _reducer(b: Block, where: str) -> tuple[BufferStore, PrimExpr | None, type, PrimExpr]:
    body = b.body
    cond = None
    if isinstance(body, IfThenElse) and body.else_case is None:
        cond, body = body.condition, body.then_case
    if isinstance(body, BufferStore) and isinstance(body.value, REDUCERS):
        v = body.value
        for mine, other in ((v.a, v.b), (v.b, v.a)):  # type: ignore[attr-defined]
            if (
                isinstance(mine, BufferLoad)
                and mine.buffer is body.buffer
                and all(_same(x, y) for x, y in zip(mine.indices, body.indices))
            ):
                return body, cond, type(v), other
    raise LoweringError(
        f"{where}, but it is not `C[...] = C[...] op value` with op one of +, *, max, min; "
        "only those can be combined across threads"
    )


def _same(x: PrimExpr, y: PrimExpr) -> bool:
    from mlc.tir.arith.linear import expr_key

    return bool(expr_key([x]) == expr_key([y]))
