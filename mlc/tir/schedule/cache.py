"""Schedule primitives about buffers: ``cache_read``, ``cache_write``, ``set_scope`` and
``storage_align``.

A cache is a copy of a buffer in another memory scope (``"local"`` registers, ``"shared"``
GPU memory) made by a new block; ``compute_at``/``reverse_compute_at`` then move that block
next to the computation that uses it, so the copy covers only a tile.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mlc.tir.arith import Analyzer
from mlc.tir.arith.linear import expr_key
from mlc.tir.expr import LT, IntImm, IterKind, IterVar, PrimExpr, Range, Var, conjuncts, const
from mlc.tir.functor import collect, substitute
from mlc.tir.schedule import region as R
from mlc.tir.schedule import state
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.simplify import holds_for_sizes
from mlc.tir.schedule.threads import SCOPES, scope_rank
from mlc.tir.schedule.trace import BlockRV
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    PrimFunc,
    Stmt,
    seq,
)


class CachePrimitives(ScheduleBase):
    def cache_read(
        self,
        block: BlockRV,
        read_buffer_index: int,
        storage_scope: str,
        consumer_blocks: Sequence[BlockRV] | None = None,
    ) -> BlockRV:
        """Copy the ``read_buffer_index``-th buffer ``block`` reads into a new buffer in
        ``storage_scope``, and make its readers (``consumer_blocks``, default all of them)
        read the copy. Returns the copying block, named ``{buffer}_{scope}``.

        Before::

            for i, j in grid(64, 64):
                with block("B"):  B[vi, vj] = A[vi, vj] + 1.0

        ``sch.cache_read(sch.get_block("B"), 0, "shared")``::

            A_shared = alloc_buffer((64, 64), scope="shared")
            for ax0, ax1 in grid(64, 64):
                with block("A_shared"):  A_shared[v0, v1] = A[v0, v1]
            for i, j in grid(64, 64):
                with block("B"):  B[vi, vj] = A_shared[vi, vj] + 1.0
        """
        realize, _ = self._block_of(block)
        buf = self._region_of(realize, "reads", read_buffer_index, "cache_read").buffer
        self._check_scope(storage_scope, "cache_read")
        infos = R.blocks_in_order(self._func)
        if consumer_blocks is None:
            readers = [i for i in infos if buf in i.reads and buf not in i.writes]
        else:
            if not isinstance(consumer_blocks, (list, tuple)):
                raise self._error(
                    "cache_read: consumer_blocks must be a list of block handles, e.g. "
                    f"[sch.get_block(\"C\")], got {consumer_blocks!r}", realize)
            wanted = {self._block_name(b) for b in consumer_blocks}
            readers = [i for i in infos if i.block.name in wanted]
        for r in readers:
            if buf in r.writes or buf not in r.reads:
                raise self._error(
                    f"cache_read: block {r.block.name!r} "
                    + ("also writes" if buf in r.writes else "does not read")
                    + f" {buf.name!r}; only blocks that just read it can use a read cache",
                    r.realize,
                )
        if not readers:
            # the block updates buf in place (B[vi] = B[vi] * 2), or consumer_blocks=[]
            raise self._error(
                f"cache_read: no block would read the cache of {buf.name!r}: "
                + (f"block {realize.block.name!r} also writes it (an in-place update), and "
                   "a read cache serves only blocks that just read it"
                   if consumer_blocks is None else "consumer_blocks is empty")
                + "; give the blocks that read it in consumer_blocks, or leave it out",
                realize,
            )
        items, pos = self._root_position(readers[0], "cache_read")
        first = min(i.index for i in infos if i.realize is items[pos] or i.under(items[pos]))
        last = max(r.index for r in readers)
        for w in infos:
            if buf in w.writes and first <= w.index <= last:
                raise self._error(
                    f"cache_read: block {w.block.name!r} writes {buf.name!r} among its "
                    "readers; the copy would miss its values",
                    w.realize,
                )
        cache = self._cache_buffer(buf, storage_scope)
        copy = self._copy_nest(cache.name, buf, cache)
        mapping: dict[Stmt, Stmt | None] = {}
        for r in readers:
            b = r.block
            new_block = dataclasses.replace(
                b,
                body=R.replace_buffers(b.body, {buf: cache}),
                init=R.replace_buffers(b.init, {buf: cache}) if b.init is not None else None,
                reads=R.replace_buffers(b.reads, {buf: cache}),
            )
            mapping[r.realize] = dataclasses.replace(r.realize, block=new_block)
        func = self._insert_root(self._func, items[pos], copy, after=False)
        func = state.replace_many(func, mapping)
        self._update(R.add_root_alloc(func, cache))
        rv = self._block_rv(cache.name)
        inputs = {"block": block, "read_buffer_index": read_buffer_index,
                  "storage_scope": storage_scope}
        if consumer_blocks is not None:
            inputs["consumer_blocks"] = list(consumer_blocks)
        self._record("cache_read", inputs, rv)
        return rv

    def cache_write(self, block: BlockRV, write_buffer_index: int, storage_scope: str) -> BlockRV:
        """Make ``block`` write a new buffer in ``storage_scope`` instead of its
        ``write_buffer_index``-th output, and copy the result back with a new block (returned,
        named ``{buffer}_{scope}``) right after it.

        Before::

            for i, j, k in grid(64, 64, 64):
                with block("C"):  C[vi, vj] += A[vi, vk] * B[vk, vj]

        ``sch.cache_write(sch.get_block("C"), 0, "local")``::

            C_local = alloc_buffer((64, 64), scope="local")
            for i, j, k in grid(64, 64, 64):
                with block("C"):  C_local[vi, vj] += A[vi, vk] * B[vk, vj]
            for ax0, ax1 in grid(64, 64):
                with block("C_local"):  C[v0, v1] = C_local[v0, v1]

        ``reverse_compute_at`` of the copy under a tile loop then writes back one tile at a
        time, the accumulators staying in registers.

        When the loop nest may leave elements of C unwritten (it writes ``C[vi + 2]`` for 4
        of 8 elements) or reads C before writing it (``C[vi] = C[vi] * 2``), a block
        ``{C}_{scope}_in`` first copies C into the cache, so those elements come back as
        they were.
        """
        realize, _ = self._block_of(block)
        name = realize.block.name
        buf = self._region_of(realize, "writes", write_buffer_index, "cache_write").buffer
        self._check_scope(storage_scope, "cache_write")
        infos = R.blocks_in_order(self._func)
        me = R.info_of(infos, realize)
        items, pos = self._root_position(me, "cache_write")
        for other in infos:
            if other is me:
                continue
            inside = other.realize is items[pos] or other.under(items[pos])
            if buf in other.writes and inside and (
                other.under(realize) or other.index < me.index
            ):
                continue  # a block inside a blockized one, or a decomposed init: same nest
            if buf in other.writes:
                raise self._error(
                    f"cache_write: {buf.name!r} is also written by block "
                    f"{other.block.name!r}; a write cache needs a single writer",
                    other.realize,
                )
            if inside and buf in other.reads and not other.under(realize):
                raise self._error(
                    f"cache_write: block {other.block.name!r} reads {buf.name!r} inside the "
                    f"same loop nest as {name!r}; it would read before the copy-back",
                    other.realize,
                )
        cache = self._cache_buffer(buf, storage_scope)
        # every writer in this nest (the block, the blocks inside it, a decomposed init)
        new_item = R.replace_buffers(items[pos], {buf: cache})
        copy = self._copy_nest(cache.name, cache, buf)
        nest = [i for i in infos if i.under(items[pos]) or i.realize is items[pos]]
        around = [new_item, copy]
        if _needs_old_values(nest, buf):
            # the nest reads buf before writing it, or may leave some elements unwritten:
            # the cache starts as a copy, so the copy-back returns those elements unchanged
            around.insert(0, self._copy_nest(self._fresh(f"{cache.name}_in"), buf, cache))
        root = R.root_block(self._func)
        new_root = dataclasses.replace(
            root, body=seq(*items[:pos], *around, *items[pos + 1:]))
        func = state.replace(self._func, root, new_root)
        self._update(R.add_root_alloc(func, cache))
        rv = self._block_rv(cache.name)
        self._record(
            "cache_write",
            {"block": block, "write_buffer_index": write_buffer_index,
             "storage_scope": storage_scope},
            rv,
        )
        return rv

    def set_scope(self, block: BlockRV, buffer_index: int, storage_scope: str) -> None:
        """Move the ``buffer_index``-th buffer ``block`` writes to ``storage_scope``
        (``"global"``, ``"shared"``, ``"local"``); it must be an intermediate buffer."""
        realize, _ = self._block_of(block)
        buf = self._region_of(realize, "writes", buffer_index, "set_scope").buffer
        self._check_scope(storage_scope, "set_scope")
        self._check_intermediate(buf, realize, "set_scope")
        new = dataclasses.replace(buf, scope=storage_scope)
        self._update(self._func.with_body(R.replace_buffers(self._func.body, {buf: new})))
        self._record(
            "set_scope",
            {"block": block, "buffer_index": buffer_index, "storage_scope": storage_scope},
            None,
        )

    def storage_align(
        self, block: BlockRV, buffer_index: int, axis: int, factor: int, offset: int
    ) -> None:
        """Pad the layout of the ``buffer_index``-th buffer ``block`` writes so that the
        stride of dimension ``axis`` satisfies ``stride % factor == offset`` (used to avoid
        shared-memory bank conflicts). The buffer gets explicit ``strides``::

            B = alloc_buffer((64, 64), scope="shared")              # strides (64, 1)
            sch.storage_align(sch.get_block("B"), 0, axis=0, factor=32, offset=1)
            B = alloc_buffer((64, 64), scope="shared", strides=(65, 1))
        """
        realize, _ = self._block_of(block)
        buf = self._region_of(realize, "writes", buffer_index, "storage_align").buffer
        self._check_intermediate(buf, realize, "storage_align")
        name = realize.block.name
        ndim = buf.ndim
        for label, value in (("axis", axis), ("factor", factor), ("offset", offset)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise self._error(
                    f"storage_align: {label} must be an int, got {value!r} (block {name!r})",
                    realize)
        if not -ndim <= axis < ndim:
            raise self._error(
                f"storage_align: axis {axis} is out of range for {buf.name!r}, which has "
                f"{ndim} dimensions", realize)
        axis %= ndim
        if factor <= 0 or not 0 <= offset < factor:
            raise self._error(
                f"storage_align: need factor > 0 and 0 <= offset < factor, got factor={factor}, "
                f"offset={offset} (block {name!r})", realize)
        shape = [d.value if isinstance(d, IntImm) else None for d in buf.shape]
        if any(s is None for s in shape):
            raise self._error(
                f"storage_align: {buf.name!r} has a symbolic shape {buf.shape}; only constant "
                "shapes can be padded", realize)
        old = [s.value if isinstance(s, IntImm) else 0 for s in buf.strides] or [0] * ndim
        strides = [0] * ndim
        for d in reversed(range(ndim)):
            s = 1 if d == ndim - 1 else strides[d + 1] * shape[d + 1]  # type: ignore[operator]
            s = max(s, old[d])
            if d == axis:
                s += (offset - s) % factor
            strides[d] = s
        dtype = buf.shape[0].dtype if ndim else "int32"
        # the largest offset must fit the index type (factor=2**40 made an int32 stride of
        # 2**40 and a 4 TiB buffer that crashed the process)
        span = sum(s * (n - 1) for s, n in zip(strides, shape) if n) + 1  # type: ignore[operator]
        limit = 2**31 - 1 if dtype == "int32" else 2**63 - 1
        if span > limit:
            raise self._error(
                f"storage_align: factor={factor} pads the stride of axis {axis} of "
                f"{buf.name!r} to {strides[axis]}, a buffer of {span} elements, past what its "
                f"{dtype} indices can count ({limit}); alignment factors are small (the "
                "number of memory banks, e.g. 32)", realize)
        new = dataclasses.replace(buf, strides=tuple(IntImm(s, dtype) for s in strides))
        self._update(self._func.with_body(R.replace_buffers(self._func.body, {buf: new})))
        self._record(
            "storage_align",
            {"block": block, "buffer_index": buffer_index, "axis": axis, "factor": factor,
             "offset": offset},
            None,
        )

    # ----------------------------------------------------------------------------------------
    # helpers

    def _region_of(self, realize: BlockRealize, kind: str, index: int, what: str) -> BufferRegion:
        regions = getattr(realize.block, kind)
        if not isinstance(index, int) or not 0 <= index < len(regions):
            names = [r.buffer.name for r in regions]
            raise self._error(
                f"{what}: block {realize.block.name!r} {kind} {len(regions)} buffer(s) "
                f"{names}; index {index!r} is out of range", realize)
        return regions[index]

    def _check_scope(self, scope: str, what: str) -> None:
        if not isinstance(scope, str) or scope_rank(scope) is None:
            raise self._error(
                f"{what}: unknown storage scope {scope!r}; use one of {SCOPES}, or a tagged "
                "scope such as 'local.acc_buffer' or 'global.A_reg' (the part before the "
                "dot says which threads share it)"
            )

    def _check_intermediate(self, buf: Buffer, realize: BlockRealize, what: str) -> None:
        if buf in self._func.params:
            raise self._error(
                f"{what}: {buf.name!r} is a parameter of the function; only buffers the "
                "function allocates can change (use cache_write to get one)", realize)

    def _cache_buffer(self, buf: Buffer, scope: str) -> Buffer:
        name = self._fresh(f"{buf.name}_{scope.replace('.', '_')}")  # a C identifier
        return Buffer(name, buf.shape, buf.dtype, scope)

    def _copy_nest(self, name: str, src: Buffer, dst: Buffer) -> Stmt:
        """``for ax0, ax1...: dst[v0, v1...] = src[v0, v1...]`` over the whole buffer."""
        loops = [Var(self._fresh(f"ax{d}"), n.dtype) for d, n in enumerate(src.shape)]
        ivs = tuple(
            IterVar(Var(f"v{d}", n.dtype), Range(const(0, n.dtype), n), IterKind.SPATIAL)
            for d, n in enumerate(src.shape)
        )
        idx = tuple(iv.var for iv in ivs)
        block = Block(
            name, ivs, (R.point_region(src, idx),), (R.point_region(dst, idx),),
            BufferStore(dst, src[idx], idx),
        )
        body: Stmt = BlockRealize(tuple(loops), const(True), block)
        for v, n in reversed(list(zip(loops, src.shape))):
            body = For(v, const(0, n.dtype), n, ForKind.SERIAL, body)
        return body

    def _root_position(self, info: R.BlockInfo, what: str) -> tuple[list[Stmt], int]:
        """The root body's statements and the index of the one holding ``info``'s block."""
        root = R.root_block(self._func)
        if info.loc.enclosing_block() is not root:
            raise self._error(
                f"{what}: block {info.block.name!r} is nested in another block; caches are "
                "made at the top level", info.realize)
        items = R.body_items(root.body)
        pos = next(k for k, s in enumerate(items) if s is info.realize or info.under(s))
        return items, pos

    def _insert_root(self, func: PrimFunc, anchor: Stmt, new: Stmt, after: bool) -> PrimFunc:
        root = R.root_block(func)
        items = R.body_items(root.body)
        pos = next(k for k, s in enumerate(items) if s is anchor)
        items.insert(pos + 1 if after else pos, new)
        new_root = dataclasses.replace(root, body=seq(*items))
        return state.replace(func, root, new_root)


def _needs_old_values(nest: list[R.BlockInfo], buf: Buffer) -> bool:
    """Must a write cache of ``buf`` for the blocks ``nest`` (one root-level statement) start
    as a copy of ``buf``? Not when some block writes every element of ``buf`` before any
    block of the nest reads it (a reduction's own ``C = C + ...`` after its init is fine)."""
    covered = False
    for info in nest:
        block = info.block
        if collect(block.body, lambda n: isinstance(n, BlockRealize)):
            continue  # a blockized block: the blocks inside it speak
        if buf not in info.writes and buf not in info.reads:
            continue
        if not covered:
            loads = R.loads_of(block.body, buf)
            store = block.body
            own = (block.init is not None and isinstance(store, BufferStore)
                   and store.buffer is buf
                   and all(expr_key(ld.indices) == expr_key(store.indices) for ld in loads))
            if (loads and not own) or (block.init is not None and R.loads_of(block.init, buf)):
                return True
        if buf in info.writes and _writes_every_element(info, buf):
            covered = True
    return not covered


def _writes_every_element(info: R.BlockInfo, buf: Buffer) -> bool:
    """Does the block, over all its instances, surely store every element of ``buf``? Yes
    when it stores ``buf[v0, v1, ...]`` unconditionally, each ``v`` a spatial variable of its
    own spanning its dimension, and the loops run every value of those variables (the
    predicate only drops the tail of a split)."""
    block = info.block
    stores = [s for s in (block.init, block.body)
              if isinstance(s, BufferStore) and s.buffer is buf]
    if not stores:
        return False
    ivs = {iv.var: iv for iv in block.iter_vars}
    idx = [i for i in stores[0].indices if isinstance(i, Var) and i in ivs]
    if len({id(i) for i in idx}) != len(stores[0].indices) or not all(
            ivs[i].kind is IterKind.SPATIAL for i in idx):
        return False
    # the binding of every block variable, in terms of loops (through blockized blocks)
    binding: dict[Var, PrimExpr] = {}
    loops: list[For] = []
    predicate: list[PrimExpr] = []
    for node in [*info.loc.path, info.realize]:
        if isinstance(node, For):
            loops.append(node)
        elif isinstance(node, BlockRealize):
            for iv, value in zip(node.block.iter_vars, node.iter_values):
                binding[iv.var] = substitute(value, binding)
            predicate += [substitute(c, binding) for c in conjuncts(node.predicate)
                          if not isinstance(c, IntImm)]
    ana = Analyzer()
    for f in loops:
        ana.bind(f.loop_var, Range(f.min, f.extent))
    used = [f for f in loops if any(R.mentions(binding[v], [f.loop_var]) for v in idx)]
    count: PrimExpr = const(1, "int64")
    size: PrimExpr = const(1, "int64")
    for f in used:
        count = count * f.extent.astype("int64")
    for d, v in enumerate(idx):
        dom, extent, value = ivs[v].dom, buf.shape[d], binding[v]
        if not (ana.can_prove_equal(dom.min, 0) and ana.can_prove_equal(dom.extent, extent)):
            return False
        size = size * extent.astype("int64")
        low, high = ana.const_int_bound(value)
        if isinstance(extent, IntImm) and low == 0 and high >= extent.value - 1:
            continue  # constant bounds (a fused loop's `f // 8`, `f % 8` too)
        mine = [f for f in used if R.mentions(value, [f.loop_var])]
        for f in mine:  # growing with each loop: smallest at the loops' first values
            step = ana.simplify(substitute(value, {f.loop_var: f.loop_var + 1}) - value)
            if not (isinstance(step, IntImm) and step.value >= 0):
                return False
        lo = ana.simplify(substitute(value, {f.loop_var: f.min for f in mine}))
        hi = ana.simplify(substitute(value, {f.loop_var: f.min + f.extent - 1 for f in mine}))
        # `(m + 7) // 8 * 8 - 1 >= m - 1` (a split's tail) is beyond the analyzer: the
        # symbolic sizes are tried instead
        if not (ana.can_prove_equal(lo, 0) and holds_for_sizes(hi >= extent - 1, ana)):
            return False
    tails = {expr_key(binding[iv.var]): iv.dom for iv in block.iter_vars}
    for c in predicate:  # only `i_0 * 4 + i_1 < 10`, the tail of a split, may drop values
        if not (isinstance(c, LT) and expr_key(c.a) in tails
                and ana.can_prove_equal(c.b, tails[expr_key(c.a)].extent)):
            return False
    return holds_for_sizes(count >= size, ana)


def _item_holding(func: PrimFunc, new_block: Block) -> Stmt:
    """The root-level statement of ``func`` that now holds ``new_block``."""
    root = R.root_block(func)
    for item in R.body_items(root.body):
        if any(isinstance(loc.stmt, Block) and loc.stmt is new_block for loc in state.walk(item)):
            return item
    raise KeyError(new_block.name)

