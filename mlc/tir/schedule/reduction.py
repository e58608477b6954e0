"""Schedule primitives for reductions: ``decompose_reduction`` and ``rfactor``.

A reduction block carries an ``init`` (``C = 0``) run at the first reduction step and an
update (``C = C + ...``). ``decompose_reduction`` gives the init its own block and loops, so
the update loop nest has no branch; ``rfactor`` turns one reduction loop into a spatial
dimension of a new buffer of partial results (which can then run in parallel or vectorized),
followed by a small block that reduces the partial results.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import cast

import numpy as np

from mlc.tir import dtype as dt
from mlc.tir.arith import Analyzer
from mlc.tir.arith.linear import expr_key
from mlc.tir.expr import (
    LE,
    LT,
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
    conjuncts,
    const,
)
from mlc.tir.functor import collect, substitute
from mlc.tir.schedule import region as R
from mlc.tir.schedule import state
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.trace import BlockRV, LoopRV
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    Stmt,
    seq,
)

REDUCERS = (Add, Mul, Max, Min)


class ReductionPrimitives(ScheduleBase):
    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Split the init of reduction ``block`` into a block ``{name}_init`` placed just
        before ``loop``, with its own copies of the spatial loops inside ``loop``. Returns it.

        Before::

            for i, j, k in grid(64, 64, 64):
                with block("C"):
                    with init():  C[vi, vj] = 0.0
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

        ``sch.decompose_reduction(sch.get_block("C"), i)``::

            for i_init, j_init in grid(64, 64):
                with block("C_init"):  C[vi, vj] = 0.0
            for i, j, k in grid(64, 64, 64):
                with block("C"):  C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

        ``loop`` must be above the block and not inside its reduction loops.
        """
        realize, loc = self._block_of(block)
        target, _ = self._loop_of(loop)
        b = realize.block
        name, lv = b.name, target.loop_var.name
        if b.init is None:
            raise self._error(
                f"decompose_reduction: block {name!r} has no init (it is not a reduction, or "
                "it was decomposed already)", realize)
        loops = loc.enclosing_loops()
        pos = next((k for k, f in enumerate(loops) if f is target), None)
        if pos is None:
            raise self._error(
                f"decompose_reduction: loop {lv!r} is not one of the loops around block "
                f"{name!r}", target)
        spatial_vals, reduce_vals = _split_values(realize)
        for f in loops[:pos]:
            if R.mentions(reduce_vals, [f.loop_var]):
                raise self._error(
                    f"decompose_reduction: loop {lv!r} is inside the reduction loop "
                    f"{f.loop_var.name!r} of block {name!r}; the init must run before the "
                    f"whole reduction, so pass {f.loop_var.name!r} or a loop above it", target)
        copies: list[For] = []
        sub: dict[Var, PrimExpr] = {}
        reduce_loops: list[For] = []
        for f in loops[pos:]:
            in_s = R.mentions(spatial_vals, [f.loop_var])
            in_r = R.mentions(reduce_vals, [f.loop_var])
            if in_s and in_r:
                raise self._error(
                    f"decompose_reduction: loop {f.loop_var.name!r} feeds both spatial and "
                    f"reduction variables of block {name!r}", f)
            if in_s:
                v = Var(self._fresh(f.loop_var.name + "_init"), f.loop_var.dtype)
                sub[f.loop_var] = v
                copies.append(dataclasses.replace(f, loop_var=v))
            else:
                reduce_loops.append(f)
        ivs, values, ivsub = [], [], {}
        for iv, val in zip(b.iter_vars, realize.iter_values):
            if iv.kind is IterKind.SPATIAL:
                nv = IterVar(Var(iv.var.name, iv.var.dtype), iv.dom, iv.kind)
                ivsub[iv.var] = nv.var
                ivs.append(nv)
                values.append(substitute(val, sub))
        pred = self._pred_without(realize, reduce_loops, sub, "decompose_reduction")
        init = substitute(b.init, ivsub)
        init_block = Block(
            self._fresh(name + "_init"), tuple(ivs), _reads_of(init),
            tuple(substitute(w, ivsub) for w in b.writes), init,
        )
        nest: Stmt = BlockRealize(tuple(values), pred, init_block)
        for f in reversed(copies):
            nest = dataclasses.replace(f, body=nest)
        update = dataclasses.replace(realize, block=dataclasses.replace(b, init=None))
        func = state.replace(self._func, realize, update)
        new_target = state.find_loop(func, target.loop_var).stmt  # type: ignore[union-attr]
        self._update(state.replace(func, new_target, seq(nest, new_target)))
        rv = self._block_rv(init_block.name)
        self._record("decompose_reduction", {"block": block, "loop": loop}, rv)
        return rv

    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        """Make the reduction loop ``loop`` a spatial dimension: partial results go to a new
        buffer ``{C}_rf`` (``loop``'s extent inserted at ``factor_axis`` of C's shape),
        computed by a new block ``{name}_rf`` (returned); the original block then reduces
        the partial results.

        Before::

            for i, k0, k1 in grid(128, 32, 4):
                with block("B"):
                    vi, vk = S(i), R(k0 * 4 + k1)
                    B[vi] = B[vi] + A[vi, vk]

        ``sch.rfactor(k1, 0)``::

            for i, k0, k1 in grid(128, 32, 4):
                with block("B_rf"):
                    vk1, vi, vk0 = S(k1), S(i), R(k0)
                    B_rf[vk1, vi] = B_rf[vk1, vi] + A[vi, vk0 * 4 + vk1]
            for i, k1 in grid(128, 4):
                with block("B"):
                    vi, vk1 = S(i), R(k1)
                    B[vi] = B[vi] + B_rf[vk1, vi]

        Each partial result starts from the combiner's identity (0 for +, 1 for *, -inf / +inf
        for max / min); the block's own init (``B[vi] = 5.0``, ``B[vi] = bias[vi]``) starts
        the final block only, so it counts once.
        """
        target, _ = self._loop_of(loop)
        lv = target.loop_var.name
        infos = [i for i in R.blocks_in_order(self._func) if i.under(target)]
        if len(infos) != 1:
            raise self._error(
                f"rfactor: loop {lv!r} must contain exactly one block, it contains "
                f"{[i.block.name for i in infos]}", target)
        (me,) = infos
        realize, loc, b = me.realize, me.loc, me.block
        name = b.name
        store, cond, op, rhs = self._reducer(realize)
        buf = store.buffer
        loops = loc.enclosing_loops()
        if R.exclusive_top(loc) is not loops[0]:
            raise self._error(
                f"rfactor: the loops around block {name!r} also hold other blocks; rfactor "
                "needs a loop nest of its own", realize)
        spatial_vals, reduce_vals = _split_values(realize)
        s_loops: list[For] = []
        r_loops: list[For] = []
        for f in loops:
            in_s = R.mentions(spatial_vals, [f.loop_var])
            in_r = R.mentions(reduce_vals, [f.loop_var])
            if in_s and in_r:
                raise self._error(
                    f"rfactor: loop {f.loop_var.name!r} feeds both spatial and reduction "
                    f"variables of block {name!r}", f)
            (s_loops if in_s else r_loops if in_r else []).append(f)
        if all(f is not target for f in r_loops):
            raise self._error(
                f"rfactor: loop {lv!r} is not a reduction loop of block {name!r} (its "
                f"reduction loops are {[f.loop_var.name for f in r_loops]})", target)
        ndim = buf.ndim
        if not isinstance(factor_axis, int) or isinstance(factor_axis, bool):
            raise self._error(
                f"rfactor: factor_axis must be an int (where the new dimension goes in "
                f"{buf.name!r}'s shape, 0..{ndim}), got {factor_axis!r}", target)
        if not -(ndim + 1) <= factor_axis <= ndim:
            raise self._error(
                f"rfactor: factor_axis {factor_axis} is out of range for {buf.name!r} with "
                f"{ndim} dimensions (use 0..{ndim})", target)
        fa = factor_axis % (ndim + 1)
        ana = Analyzer()
        rf_buf = Buffer(
            self._fresh(buf.name + "_rf"),
            (*buf.shape[:fa], target.extent, *buf.shape[fa:]), buf.dtype, buf.scope,
        )
        # -- the rf block: every loop of the nest gets its own block variable
        ivs: list[IterVar] = []
        vals: list[PrimExpr] = []
        loop_to_iv: dict[Var, PrimExpr] = {}
        ivsub: dict[Var, PrimExpr] = {}
        for iv, val in zip(b.iter_vars, realize.iter_values):
            if iv.kind is IterKind.SPATIAL:
                nv = Var(iv.var.name, iv.var.dtype)
                ivs.append(IterVar(nv, iv.dom, iv.kind))
                vals.append(val)
                ivsub[iv.var] = nv
        for f in r_loops:
            kind = IterKind.SPATIAL if f is target else IterKind.REDUCE
            nv = Var("v" + f.loop_var.name, f.loop_var.dtype)
            ivs.append(IterVar(nv, Range(f.min, f.extent), kind))
            vals.append(f.loop_var)
            loop_to_iv[f.loop_var] = nv
        for iv, val in zip(b.iter_vars, realize.iter_values):
            if iv.kind is not IterKind.SPATIAL:
                ivsub[iv.var] = ana.simplify(substitute(val, loop_to_iv))
        rf_var = loop_to_iv[target.loop_var]
        idx = tuple(substitute(i, ivsub) for i in store.indices)
        rf_idx = (*idx[:fa], ana.simplify(rf_var - target.min), *idx[fa:])
        rf_load = BufferLoad(rf_buf, rf_idx)
        rf_store: Stmt = BufferStore(rf_buf, op(rf_load, substitute(rhs, ivsub)), rf_idx)
        if cond is not None:
            rf_store = IfThenElse(substitute(cond, ivsub), rf_store)
        # a non-dividing split's `k_0 * 64 + k_1 < n`, now on the block's own variables: the
        # new reduction variables range over whole loops, the guard keeps reads in bounds
        guards = [
            substitute(part, loop_to_iv)
            for part in conjuncts(realize.predicate)
            if not isinstance(part, IntImm)
            and R.mentions(part, list(loop_to_iv))
            and not R.mentions(part, [f.loop_var for f in loops if f.loop_var not in loop_to_iv])
        ]
        if guards:
            guard = guards[0]
            for g in guards[1:]:
                guard = guard & g
            rf_store = IfThenElse(guard, rf_store)
        init_value = b.init.value  # type: ignore[union-attr]
        # each partial result starts from the combiner's identity; the block's own init
        # (`B = 5.0` before a sum) starts the write-back alone, or it would count once per
        # partial result
        rf_block = Block(
            self._fresh(name + "_rf"), tuple(ivs),
            tuple(substitute(r, ivsub) for r in b.reads if r.buffer is not buf),
            (R.point_region(rf_buf, rf_idx),), rf_store,
            BufferStore(rf_buf, combiner_identity(op, buf.dtype), rf_idx),
        )
        rf_realize = BlockRealize(tuple(vals), realize.predicate, rf_block)
        # -- the write-back block, under copies of the spatial loops and the rf loop
        wb_loops = [*s_loops, target]
        lsub = {f.loop_var: Var(self._fresh(f.loop_var.name), f.loop_var.dtype) for f in wb_loops}
        w_ivs, w_vals, wsub = [], [], {}
        for iv, val in zip(b.iter_vars, realize.iter_values):
            if iv.kind is IterKind.SPATIAL:
                nv = Var(iv.var.name, iv.var.dtype)
                w_ivs.append(IterVar(nv, iv.dom, iv.kind))
                w_vals.append(substitute(val, lsub))
                wsub[iv.var] = nv
        wr = Var("v" + lv, target.loop_var.dtype)
        w_ivs.append(IterVar(wr, Range(target.min, target.extent), IterKind.REDUCE))
        w_vals.append(lsub[target.loop_var])
        w_idx = tuple(substitute(i, wsub) for i in store.indices)
        w_rf_idx = (*w_idx[:fa], ana.simplify(wr - target.min), *w_idx[fa:])
        w_store = BufferStore(buf, op(BufferLoad(buf, w_idx), BufferLoad(rf_buf, w_rf_idx)), w_idx)
        w_init = BufferStore(buf, substitute(init_value, wsub), w_idx)  # `B = bias[vi]` too
        wb_block = Block(
            name, tuple(w_ivs), (R.point_region(rf_buf, w_rf_idx), *_reads_of(w_init)),
            (R.point_region(buf, w_idx),), w_store, w_init,
        )
        others = [f for f in r_loops if f is not target]
        pred = self._pred_without(realize, others, lsub, "rfactor")
        wb: Stmt = BlockRealize(tuple(w_vals), pred, wb_block)
        for f in reversed(wb_loops):
            wb = For(lsub[f.loop_var], f.min, f.extent, ForKind.SERIAL, wb)
        top = loops[0]
        new_top = state.replace_many(self._func, {realize: rf_realize})
        new_top_loop = state.find_loop(new_top, top.loop_var).stmt  # type: ignore[union-attr]
        func = state.replace(new_top, new_top_loop, seq(new_top_loop, wb))
        self._update(R.add_root_alloc(func, rf_buf))
        rv = self._block_rv(rf_block.name)
        self._record("rfactor", {"loop": loop, "factor_axis": factor_axis}, rv)
        return rv

    # ----------------------------------------------------------------------------------------
    # helpers

    def _reducer(self, realize: BlockRealize):  # type: ignore[no-untyped-def]
        """(store, condition or None, combiner op, new value) of ``C = C op value``."""
        b = realize.block
        body: Stmt = b.body
        cond: PrimExpr | None = None
        if isinstance(body, IfThenElse) and body.else_case is None:
            cond = body.condition
            body = body.then_case
        bad = None
        if b.init is None or not isinstance(b.init, BufferStore):
            bad = "it has no init (decomposed already, or not a reduction)"
        elif not isinstance(body, BufferStore) or not isinstance(body.value, REDUCERS):
            bad = "its update is not `C[...] = C[...] op value`"
        if bad is None:
            store = cast(BufferStore, body)
            v = cast("Add | Mul | Max | Min", store.value)
            key = expr_key(store.indices)
            for mine, other in ((v.a, v.b), (v.b, v.a)):
                if (isinstance(mine, BufferLoad) and mine.buffer is store.buffer
                        and expr_key(mine.indices) == key
                        and not R.buffer_used(other, store.buffer)):
                    return store, cond, type(v), other
            bad = "its update does not combine C with a value that does not read C"
        raise self._error(
            f"rfactor: block {b.name!r} is not a known commutative reduction (sum, product, "
            f"max, min): {bad}", realize)

    def _pred_without(
        self,
        realize: BlockRealize,
        drop: list[For],
        sub: Mapping[Var, PrimExpr],
        what: str,
    ) -> PrimExpr:
        """The predicate of a block that runs once for each value of the loops in ``sub``
        (renamed by it) where ``realize`` ran for *some* values of the loops in ``drop``.

        A conjunct that mentions only ``drop`` is left out. One that mentions both keeps its
        ``sub`` loops and takes the ``drop`` loops at their first iteration, where it is
        easiest to meet: a non-dividing split ``k_0 * 64 + k_1 < 1000`` becomes
        ``k_1 < 1000`` for the loop ``k_1`` (true for some ``k_0`` exactly when true for
        ``k_0 == 0``)."""
        ana = Analyzer()
        drop_vars = [f.loop_var for f in drop]
        first = {f.loop_var: f.min for f in drop}
        kept: PrimExpr = const(True)
        for part in conjuncts(realize.predicate):
            if isinstance(part, IntImm):
                continue
            if R.mentions(part, drop_vars):
                if not R.mentions(part, list(sub)):
                    continue
                if not _weakest_at_min(part, drop_vars, ana):
                    names = sorted(v.name for v in drop_vars if R.mentions(part, [v]))
                    raise self._error(
                        f"{what}: the predicate of block {realize.block.name!r} ({part}) "
                        f"depends on {', '.join(names)} in a way {what} cannot follow (it "
                        "handles the `outer * factor + inner < n` of a non-dividing split); "
                        "split by a factor that divides the extent",
                        realize,
                    )
                part = ana.simplify(substitute(part, first))
            p = substitute(part, sub)
            kept = p if isinstance(kept, IntImm) else kept & p
        return kept


