"""GPU lowering: split a lowered PrimFunc into kernels and insert ``__syncthreads()``.

After :func:`mlc.transform.lower`, loops bound with ``bind(loop, "threadIdx.x")`` are still loops
(``For`` with kind THREAD_BINDING). On a GPU they are not loops: every thread of a block runs
the body once, with the loop variable equal to its own index. :func:`split_host_device` reads
the program that way and returns one :class:`Kernel` per GPU launch::

    for i_0 in thread_binding(8, "blockIdx.x"):         # kernel "add_kernel0"
        for i_1 in thread_binding(64, "threadIdx.x"):    #   grid (8,), block (64,)
            C[i_0 * 64 + i_1] = A[...] + B[...]

becomes the *per-thread program*, what one thread executes::

    i_0 = blockIdx.x
    i_1 = threadIdx.x
    C[i_0 * 64 + i_1] = A[...] + B[...]

Rules, as on a real GPU (and as in TVM):

* the launch size of an axis is the largest extent bound to it; a loop with a smaller extent
  becomes a guard ``if threadIdx.x < extent``; loops bound to the same axis in different
  places (even nested) all read the same index;
* ``"shared"`` buffers live once per thread block (``__shared__``), wherever lowering put
  their allocation; ``"local"`` buffers once per thread;
* stores outside every threadIdx loop (say, the final sum of partial sums in shared
  memory) run in the first thread only, not in all threads at once (that would race);
* a barrier (``tvm_storage_sync``) goes between a statement that writes a shared buffer and a
  later one that reads or writes it (and the other way round), and at the end of a loop body
  that both writes and reads one (the next iteration would overwrite what others still read).
  Barriers only go where every thread of the block gets to (never under a thread guard).

The host part of the program (what is outside every bound loop) may only allocate global
intermediates, launch kernels one after another and run serial loops around launches (the
time loop of a ``te.scan``: every step launches its kernels, which read the loop variable as
an argument); anything else is an error that tells the student what to bind.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mlc.errors import CodegenError, LoweringError
from mlc.tir import dtype as dt
from mlc.tir.arith import Analyzer, eval_region
from mlc.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    IntImm,
    Mul,
    Or,
    PrimExpr,
    Ramp,
    Range,
    StringImm,
    Sub,
    Var,
    as_int,
    const,
)
from mlc.tir.functor import (
    IRMutator,
    IRVisitor,
    collect,
    post_order_visit,
    substitute,
    uses_var,
)
from mlc.tir.stmt import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)
from mlc.tir.thread_tag import BLOCK_AXES, THREAD_AXES

MAX_THREADS_PER_BLOCK = 1024
MAX_SHARED_BYTES = 48 * 1024

BIND_HINT = (
    'bind the outer loop to blockIdx.x and the inner one to threadIdx.x, e.g. '
    'xo, xi = s[C].split(C.op.axis[0], factor=64); s[C].bind(xo, te.thread_axis("blockIdx.x")); '
    's[C].bind(xi, te.thread_axis("threadIdx.x")) (or sch.bind(loop, "blockIdx.x") with a '
    "tir.Schedule)"
)


def barrier() -> Stmt:
    """The statement ``__syncthreads()``: every thread of the block waits here."""
    return Evaluate(Call("int32", "tvm_storage_sync", (StringImm("shared"),)))


def is_barrier(s: Stmt) -> bool:
    return (
        isinstance(s, Evaluate)
        and isinstance(s.value, Call)
        and s.value.op in ("tvm_storage_sync", "syncthreads")
    )


Kernel = KernelLaunch  # the name this module used before kernels became IR nodes


def split_host_device(func: PrimFunc) -> PrimFunc:
    """The pass that makes GPU kernels (see the module docstring): every outermost loop
    bound to a GPU axis becomes a :class:`~mlc.tir.stmt.KernelLaunch` whose body is the
    per-thread program; what stays around the launches is the host program, which may only
    allocate global intermediates. Barriers come in the next pass,
    :func:`insert_thread_sync`."""
    shared_at_host: list[Buffer] = []
    intermediates: list[Buffer] = []
    host_loops: list[Var] = []
    count = 0

    def host(s: Stmt) -> Stmt:
        nonlocal count
        if isinstance(s, SeqStmt):
            return seq(*(host(child) for child in s.seq))
        if isinstance(s, Allocate):
            if s.buffer.scope == "shared":
                shared_at_host.append(s.buffer)
                return host(s.body)
            if s.buffer.scope == "local":
                raise CodegenError(
                    f"the local buffer {s.buffer.name!r} is allocated outside every GPU "
                    "thread loop; compute_at it inside the loop bound to threadIdx"
                )
            intermediates.append(s.buffer)
            return Allocate(s.buffer, host(s.body))
        if isinstance(s, For) and s.kind == ForKind.THREAD_BINDING:
            count += 1
            return _make_kernel(func, s, f"{func.name}_kernel{count - 1}", shared_at_host,
                                intermediates, host_loops)
        if isinstance(s, For) and s.kind == ForKind.SERIAL and _steps_depend(s):
            # a loop whose steps must run in order around kernels (the time loop of a
            # te.scan): the host runs it and launches the kernels once per step, passing the
            # loop variable as an argument
            host_loops.append(s.loop_var)
            body = host(s.body)
            host_loops.pop()
            return For(s.loop_var, s.min, s.extent, s.kind, body, None, s.annotations)
        if isinstance(s, Evaluate) and isinstance(s.value, IntImm):
            return s
        raise CodegenError(_unbound_message(func, s))

    body = host(func.body)
    launches = kernels(body)
    if not launches:
        raise CodegenError(
            f"the function {func.name!r} has no loop bound to a GPU thread axis, so nothing "
            f"would run on the GPU; {BIND_HINT}"
        )
    if len(launches) == 1:
        only = launches[0]
        body = _Rename(only, replace(only, name=f"{func.name}_kernel")).visit(body)
    return func.with_body(body)


def insert_thread_sync(func: PrimFunc) -> PrimFunc:
    """The pass that puts ``__syncthreads()`` into every kernel's per-thread program
    (:func:`thread_sync`)."""

    class _Sync(IRMutator):
        def visit_KernelLaunch(self, k: KernelLaunch) -> Stmt:
            return replace(k, body=thread_sync(k.body, k.index_vars))

    return func.with_body(_Sync().visit(func.body))


class _Rename(IRMutator):
    def __init__(self, old: KernelLaunch, new: KernelLaunch) -> None:
        self.old, self.new = old, new

    def visit_KernelLaunch(self, k: KernelLaunch) -> Stmt:
        return self.new if k is self.old else k


def kernels(node: PrimFunc | Stmt) -> list[KernelLaunch]:
    """The kernel launches of a program after :func:`split_host_device`, in launch order."""
    body = node.body if isinstance(node, PrimFunc) else node
    found: list[KernelLaunch] = collect(body, lambda n: isinstance(n, KernelLaunch))
    return found


def intermediates(func: PrimFunc) -> list[Buffer]:
    """The global buffers the host program allocates (outside every kernel)."""
    found: list[Buffer] = []

    def walk(s: Stmt) -> None:
        if isinstance(s, Allocate):
            found.append(s.buffer)
            walk(s.body)
        elif isinstance(s, SeqStmt):
            for c in s.seq:
                walk(c)

    walk(func.body)
    return found


def _unbound_message(func: PrimFunc, s: Stmt) -> str:
    if isinstance(s, For):
        what = f"the loop {s.loop_var.name!r}"
        if _contains_binding(s):
            return (
                f"{what} in {func.name!r} runs on the host around GPU loops; a kernel cannot "
                "be launched from inside a loop. Bind it to a blockIdx axis (or reorder so "
                "that the bound loops are outermost). Only a loop whose steps read what "
                "earlier steps wrote (the time loop of a te.scan) runs on the host, launching "
                "the kernels once per step"
            )
    elif isinstance(s, BufferStore):
        what = f"the store to {s.buffer.name!r}"
    else:
        what = f"a {type(s).__name__} statement"
    return (
        f"{what} in {func.name!r} is not inside any loop bound to a GPU thread axis, so it "
        f"would run on the host; for a GPU target, {BIND_HINT}"
    )


def _steps_depend(loop: For) -> bool:
    """Does ``loop`` launch kernels and read a global buffer that it also writes (a scan's
    step ``t`` reads row ``t - 1``)? Such a loop cannot be bound to blockIdx and runs on the
    host; one whose steps are independent should be bound instead."""
    if not _contains_binding(loop):
        return False
    loaded: set[int] = set()
    stored: set[int] = set()

    def check(n: object) -> None:
        if isinstance(n, (BufferLoad, BufferStore)) and n.buffer.scope == "global":
            (stored if isinstance(n, BufferStore) else loaded).add(id(n.buffer.data))

    post_order_visit(loop.body, check)
    return bool(loaded & stored)


def _contains_binding(s: Stmt) -> bool:
    found = False

    def check(n: object) -> None:
        nonlocal found
        if isinstance(n, For) and n.kind == ForKind.THREAD_BINDING:
            found = True

    post_order_visit(s, check)
    return found


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    ia, ib = as_int(a), as_int(b)
    if ia is not None or ib is not None:
        return ia == ib
    return str(a) == str(b)


def _make_kernel(
    func: PrimFunc,
    root: For,
    name: str,
    shared_at_host: list[Buffer],
    intermediates: list[Buffer],
    host_loops: list[Var],
) -> KernelLaunch:
    # 1. launch extents: the largest constant extent per axis (symbolic: all must agree)
    extents: dict[str, PrimExpr] = {}
    index_vars: dict[str, Var] = {}

    def scan(n: object) -> None:
        if not (isinstance(n, For) and n.kind == ForKind.THREAD_BINDING):
            return
        tag = n.thread_binding or ""
        if tag not in THREAD_AXES + BLOCK_AXES:
            raise CodegenError(
                f"the loop {n.loop_var.name!r} is bound to {tag!r}; GPU loops bind to one of "
                f"{', '.join(BLOCK_AXES + THREAD_AXES)}"
            )
        if tag not in index_vars:
            index_vars[tag] = Var(tag, n.loop_var.dtype)
        old = extents.get(tag)
        if old is None or _same(old, n.extent):
            extents[tag] = n.extent
            return
        a, b = as_int(old), as_int(n.extent)
        if a is None or b is None:
            raise CodegenError(
                f"loops bound to {tag} have different extents {old} and {n.extent}; with a "
                "symbolic size they must all be the same"
            )
        extents[tag] = IntImm(max(a, b), old.dtype)

    post_order_visit(root, scan)
    threads: dict[str, int] = {}
    for tag in THREAD_AXES:
        if tag in extents:
            value = as_int(extents[tag])
            if value is None:
                raise CodegenError(
                    f"the loop bound to {tag} has the symbolic extent {extents[tag]}; the "
                    "number of threads per block must be a constant: split the loop by a "
                    "constant factor and bind the inner loop"
                )
            threads[tag] = value
    grid = {tag: extents[tag] for tag in BLOCK_AXES if tag in extents}
    total = 1
    for v in threads.values():
        total *= v
    if total > MAX_THREADS_PER_BLOCK:
        shape = " x ".join(f"{v} ({t})" for t, v in threads.items())
        raise CodegenError(
            f"kernel {name!r} would run {total} threads per block ({shape}); a GPU block has "
            f"at most {MAX_THREADS_PER_BLOCK}. Split the threadIdx loops by smaller factors"
        )

    # 2. the per-thread program
    shared: list[Buffer] = []

    def rewrite(s: Stmt) -> Stmt:
        if isinstance(s, For) and s.kind == ForKind.THREAD_BINDING:
            tag = s.thread_binding or ""
            idx: PrimExpr = index_vars[tag]
            if idx.dtype != s.loop_var.dtype:
                idx = Cast(s.loop_var.dtype, idx)
            value = idx if as_int(s.min) == 0 else idx + s.min
            body: Stmt = LetStmt(s.loop_var, value, rewrite(s.body))
            if not _same(s.extent, extents[tag]):
                body = IfThenElse(index_vars[tag] < s.extent, body)
            return body
        if isinstance(s, SeqStmt):
            return seq(*(rewrite(c) for c in s.seq))
        if isinstance(s, For):
            return For(s.loop_var, s.min, s.extent, s.kind, rewrite(s.body), None, s.annotations)
        if isinstance(s, IfThenElse):
            other = rewrite(s.else_case) if s.else_case is not None else None
            return IfThenElse(s.condition, rewrite(s.then_case), other)
        if isinstance(s, LetStmt):
            return LetStmt(s.var, s.value, rewrite(s.body))
        if isinstance(s, Allocate):
            if s.buffer.scope == "shared":
                shared.append(s.buffer)
                return rewrite(s.body)
            if s.buffer.scope != "local":
                raise CodegenError(
                    f"the buffer {s.buffer.name!r} (scope {s.buffer.scope!r}) is allocated "
                    "inside a GPU kernel; give it scope \"local\" (per thread) or \"shared\" "
                    "(per block), or compute it in its own kernel"
                )
            return Allocate(s.buffer, rewrite(s.body))
        return s

    body = _one_thread_stores(rewrite(root), index_vars)
    launch = {index_vars[t]: Range(const(0, index_vars[t].dtype), e) for t, e in extents.items()}
    _refuse_global_exchange(func.name, body, launch)

    # 3. what the kernel touches
    used_data: set[int] = set()
    used_vars: set[int] = set()

    def touch(n: object) -> None:
        if isinstance(n, (BufferLoad, BufferStore)):
            used_data.add(id(n.buffer.data))
        elif isinstance(n, Var):
            used_vars.add(id(n))

    post_order_visit(body, touch)
    for e in grid.values():
        post_order_visit(e, touch)
    shared += [b for b in shared_at_host if id(b.data) in used_data]
    shared = list({id(b.data): b for b in shared}.values())
    nbytes = sum(_numel(b) * dt.nbytes(dt.element(b.dtype)) for b in shared)
    if nbytes > MAX_SHARED_BYTES:
        raise CodegenError(
            f"kernel {name!r} needs {nbytes} bytes of shared memory "
            f"({', '.join(b.name for b in shared)}); a block has {MAX_SHARED_BYTES}. Use "
            "smaller tiles"
        )
    pointers: list[Var] = []
    dtypes: list[str] = []
    for buf in (*func.params, *intermediates):
        if id(buf.data) in used_data and all(buf.data is not p for p in pointers):
            pointers.append(buf.data)
            dtypes.append(dt.element(buf.dtype))
    # scalar arguments: the sizes it reads and the variables of host loops around it
    sizes = tuple(v for v in (*func.size_vars, *host_loops) if id(v) in used_vars)
    return KernelLaunch(name, body, tuple(grid.items()), tuple(threads.items()),
                        tuple(index_vars.items()), tuple(pointers), tuple(dtypes), sizes,
                        tuple(shared))


def _one_thread_stores(body: Stmt, index_vars: dict[str, Var]) -> Stmt:
    """Stores outside every threadIdx loop would run in all threads of the block at once
    (a race for ``B[i] = B[i] + x``); the first thread does them alone::

        for r in range(32):                  if threadIdx.x == 0:
            B[i] = B[i] + P[r]         ->         for r in range(32): B[i] = B[i] + P[r]
    """
    threads = [v for t, v in index_vars.items() if t in THREAD_AXES]
    if not threads:
        return body
    thread_ids = {id(v) for v in threads}

    def has(s: object, what: str) -> bool:
        found = False

        def check(n: object) -> None:
            nonlocal found
            if what == "store" and isinstance(n, BufferStore) and n.buffer.scope != "local":
                found = True
            if what == "thread" and isinstance(n, Var) and id(n) in thread_ids:
                found = True

        post_order_visit(s, check)
        return found

    def walk(s: Stmt) -> Stmt:
        if not has(s, "store"):
            return s
        if not has(s, "thread"):
            cond: PrimExpr = threads[0] == 0
            for v in threads[1:]:
                cond = cond & (v == 0)
            return IfThenElse(cond, s)
        if isinstance(s, SeqStmt):
            return seq(*(walk(c) for c in s.seq))
        if isinstance(s, For):
            return For(s.loop_var, s.min, s.extent, s.kind, walk(s.body), s.thread_binding,
                       s.annotations)
        if isinstance(s, LetStmt):
            if has(s.value, "thread"):
                thread_ids.add(id(s.var))
            return LetStmt(s.var, s.value, walk(s.body))
        if isinstance(s, Allocate):
            return Allocate(s.buffer, walk(s.body))
        if isinstance(s, IfThenElse):
            other = walk(s.else_case) if s.else_case is not None else None
            return IfThenElse(s.condition, walk(s.then_case), other)
        return s

    return walk(body)


def _refuse_global_exchange(name: str, body: Stmt, launch: dict[Var, Range]) -> None:
    """Refuse a kernel in which some threads read elements of a global buffer that other
    threads write (a global intermediate computed cooperatively and read back, say): the
    threads of a kernel do not wait for each other's global writes, and threads of different
    blocks cannot be made to. A read is accepted when some write of the same kernel covers
    exactly the same region in the same thread (``C[i] = C[i] + ...``, an unrolled tile
    written and read back element by element), or when no thread of the launch writes what
    it reads (a scan's step reads the row the previous launch wrote); local and shared
    buffers are the way to exchange values inside a kernel (with barriers for shared ones)."""
    accesses: dict[int, tuple[Buffer, list[_GlobalAccess]]] = {}
    dom: dict[Var, Range] = {}
    lets: dict[Var, PrimExpr] = {}
    guards: list[PrimExpr] = []
    ana = Analyzer()

    def note(buf: Buffer, kind: str, indices: tuple[PrimExpr, ...]) -> None:
        if buf.scope.partition(".")[0] in ("local", "shared", "warp") or len(indices) != 1:
            return
        index = _expand(_narrow(substitute(indices[0], lets)))
        if isinstance(index, Broadcast):
            index = index.value
        inner = dict(dom)
        if isinstance(index, Ramp):
            lane = Var("lane", index.base.dtype)
            inner[lane] = Range(const(0, index.base.dtype), const(index.lanes, index.base.dtype))
            index = index.base + lane * index.stride
        try:
            (r,) = eval_region([index], inner, None, ana)
            key = f"{ana.simplify(r.min)}|{ana.simplify(r.extent)}"
        except LoweringError:  # not affine: only the very same index counts as the same
            key = f"{index}|?"
        access = _GlobalAccess(kind, index, key, dict(inner), [_narrow(g) for g in guards])
        accesses.setdefault(id(buf.data), (buf, []))[1].append(access)

    class _Walk(IRVisitor):
        def visit_For(self, op: For) -> None:
            dom[op.loop_var] = Range(op.min, op.extent)
            self.visit(op.body)
            del dom[op.loop_var]

        def visit_LetStmt(self, op: LetStmt) -> None:
            lets[op.var] = substitute(op.value, lets)
            self.visit(op.body)
            del lets[op.var]

        def visit_IfThenElse(self, op: IfThenElse) -> None:
            self.visit(op.condition)
            guards.append(substitute(op.condition, lets))
            self.visit(op.then_case)
            guards.pop()
            if op.else_case is not None:
                self.visit(op.else_case)

        def visit_BufferLoad(self, op: BufferLoad) -> None:
            note(op.buffer, "read", op.indices)
            self.generic_visit(op)

        def visit_BufferStore(self, op: BufferStore) -> None:
            note(op.buffer, "write", op.indices)
            self.generic_visit(op)

    _Walk().visit(body)
    for buf, acc in accesses.values():
        writes = [a for a in acc if a.kind == "write"]
        keys = {a.key for a in writes}
        for a in acc:
            if a.kind != "read" or a.key in keys:
                continue
            if all(_apart(a, w, launch, ana) for w in writes):
                continue
            raise CodegenError(
                f"a GPU kernel of {name!r}: the global buffer {buf.name!r} is written by some "
                f"threads ({buf.name}[{writes[0].index}]) and read by others "
                f"({buf.name}[{a.index}]) in the same kernel; GPU threads do not wait for each "
                "other's writes to global memory, so the read may see old values. Give "
                f'{buf.name!r} the scope "shared" (sch.set_scope(block, 0, "shared"), or '
                'cache_read(..., "shared") and compute_at it under the blockIdx loop: the '
                "copy is then synchronised with __syncthreads()), or compute "
                f"{buf.name!r} in a kernel of its own (do not compute_at it inside this "
                "kernel; bind its own loops to blockIdx/threadIdx)"
            )


@dataclass
class _GlobalAccess:
    kind: str  # "read" or "write"
    index: PrimExpr  # flat, with the thread indices in place of their let variables
    key: str  # the region one thread touches, as text
    dom: dict[Var, Range]  # the serial loops around it
    guards: list[PrimExpr]  # the conditions of the ifs around it


def _apart(a: _GlobalAccess, b: _GlobalAccess, launch: dict[Var, Range], ana: Analyzer) -> bool:
    """Do ``a`` and ``b`` touch disjoint elements, whichever threads of the launch run them?"""
    spans = [_launch_span(x, launch, ana) for x in (a, b)]
    if spans[0] is None or spans[1] is None:
        return False
    (alo, ahi), (blo, bhi) = spans  # type: ignore[misc]
    return ana.can_prove(ahi < blo) or ana.can_prove(bhi < alo)


def _launch_span(
    a: _GlobalAccess, launch: dict[Var, Range], ana: Analyzer
) -> tuple[PrimExpr, PrimExpr] | None:
    """``(lowest, highest)`` element ``a`` touches over every thread and loop iteration; the
    highest is taken from a guard ``e < bound`` around it when ``index - e`` does not vary
    (the ``if i < n`` of a split that does not divide)."""
    inner = {**a.dom, **launch}
    try:
        (r,) = eval_region([a.index], inner, None, ana)
    except LoweringError:
        return None
    lo = ana.simplify(r.min)
    hi = ana.simplify(r.min + r.extent - 1)
    relaxed = list(inner)
    for g in a.guards:
        for part in _conjuncts(g):
            if not isinstance(part, LT):
                continue
            shift = ana.simplify(a.index - part.a)
            if uses_var(shift, lambda v: any(v is x for x in relaxed)):
                continue
            hi = ana.simplify(part.b - 1 + shift)
    return lo, hi


def _expand(e: PrimExpr) -> PrimExpr:
    """Products distributed over sums (``(t - 1) * n`` -> ``t * n - n``), so that offsets of
    neighbouring rows of a symbolic width compare (the simplifier keeps products whole)."""

    class _Expand(IRMutator):
        def visit_Mul(self, op: Mul) -> PrimExpr:
            a, b = self.visit(op.a), self.visit(op.b)
            for x, y in ((a, b), (b, a)):
                if isinstance(x, (Add, Sub)) and dt.lanes(x.dtype) == 1:
                    left, right = self.visit(Mul(x.a, y)), self.visit(Mul(x.b, y))
                    return left + right if isinstance(x, Add) else left - right
            return a * b if (a is not op.a or b is not op.b) else op

    try:
        return _Expand().visit(e)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - keep the original when it cannot be rebuilt
        return e


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _narrow(e: PrimExpr) -> PrimExpr:
    """``e`` without the int64 casts flatten_buffers puts on offsets (for comparing them with
    the int32 guards around them; the analysis assumes no overflow) and without the
    ``check_index`` around indices (an index out of range skips the access)."""

    class _Narrow(IRMutator):
        def visit_Call(self, op: Call) -> PrimExpr:
            if op.op == "check_index" and op.args:  # its index, or the access is skipped
                return self.visit(op.args[0])  # type: ignore[no-any-return]
            return self.generic_visit(op)  # type: ignore[no-any-return]

        def visit_Cast(self, op: Cast) -> PrimExpr:
            value = self.visit(op.value)
            if op.dtype == "int64" and dt.is_int(value.dtype):
                return value  # type: ignore[no-any-return]
            return Cast(op.dtype, value)

        def visit_IntImm(self, op: IntImm) -> PrimExpr:
            if op.dtype == "int64" and -(2**31) <= op.value < 2**31:
                return IntImm(op.value, "int32")
            return op

    try:
        return _rebuild(_Narrow().visit(e))
    except Exception:  # noqa: BLE001 - mixed types it cannot rebuild: keep the original
        return e


def _rebuild(e: PrimExpr) -> PrimExpr:
    """Binary nodes rebuilt from their (narrowed) operands, so their dtypes agree."""

    class _Retype(IRMutator):
        def generic_visit(self, node: Any) -> Any:
            node = super().generic_visit(node)
            if isinstance(node, BinaryOp) and node.a.dtype != node.dtype and not isinstance(
                node, (LT, LE, GT, GE, EQ, NE, And, Or)
            ):
                return type(node)(node.a, node.b)
            return node

    return _Retype().visit(e)  # type: ignore[no-any-return]


def _numel(buf: Buffer) -> int:
    n = 1
    for extent in buf.shape:
        value = as_int(extent) if not isinstance(extent, int) else extent
        if value is None:
            raise CodegenError(
                f"the {buf.scope} buffer {buf.name!r} has the symbolic size {buf.shape}; GPU "
                f"{buf.scope} memory needs a constant size (use constant tile sizes)"
            )
        n *= value
    return n


def numel(buf: Buffer) -> int:
    """The constant number of elements of a shared/local buffer (a CodegenError if symbolic)."""
    return _numel(buf)


# ---------------------------------------------------------------------------------------------
# barriers


class _Access(IRVisitor):
    """The shared buffers (by data var) a statement reads and writes."""

    def __init__(self, shared: set[int]) -> None:
        self.shared = shared
        self.reads: set[int] = set()
        self.writes: set[int] = set()

    def visit_BufferLoad(self, op: BufferLoad) -> None:
        if id(op.buffer.data) in self.shared:
            self.reads.add(id(op.buffer.data))
        self.generic_visit(op)

    def visit_BufferStore(self, op: BufferStore) -> None:
        if id(op.buffer.data) in self.shared:
            self.writes.add(id(op.buffer.data))
        self.generic_visit(op)


def thread_dependent(e: object, varying: set[int]) -> bool:
    """Does ``e`` read a thread index (a var in ``varying``) or memory?"""
    found = False

    def check(n: object) -> None:
        nonlocal found
        if (isinstance(n, Var) and id(n) in varying) or isinstance(n, BufferLoad):
            found = True

    post_order_visit(e, check)
    return found


def thread_sync(body: Stmt, index_vars: dict[str, Var]) -> Stmt:
    """Insert barriers into a per-thread program (see the module docstring)."""
    shared: set[int] = set()

    def find_shared(n: object) -> None:
        if isinstance(n, (BufferLoad, BufferStore)) and n.buffer.scope == "shared":
            shared.add(id(n.buffer.data))

    post_order_visit(body, find_shared)
    if not shared:
        return body
    varying = {id(v) for t, v in index_vars.items() if t in THREAD_AXES}

    def access(s: Stmt) -> tuple[set[int], set[int]]:
        a = _Access(shared)
        a.visit(s)
        return a.reads, a.writes

    def sync(s: Stmt) -> Stmt:
        """``s`` runs uniformly (every thread reaches it): barriers may go inside."""
        if isinstance(s, SeqStmt):
            out: list[Stmt] = []
            pending_r: set[int] = set()
            pending_w: set[int] = set()
            for child in s.seq:
                r, w = access(child)
                if (r & pending_w) or (w & pending_r) or (w & pending_w):
                    out.append(barrier())
                    pending_r, pending_w = set(), set()
                synced = sync(child)
                out.append(synced)
                if _always_ends_with_barrier(synced):
                    pending_r, pending_w = set(), set()
                else:
                    pending_r |= r
                    pending_w |= w
            return seq(*out)
        if isinstance(s, For):
            if thread_dependent(s.min, varying) or thread_dependent(s.extent, varying):
                varying.add(id(s.loop_var))
                return s
            body = sync(s.body)
            r, w = access(s.body)
            if w & r and not _ends_with_barrier(body):
                body = seq(body, barrier())
            return For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_binding,
                       s.annotations)
        if isinstance(s, LetStmt):
            if thread_dependent(s.value, varying):
                varying.add(id(s.var))
            return LetStmt(s.var, s.value, sync(s.body))
        if isinstance(s, IfThenElse):
            if thread_dependent(s.condition, varying):
                return s  # divergent: no barrier may go inside
            other = sync(s.else_case) if s.else_case is not None else None
            return IfThenElse(s.condition, sync(s.then_case), other)
        if isinstance(s, Allocate):
            return Allocate(s.buffer, sync(s.body))
        return s

    return sync(body)


def _ends_with_barrier(s: Stmt) -> bool:
    last = s.seq[-1] if isinstance(s, SeqStmt) else s
    return is_barrier(last)


def _always_ends_with_barrier(s: Stmt) -> bool:
    """Has every thread just passed a barrier after ``s`` (a loop that runs at least once
    and ends with one counts)?"""
    if isinstance(s, For):
        extent = as_int(s.extent)
        return extent is not None and extent > 0 and _always_ends_with_barrier(s.body)
    if isinstance(s, SeqStmt):
        return _always_ends_with_barrier(s.seq[-1])
    if isinstance(s, (LetStmt, Allocate)):
        return _always_ends_with_barrier(s.body)
    return is_barrier(s)
