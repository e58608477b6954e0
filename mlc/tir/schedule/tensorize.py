"""Matching a tile against a tensor intrinsic's description, and instantiating its
implementation on the tile.

Both sides are a chain of loops around one block. We line the loops up (same number, same
extents), substitute each block's bindings into its body, so both bodies are written with
the (shared) loop variables, then walk the buffer accesses of both in the same order::

    real:  C[vi0 * 16 + i, vj0 * 16 + j] = C[...] + A[vi0 * 16 + i, vk0 * 16 + k] * ...
    desc:  C[i, j]                       = C[i, j] + A[i, k] * ...

Each description buffer must always map to the same real buffer, at the same *base*
(``real index - desc index``, here ``[vi0 * 16, vj0 * 16]``), and the base may not depend on
the loops of the tile. With the real accesses rewritten to ``desc_buffer[index - base]``
the two bodies must be structurally equal. The implementation's buffers are then replaced
by ``real_buffer[base + index]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from mlc.errors import ScheduleError
from mlc.tir.analysis import structural_equal
from mlc.tir.analysis.structural import assert_structural_equal
from mlc.tir.arith import Analyzer
from mlc.tir.arith.linear import expr_key
from mlc.tir.expr import BufferLoad, IntImm, PrimExpr, Range, Var
from mlc.tir.functor import IRMutator, post_order_visit, substitute, uses_var
from mlc.tir.stmt import Block, Buffer, BufferRegion, BufferStore, For, LetStmt, Stmt
from mlc.tir.tensor_intrin import TensorIntrin, loop_nest, root_body

ErrorFn = Callable[..., ScheduleError]


@dataclass
class Match:
    """Where the description's buffers lie in the program: desc buffer -> (buffer, base)."""

    buffers: dict[Buffer, tuple[Buffer, tuple[PrimExpr, ...]]]


def match(block: Block, intrin: TensorIntrin, error: ErrorFn) -> Match:
    """Check that ``block``'s body computes ``intrin.desc``; return the buffer mapping."""
    real = loop_nest(block.body)
    desc = loop_nest(root_body(intrin.desc)[0])
    assert desc is not None  # checked by TensorIntrin.register

    def fail(why: str) -> ScheduleError:
        return error(
            f"tensorize: block {block.name!r} does not match the description of tensor "
            f"intrinsic {intrin.name!r}: {why}\n\n--- the description ---\n{intrin.desc}\n\n"
            f"--- the block (in the program below) ---\n{block}", block)

    if real is None:
        raise fail("its body must be a chain of loops around one block (use blockize first, "
                   "or pass the loop whose subtree is the tile)")
    (r_loops, r_real), (d_loops, d_real) = real, desc
    if len(r_loops) != len(d_loops):
        raise fail(f"the tile has {len(r_loops)} loops, the description {len(d_loops)}")
    ana = Analyzer()
    loop_map: dict[Var, PrimExpr] = {}
    for rf, df in zip(r_loops, d_loops):
        re, de = ana.simplify(rf.extent), ana.simplify(df.extent)
        same = isinstance(re, IntImm) and isinstance(de, IntImm) and re.value == de.value
        if not same or not _is_zero(ana.simplify(rf.min)) or not _is_zero(ana.simplify(df.min)):
            raise fail(f"loop {rf.loop_var.name!r} runs over {rf.min}..+{rf.extent} but the "
                       f"description's loop {df.loop_var.name!r} over {df.min}..+{df.extent}")
        loop_map[rf.loop_var] = df.loop_var
        ana.bind(df.loop_var, Range(df.min, df.extent))
    if not (_is_true(r_real.predicate) and _is_true(d_real.predicate)):
        raise fail("blocks with a predicate (a split that does not divide) cannot be matched")
    r_body = _bound_body(r_real.block, r_real.iter_values, loop_map)
    d_body = _bound_body(d_real.block, d_real.iter_values, {})
    r_acc, d_acc = _accesses(r_body), _accesses(d_body)
    if len(r_acc) != len(d_acc):
        raise fail(f"the tile's body accesses buffers {len(r_acc)} times, the description's "
                   f"{len(d_acc)} times")
    params = {id(p) for p in intrin.desc.params}
    d_ids = {id(f.loop_var) for f in d_loops}
    buffers: dict[Buffer, tuple[Buffer, tuple[PrimExpr, ...]]] = {}
    for r, d in zip(r_acc, d_acc):
        rb, db = r.buffer, d.buffer
        if type(r) is not type(d) or rb.ndim != db.ndim or rb.dtype != db.dtype:
            raise fail(f"`{_show(r)}` does not correspond to `{_show(d)}` (kind, rank or dtype)")
        if id(db) not in params:
            raise fail(f"the description uses {db.name!r}, which is not one of its parameters")
        base = tuple(ana.simplify(ri - di) for ri, di in zip(r.indices, d.indices))
        if any(uses_var(b, lambda v: id(v) in d_ids) for b in base):
            raise fail(f"`{_show(r)}` does not move with the tile loops the way `{_show(d)}` "
                       "does (their difference depends on the loops)")
        if db in buffers:
            rb0, base0 = buffers[db]
            if rb0 is not rb or [expr_key(x) for x in base0] != [expr_key(x) for x in base]:
                raise fail(f"the description's {db.name!r} is used both as "
                           f"{rb0.name}{list(base0)}+ and as {rb.name}{list(base)}+")
        elif any(rb is other for other, _ in buffers.values()):
            raise fail(f"{rb.name!r} corresponds to two different buffers of the description")
        buffers[db] = (rb, base)
    back = {rb: (db, base) for db, (rb, base) in buffers.items()}
    r_local = _Localize(back, ana).visit(r_body)
    d_local = _Localize({}, ana).visit(d_body)
    if not structural_equal(r_local, d_local):
        try:
            assert_structural_equal(r_local, d_local)
            diff = ""
        except AssertionError as err:
            diff = "\n".join(str(err).split("\n")[:3])
        raise fail("the computations differ.\n" + diff)
    return Match(buffers)


