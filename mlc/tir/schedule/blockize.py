"""``blockize`` and ``tensorize``: tensorized blocks and hardware intrinsics (MLC lecture 7).

A *tensorized block* computes a whole tile instead of one element: it reads a 16x16 region
of ``A`` and ``B`` and writes a 16x16 region of ``C``. ``blockize`` builds one from the loops
under a loop; ``tensorize`` then swaps the tile's computation for an implementation
registered with :class:`mlc.tir.TensorIntrin` (a micro-kernel, an accelerator instruction).
The matching itself lives in :mod:`mlc.tir.schedule.tensorize`.
"""

from __future__ import annotations

import dataclasses

from mlc.errors import ScheduleError
from mlc.tir.arith import Analyzer
from mlc.tir.arith.linear import Linear, from_linear, to_linear
from mlc.tir.expr import IntImm, IterKind, IterVar, PrimExpr, Range, Var, const
from mlc.tir.functor import substitute, uses_var
from mlc.tir.schedule import region as R
from mlc.tir.schedule import state
from mlc.tir.schedule import tensorize as T
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.trace import BlockRV, LoopRV
from mlc.tir.stmt import Block, BlockRealize, BufferRegion, For, Stmt
from mlc.tir.tensor_intrin import TensorIntrin


class BlockizePrimitives(ScheduleBase):
    def blockize(self, loop: LoopRV) -> BlockRV:
        """Turn the loops from ``loop`` inwards, and the block under them, into one *outer*
        block ``{name}_o`` that computes a whole tile. Returns the outer block.

        Before (a 64x64x64 matmul split by 16 and reordered)::

            for i_0, j_0, k_0 in grid(4, 4, 4):
                for i_1, j_1, k_1 in grid(16, 16, 16):
                    with block("C"):
                        vi = axis.spatial(64, i_0 * 16 + i_1)
                        vj = axis.spatial(64, j_0 * 16 + j_1)
                        vk = axis.reduce(64, k_0 * 16 + k_1)
                        with init():  C[vi, vj] = 0.0
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

        ``sch.blockize(i_1)``::

            for i_0, j_0, k_0 in grid(4, 4, 4):
                with block("C_o"):
                    vi0 = axis.spatial(4, i_0)
                    vj0 = axis.spatial(4, j_0)
                    vk0 = axis.reduce(4, k_0)
                    reads(A[vi0 * 16 : vi0 * 16 + 16, vk0 * 16 : vk0 * 16 + 16], B[...])
                    writes(C[vi0 * 16 : vi0 * 16 + 16, vj0 * 16 : vj0 * 16 + 16])
                    with init():
                        for i_1_init, j_1_init in grid(16, 16):
                            with block("C_init"):  C[vi, vj] = 0.0     # the whole tile
                    for i_1, j_1, k_1 in grid(16, 16, 16):
                        with block("C"):
                            vi = axis.spatial(64, vi0 * 16 + i_1)
                            ...
                            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

        Each binding of the inner block must split into a part from the loops outside
        ``loop`` and a part from the loops inside (``i_0 * 16 + i_1``); the outer block gets
        one iteration variable per outer part (``vi0``, bound to ``i_0``), the inner binding
        becomes ``vi0 * 16 + i_1``. A reduction's init moves to the outer block and covers the
        tile, so the outer block is itself a reduction over ``vk0``.
        """
        outer = self._blockize(loop, "blockize")
        rv = self._block_rv(outer.block.name)
        self._record("blockize", {"loop": loop}, rv)
        return rv

    def tensorize(self, block_or_loop: BlockRV | LoopRV,
                  tensor_intrin: str | TensorIntrin) -> BlockRV:
        """Replace a tile's computation by the implementation of a tensor intrinsic.

        ``block_or_loop`` is a block made by :meth:`blockize` or a loop (blockized first).
        The block's body (the loops and the inner block, not its init) must compute what the
        intrinsic's *description* computes, up to renaming and the position of the tile
        in the real buffers; it is then replaced by the intrinsic's *implementation*, whose
        buffers now point into the tiles (``C_tile[i, j]`` becomes
        ``C[vi0 * 16 + i, vj0 * 16 + j]``)::

            mlc.tir.tensor_intrin.register_cpu_gemm(16, 16, 16)   # "gemm_16x16x16_cpu"
            sch.tensorize(i_1, "gemm_16x16x16_cpu")

        The outer block keeps its reads, writes and init (the tile zeroing), unless the
        intrinsic declares how the hardware zeroes a tile (``TensorIntrin.reset``, the
        notes' ``fill_zero``): that becomes the init. The implementation's own inits are
        dropped. A body that does not match raises
        ScheduleError showing the block, the description and the first difference.
        Returns the tensorized block (TVM returns nothing; the handle helps the te facade).
        """
        intrin = tensor_intrin if isinstance(tensor_intrin, TensorIntrin) else None
        if intrin is None:
            if not isinstance(tensor_intrin, str):
                raise self._error(
                    f"tensorize: tensor_intrin must be the name of a registered TensorIntrin "
                    f"(or the TensorIntrin itself), got {type(tensor_intrin).__name__}")
            intrin = TensorIntrin.get(tensor_intrin)
        before = self._func
        if isinstance(block_or_loop, LoopRV):
            outer = self._blockize(block_or_loop, "tensorize")
        else:
            outer, _ = self._block_of(block_or_loop)
        try:
            match = T.match(outer.block, intrin, self._error)
        except ScheduleError:
            self._update(before)  # a refused tensorize leaves the program as it was
            raise
        body, allocs = T.instantiate(intrin, match, self._fresh)
        init = outer.block.init
        if init is not None and intrin.reset is not None:  # the declared reset (fill_zero)
            init, reset_allocs = T.instantiate(
                dataclasses.replace(intrin, impl=intrin.reset), match, self._fresh)
            allocs = (*allocs, *reset_allocs)
        new_block = dataclasses.replace(
            outer.block, body=body, init=init,
            alloc_buffers=(*outer.block.alloc_buffers, *allocs))
        self._update(state.replace(self._func, outer, dataclasses.replace(outer, block=new_block)))
        rv = self._handle_of_block(new_block.name)
        self._record("tensorize", {"block_or_loop": block_or_loop, "tensor_intrin": intrin.name},
                     rv)
        return rv

    # ----------------------------------------------------------------------------------------

    def _blockize(self, loop: LoopRV, prim: str) -> BlockRealize:
        """Do the work of blockize; return the new outer BlockRealize (now in the program)."""
        target, _ = self._loop_of(loop)
        lv = target.loop_var.name
        loops: list[For] = []
        node: Stmt = target
        while isinstance(node, For):
            loops.append(node)
            node = node.body
        if not isinstance(node, BlockRealize):
            raise self._error(
                f"{prim}: the loops from {lv!r} inwards must end in exactly one block (a chain "
                f"of loops around one block), but they hold a {type(node).__name__}. Pick a "
                "loop whose body is only loops and a single block.", target)
        realize, b = node, node.block
        if not _is_true(realize.predicate):
            raise self._error(
                f"{prim}: block {b.name!r} has a predicate ({realize.predicate}), from a "
                "split that does not divide; blockize needs whole tiles, so choose factors "
                "that divide the extents", realize)
        ana = Analyzer()
        for f in loops:
            ana.bind(f.loop_var, Range(f.min, f.extent))
        inner_ids = {id(f.loop_var) for f in loops}
        outer_ivs: list[IterVar] = []
        outer_vals: list[PrimExpr] = []
        inner_parts: list[PrimExpr] = []
        new_vals: list[PrimExpr] = []
        for iv, value in zip(b.iter_vars, realize.iter_values):
            outer_part, inner_part = self._separate(iv, value, inner_ids, lv, prim, realize)
            inner_parts.append(inner_part)
            lo, hi = ana.const_int_bound(inner_part)
            if lo != 0 or not isinstance(hi, int):
                raise self._error(
                    f"{prim}: the part of {iv.var.name}'s binding from the loops inside {lv!r} "
                    f"(`{inner_part}`) must range over 0..n-1, it ranges over {lo}..{hi}",
                    realize)
            extent = hi + 1
            if _is_zero(outer_part):
                new_vals.append(inner_part)
                continue
            q, dom = self._outer_binding(iv, outer_part, extent, lv, prim, realize)
            vo = IterVar(Var(self._fresh(iv.var.name + "0"), iv.var.dtype), dom, iv.kind)
            outer_ivs.append(vo)
            outer_vals.append(q)
            ana.bind(vo.var, dom)
            base = vo.var if extent == 1 else vo.var * const(extent, iv.var.dtype)
            new_vals.append(base if _is_zero(inner_part) else base + inner_part)
        inner = dataclasses.replace(realize, iter_values=tuple(new_vals),
                                    block=dataclasses.replace(b, init=None))
        reads = tuple(_relax(r, inner, loops, ana) for r in b.reads)
        writes = tuple(_relax(r, inner, loops, ana) for r in b.writes)
        init = None
        if b.init is not None:
            init = self._init_nest(b, loops, inner_parts, new_vals, lv, prim, realize)
        nest: Stmt = inner
        for f in reversed(loops):
            nest = dataclasses.replace(f, body=nest)
        outer_block = Block(self._fresh(b.name + "_o"), tuple(outer_ivs), reads, writes,
                            nest, init)
        outer = BlockRealize(tuple(outer_vals), const(True), outer_block)
        self._update(state.replace(self._func, target, outer))
        return outer

    def _separate(self, iv: IterVar, value: PrimExpr, inner_ids: set[int], lv: str, prim: str,
                  realize: BlockRealize) -> tuple[PrimExpr, PrimExpr]:
        """``value == outer + inner``: outer uses no loop inside ``lv``, inner only those."""
        lin = to_linear(Analyzer().simplify(value))
        outer, inner = Linear(lin.dtype, const=lin.const), Linear(lin.dtype)
        for key, (atom, coef) in lin.terms.items():
            has_in = uses_var(atom, lambda v: id(v) in inner_ids)
            has_out = uses_var(atom, lambda v: id(v) not in inner_ids)
            if has_in and has_out:
                raise self._error(
                    f"{prim}: the binding of {iv.var.name} (`{value}`) is not separable at loop "
                    f"{lv!r}: its term `{atom}` mixes loops inside {lv!r} with loops outside. "
                    "blockize needs bindings of the form `outer * n + inner` (split loops, "
                    "not fused ones).", realize)
            (inner if has_in else outer).add_term(atom, coef, key)
        return from_linear(outer), from_linear(inner)

    def _outer_binding(self, iv: IterVar, outer: PrimExpr, extent: int, lv: str, prim: str,
                       realize: BlockRealize) -> tuple[PrimExpr, Range]:
        """The outer iteration variable's binding (``outer / extent``) and its domain."""
        if extent == 1:
            return outer, iv.dom
        lin = to_linear(outer)
        n = iv.dom.extent
        if lin.gcd() % extent != 0 or not _is_zero(iv.dom.min) or not isinstance(n, IntImm) \
                or n.value % extent != 0:
            raise self._error(
                f"{prim}: the binding of {iv.var.name} (`{realize_value(realize, iv)}`) is not "
                f"separable at loop {lv!r}: its outer part `{outer}` is not a multiple of the "
                f"tile size {extent} over a domain divisible by it. Split by a factor that "
                "divides the extent, and blockize at the inner loop of the split.", realize)
        q = Linear(lin.dtype, const=lin.const // extent)
        for key, (atom, coef) in lin.terms.items():
            q.add_term(atom, coef // extent, key)
        return from_linear(q), Range(const(0, n.dtype), const(n.value // extent, n.dtype))

    def _init_nest(self, b: Block, loops: list[For], inner_parts: list[PrimExpr],
                   new_vals: list[PrimExpr], lv: str, prim: str, realize: BlockRealize) -> Stmt:
        """The outer block's init: the inner init over the tile's spatial loops."""
        spatial = [p for iv, p in zip(b.iter_vars, inner_parts) if iv.kind is IterKind.SPATIAL]
        reduce = [p for iv, p in zip(b.iter_vars, inner_parts) if iv.kind is not IterKind.SPATIAL]
        copies: list[For] = []
        sub: dict[Var, PrimExpr] = {}
        for f in loops:
            in_s, in_r = R.mentions(spatial, [f.loop_var]), R.mentions(reduce, [f.loop_var])
            if in_s and in_r:
                raise self._error(
                    f"{prim}: loop {f.loop_var.name!r} feeds both spatial and reduction "
                    f"variables of block {b.name!r}, so its init cannot move out of the tile",
                    f)
            if in_s:
                v = Var(self._fresh(f.loop_var.name + "_init"), f.loop_var.dtype)
                sub[f.loop_var] = v
                copies.append(dataclasses.replace(f, loop_var=v, body=f.body))
        ivs, vals = [], []
        ivsub: dict[Var, PrimExpr] = {}
        for iv, val in zip(b.iter_vars, new_vals):
            if iv.kind is IterKind.SPATIAL:
                nv = IterVar(Var(self._fresh(iv.var.name + "_init"), iv.var.dtype), iv.dom, iv.kind)
                ivsub[iv.var] = nv.var
                ivs.append(nv)
                vals.append(substitute(val, sub))
        writes = tuple(substitute(w, ivsub) for w in b.writes)
        init_block = Block(self._fresh(b.name + "_init"), tuple(ivs), (), writes,
                           substitute(b.init, ivsub))
        nest: Stmt = BlockRealize(tuple(vals), const(True), init_block)
        for f in reversed(copies):
            nest = dataclasses.replace(f, body=nest)
        return nest


def realize_value(realize: BlockRealize, iv: IterVar) -> PrimExpr:
    for v, val in zip(realize.block.iter_vars, realize.iter_values):
        if v is iv:
            return val
    return iv.var


def _relax(region: BufferRegion, inner: BlockRealize, loops: list[For],
           ana: Analyzer) -> BufferRegion:
    """The tile of ``region`` that the inner block touches while ``loops`` run."""
    bounds = R.relaxed_region(region, inner, loops, ana)
    return BufferRegion(region.buffer, tuple(
        Range(lo, ana.simplify(hi - lo + 1)) for lo, hi in bounds))


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value != 0


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0
