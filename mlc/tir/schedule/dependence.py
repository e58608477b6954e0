"""Does one iteration of a loop read what another writes? For ``parallel``, ``vectorize``
and ``bind``, which run the iterations at once.

A block's spatial variables promise that its instances are independent, and TVM trusts
the promise. A block written by hand can break it: ``B[vj] = B[7 - vj]`` reverses ``B`` in
place correctly one iteration after another, and wrongly when the iterations run at once
(lanes 4-7 read what lanes 0-3 already wrote). So before a loop's iterations may run
together, each block under it that reads a buffer it also writes must read it either at
the very element it writes (``B[vi] = B[vi] * 2``, the update of a reduction) or within a
slice that only this iteration writes: a dimension indexed in both by the same block
variable that moves one-to-one with the loop (``A[vi, vj] = A[vi, vj - 1]`` may run its
rows ``vi`` at once, not its columns ``vj``).

Between two blocks under the loop (:func:`conflict_between_blocks`), only the function's
own buffers are checked, in terms of the loops: a read of a parameter another block
writes must lie, with the write, in a slice of one dimension that only this iteration
touches (``C``'s init and update under a parallel row loop: both within its rows). An
intermediate that a ``compute_at`` producer fills is not checked: neighbouring iterations
may write the same elements of it, with the same values.
"""

from __future__ import annotations

from mlc.tir.arith.analyzer import Analyzer
from mlc.tir.expr import BufferLoad, IntImm, IterKind, PrimExpr, Range, Select, Var
from mlc.tir.functor import collect, substitute, uses_var
from mlc.tir.stmt import Block, BlockRealize, BufferStore, For, IfThenElse, Stmt


def conflicting_access(for_: For, br: BlockRealize) -> tuple[BufferStore, BufferLoad] | None:
    """A store and a load of block ``br`` (under ``for_``) whose elements may belong to
    different iterations of ``for_``; None when the iterations are independent."""
    block = br.block
    if collect(block.body, lambda n: isinstance(n, BlockRealize)):
        return None  # a blockized block: its inner blocks were checked when they were made
    stores = collect(block.body, lambda n: isinstance(n, BufferStore))
    loads = collect(block.body, lambda n: isinstance(n, BufferLoad))
    inner = {f.loop_var: Range(f.min, f.extent)
             for f in collect(for_, lambda n: isinstance(n, For))}
    moves = {iv.var for iv, value in zip(block.iter_vars, br.iter_values)
             if _one_to_one(value, for_.loop_var, inner)}
    fixed = _fixed_stores(for_, br, stores)
    loops = {for_.loop_var, *inner}
    varying = {iv.var for iv, value in zip(block.iter_vars, br.iter_values)
               if uses_var(value, lambda x: x in loops)}
    ana = Analyzer()
    for store in stores:
        if id(store) not in fixed and _shared_by_instances(block, br, store, for_.loop_var):
            return store, BufferLoad(store.buffer, store.indices)
        if id(store) in fixed and not any(load.buffer.data is store.buffer.data
                                          for load in loads):
            return store, BufferLoad(store.buffer, store.indices)  # written by every one
        for load in loads:
            if load.buffer.data is not store.buffer.data:
                continue
            same = [len(load.indices) == len(store.indices)
                    and ana.can_prove_equal(r, w) for r, w in zip(load.indices, store.indices)]
            if all(same) and id(store) not in fixed:
                continue  # the element this instance writes
            if any(s and isinstance(w, Var) and w in moves
                   for s, w in zip(same, store.indices)):
                continue  # a slice along a variable only this iteration takes
            if any(_apart(w, r, varying, ana) for w, r in zip(store.indices, load.indices)):
                continue  # another row for every iteration: a scan's state[t] and [t - 1]
            return store, load
    return None


