"""``cuda-sim``: a GPU kernel as a CPU program with the same block/thread/shared-memory meaning.

A kernel's per-thread program (see :mod:`mlc.target.gpu.split_host_device`) runs on the GPU
as many threads at once, which meet at ``__syncthreads()``. The simulator turns it into
ordinary loops that the LLVM backend compiles:

* one loop per blockIdx axis around the kernel (blocks are independent);
* the shared buffers, allocated once per block;
* the per-thread program cut at its barriers into *phases*; each phase becomes a loop over
  all threads of the block. Every thread finishes a phase before any thread starts the next,
  exactly what a barrier guarantees, and nothing more: a missing barrier shows up as a wrong
  result here too. ::

      X_sh[ty, tx] = X[...]          for ty, tx in threads:  X_sh[ty, tx] = X[...]
      __syncthreads()          ->
      Y[...] = X_sh[tx, ty]          for ty, tx in threads:  Y[...] = X_sh[tx, ty]

A loop or ``if`` that contains a barrier must be the same for every thread (it becomes a
loop or ``if`` around the phases); a barrier inside divergent control flow is an error, as it
would hang a real GPU. Per-thread values that live across a barrier are kept per thread:
``let`` variables are recomputed in each phase, ``"local"`` arrays get one slice per thread.

A warp shuffle (``tvm_warp_shuffle_down``: a lane reads another lane's register) is a meeting
point too: every lane publishes its value in one phase and reads its partner's in the next::

    t[0] = tvm_warp_shuffle_down(mask, v, 8, 32)     for i in range(32 * warps): arrived[i] = 0
                                               ->    for tx in threads: x[tx] = v; arrived[tx] = 1
                                                     for tx in threads:
                                                         t[0] = x[tx + 8] if the partner is in
                                                                range and arrived, else x[tx]

Unlike a barrier it may sit under a condition that differs between threads (only the lanes
of one warp must agree; ``check`` verifies that), as long as the condition reads no memory:
each phase then tests it again.
"""

from __future__ import annotations

from dataclasses import replace

from mlc.errors import CodegenError
from mlc.target.gpu.split_host_device import (
    BLOCK_AXES,
    THREAD_AXES,
    is_barrier,
    numel,
    thread_dependent,
)
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    EQ,
    LT,
    And,
    BufferLoad,
    Call,
    FloatImm,
    FloorMod,
    IntImm,
    Not,
    PrimExpr,
    Select,
    Var,
)
from mlc.tir.functor import IRMutator, post_order_visit, substitute
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

SHUFFLE = "tvm_warp_shuffle_down"
WARP_SIZE = 32


def _has_barrier(s: Stmt) -> bool:
    found = False

    def check(n: object) -> None:
        nonlocal found
        if isinstance(n, Stmt) and is_barrier(n):
            found = True

    post_order_visit(s, check)
    return found


def _shuffles(s: object) -> list[Call]:
    """The warp shuffles in ``s``, in the order they are met."""
    found: list[Call] = []

    def check(n: object) -> None:
        if isinstance(n, Call) and n.op == SHUFFLE:
            found.append(n)

    post_order_visit(s, check)
    return found


def _has_sync(s: Stmt) -> bool:
    """Does ``s`` hold a point where threads meet (a barrier or a warp shuffle)?"""
    return _has_barrier(s) or bool(_shuffles(s))


def _reads_memory(e: PrimExpr) -> bool:
    found = False

    def check(n: object) -> None:
        nonlocal found
        found = found or isinstance(n, BufferLoad)

    post_order_visit(e, check)
    return found


