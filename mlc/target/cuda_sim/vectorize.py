"""Run the iterations of a thread's loop at once, when no iteration touches what another
one writes: the checking interpreter's fast path.

The interpreter (:mod:`mlc.target.cuda_sim.interp`) runs all threads of the blocks at once,
one numpy operation per statement for every thread; a loop inside a thread still runs one
iteration after the other, each costing numpy's overhead (tens of microseconds) for a few
thousand numbers. The inner loops of a register-tiled matmul (``for i_2, j_2: C_local[i_2 *
8 + j_2] += A_shared[...] * B_shared[...]``) run 64 such steps per ``k``; run as one step
over (thread, i_2, j_2) they cost one::

    for i_2 in range(8):                      i_2 = [0, 1, ..., 7] for each thread
        for j_2 in range(8):          ->      (then j_2 the same way)
            C_local[i_2 * 8 + j_2] += ...     C_local[i_2 * 8 + j_2] += ...   (512 lanes)

The iterations become extra *lanes* that belong to the same thread (the checker sees the
thread, so they never race with each other). That is exact when no element written by one
iteration is read or written by another iteration of the same thread: then each statement
may run for every iteration before the next statement, as for threads. :func:`independent`
decides it before the loop runs, from the index expressions of every buffer the body
writes, evaluated over the whole iteration space (every iteration of the loop and of the
loops inside it, for every thread). A body whose written indices depend on memory, or
that holds a barrier, a warp shuffle or an allocation, runs iteration by iteration, as
does a loop carried from one iteration to the next (``for k: acc[0] += ...``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlc.target.cuda_sim.evaluate import _tdiv, _tmod
from mlc.target.gpu.split_host_device import is_barrier
from mlc.tir import expr as E
from mlc.tir import stmt as S
from mlc.tir.functor import contains, post_order_visit

MAX_ELEMENTS = 1 << 20
"""Elements one vectorised step may hold (thread x iteration x inner iterations x vector
lanes); a longer loop runs in chunks of iterations of that size."""

SHUFFLE = "tvm_warp_shuffle_down"


class _Unknown(Exception):
    """An index that cannot be computed before the loop runs (it reads memory, or uses a
    construct the planner does not evaluate)."""


class LoopShape:
    """What is known of a loop's body without running it: the buffers it writes and the
    depth of the loops inside. ``None`` from :func:`loop_shape` when it cannot run at once."""

    def __init__(self, written: frozenset[int], depth: int,
                 key_vars: tuple[E.Var, ...] = ()) -> None:
        self.written = written
        self.depth = depth
        # the variables from outside that the plan reads (indices of written buffers, inner
        # loop bounds, lets): the plan holds while they keep their values
        self.key_vars = key_vars


def loop_shape(loop: S.For) -> LoopShape | None:
    """The body's written buffers and loop depth, or None when its iterations must run one
    by one whatever the indices (a barrier, a warp shuffle, an allocation inside)."""
    written: set[int] = set()
    blocked = False

    def visit(n: object) -> None:
        nonlocal blocked
        if isinstance(n, S.BufferStore):
            written.add(id(n.buffer.data))
        elif isinstance(n, (S.Allocate, S.KernelLaunch)) or (
                isinstance(n, S.Evaluate) and is_barrier(n)) or (
                isinstance(n, E.Call) and n.op == SHUFFLE):
            blocked = True

    post_order_visit(loop.body, visit)
    if blocked or not written:
        return None
    return LoopShape(frozenset(written), _depth(loop.body), _key_vars(loop, written))


def _key_vars(loop: S.For, written: set[int]) -> tuple[E.Var, ...]:
    planned: list[Any] = []

    def visit(n: object) -> None:
        if isinstance(n, (S.BufferStore, E.BufferLoad)) and id(n.buffer.data) in written:
            planned.extend(n.indices)
        elif isinstance(n, S.For):
            planned.extend((n.min, n.extent))
        elif isinstance(n, S.LetStmt):
            planned.append(n.value)

    post_order_visit(loop.body, visit)
    inside = {id(v) for v in _bound(loop)}
    found: dict[int, E.Var] = {}

    def visit_var(n: object) -> None:
        if isinstance(n, E.Var) and id(n) not in inside:
            found.setdefault(id(n), n)

    for e in planned:
        post_order_visit(e, visit_var)
    return tuple(found.values())


def _bound(loop: S.For) -> list[E.Var]:
    bound = [loop.loop_var]

    def visit(n: object) -> None:
        if isinstance(n, S.For):
            bound.append(n.loop_var)
        elif isinstance(n, (S.LetStmt, E.Let)):
            bound.append(n.var)

    post_order_visit(loop.body, visit)
    return bound


def _depth(s: S.Stmt) -> int:
    if isinstance(s, S.For):
        return 1 + _depth(s.body)
    if isinstance(s, S.SeqStmt):
        return max((_depth(c) for c in s.seq), default=0)
    if isinstance(s, (S.LetStmt, S.Allocate)):
        return _depth(s.body)
    if isinstance(s, S.IfThenElse):
        return max(_depth(s.then_case), _depth(s.else_case) if s.else_case else 0)
    return 0


class _Planner:
    """Every access of a written buffer in ``loop``'s body, over the iteration space: arrays
    with axes (thread, iteration of ``loop``, inner loops..., vector lane)."""

    def __init__(self, interp: Any, loop: S.For, shape: LoopShape, lo: int, count: int,
                 rows: np.ndarray | None) -> None:
        self.interp = interp
        self.rows = rows  # the lanes that run the loop (None: all)
        self.n = interp.n_lanes if rows is None else len(rows)
        self.written = shape.written
        self.ndim = 3 + shape.depth
        self.local: dict[int, Any] = {id(loop.loop_var): self._axis(np.arange(lo, lo + count), 1)}
        self.inner = 0
        self.accesses: list[tuple[int, np.ndarray, bool]] = []  # (buffer, flat index, write)

    def _axis(self, values: np.ndarray, axis: int) -> np.ndarray:
        shape = [1] * self.ndim
        shape[axis] = len(values)
        return values.astype(np.int64).reshape(shape)

    # -- statements ---------------------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> None:
        if isinstance(s, S.SeqStmt):
            for c in s.seq:
                self.stmt(c)
        elif isinstance(s, S.BufferStore):
            self.loads(s.value)
            for i in s.indices:
                self.loads(i)
            if id(s.buffer.data) in self.written:
                self.accesses.append((id(s.buffer.data), self.flat(s.buffer, s.indices), True))
        elif isinstance(s, S.For):
            lo, ext = self.expr(s.min), self.expr(s.extent)
            if np.ndim(lo) or np.ndim(ext):
                raise _Unknown("an inner loop whose bounds differ between iterations")
            self.inner += 1
            self.local[id(s.loop_var)] = self._axis(np.arange(int(lo), int(lo) + int(ext)),
                                                    1 + self.inner)
            self.stmt(s.body)
            self.inner -= 1
        elif isinstance(s, S.LetStmt):
            self.loads(s.value)
            try:
                self.local[id(s.var)] = self.expr(s.value)
            except _Unknown:
                self.local[id(s.var)] = None  # fine unless a written buffer's index uses it
            self.stmt(s.body)
        elif isinstance(s, S.IfThenElse):  # both sides, whatever the condition
            self.loads(s.condition)
            self.stmt(s.then_case)
            if s.else_case is not None:
                self.stmt(s.else_case)
        elif isinstance(s, S.Evaluate):
            self.loads(s.value)
        else:
            raise _Unknown(type(s).__name__)

    def loads(self, e: Any) -> None:
        """Record the loads of written buffers inside ``e``."""
        found: list[E.BufferLoad] = []

        def visit(n: object) -> None:
            if isinstance(n, E.BufferLoad) and id(n.buffer.data) in self.written:
                found.append(n)
            elif isinstance(n, E.Let):
                raise _Unknown("a let inside an expression")

        post_order_visit(e, visit)
        for load in found:
            self.accesses.append((id(load.buffer.data), self.flat(load.buffer, load.indices),
                                  False))

    def flat(self, buf: S.Buffer, indices: tuple[E.PrimExpr, ...]) -> np.ndarray:
        if len(indices) == 1:
            return np.asarray(self.expr(indices[0]), np.int64)
        strides: list[Any] = []
        if buf.strides:
            strides = [self.expr(st) for st in buf.strides]
        else:
            acc: Any = 1
            for d in reversed(buf.shape):
                strides.insert(0, acc)
                acc = acc * self.expr(d)
        flat: Any = 0
        for i, st in zip(indices, strides):
            flat = flat + self.expr(i) * st
        return np.asarray(flat, np.int64)

    # -- index arithmetic ---------------------------------------------------------------------
    def expr(self, e: Any) -> Any:
        if isinstance(e, E.IntImm):
            return np.int64(e.value)
        if isinstance(e, E.Var):
            key = id(e)
            if key in self.local:
                value = self.local[key]
                if value is None:
                    raise _Unknown(e.name)
                return value
            value = self.interp.env.get(key)
            if value is None or isinstance(value, str):
                raise _Unknown(e.name)
            value = np.asarray(value)
            if value.ndim == 0:
                return value.astype(np.int64) if value.dtype.kind in "iub" else value
            if value.ndim != 2 or value.shape[1] != 1 or \
                    value.shape[0] not in (1, self.interp.n_lanes):
                raise _Unknown(e.name)  # a per-thread vector: left to the iteration order
            if value.shape[0] > 1 and self.rows is not None:
                value = value[self.rows]
            return value.reshape((value.shape[0],) + (1,) * (self.ndim - 1))
        op = _OPS.get(type(e))
        if op is not None:
            a, b = self.expr(e.a), self.expr(e.b)
            if type(e) in _DIVISIONS:
                b = np.where(np.asarray(b) == 0, 1, b)
            with np.errstate(all="ignore"):
                return op(a, b)
        if isinstance(e, E.Ramp):
            base, stride = self.expr(e.base), self.expr(e.stride)
            return base + stride * self._axis(np.arange(e.lanes), self.ndim - 1)
        if isinstance(e, E.Broadcast):
            return self.expr(e.value)
        if isinstance(e, E.Cast) and e.dtype.startswith(("int", "uint")):
            return self.expr(e.value)
        raise _Unknown(type(e).__name__)


_OPS: dict[type, Any] = {
    E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply, E.FloorDiv: np.floor_divide,
    E.FloorMod: np.mod, E.Div: _tdiv, E.Mod: _tmod, E.Min: np.minimum, E.Max: np.maximum,
}
_DIVISIONS = (E.FloorDiv, E.FloorMod, E.Div, E.Mod)


def independent(interp: Any, loop: S.For, shape: LoopShape, lo: int, count: int,
                mask: np.ndarray | None = None) -> tuple[bool, bool]:
    """Can iterations ``lo .. lo + count - 1`` of ``loop`` run at once for every thread of
    ``interp``, and the loops inside it with them? (True, _) when, per thread, no element of
    a buffer the body writes is written by one iteration and read or written by another (the
    loops inside run over their whole range, both sides of every ``if`` count); (_, True)
    when the same holds for the iterations of the loops inside as well. Only the lanes of
    ``mask`` (those that run the loop) count."""
    rows = None
    if mask is not None and mask.ndim == 2 and mask.shape == (interp.n_lanes, 1):
        rows = np.flatnonzero(mask[:, 0])
    planner = _Planner(interp, loop, shape, lo, count, rows)
    try:
        planner.stmt(loop.body)
    except _Unknown:
        return False, False
    if not planner.accesses:
        return True, True
    ndim = planner.ndim
    extents = [planner.n, count] + [1] * (ndim - 2)
    for _, flat, _ in planner.accesses:
        for axis in range(2, ndim - 1):
            if flat.ndim == ndim:
                extents[axis] = max(extents[axis], flat.shape[axis])
    strides = [0] * ndim
    step = 1
    for axis in range(ndim - 2, 1, -1):  # inner loops, innermost fastest
        strides[axis] = step
        step *= extents[axis]
    strides[1] = step
    whole = step * count
    outer_ok = nest_ok = True
    by_buffer: dict[int, list[tuple[np.ndarray, bool]]] = {}
    for key, flat, write in planner.accesses:
        by_buffer.setdefault(key, []).append((flat, write))
    for key, accesses in by_buffer.items():
        if not any(write for _, write in accesses):
            continue
        for flat, write in accesses:  # a write that stays put while a loop moves
            if write and (flat.ndim < 2 or flat.shape[1] == 1) and count > 1:
                return False, False
            if write and nest_ok and any(
                    extents[axis] > 1 and (flat.ndim < ndim or flat.shape[axis] == 1)
                    for axis in range(2, ndim - 1)):
                nest_ok = False
        size = interp.mem[key].shape[-1] if key in interp.mem else None
        keys, iters, writes = [], [], []
        for flat, write in accesses:
            dims = np.broadcast_shapes(flat.shape, (planner.n, count) + (1,) * (ndim - 2))
            elems = np.broadcast_to(flat, dims)
            if size is None or elems.size and (elems.min() < 0 or elems.max() >= size):
                return False, False  # run one by one and let the bad index be reported
            grid: tuple[Any, ...] = tuple(np.indices(dims, sparse=True))
            it: Any = 0
            for axis in range(1, len(dims) - 1):
                it = it + grid[axis] * strides[axis]
            lane = grid[0]
            keys.append(np.broadcast_to(lane * size + elems, dims).reshape(-1))
            iters.append(np.broadcast_to(it, dims).reshape(-1))
            writes.append(np.full(elems.size, write))
        k = np.concatenate(keys)
        written = np.sort(k[np.concatenate(writes)])
        it_all = np.concatenate(iters)
        if outer_ok and _again(k, it_all // strides[1], count, written):
            outer_ok = nest_ok = False
        elif nest_ok and _again(k, it_all, whole, written):
            nest_ok = False
        if not outer_ok:
            return False, False
    return outer_ok, nest_ok


def _again(keys: np.ndarray, ids: np.ndarray, span: int, written: np.ndarray) -> bool:
    """Is an element of ``written`` touched by two different ``ids`` (iterations, below
    ``span``)? Sorting, not hashing: numpy's hashed unique is slow on strided keys."""
    if int(keys.max(initial=0)) < (1 << 62) // max(span, 1):
        pairs = np.sort(keys * span + ids)
        pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]]
        element = pairs // span
    else:
        order = np.lexsort((ids, keys))
        ks, ids_s = keys[order], ids[order]
        keep = np.r_[True, (ks[1:] != ks[:-1]) | (ids_s[1:] != ids_s[:-1])]
        element = ks[keep]
    again = element[1:][element[1:] == element[:-1]]  # sorted: neighbours
    if not again.size:
        return False
    at = np.minimum(np.searchsorted(written, again), len(written) - 1)
    return bool((written[at] == again).any())