def _apart(w: PrimExpr, r: PrimExpr, varying: set[Var], ana: Analyzer) -> bool:
    """Do the store's index ``w`` and the load's ``r`` of one dimension stay a nonzero
    constant apart, neither moving with the loop or the loops inside it? Then no iteration
    reads an element any iteration writes (``state[vt, vi]`` and ``state[vt - 1, ...]``
    under a loop over ``vi``)."""
    if any(uses_var(e, lambda x: x in varying) for e in (w, r)):
        return False
    gap = ana.simplify(w - r)
    return isinstance(gap, IntImm) and gap.value != 0


def _fixed_stores(for_: For, br: BlockRealize, stores: list[BufferStore]) -> set[int]:
    """The stores (by id) whose element is the same for every iteration of ``for_``: none
    of their indices depends on the loop. A block labelled spatial that updates one element
    (``B[0] = B[0] + A[vk]`` with ``vk = T.axis.spatial(n, k)``, a reduction mislabelled)
    would make every iteration update it at once. Not judged: a loop of one iteration, a
    block with a predicate or a condition in its body (it may pick one iteration)."""
    if isinstance(for_.extent, IntImm) and for_.extent.value <= 1:
        return set()
    pred = br.predicate
    if not (isinstance(pred, IntImm) and pred.value == 1) or collect(
            br.block.body, lambda n: isinstance(n, (IfThenElse, Select))):
        return set()
    loop = for_.loop_var
    movers = {id(iv.var) for iv, value in zip(br.block.iter_vars, br.iter_values)
              if uses_var(value, lambda x: x is loop)} | {id(loop)}
    return {id(s) for s in stores
            if not any(uses_var(i, lambda x: id(x) in movers) for i in s.indices)}


def _shared_by_instances(block: Block, br: BlockRealize, store: BufferStore, loop: Var) -> bool:
    """Do more instances of ``block`` (over the spatial variables the loop moves) store
    through ``store`` than there are elements it can reach? Then two of them store the same
    element: ``A[vi % 4] = A[vi % 4] * 2`` for 8 values of ``vi``."""
    moved = [iv for iv, value in zip(block.iter_vars, br.iter_values)
             if uses_var(value, lambda x: x is loop) and uses_var(
                 store, lambda x, v=iv.var: x is v)]  # type: ignore[misc]
    if not moved or any(iv.kind is not IterKind.SPATIAL for iv in moved):
        return False
    ana = Analyzer()
    for iv in block.iter_vars:
        ana.bind(iv.var, iv.dom)
    instances = 1
    for iv in moved:
        if not isinstance(iv.dom.extent, IntImm):
            return False
        instances *= iv.dom.extent.value
    # the elements reachable when the other variables are fixed: each index's range over
    # the moved variables alone
    others = {iv.var: iv.dom.min for iv in block.iter_vars if all(iv is not m for m in moved)}
    elements = 1
    for index in store.indices:
        lo, hi = ana.const_int_bound(substitute(index, others))
        if not (isinstance(lo, int) and isinstance(hi, int)):
            return False
        elements *= hi - lo + 1
    return instances > elements


def _one_to_one(value: PrimExpr, v: Var, inner: dict[Var, Range]) -> bool:
    """Is ``value`` (a block variable's binding) ``c * v + r``, where ``r``, for fixed
    enclosing loops, spans less than ``|c|`` over the loops inside ``v``'s? Then two
    iterations of ``v`` never give it the same value."""
    return _same_slice(value, value, v, inner)


def _split_affine(e: PrimExpr, v: Var) -> tuple[int, PrimExpr] | None:
    """``(c, r)`` with ``e == c * v + r`` and ``r`` free of ``v`` (``c`` is 0 when ``e``
    does not use ``v``); None when ``e`` is not of that form (a fused or divided loop)."""
    ana = Analyzer()
    at0 = ana.simplify(substitute(e, {v: IntImm(0, v.dtype)}))
    if not uses_var(e, lambda x: x is v):
        return 0, at0
    step = ana.simplify(substitute(e, {v: IntImm(1, v.dtype)}) - at0)
    if not isinstance(step, IntImm) or not ana.can_prove_equal(e, step * v + at0):
        return None
    return step.value, at0