class _Simulate:
    def __init__(self, kernel: KernelLaunch) -> None:
        self.kernel = kernel
        # thread axes, outermost loop first (z, y, x) so x varies fastest
        self.axes = [t for t in reversed(THREAD_AXES) if t in kernel.threads]
        self.varying = {id(kernel.index_vars[t]) for t in self.axes}
        # thread-dependent lets (var, value) and conditions (None, cond) around here
        self.lets: list[tuple[Var | None, PrimExpr]] = []
        self.uses = 0  # thread loops made so far: each after the first gets fresh variables
        self.exchange: list[Buffer] = []  # per block: the values and arrivals of shuffles

    def thread_linear(self) -> PrimExpr:
        lin: PrimExpr = IntImm(0, "int32")
        for t in self.axes:
            lin = lin * self.kernel.threads[t] + self.kernel.index_vars[t]
        return lin

    def over_threads(self, body: Stmt) -> Stmt:
        """``body`` run by every thread of the block: loops over the thread indices (and the
        thread-dependent lets around it). Each phase between barriers gets its own loops, so
        a later phase defines fresh copies of those variables (a variable is defined once)."""
        self.uses += 1
        rename: dict[Var, Var] = {}
        if self.uses > 1:
            for old in [*(self.kernel.index_vars[t] for t in self.axes),
                        *(v for v, _ in self.lets if v is not None)]:
                rename[old] = Var(old.name, old.dtype)
        body = substitute(body, rename)
        for var, value in reversed(self.lets):
            if var is None:
                body = IfThenElse(substitute(value, rename), body)
            else:
                body = LetStmt(rename.get(var, var), substitute(value, rename), body)
        for t in reversed(self.axes):
            v = self.kernel.index_vars[t]
            body = For(rename.get(v, v), IntImm(0, v.dtype),
                       IntImm(self.kernel.threads[t], v.dtype), ForKind.SERIAL, body)
        return body

    def phases(self, s: Stmt) -> Stmt | None:
        """The statement ``s`` run by all threads of a block, phase by phase."""
        if not _has_sync(s):
            return self.over_threads(s)
        if is_barrier(s):
            return None
        if isinstance(s, (BufferStore, Evaluate)):
            return self.shuffle(s)
        if isinstance(s, SeqStmt):
            out: list[Stmt | None] = []
            group: list[Stmt] = []
            for child in s.seq:
                if _has_sync(child):
                    if group:
                        out.append(self.over_threads(seq(*group)))
                        group = []
                    out.append(self.phases(child))
                else:
                    group.append(child)
            if group:
                out.append(self.over_threads(seq(*group)))
            return seq(*out) if any(o is not None for o in out) else None
        if isinstance(s, LetStmt):
            if _shuffles(s.value):
                raise CodegenError(
                    f"cuda-sim runs a warp shuffle only as the value of a store, not of the "
                    f"variable {s.var.name!r}"
                )
            if thread_dependent(s.value, self.varying):
                self.varying.add(id(s.var))
                if _reads_memory(s.value):
                    return self.kept(s)
                self.lets.append((s.var, s.value))
                try:
                    return self.phases(s.body)
                finally:
                    self.lets.pop()
            return LetStmt(s.var, s.value, self.phases(s.body) or seq())
        if isinstance(s, For):
            if thread_dependent(s.min, self.varying) or thread_dependent(s.extent, self.varying):
                what = "__syncthreads()" if _has_barrier(s.body) else "a warp shuffle"
                raise CodegenError(
                    f"{what} inside the loop {s.loop_var.name!r}, whose bounds differ "
                    "between threads: some threads would wait at the barrier forever"
                )
            return For(s.loop_var, s.min, s.extent, ForKind.SERIAL, self.phases(s.body) or seq())
        if isinstance(s, IfThenElse):
            if thread_dependent(s.condition, self.varying) and not _has_barrier(s):
                return self.guarded(s)
            if thread_dependent(s.condition, self.varying):
                raise CodegenError(
                    f"__syncthreads() inside 'if {s.condition}', which differs between "
                    "threads: the threads that skip it never reach the barrier (the GPU "
                    "would hang). Keep shared-memory stages outside guarded loops"
                )
            other = self.phases(s.else_case) if s.else_case is not None else None
            return IfThenElse(s.condition, self.phases(s.then_case) or seq(), other)
        if isinstance(s, Allocate):
            # a per-thread array that lives across a barrier: one slice per thread
            buf = s.buffer
            n = numel(buf)
            total = 1
            for t in self.axes:
                total *= self.kernel.threads[t]
            big = Buffer(buf.name, (IntImm(n * total, "int32"),), buf.dtype, "global")
            body = _Reindex(buf, big, self.thread_linear() * n).visit(s.body)
            return Allocate(big, self.phases(body) or seq())
        raise CodegenError(f"cuda-sim cannot run a barrier inside a {type(s).__name__}")


    def kept(self, s: LetStmt) -> Stmt | None:
        """A let that reads memory (``v = S[31 - tx]``) with a barrier in its body: later
        phases must see the value read here, not read it again after other threads wrote
        there, so each thread keeps it in an array: ``v_kept[thread] = S[31 - tx]``, then
        ``v = v_kept[thread]`` in every phase."""
        if dt.lanes(s.var.dtype) != 1:
            raise CodegenError(
                f"cuda-sim cannot keep the vector {s.var.name!r} ({s.var.dtype}), read from "
                "memory, across a __syncthreads(); read it again after the barrier"
            )
        total = 1
        for t in self.axes:
            total *= self.kernel.threads[t]
        kept = Buffer(f"{s.var.name}_kept", (IntImm(total, "int32"),), s.var.dtype, "global")
        self.exchange.append(kept)
        me = self.thread_linear()
        store = self.over_threads(BufferStore(kept, s.value, (me,)))
        self.lets.append((s.var, BufferLoad(kept, (me,))))
        try:
            rest = self.phases(s.body)
        finally:
            self.lets.pop()
        return seq(store, rest) if rest is not None else store

    def guarded(self, s: IfThenElse) -> Stmt | None:
        """Warp shuffles under a condition that differs between threads: every phase tests
        the condition again (it reads no memory, so it gives the same answer each time)."""
        if _reads_memory(s.condition):
            raise CodegenError(
                f"a warp shuffle inside 'if {s.condition}', a condition read from memory: "
                "cuda-sim cannot run it; compute the condition from thread indices"
            )
        out: list[Stmt | None] = []
        for cond, branch in ((s.condition, s.then_case), (Not(s.condition), s.else_case)):
            if branch is None:
                continue
            self.lets.append((None, cond))
            try:
                out.append(self.phases(branch))
            finally:
                self.lets.pop()
        return seq(*out) if any(o is not None for o in out) else None

    def shuffle(self, s: BufferStore | Evaluate) -> Stmt:
        """A store whose value shuffles (``t[0] = tvm_warp_shuffle_down(mask, v, d, w)``)
        in two phases: every lane publishes ``v``, then reads its partner's (its own where
        the partner is past its group of ``w`` lanes, past the block, or did not arrive)."""
        me = self.thread_linear()
        total = 1
        for t in self.axes:
            total *= self.kernel.threads[t]
        clear: list[Stmt] = []
        publish: list[Stmt] = []
        reads: dict[Call, PrimExpr] = {}
        for call in _shuffles(s):
            _, value, delta, width = call.args
            k = len(self.exchange) // 2
            x = Buffer(f"shfl{k}_value", (IntImm(total, "int32"),), call.dtype, "global")
            arrived = Buffer(f"shfl{k}_arrived", (IntImm(total, "int32"),), "int32", "global")
            self.exchange += [x, arrived]
            i = Var("i", "int32")
            clear.append(For(i, IntImm(0, "int32"), IntImm(total, "int32"), ForKind.SERIAL,
                             BufferStore(arrived, IntImm(0, "int32"), (i,))))
            publish += [BufferStore(x, value, (me,)),
                        BufferStore(arrived, IntImm(1, "int32"), (me,))]
            src = me + delta
            lane = FloorMod(me, IntImm(WARP_SIZE, "int32"))
            inside = And(LT(FloorMod(lane, width) + delta, width),
                         LT(src, IntImm(total, "int32")))
            own = BufferLoad(x, (me,))
            partner = Select(EQ(BufferLoad(arrived, (src,)), IntImm(1, "int32")),
                             BufferLoad(x, (src,)), own)
            reads[call] = Select(inside, partner, own)
        body = _Replace(reads).visit(s)
        return seq(*clear, self.over_threads(seq(*publish)), self.over_threads(body))


