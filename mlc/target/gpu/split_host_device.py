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

from dataclasses import replace

from mlc.errors import CodegenError
from mlc.target.gpu import kernel_info as _kernel_info
from mlc.target.gpu.barriers import (  # noqa: F401  (re-exported: the old import path)
    _Access,
    _always_ends_with_barrier,
    _ends_with_barrier,
    barrier,
    insert_thread_sync,
    is_barrier,
    thread_dependent,
    thread_sync,
)
from mlc.target.gpu.checks import (  # noqa: F401  (re-exported: the old import path)
    BIND_HINT,
    MAX_SHARED_BYTES,
    MAX_THREADS_PER_BLOCK,
    _apart,
    _contains_binding,
    _expand,
    _GlobalAccess,
    _launch_span,
    _narrow,
    _rebuild,
    _refuse_global_exchange,
    _steps_depend,
    _unbound_message,
    launch_limit_message,
)
from mlc.target.gpu.kernel_info import _numel, kernels, numel  # noqa: F401
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    BufferLoad,
    Cast,
    IntImm,
    PrimExpr,
    Range,
    Var,
    as_int,
    const,
)
from mlc.tir.functor import (
    IRMutator,
    collect,
    post_order_visit,
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

Kernel = KernelLaunch  # the name this module used before kernels became IR nodes


def split_host_device(func: PrimFunc) -> PrimFunc:
    """The pass that makes GPU kernels (see the module docstring): every outermost loop
    bound to a GPU axis becomes a :class:`~mlc.tir.stmt.KernelLaunch` whose body is the
    per-thread program; what stays around the launches is the host program, which may only
    allocate global intermediates. Barriers come in the next pass,
    :func:`insert_thread_sync`."""
    _refuse_packed_calls(func)
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
                    f"thread loop{_used_outside_threads(s.buffer, s.body)}; compute_at it "
                    "inside the loop bound to threadIdx (every statement that uses it must be "
                    "inside that loop: each thread has its own copy)"
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

    if not collect(func.body, lambda n: isinstance(n, BufferStore)):
        return func  # nothing to compute (every array is empty): no kernel to launch
    body = host(func.body)
    launches = kernels(body)
    if not launches:
        raise CodegenError(
            f"the function {func.name!r} has no loop bound to a GPU thread axis, so nothing "
            f"would run on the GPU; {BIND_HINT}"
        )
    _refuse_shared_across_kernels(launches)
    if len(launches) == 1:
        only = launches[0]
        body = _Rename(only, replace(only, name=f"{func.name}_kernel")).visit(body)
    return func.with_body(body)


def _used_outside_threads(buf: Buffer, body: Stmt) -> str:
    """``: the store `B[...] = ...` uses it outside them`` for the first statement that
    touches ``buf`` outside every loop bound to a GPU axis ('' if none does)."""
    found: list[BufferStore] = []

    def walk(s: Stmt) -> None:
        if found or (isinstance(s, For) and s.kind == ForKind.THREAD_BINDING):
            return
        if isinstance(s, BufferStore):
            touched: list[object] = []
            post_order_visit(s, lambda n: touched.append(n) if isinstance(
                n, (BufferLoad, BufferStore)) and n.buffer.data is buf.data else None)
            if touched:
                found.append(s)
            return
        for child in _children(s):
            walk(child)

    walk(body)
    if not found:
        return ""
    store = found[0]
    return (f" and used outside them (the store to {store.buffer.name!r} "
            f"`{str(store).strip().splitlines()[0]}` is not inside any bound loop)")


def _children(s: Stmt) -> list[Stmt]:
    if isinstance(s, SeqStmt):
        return list(s.seq)
    if isinstance(s, (For, LetStmt, Allocate)):
        return [s.body]
    if isinstance(s, IfThenElse):
        return [s.then_case] + ([s.else_case] if s.else_case is not None else [])
    return []


def _refuse_shared_across_kernels(launches: list[KernelLaunch]) -> None:
    """A shared buffer lives as long as one thread block of one kernel: a kernel that reads
    one that only another kernel writes (a ``"shared"`` cache left at the top level, its copy
    loops bound on their own) would read garbage."""
    writers: dict[int, str] = {}
    for k in launches:
        for buf in k.shared:
            if _touches(k.body, buf, stores=True):
                writers.setdefault(id(buf.data), k.name)
    for k in launches:
        for buf in k.shared:
            if _touches(k.body, buf, stores=False) and not _touches(k.body, buf, stores=True):
                where = writers.get(id(buf.data))
                written = (f"written only by the kernel {where!r}" if where is not None
                           else "never written")
                raise CodegenError(
                    f"the kernel {k.name!r} reads the shared buffer {buf.name!r}, {written}; "
                    "shared memory belongs to one thread block of one kernel and is gone when "
                    f"it ends. Compute {buf.name!r} in the same kernel: compute_at its block "
                    "under the blockIdx loop of the block that reads it (then bind the copy "
                    "loops to threadIdx), or give it the scope \"global\""
                )


def _touches(body: Stmt, buf: Buffer, stores: bool) -> bool:
    kind = BufferStore if stores else BufferLoad
    return bool(collect(body, lambda n: isinstance(n, kind) and n.buffer.data is buf.data))


class _Rename(IRMutator):
    def __init__(self, old: KernelLaunch, new: KernelLaunch) -> None:
        self.old, self.new = old, new

    def visit_KernelLaunch(self, k: KernelLaunch) -> Stmt:
        return self.new if k is self.old else k


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    ia, ib = as_int(a), as_int(b)
    if ia is not None or ib is not None:
        return ia == ib
    return str(a) == str(b)


def _refuse_packed_calls(func: PrimFunc) -> None:
    """A packed call (``tir.call_packed``, a ``te.extern`` stage) runs Python on the host;
    a kernel cannot call it and mlc does not launch host calls between kernels."""
    from mlc.tir.call import PACKED
    from mlc.tir.expr import Call, StringImm
    from mlc.tir.functor import collect

    calls = collect(func.body, lambda n: isinstance(n, Call) and n.op == PACKED)
    if calls:
        first = calls[0].args[0]
        name = first.value if isinstance(first, StringImm) else str(first)
        raise CodegenError(
            f"{func.name!r} calls the packed function {name!r} (tir.call_packed, as a "
            "te.extern stage does): that is Python on the host, which a GPU kernel cannot "
            "call and mlc does not run between kernels. Compute that stage with te.compute "
            "(bound to GPU threads), or build the program for the CPU (target='llvm')"
        )


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
    limits: list[tuple[str, int | None]] = [*threads.items()]
    limits += [(tag, as_int(e)) for tag, e in grid.items()]
    for tag, value in limits:
        problem = None if value is None else launch_limit_message(name, tag, value)
        if problem is not None:
            raise CodegenError(problem)
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

    body = _one_thread_updates(_one_thread_stores(rewrite(root), index_vars), index_vars)
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
    # scalar arguments: the sizes it reads, the scalar parameters it reads and the variables
    # of host loops around it
    sizes = tuple(v for v in (*func.size_vars, *func.scalar_args, *host_loops)
                  if id(v) in used_vars)
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


def _loaded(e: PrimExpr) -> set[int]:
    """The buffers (by data var) that ``e`` reads."""
    return {id(n.buffer.data) for n in collect(e, lambda n: isinstance(n, BufferLoad))}


def _one_thread_updates(body: Stmt, index_vars: dict[str, Var]) -> Stmt:
    """An accumulator updated by statements that do not use a launched thread axis runs in
    every thread of that axis at once (``y[ty] = y[ty] + ...`` in a kernel that launches
    threadIdx.x for a cooperative copy): a race. When the buffer is read only by its own
    updates, the threads with index 0 on those axes do them (and its other stores) alone::

        y[ty] = y[ty] + A[...] * x_shared[k]   ->   if threadIdx.x == 0:
                                                         y[ty] = y[ty] + A[...] * x_shared[k]
    """
    axes = [v for t, v in index_vars.items() if t in THREAD_AXES]
    if len(axes) < 2:
        return body  # a store using no thread axis at all is _one_thread_stores' case
    deps: dict[int, frozenset[int]] = {id(v): frozenset({id(v)}) for v in axes}
    stores: list[tuple[BufferStore, frozenset[int]]] = []
    loads_outside: set[int] = set()  # buffers read other than in their own stores

    def uses(e: object) -> frozenset[int]:
        found: set[int] = set()
        post_order_visit(e, lambda n: found.update(deps.get(id(n), ()))
                         if isinstance(n, Var) else None)
        return frozenset(found)

    def note_loads(e: object, inside: int | None) -> None:
        post_order_visit(e, lambda n: loads_outside.add(id(n.buffer.data))
                         if isinstance(n, BufferLoad) and id(n.buffer.data) != inside else None)

    def walk(st: Stmt, context: frozenset[int]) -> None:
        if isinstance(st, BufferStore):
            note_loads(st, id(st.buffer.data))
            if st.buffer.scope != "local":
                stores.append((st, context | uses(st)))
        elif isinstance(st, SeqStmt):
            for c in st.seq:
                walk(c, context)
        elif isinstance(st, LetStmt):
            note_loads(st.value, None)
            deps[id(st.var)] = uses(st.value)
            walk(st.body, context)
        elif isinstance(st, For):
            note_loads(st.min, None)
            note_loads(st.extent, None)
            walk(st.body, context | uses(st.min) | uses(st.extent))
        elif isinstance(st, IfThenElse):
            note_loads(st.condition, None)
            inner = context | uses(st.condition)
            walk(st.then_case, inner)
            if st.else_case is not None:
                walk(st.else_case, inner)
        elif isinstance(st, Allocate):
            walk(st.body, context)
        else:
            note_loads(st, None)

    walk(body, frozenset())
    # accumulators: buffers some store reads back, and which nothing else reads
    updated = {id(st.buffer.data) for st, _ in stores
               if id(st.buffer.data) in _loaded(st.value)}
    guards: dict[int, PrimExpr] = {}
    for st, used in stores:
        missing = [v for v in axes if id(v) not in used]
        key = id(st.buffer.data)
        if not missing or key not in updated or key in loads_outside:
            continue
        cond: PrimExpr = missing[0] == 0
        for v in missing[1:]:
            cond = cond & (v == 0)
        guards[id(st)] = cond
    if not guards:
        return body

    class _Guard(IRMutator):
        def visit_BufferStore(self, op: BufferStore) -> Stmt:
            cond = guards.get(id(op))
            return op if cond is None else IfThenElse(cond, op)

    return _Guard().visit(body)  # type: ignore[no-any-return]


intermediates = _kernel_info.intermediates  # re-exported: the old import path