def _bound_body(block: Block, values: tuple[PrimExpr, ...], loop_map: dict[Var, PrimExpr]) -> Stmt:
    """The block's body with its iteration variables replaced by their bindings."""
    sub = {iv.var: substitute(v, loop_map) for iv, v in zip(block.iter_vars, values)}
    return substitute(block.body, sub)  # type: ignore[no-any-return]


def _accesses(body: Stmt) -> list[Any]:
    found: list[Any] = []
    post_order_visit(body, lambda n: found.append(n) if isinstance(n, (BufferLoad,
                                                                      BufferStore)) else None)
    return found


def _show(acc: Any) -> str:
    return f"{acc.buffer.name}[{', '.join(str(i) for i in acc.indices)}]"


class _Localize(IRMutator):
    """Accesses of real buffers become accesses of the description's, at ``index - base``;
    every index is simplified so both sides read the same way."""

    def __init__(self, back: dict[Buffer, tuple[Buffer, tuple[PrimExpr, ...]]],
                 ana: Analyzer) -> None:
        self.back, self.ana = back, ana

    def _map(self, buf: Buffer,
             indices: tuple[PrimExpr, ...]) -> tuple[Buffer, tuple[PrimExpr, ...]]:
        indices = tuple(self.visit(i) for i in indices)
        if buf in self.back:
            db, base = self.back[buf]
            return db, tuple(self.ana.simplify(i - b) for i, b in zip(indices, base))
        return buf, tuple(self.ana.simplify(i) for i in indices)

    def visit_BufferLoad(self, op: BufferLoad) -> Any:
        buf, idx = self._map(op.buffer, op.indices)
        return BufferLoad(buf, idx)

    def visit_BufferStore(self, op: BufferStore) -> Any:
        buf, idx = self._map(op.buffer, op.indices)
        return BufferStore(buf, self.visit(op.value), idx)


# ---------------------------------------------------------------------------------------------
# the implementation, placed on the tile


