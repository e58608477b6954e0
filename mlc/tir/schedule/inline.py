"""``compute_inline`` and ``reverse_compute_inline``: remove an elementwise block by folding
its expression into its consumer (or its producer). Mixed into ``tir.Schedule`` through
:class:`mlc.tir.schedule.compute_location.ComputeLocationPrimitives`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mlc.tir.arith import Analyzer
from mlc.tir.expr import BufferLoad, IntImm, IterKind, PrimExpr, Var
from mlc.tir.functor import IRMutator, substitute
from mlc.tir.schedule import region as R
from mlc.tir.schedule import state
from mlc.tir.schedule.base import ScheduleBase
from mlc.tir.schedule.trace import BlockRV
from mlc.tir.stmt import Block, BlockRealize, Buffer, BufferRegion, BufferStore, Stmt


class _Inline(IRMutator):
    """Loads of ``buffer`` become ``value`` with the store's variables replaced by the
    load's indices; ``regions`` collects the reads the inlined expressions bring along."""

    def __init__(self, buffer: Buffer, params: list[Var], value: PrimExpr,
                 reads: tuple[BufferRegion, ...]) -> None:
        self.buffer, self.params, self.value, self.reads = buffer, params, value, reads
        self.regions: list[BufferRegion] = []

    def visit_BufferLoad(self, op: BufferLoad) -> Any:
        op = self.generic_visit(op)
        if op.buffer is not self.buffer:
            return op
        mapping = dict(zip(self.params, op.indices))
        self.regions.extend(substitute(r, mapping) for r in self.reads)
        return substitute(self.value, mapping)


