"""``parallel`` loops: outlined into a function and run on every thread by libgomp.

What OpenMP's ``#pragma omp parallel for schedule(static)`` does, spelled out::

    # for i in T.parallel(lo, lo + n): body(i, A, B, m)      becomes
    struct closure { float* A; float* B; int m; int lo; int n; };
    void main__parallel0(void* p) {                      # runs on every thread
        closure* c = p;
        int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        int chunk = (c->n + nt - 1) / nt;                 # static chunks: thread t does
        int begin = min(tid * chunk, c->n);               # [t*chunk, (t+1)*chunk)
        int end = min(begin + chunk, c->n);
        for (int i = c->lo + begin; i < c->lo + end; ++i) body(i, c->A, c->B, c->m);
    }
    ... GOMP_parallel(main__parallel0, &closure, num_threads, 0);   # returns when all finish

The JIT links ``GOMP_parallel`` and ``omp_get_*`` to mlc's own copy of libgomp through
:mod:`mlc.runtime.native` (which runs the loop on one thread in a forked child). The
outermost loop with loops inside, in each thread's part, checks for an interrupt once per
iteration (see ``CodeGenLLVM._polls``).

The closure holds every variable the body uses but does not define: buffer pointers, sizes
and the variables of loops around the parallel one. A ``parallel`` loop inside the outlined
body runs serially (the schedule refuses nested parallel loops before we get here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llvmlite import ir

from mlc.target.llvm import types as ty
from mlc.tir.expr import BufferLoad, Let, Var
from mlc.tir.functor import IRVisitor
from mlc.tir.stmt import Allocate, Buffer, BufferStore, For, LetStmt


class _FreeVars(IRVisitor):
    """The variables a statement uses, in order of first use, and those it defines."""

    def __init__(self) -> None:
        self.used: list[Var] = []
        self._seen: set[int] = set()
        self.defined: set[int] = set()

    def _use(self, v: Var) -> None:
        if id(v) not in self._seen:
            self._seen.add(id(v))
            self.used.append(v)

    def visit_Var(self, op: Var) -> None:
        self._use(op)

    visit_SizeVar = visit_Var

    def _buffer(self, buf: Buffer) -> None:
        self._use(buf.data)
        for e in (*buf.shape, *buf.strides):
            if isinstance(e, Var):  # only variables matter; constants may be plain ints
                self._use(e)
            elif not isinstance(e, int):
                self.visit(e)

    def visit_BufferLoad(self, op: BufferLoad) -> None:
        self._buffer(op.buffer)
        self.generic_visit(op)

    def visit_BufferStore(self, op: BufferStore) -> None:
        self._buffer(op.buffer)
        self.generic_visit(op)

    def visit_For(self, op: For) -> None:
        self.defined.add(id(op.loop_var))
        self.generic_visit(op)

    def visit_LetStmt(self, op: LetStmt) -> None:
        self.defined.add(id(op.var))
        self.generic_visit(op)

    def visit_Let(self, op: Let) -> None:
        self.defined.add(id(op.var))
        self.generic_visit(op)

    def visit_Allocate(self, op: Allocate) -> None:
        self.defined.add(id(op.buffer.data))
        for e in op.buffer.shape:
            if not isinstance(e, int):
                self.visit(e)
        self.visit(op.body)


def free_vars(loop: For) -> list[Var]:
    """Variables ``loop`` reads from outside (its own loop variable excluded)."""
    finder = _FreeVars()
    finder.visit(loop.body)
    finder.defined.add(id(loop.loop_var))
    return [v for v in finder.used if id(v) not in finder.defined]


class ParallelEmitter:
    """Mixin of :class:`mlc.target.llvm.codegen.CodeGenLLVM`: ``emit_parallel(loop)``."""

    b: ir.IRBuilder
    module: ir.Module
    vars: dict[Var, ir.Value]
    num_threads: int
    entry_name: str
    _alloca_b: ir.IRBuilder
    _in_parallel: bool
    _n_outlined: int
    _mask: ir.Value | None
    _polled: bool

    if TYPE_CHECKING:  # provided by the other parts of the code generator

        def emit(self, e: Any) -> ir.Value: ...
        def cast(self, v: ir.Value, src: str, dst: str) -> ir.Value: ...
        def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function: ...
        def start_function(self, fn: ir.Function) -> None: ...
        def serial_loop(self, s: For, lo: ir.Value, hi: ir.Value) -> None: ...

    def emit_parallel(self, loop: For) -> None:
        captured = [v for v in free_vars(loop) if v in self.vars]
        lo = self.cast(self.emit(loop.min), loop.min.dtype, loop.loop_var.dtype)
        n = self.cast(self.emit(loop.extent), loop.extent.dtype, loop.loop_var.dtype)
        values = [self.vars[v] for v in captured] + [lo, n]

        # Pack the closure in the caller's frame.
        struct = ir.LiteralStructType([v.type for v in values])
        closure = self._alloca_b.alloca(struct, name="closure")
        for k, v in enumerate(values):
            self.b.store(v, self.b.gep(closure, [ty.I32(0), ty.I32(k)], inbounds=True))

        name = f"{self.entry_name}__parallel{self._n_outlined}"
        self._n_outlined += 1
        body_fn = self._internal_function(name, ir.FunctionType(ty.VOID, [ty.I8P]))
        # The loop itself goes into a second function whose pointer arguments are `noalias`
        # (every pointer is a distinct array), so LLVM knows that storing to C cannot change
        # A, which pointers loaded from a closure would hide. It is never inlined: inlined,
        # the arguments' `noalias` becomes scope metadata that does not cover a buffer the
        # loop allocates on the heap (a packed panel over 64 KiB), and the micro-kernel then
        # reloads and stores its accumulators at every step of k (5x slower).
        chunk_fn = self._internal_function(
            name + "_chunk", ir.FunctionType(ty.VOID, [v.type for v in values])
        )
        chunk_fn.attributes.add("noinline")

        saved = (self.b, self._alloca_b, self.vars, self._in_parallel, self._mask, self._polled)
        self._polled = False  # each thread's part checks for an interrupt (codegen._polls)
        try:
            # wrapper: unpack the closure, find this thread's chunk, run it
            self.start_function(body_fn)
            self._in_parallel, self._mask = True, None
            typed = self.b.bitcast(body_fn.args[0], struct.as_pointer())
            loaded = [
                self.b.load(self.b.gep(typed, [ty.I32(0), ty.I32(k)], inbounds=True))
                for k in range(len(values))
            ]
            begin, end = self._static_chunk(loaded[-2], loaded[-1])
            self.b.call(chunk_fn, [*loaded[:-2], begin, end])
            self.b.ret_void()
            # chunk: for loop_var in range(begin, end): body
            self.start_function(chunk_fn)
            for arg, var in zip(chunk_fn.args, captured):
                arg.name = var.name
                if arg.type == ty.I8P:
                    arg.add_attribute("noalias")
            self.vars = dict(zip(captured, chunk_fn.args))
            self.serial_loop(loop, chunk_fn.args[-2], chunk_fn.args[-1])
            self.b.ret_void()
        finally:
            (self.b, self._alloca_b, self.vars, self._in_parallel, self._mask,
             self._polled) = saved

        gomp = self.declare(
            "GOMP_parallel",
            ir.FunctionType(ty.VOID, [body_fn.type, ty.I8P, ty.I32, ty.I32]),
        )
        data = self.b.bitcast(closure, ty.I8P)
        self.b.call(gomp, [body_fn, data, ty.I32(self.num_threads), ty.I32(0)])

    def _internal_function(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        fn = ir.Function(self.module, fnty, name=name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        return fn

    def _static_chunk(self, lo: ir.Value, n: ir.Value) -> tuple[ir.Value, ir.Value]:
        """This thread's part ``[begin, end)`` of ``[lo, lo + n)``."""
        t = lo.type
        i32 = ir.FunctionType(ty.I32, [])
        tid = self.b.call(self.declare("omp_get_thread_num", i32), [])
        nt = self.b.call(self.declare("omp_get_num_threads", i32), [])
        tid = self.b.sext(tid, t) if t.width > 32 else tid
        nt = self.b.sext(nt, t) if t.width > 32 else nt
        if t.width < 32:
            tid, nt = self.b.trunc(tid, t), self.b.trunc(nt, t)
        one = ir.Constant(t, 1)
        chunk = self.b.sdiv(self.b.sub(self.b.add(n, nt), one), nt)
        begin = self._smin(self.b.mul(tid, chunk), n)
        end = self._smin(self.b.add(begin, chunk), n)
        return self.b.add(lo, begin), self.b.add(lo, end)

    def _smin(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(self.b.icmp_signed("<", a, b), a, b)