def inner_loops(loop: S.For) -> frozenset[int]:
    """The loops inside ``loop`` (ids)."""
    found: set[int] = set()

    def visit(n: object) -> None:
        if isinstance(n, S.For):
            found.add(id(n))

    post_order_visit(loop.body, visit)
    return frozenset(found)


def free_vars(loop: S.For) -> tuple[E.Var, ...]:
    """The variables ``loop``'s body reads that are defined outside it."""
    inside = {id(v) for v in _bound(loop)}
    used: dict[int, E.Var] = {}

    def visit(n: object) -> None:
        if isinstance(n, E.Var) and id(n) not in inside:
            used[id(n)] = n

    post_order_visit(loop.body, visit)
    return tuple(used.values())


def trips(loop: S.For) -> int:
    """Iterations of the loops inside ``loop`` times the widest vector in it (constant
    extents; one for the others): the size of one iteration's plan."""
    inner = 1
    widest = 1

    def visit(n: object) -> None:
        nonlocal inner, widest
        if isinstance(n, S.For) and isinstance(n.extent, E.IntImm):
            inner = max(inner, _product(n))
        elif isinstance(n, E.Ramp):
            widest = max(widest, n.lanes)

    post_order_visit(loop.body, visit)
    return inner * widest


def _product(loop: S.For) -> int:
    total = loop.extent.value if isinstance(loop.extent, E.IntImm) else 1
    body = loop.body
    best = 1
    stack: list[S.Stmt] = [body]
    while stack:
        s = stack.pop()
        if isinstance(s, S.For):
            best = max(best, _product(s))
        elif isinstance(s, S.SeqStmt):
            stack.extend(s.seq)
        elif isinstance(s, (S.LetStmt, S.Allocate)):
            stack.append(s.body)
        elif isinstance(s, S.IfThenElse):
            stack.append(s.then_case)
            if s.else_case is not None:
                stack.append(s.else_case)
    return int(total) * best