def combiner_identity(op: type, dtype: str) -> PrimExpr:
    """The value that ``op`` (Add, Mul, Max, Min) leaves unchanged: 0, 1, and -inf/+inf (or
    the integer dtype's minimum/maximum) for max/min."""
    if op is Add or op is Mul:
        return const(op is Mul, dtype) if dt.is_bool(dtype) else const(int(op is Mul), dtype)
    low = op is Max
    if dt.is_float(dtype):
        return const(float("-inf") if low else float("inf"), dtype)
    if dt.is_bool(dtype):
        return const(not low, dtype)
    info = np.iinfo(dtype)
    return const(int(info.min if low else info.max), dtype)


def _weakest_at_min(part: PrimExpr, drop: list[Var], ana: Analyzer) -> bool:
    """True when ``part`` is ``a < b`` (or ``<=``) with ``a - b`` growing with every loop in
    ``drop``, so that it holds for some values of those loops iff it holds at their minima."""
    if not isinstance(part, (LT, LE)):
        return False
    diff = part.a - part.b
    for v in drop:
        step = ana.simplify(substitute(diff, {v: v + 1}) - diff)
        if not (isinstance(step, IntImm) and step.value >= 0):
            return False
    return True


def _reads_of(stmt: Stmt) -> tuple[BufferRegion, ...]:
    """The elements ``stmt`` (an init) loads, one region per buffer."""
    loads = collect(stmt, lambda n: isinstance(n, BufferLoad))
    return R.merge_regions([R.point_region(ld.buffer, ld.indices) for ld in loads])


def _split_values(realize: BlockRealize) -> tuple[list[PrimExpr], list[PrimExpr]]:
    s: list[PrimExpr] = []
    r: list[PrimExpr] = []
    for iv, v in zip(realize.block.iter_vars, realize.iter_values):
        (s if iv.kind is IterKind.SPATIAL else r).append(v)
    return s, r