def instantiate(intrin: TensorIntrin, m: Match,
                fresh: Callable[[str], str]) -> tuple[Stmt, tuple[Buffer, ...]]:
    """The implementation's body with fresh loop/block names and its parameters pointing into
    the tile; returns it with the buffers it allocates (fresh copies)."""
    body, allocs = root_body(intrin.impl)
    places: dict[Buffer, tuple[Buffer, tuple[PrimExpr, ...]]] = {}
    for d, i in zip(intrin.desc.params, intrin.impl.params):
        if d in m.buffers:
            places[i] = m.buffers[d]
    defined: list[Var] = []
    post_order_visit(body, lambda n: _collect_defs(n, defined))
    var_map: dict[Var, PrimExpr] = {v: Var(fresh(v.name), v.dtype) for v in defined}
    buf_map: dict[Buffer, Buffer] = {}
    for loc_buf in _allocated(body, allocs):
        new_name = fresh(loc_buf.name)
        buf_map[loc_buf] = replace(loc_buf, name=new_name, data=Var(new_name, "handle"))
    mutator = _Place(places, var_map, buf_map, fresh, intrin)
    new_body = mutator.visit(body)
    return new_body, tuple(buf_map[b] for b in allocs)


def _collect_defs(node: Any, out: list[Var]) -> None:
    if isinstance(node, For):
        out.append(node.loop_var)
    elif isinstance(node, Block):
        out.extend(iv.var for iv in node.iter_vars)
    elif isinstance(node, LetStmt):
        out.append(node.var)


def _allocated(body: Stmt, root_allocs: tuple[Buffer, ...]) -> list[Buffer]:
    found = list(root_allocs)
    post_order_visit(body, lambda n: found.extend(n.alloc_buffers) if isinstance(n, Block)
                     else None)
    return found


class _Place(IRMutator):
    def __init__(self, places: dict[Buffer, tuple[Buffer, tuple[PrimExpr, ...]]],
                 var_map: dict[Var, PrimExpr], buf_map: dict[Buffer, Buffer],
                 fresh: Callable[[str], str], intrin: TensorIntrin) -> None:
        self.places, self.var_map, self.buf_map = places, var_map, buf_map
        self.fresh, self.intrin = fresh, intrin

    def visit_Var(self, v: Var) -> Any:
        return self.var_map.get(v, v)

    def visit_Buffer(self, b: Buffer) -> Any:
        if b in self.places:
            raise ScheduleError(
                f"tensor intrinsic {self.intrin.name!r}: its implementation uses buffer "
                f"{b.name!r} in a way tensorize cannot place on the tile (only loads, stores "
                "and block regions can be moved)")
        return self.buf_map.get(b, b)

    def _point(self, b: Buffer, idx: tuple[PrimExpr, ...]) -> tuple[Buffer, tuple[PrimExpr, ...]]:
        idx = tuple(self.visit(i) for i in idx)
        if b not in self.places:
            return self.visit_Buffer(b), idx
        real, base = self.places[b]
        return real, tuple(i if _is_zero(o) else o + i for o, i in zip(base, idx))

    def visit_BufferLoad(self, op: BufferLoad) -> Any:
        buf, idx = self._point(op.buffer, op.indices)
        return BufferLoad(buf, idx)

    def visit_BufferStore(self, op: BufferStore) -> Any:
        buf, idx = self._point(op.buffer, op.indices)
        return BufferStore(buf, self.visit(op.value), idx)

    def visit_BufferRegion(self, op: BufferRegion) -> Any:
        ranges = tuple(self.visit(r) for r in op.region)
        if op.buffer not in self.places:
            return BufferRegion(self.visit_Buffer(op.buffer), ranges)
        real, base = self.places[op.buffer]
        return BufferRegion(real, tuple(
            r if _is_zero(o) else Range(o + r.min, r.extent) for o, r in zip(base, ranges)))

    def visit_Block(self, op: Block) -> Any:
        new = self.generic_visit(op)
        return replace(new, name=self.fresh(op.name), init=None,
                       alloc_buffers=tuple(self.buf_map.get(b, b) for b in op.alloc_buffers))


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value != 0