def describe(block: Block, store: BufferStore, load: BufferLoad) -> str:
    w = ", ".join(str(i) for i in store.indices)
    r = ", ".join(str(i) for i in load.indices)
    if not collect(block.body, lambda n: isinstance(n, BufferLoad)
                   and n.buffer.data is store.buffer.data):
        return (f"block {block.name!r} writes {store.buffer.name}[{w}], the same element for "
                "several of its instances")
    return (f"block {block.name!r} writes {store.buffer.name}[{w}] and reads "
            f"{load.buffer.name}[{r}]")


def conflict_between_blocks(for_: For, blocks: list[BlockRealize], params: set[Var]
                            ) -> tuple[Block, BufferStore, Block, BufferLoad] | None:
    """A store of one block and a load of another, under ``for_``, into the same parameter
    buffer (data var in ``params``) that may belong to different iterations of ``for_``."""
    inner = {f.loop_var: Range(f.min, f.extent)
             for f in collect(for_, lambda n: isinstance(n, For))}
    stores: list[tuple[Block, BufferStore, list[PrimExpr]]] = []
    loads: list[tuple[Block, BufferLoad, list[PrimExpr]]] = []
    for br in blocks:
        block = br.block
        if collect(block.body, lambda n: isinstance(n, BlockRealize)):
            continue
        if not any(uses_var(value, lambda x: x is for_.loop_var) for value in br.iter_values):
            continue  # a block the loop does not move (refused above if it reduces)
        bind = {iv.var: value for iv, value in zip(block.iter_vars, br.iter_values)}
        for node in _accesses(block.body, block.init):
            if node.buffer.data not in params:
                continue
            at = [substitute(i, bind) for i in node.indices]
            if isinstance(node, BufferStore):
                stores.append((block, node, at))
            else:
                loads.append((block, node, at))
    for wb, store, w_at in stores:
        for rb, load, r_at in loads:
            if rb is wb or load.buffer.data is not store.buffer.data:
                continue  # one block: conflicting_access
            v = for_.loop_var
            if any(_split_affine(e, v) is None for e in (*w_at, *r_at)):
                continue  # a fused or divided loop: not analysed here, trusted as before
            if not any(_same_slice(w, r, v, inner) for w, r in zip(w_at, r_at)):
                return wb, store, rb, load
    return None


def _accesses(body: Stmt, init: Stmt | None) -> list[BufferStore | BufferLoad]:
    found = collect(body, lambda n: isinstance(n, (BufferStore, BufferLoad)))
    if init is not None:
        found += collect(init, lambda n: isinstance(n, (BufferStore, BufferLoad)))
    return found


def _same_slice(w: PrimExpr, r: PrimExpr, v: Var, inner: dict[Var, Range]) -> bool:
    """Are ``w`` and ``r`` both ``c * v + (something)`` with the same ``c``, whose
    somethings, for fixed enclosing loops, lie in one window narrower than ``|c|`` over the
    loops inside ``v``'s? Then what one iteration writes there, no other reads."""
    pw, pr = _split_affine(w, v), _split_affine(r, v)
    if pw is None or pr is None or pw[0] == 0 or pw[0] != pr[0]:
        return False
    (cw, rest_w), (_, rest_r) = pw, pr
    ana = Analyzer()
    base = ana.simplify(substitute(rest_w, {x: rng.min for x, rng in inner.items()}))
    for var, rng in inner.items():
        ana.bind(var, rng)
    ends: list[float] = []
    for rest in (rest_w, rest_r):
        spread = ana.simplify(rest - base)
        if uses_var(spread, lambda x: x not in inner):
            return False
        ends.extend(ana.const_int_bound(spread))
    return bool(max(ends) - min(ends) < abs(cw))


def describe_between(store_block: Block, store: BufferStore, load_block: Block,
                     load: BufferLoad) -> str:
    w = ", ".join(str(i) for i in store.indices)
    r = ", ".join(str(i) for i in load.indices)
    return (f"block {store_block.name!r} writes {store.buffer.name}[{w}] and block "
            f"{load_block.name!r} reads {load.buffer.name}[{r}]")