class InlinePrimitives(ScheduleBase):
    def compute_inline(self, block: BlockRV) -> None:
        """Fold an elementwise block into every block that reads what it writes.

        Before::

            with block("B"):  B[vi, vj] = A[vi, vj] * 2.0
            with block("C"):  C[vi, vj] = B[vi, vj] + 1.0

        ``sch.compute_inline(sch.get_block("B"))``::

            with block("C"):  C[vi, vj] = A[vi, vj] * 2.0 + 1.0

        ``B`` is no longer allocated. The block must be ``B[v0, v1, ...] = expr`` over its
        own spatial variables, and ``B`` must be an intermediate (not a parameter).
        """
        realize, loc = self._block_of(block)
        me_block = realize.block
        name = me_block.name
        store = self._elementwise_store(realize, "compute_inline")
        buf = store.buffer
        if buf in self._func.params:
            raise self._error(
                f"compute_inline: block {name!r} writes {buf.name!r}, a parameter of the "
                "function; only intermediate buffers can be inlined (try "
                "reverse_compute_inline on its consumer instead)",
                realize,
            )
        infos = R.blocks_in_order(self._func)
        me = R.info_of(infos, realize)
        writers = [i for i in infos if buf in i.writes and i is not me]
        if writers:
            raise self._error(
                f"compute_inline: {buf.name!r} is also written by block "
                f"{writers[0].block.name!r}; only a buffer with a single producer can be inlined",
                writers[0].realize,
            )
        consumers = [i for i in infos if buf in i.reads and i is not me]
        for c in consumers:
            for other in infos:
                if me.index < other.index < c.index and other.writes & me.reads:
                    raise self._error(
                        f"compute_inline: block {other.block.name!r} overwrites "
                        f"{sorted(b.name for b in other.writes & me.reads)} between {name!r} "
                        f"and its consumer {c.block.name!r}; inlining would read the new values",
                        other.realize,
                    )
        params = [v for v in store.indices]  # distinct iteration variables
        mapping: dict[Stmt, Stmt | None] = {R.exclusive_top(loc): None}
        for c in consumers:
            inl = _Inline(buf, params, store.value, me_block.reads)  # type: ignore[arg-type]
            cb = c.block
            try:
                body = inl.visit(cb.body)
                init = inl.visit(cb.init) if cb.init is not None else None
            except RecursionError:
                body = None
            if body is None or _expr_depth(body) > MAX_INLINED_DEPTH:
                raise self._error(
                    f"compute_inline: folding {name!r} into {cb.name!r} would nest its "
                    f"expression more than {MAX_INLINED_DEPTH} levels deep, past what the "
                    "compiler's recursive passes can walk; keep this stage as a buffer "
                    "(compute_at it instead) or inline fewer stages",
                    c.realize,
                )
            kept = [r for r in cb.reads if r.buffer is not buf]
            reads = R.merge_regions(kept + inl.regions)
            new_block = dataclasses.replace(cb, body=body, init=init, reads=reads)
            mapping[c.realize] = dataclasses.replace(c.realize, block=new_block)
        func = state.replace_many(self._func, mapping)
        self._update(R.drop_alloc(func, buf))
        self._record("compute_inline", {"block": block}, None)

    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Fold an elementwise consumer into its producer.

        Before::

            with block("B"):  B[vi, vj] = A[vi, vj] * 2.0
            with block("C"):  C[vi, vj] = B[vi, vj] + 1.0

        ``sch.reverse_compute_inline(sch.get_block("C"))``::

            with block("B"):  C[vi, vj] = A[vi, vj] * 2.0 + 1.0

        The consumer must read the producer's buffer at exactly its own iteration variables,
        covering it whole, and the producer must not be a reduction.
        """
        realize, loc = self._block_of(block)
        cblock = realize.block
        name = cblock.name
        cstore = self._elementwise_store(realize, "reverse_compute_inline")
        infos = R.blocks_in_order(self._func)
        me = R.info_of(infos, realize)
        params = set(self._func.params)
        inter = [
            b for b in sorted(me.reads, key=lambda b: b.name)
            if b not in params and any(b in i.writes for i in infos if i is not me)
        ]
        if len(inter) != 1:
            raise self._error(
                f"reverse_compute_inline: block {name!r} must read exactly one buffer that "
                f"another block produces, it reads {[b.name for b in inter]}",
                realize,
            )
        (buf,) = inter
        writers = [i for i in infos if buf in i.writes]
        readers = [i for i in infos if buf in i.reads and i is not me]
        if len(writers) != 1 or readers:
            other = (writers[1:] or readers)[0]
            raise self._error(
                f"reverse_compute_inline: {buf.name!r} is also used by block "
                f"{other.block.name!r}; it must have one producer and one consumer",
                other.realize,
            )
        (prod,) = writers
        pblock = prod.block
        if pblock.init is not None or any(
            iv.kind is not IterKind.SPATIAL for iv in pblock.iter_vars
        ):
            raise self._error(
                f"reverse_compute_inline: the producer {pblock.name!r} is a reduction; a "
                f"consumer cannot be folded into its update (try reverse_compute_at on "
                f"{name!r} instead)",
                prod.realize,
            )
        pstore = self._elementwise_store(prod.realize, "reverse_compute_inline")
        loads = R.loads_of(cstore.value, buf)
        cvars = {id(iv.var) for iv in cblock.iter_vars}
        ana = Analyzer()
        pattern = loads[0].indices
        ok = (
            len(pattern) == len(cblock.iter_vars)
            and all(isinstance(i, Var) and id(i) in cvars for i in pattern)
            and len({id(i) for i in pattern}) == len(pattern)
            and all(
                all(a is b for a, b in zip(ld.indices, pattern)) for ld in loads
            )
        )
        if ok:
            doms = {id(iv.var): iv.dom for iv in cblock.iter_vars}
            ok = all(
                ana.can_prove_equal(doms[id(u)].extent, n) and _is_zero(doms[id(u)].min)
                for u, n in zip(pattern, buf.shape)
            )
        if not ok:
            raise self._error(
                f"reverse_compute_inline: block {name!r} must read {buf.name} at exactly its "
                f"own iteration variables, once per element (it reads "
                f"{', '.join(str(ld) for ld in loads)})",
                realize,
            )
        for other in infos:
            if prod.index < other.index < me.index and R.conflicts(me, other):
                raise self._error(
                    f"reverse_compute_inline: block {other.block.name!r} runs between "
                    f"{pblock.name!r} and {name!r} and uses their buffers",
                    other.realize,
                )
        to_p: dict[Var, PrimExpr] = dict(zip(pattern, pstore.indices))  # type: ignore[arg-type]
        inl = _Inline(buf, [], pstore.value, ())
        value = substitute(inl.visit(cstore.value), to_p)
        indices = tuple(substitute(i, to_p) for i in cstore.indices)
        new_store = BufferStore(cstore.buffer, value, indices)
        creads = [substitute(r, to_p) for r in cblock.reads if r.buffer is not buf]
        new_block = dataclasses.replace(
            pblock,
            body=new_store,
            reads=R.merge_regions([*pblock.reads, *creads]),
            writes=tuple(substitute(w, to_p) for w in cblock.writes),
        )
        mapping: dict[Stmt, Stmt | None] = {
            R.exclusive_top(loc): None,
            prod.realize: dataclasses.replace(prod.realize, block=new_block),
        }
        func = state.replace_many(self._func, mapping)
        self._update(R.drop_alloc(func, buf))
        self._record("reverse_compute_inline", {"block": block}, None)

    def _elementwise_store(self, realize: BlockRealize, what: str) -> BufferStore:
        block: Block = realize.block
        body = block.body
        ivars = [iv.var for iv in block.iter_vars]
        ok = (
            isinstance(body, BufferStore)
            and block.init is None
            and all(iv.kind is IterKind.SPATIAL for iv in block.iter_vars)
            and len(body.indices) == len(ivars)
            and all(isinstance(i, Var) and any(i is v for v in ivars) for i in body.indices)
            and len({id(i) for i in body.indices}) == len(ivars)
        )
        if not ok:
            raise self._error(
                f"{what}: block {block.name!r} is not elementwise: it must be a single "
                "`B[v0, v1, ...] = expr` over its own spatial variables (no reduction, no "
                "init, every index a different block variable)",
                realize,
            )
        return body  # type: ignore[return-value]


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


# As deep as te.compute lets an expression be (mlc.te.constructors.MAX_EXPR_DEPTH): inlining
# a chain of stages must not build a deeper one than the passes can walk.
MAX_INLINED_DEPTH = 250


def _expr_depth(stmt: Stmt) -> int:
    """The depth of the deepest expression in ``stmt`` (iteratively: it may be deep)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(stmt, 0)]
    while stack:
        node, d = stack.pop()
        is_expr = isinstance(node, PrimExpr)
        d = d + 1 if is_expr else 0
        deepest = max(deepest, d)
        for f in getattr(node, "__dataclass_fields__", {}):
            value = getattr(node, f)
            for x in value if isinstance(value, tuple) else (value,):
                if isinstance(x, (PrimExpr, Stmt)):
                    stack.append((x, d))
    return deepest