def chunk(interp: Any, shape: LoopShape, count: int, inner: int = 1) -> int:
    """Iterations per step: as many as :data:`MAX_ELEMENTS` allows for the running threads
    and ``inner`` (the loops inside times the widest vector, :func:`trips`)."""
    return max(1, min(count, MAX_ELEMENTS // max(1, interp.n_lanes * inner)))


class Accumulators:
    """The stores of a loop body that carry a value from one iteration to the next through
    one element per thread: ``X[e] = X[e] + v`` (``"add"``) or ``X[e] = v`` (``"set"``),
    with ``e`` the same in every iteration and ``v`` not reading ``X`` (a dot product's
    ``Y[i, j] = Y[i, j] + A[i, k] * B[k, j]``; its ``Y[i, j] = 0`` under ``if k == 0``)."""

    def __init__(self, stores: dict[int, tuple[str, E.PrimExpr, S.BufferStore]],
                 buffers: frozenset[int]) -> None:
        self.stores = stores      # id(store) -> (kind, the value added or set, the store)
        self.buffers = buffers    # the accumulated buffers (data ids)


def accumulators(loop: S.For, shape: LoopShape) -> Accumulators | None:
    """The accumulators of ``loop``'s body (see :class:`Accumulators`), or None when some
    written buffer is not one, or the body holds a loop."""
    stores: list[S.BufferStore] = []
    loads: dict[int, int] = {}
    inner = False

    def visit(n: object) -> None:
        nonlocal inner
        if isinstance(n, S.BufferStore):
            stores.append(n)
        elif isinstance(n, E.BufferLoad):
            loads[id(n.buffer.data)] = loads.get(id(n.buffer.data), 0) + 1
        elif isinstance(n, S.For):
            inner = True

    post_order_visit(loop.body, visit)
    if inner:
        return None
    inside = _bound(loop)  # the loop's variable and the lets in its body
    found: dict[int, tuple[str, E.PrimExpr, S.BufferStore]] = {}
    where: dict[int, str] = {}
    adds: dict[int, int] = {}
    for st in stores:
        key = id(st.buffer.data)
        index = str(st.indices)
        if where.setdefault(key, index) != index or _lanes_of(st) != 1:
            return None
        if any(_uses(i, v) for i in st.indices for v in inside) or \
                any(_reads(i) for i in st.indices):
            return None  # the element moves with the iterations, or comes from data
        value = st.value
        kind, operand = "set", value
        if isinstance(value, E.Add):
            for mine, other in ((value.a, value.b), (value.b, value.a)):
                if isinstance(mine, E.BufferLoad) and id(mine.buffer.data) == key and \
                        str(mine.indices) == index:
                    kind, operand = "add", other
                    break
        if _reads_buffer(operand, key):
            return None
        if kind == "add":
            adds[key] = adds.get(key, 0) + 1
        found[id(st)] = (kind, operand, st)
    if not found or any(loads.get(k, 0) != adds.get(k, 0) for k in where):
        return None  # X read elsewhere than as the X[e] of its own updates
    return Accumulators(found, frozenset(where))


def _lanes_of(st: S.BufferStore) -> int:
    from mlc.tir import dtype as dt

    return max(dt.lanes(st.value.dtype), *(dt.lanes(i.dtype) for i in st.indices))


def _uses(node: Any, var: E.Var) -> bool:
    return contains(node, lambda n: n is var)


def _reads(node: Any) -> bool:
    return contains(node, lambda n: isinstance(n, E.BufferLoad))


def _reads_buffer(node: Any, key: int) -> bool:
    return contains(node, lambda n: isinstance(n, E.BufferLoad) and id(n.buffer.data) == key)