class _Replace(IRMutator):
    """Each call in ``calls`` (by identity) becomes its expression."""

    def __init__(self, calls: dict[Call, PrimExpr]) -> None:
        self.calls = calls

    def visit_Call(self, op: Call) -> object:
        if op in self.calls:
            return self.calls[op]
        return self.generic_visit(op)


class _Reindex(IRMutator):
    """Accesses of ``old`` become accesses of ``new`` at ``offset + index``."""

    def __init__(self, old: Buffer, new: Buffer, offset: PrimExpr) -> None:
        self.old, self.new, self.offset = old, new, offset

    def visit_BufferLoad(self, op: BufferLoad) -> object:
        op = self.generic_visit(op)
        if op.buffer.data is self.old.data:
            return BufferLoad(self.new, (self.offset + op.indices[0],), op.dtype)
        return op

    def visit_BufferStore(self, op: BufferStore) -> object:
        op = self.generic_visit(op)
        if op.buffer.data is self.old.data:
            return BufferStore(self.new, op.value, (self.offset + op.indices[0],))
        return op


def simulate_kernel(kernel: KernelLaunch) -> Stmt:
    """The CPU statement that runs ``kernel`` over its whole grid."""
    sim = _Simulate(kernel)
    body = sim.phases(kernel.body) or seq()
    # Shared memory starts as NaN in every block, so reading a value that no thread of this
    # block wrote (a missing barrier, a wrong index) shows in the result.
    body = seq(*(_fill_nan(buf) for buf in kernel.shared), body)
    for buf in (*kernel.shared, *sim.exchange):
        body = Allocate(buf, body)
    for tag in reversed(BLOCK_AXES):
        if tag in kernel.grid:
            v = kernel.index_vars[tag]
            body = For(v, IntImm(0, v.dtype), kernel.grid[tag], ForKind.SERIAL, body)
    return body


def _fill_nan(buf: Buffer) -> Stmt | None:
    if not dt.is_float(buf.dtype):
        return None
    i = Var("i", "int32")
    nan = FloatImm(float("nan"), dt.element(buf.dtype))
    return For(i, IntImm(0, "int32"), IntImm(numel(buf), "int32"), ForKind.SERIAL,
               BufferStore(buf, nan, (i,)))


def simulate(func: PrimFunc) -> PrimFunc:
    """The pass that turns a GPU program (after :func:`~mlc.target.gpu.split_host_device`
    and :func:`~mlc.target.gpu.insert_thread_sync`) into one CPU PrimFunc with the same
    parameters: every kernel launch becomes :func:`simulate_kernel`'s loops."""

    class _Launches(IRMutator):
        def visit_KernelLaunch(self, k: KernelLaunch) -> Stmt:
            return simulate_kernel(k)

    return replace(func, body=_Launches().visit(func.body), name=func.name + "_sim")
