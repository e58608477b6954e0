"""``lower_cross_thread_reduction``: a reduction whose reduce loop is bound to ``threadIdx``
becomes a tree reduction across the threads (TVM's "Reduction" tutorial).

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

**Warp shuffles** (``warp_size=32``, what the CUDA targets run: :func:`with_warp_shuffles`).
The 32 threads of a warp run in lock step and can read each other's registers
(``__shfl_down_sync``), so the steps within a warp need neither shared memory nor a barrier.
Each thread keeps its part in a register (a ``"local"`` buffer of one element) and every
step reads the partial sum of the lane ``s`` places down::

    for tx in thread_binding(16, "threadIdx.x"):
        B_red[0] = 0.0;  B_red[0] += A[i, tx]
        B_red_t[0] = tvm_warp_shuffle_down(mask, B_red[0], 8, 16)     # every lane
        if tx + 8 < 16:  B_red[0] += B_red_t[0]
        ... (4, 2, 1)
        if tx == 0:  B[vi] = 0.0; B[vi] += B_red[0]

Every lane of the warp takes part in every shuffle (the ``mask``: the lanes that exist), and
a lane whose partner is past the end (``tx + s >= n``) ignores what it read. A reduction over
more than 32 threads reduces each warp so, puts one value per warp in shared memory
(``B_red_shared[tx // 32]``), and after a barrier the first warp reduces those the same way.
The shuffle path needs the warps to line up with the reductions: the reduce loop is the
fastest-varying thread axis and spans the kernel's whole axis, and ``n`` divides 32, is a
multiple of 32, or is the only reduction of the block; otherwise (and for dtypes other than
float32/64 and int32/64) the shared-memory tree is used.

Layout: this module holds the pass, the search for reductions and the shared-memory tree;
``cross_thread_warp`` the warp-shuffle half of the mutator; ``cross_thread_common`` the
reduction record, its reducer and the helpers both use.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from mlc.errors import LoweringError
from mlc.tir.expr import (
    BufferLoad,
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    Range,
    Var,
    conjuncts,
    const,
)
from mlc.tir.functor import IRMutator, substitute
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)
from mlc.transform.cross_thread_common import (
    Reduction,
    identity,
    is_true,
    point,
    reducer,
    uses,
    uses_any,
)
from mlc.transform.cross_thread_warp import WarpShuffles


def lower_cross_thread_reduction(func: PrimFunc, warp_size: int | None = None) -> PrimFunc:
    """Rewrite every reduction whose reduce loop is bound to a ``threadIdx`` axis (see the
    module docstring); other programs come back unchanged. ``warp_size`` (a target whose
    threads shuffle registers within a warp: 32 for CUDA) reduces within warps by shuffles;
    None (the default) uses shared memory and barriers only."""
    lowerer = _Lowerer(warp_size)
    body = lowerer.visit(func.body)
    if not lowerer.new_buffers:
        return func
    assert isinstance(body, BlockRealize)  # the root block holds the new buffers
    root = body.block
    root = dataclasses.replace(root, alloc_buffers=(*root.alloc_buffers, *lowerer.new_buffers))
    return func.with_body(dataclasses.replace(body, block=root))


def with_warp_shuffles(warp_size: int) -> Any:
    """The pass for a target whose warps shuffle registers: ``lower_cross_thread_reduction``
    with ``warp_size`` (what a GPU target puts in its pipeline)."""
    return functools.partial(lower_cross_thread_reduction, warp_size=warp_size)


class _Lowerer(WarpShuffles, IRMutator):
    def __init__(self, warp_size: int | None = None) -> None:
        self.warp_size = warp_size
        self.stack: list[For] = []
        self.new_buffers: list[Buffer] = []
        self.names: set[str] = set()
        self.guarded = 0  # enclosing blocks with a predicate (the lanes may diverge there)

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

    def visit_BlockRealize(self, op: BlockRealize) -> Any:
        guarded = not is_true(op.predicate)
        self.guarded += guarded
        try:
            return self.generic_visit(op)
        finally:
            self.guarded -= guarded

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
                iv.kind is not IterKind.SPATIAL and uses(v, f.loop_var)
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
        store, cond, op, value = reducer(b, where)
        spatial_values = [v for iv, v in zip(b.iter_vars, br.iter_values)
                          if iv.kind is IterKind.SPATIAL]
        for g in inner:
            spatial = any(uses(v, g.loop_var) for v in spatial_values)
            if g.kind is ForKind.THREAD_BINDING or spatial:
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
        red = Reduction(f, items, inner, br, store, cond, op, value, others)
        plan = self._warp_plan(red)
        if plan is not None:
            return self._rewrite_warp(red, plan)
        return self._rewrite_shared(red)

    # -- pieces both rewrites use

    def _slot_vars(self, prefix: str, loops: list[For]) -> list[IterVar]:
        return [
            IterVar(Var(f"v{prefix}{k}", "int32"), Range(g.min, g.extent), IterKind.SPATIAL)
            for k, g in enumerate(loops)
        ]

    def _fold(self, red: Reduction, slot_buf: Buffer, ivs: list[IterVar],
              slot: tuple[PrimExpr, ...], values: tuple[PrimExpr, ...]) -> Stmt:
        """Every thread folds its part of the reduction into ``slot_buf[slot]`` (the loops
        inside the thread loop around it)."""
        b = red.block
        update: Stmt = BufferStore(slot_buf, red.op(BufferLoad(slot_buf, slot), red.value), slot)
        if red.cond is not None:
            update = IfThenElse(red.cond, update)
        fold_block = Block(
            self._fresh(f"{b.name}_red"),
            (*b.iter_vars, *ivs),
            (*[r for r in b.reads if r.buffer is not red.store.buffer], point(slot_buf, slot)),
            (point(slot_buf, slot),),
            update,
        )
        fold: Stmt = BlockRealize((*red.br.iter_values, *values), red.br.predicate, fold_block)
        for g in reversed(red.inner):
            fold = dataclasses.replace(g, body=fold)
        return fold

    def _final(self, red: Reduction, total_buf: Buffer, ivs: list[IterVar],
               total: tuple[PrimExpr, ...], values: tuple[PrimExpr, ...],
               thread: PrimExpr) -> BlockRealize:
        """The block where thread ``thread == f.min`` combines ``total_buf[total]`` into the
        output (with the block's init before the first step of the reduce loops outside the
        threads)."""
        b, br, f = red.block, red.br, red.f
        dropped = [f, *red.inner]
        fin_ivs: list[IterVar] = []
        fin_vals: list[PrimExpr] = []
        outer_reduce: list[For] = []
        for iv, v in zip(b.iter_vars, br.iter_values):
            if iv.kind is IterKind.SPATIAL or not uses_any(v, dropped):
                fin_ivs.append(iv)
                fin_vals.append(v)
            else:
                outer_reduce += [g for g in self.stack if uses(v, g.loop_var)
                                 and all(g is not o for o in outer_reduce)]
        for g in outer_reduce:
            fin_ivs.append(IterVar(Var(f"v{g.loop_var.name}", g.loop_var.dtype),
                                   Range(g.min, g.extent), IterKind.REDUCE))
            fin_vals.append(g.loop_var)
        store = red.store
        fin_store = BufferStore(
            store.buffer, red.op(BufferLoad(store.buffer, store.indices),
                                 BufferLoad(total_buf, total)),
            store.indices,
        )
        keep = [p for p in conjuncts(br.predicate)
                if not isinstance(p, IntImm) and not uses_any(p, dropped)]
        fin_pred: PrimExpr = thread == f.min
        for p in keep:
            fin_pred = fin_pred & p
        # the partial-sum block keeps the original iteration variables: this one gets its
        # own (a variable is defined by one block only)
        own = {iv.var: Var(iv.var.name, iv.var.dtype) for iv in fin_ivs if iv in b.iter_vars}
        fin_ivs = [IterVar(own.get(iv.var, iv.var), iv.dom, iv.kind) for iv in fin_ivs]
        writes = tuple(substitute(w, own) for w in b.writes)
        fin_block = Block(
            b.name, (*fin_ivs, *ivs),
            (point(total_buf, total), *writes), writes, substitute(fin_store, own),
            substitute(b.init, own) if b.init is not None else None,
        )
        return BlockRealize((*fin_vals, *values), fin_pred, fin_block)

    # -- shared memory: a tree with barriers

    def _rewrite_shared(self, red: Reduction) -> Stmt:
        f, b, others = red.f, red.block, red.others
        n = f.extent.value  # type: ignore[attr-defined]
        dtype = red.dtype
        buf = Buffer(
            self._fresh(f"{red.store.buffer.name}_red"),
            (*[g.extent for g in others], f.extent),
            dtype,
            "shared",
        )
        self.new_buffers.append(buf)

        def slot_values(tid: Var) -> tuple[PrimExpr, ...]:
            return (*[g.loop_var for g in others], tid)

        def shifted(ivs: list[IterVar], last: PrimExpr) -> tuple[PrimExpr, ...]:
            return (*[iv.var for iv in ivs[:-1]], last - f.min)

        # 1. every thread folds its part into its slot
        ivs = self._slot_vars("t", [*others, f])
        slot = shifted(ivs, ivs[-1].var)
        init_block = Block(
            self._fresh(f"{b.name}_red_init"), tuple(ivs), (), (point(buf, slot),),
            BufferStore(buf, identity(red.op, dtype), slot),
        )
        init = BlockRealize(slot_values(f.loop_var), const(True), init_block)
        ivs2 = self._slot_vars("u", [*others, f])
        fold = self._fold(red, buf, ivs2, shifted(ivs2, ivs2[-1].var), slot_values(f.loop_var))
        partial = dataclasses.replace(
            f, body=seq(*[self.visit(s) for s in red.items[:-1]], init, fold))
        # 2. pairwise steps: slot t += slot t + s while t < s
        steps: list[Stmt] = []
        half = 1
        while half * 2 < n:
            half *= 2
        while half >= 1:
            tv = Var(self._fresh(f"{f.loop_var.name}_s{half}"), f.loop_var.dtype)
            ivs3 = self._slot_vars("s", [*others, f])
            me = shifted(ivs3, ivs3[-1].var)
            other = (*me[:-1], me[-1] + half)
            step_block = Block(
                self._fresh(f"{b.name}_red_step{half}"), tuple(ivs3),
                (point(buf, me), point(buf, other)), (point(buf, me),),
                BufferStore(buf, red.op(BufferLoad(buf, me), BufferLoad(buf, other)), me),
            )
            rel = tv - f.min
            pred = (rel < half) & (rel + half < n)
            steps.append(dataclasses.replace(
                f, loop_var=tv, body=BlockRealize(slot_values(tv), pred, step_block)))
            half //= 2
        # 3. thread 0 combines the total into the output
        tw = Var(self._fresh(f"{f.loop_var.name}_w"), f.loop_var.dtype)
        ivs4 = self._slot_vars("w", others)
        total = (*[iv.var for iv in ivs4], const(0, "int32"))
        fin = self._final(red, buf, ivs4, total, tuple(g.loop_var for g in others), tw)
        return seq(partial, *steps, dataclasses.replace(f, loop_var=tw, body=fin))
