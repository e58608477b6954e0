"""The LLVM backend: a lowered ``PrimFunc`` becomes an LLVM module (text IR).

The native function takes one pointer per parameter buffer, then one ``int64`` per symbolic
size (``PrimFunc.size_vars``), then the scalar parameters by value
(``PrimFunc.scalar_args``, a bool as a byte)::

    void matmul(float* noalias A, float* noalias B, float* noalias C, i64 n, float alpha)

Statements map to control flow the way a C compiler would do it:

=====================  ==================================================================
``For`` serial         a loop with a phi node; a loop left ``vectorized``/``unroll`` by
                       lowering gets ``llvm.loop`` metadata asking LLVM to do it (a short
                       ``unroll`` loop with a constant extent is unrolled right here)
``For`` serial, outer  the same, and each iteration first reads ``@__mlc_interrupt``
                       (one volatile load and a branch) and leaves the loop when it is
                       set: Jupyter's interrupt stops a long call (:mod:`mlc.runtime.interrupt`);
                       a long loop with no loop inside checks once per 65536 iterations
``For`` parallel       outlined into ``void body(i8* closure)`` and run on every thread
                       by libgomp's ``GOMP_parallel`` (see :mod:`mlc.target.llvm.parallel`)
``IfThenElse``         a conditional branch
``Allocate``           ``alloca`` (64-byte aligned) when the size is a constant up to 64 KiB;
                       a constant size from 128 KiB: a block kept for the next call
                       (:mod:`mlc.target.llvm.workspace`); else ``aligned_alloc`` + ``free``
=====================  ==================================================================

Expressions are in :mod:`mlc.target.llvm.expr`; the module is optimised and compiled by
:mod:`mlc.runtime.jit`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llvmlite import ir

from mlc.errors import CodegenError
from mlc.runtime.interrupt import INTERRUPT_FLAG
from mlc.target.common import c_name
from mlc.target.llvm import dot
from mlc.target.llvm import types as ty
from mlc.target.llvm.expr import ExprEmitter
from mlc.target.llvm.parallel import ParallelEmitter
from mlc.target.llvm.workspace import KEEP_MAX, KEEP_MIN, WorkspaceEmitter
from mlc.tir import dtype as dt
from mlc.tir.expr import IntImm, PrimExpr, Range, Var
from mlc.tir.functor import contains
from mlc.tir.stmt import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from mlc.transform.flatten_buffers import checked_by_dimension

SHORT_OUTER_LOOP = 4  # an outer loop of at most this many iterations leaves the poll inside
POLL_BLOCK = 1 << 16  # a longer loop with no loop inside checks once per this many iterations
STACK_LIMIT = 64 * 1024  # bytes: larger (or symbolic) allocations go to the heap
UNROLL_LIMIT = 64  # an ``unroll`` loop up to this many iterations is unrolled by codegen
ALIGN = 64


@dataclass(frozen=True)
class LLVMSource:
    """What the backend produced: the module's text IR and the entry function's name."""

    ir: str
    entry: str
    func: PrimFunc
    uses_parallel_runtime: bool
    check_sites: tuple[tuple[str, str, str], ...] = ()
    """What each run-time check guards: (kind, expression, stored buffer), numbered from 1
    in the error record ``@__mlc_error``."""
    extern_symbols: tuple[str, ...] = ()
    """The C functions the program calls (``call_extern``), resolved in the process."""


class CodeGenLLVM(ParallelEmitter, WorkspaceEmitter, ExprEmitter):
    """Emits one lowered PrimFunc as an LLVM module. Use :func:`codegen_llvm`."""

    def __init__(self, *, parallel_runtime: bool, num_threads: int = 0,
                 bounds_check: bool = True) -> None:
        self.module = ir.Module(name="mlc")
        self.bounds_check = bounds_check
        self.conditional = 0  # depth of ifs and selects around the code being emitted
        self.loop_ranges: dict[Var, Range] = {}  # for proving indices in range
        self.checked_by_dimension: dict[int, Buffer] = {}  # see flatten_buffers
        self.free_vars: set[int] = set()  # the sizes and scalar parameters, see checks
        self.data_vars: set[Var] = set()  # scalars and lets holding data: no nsw (expr.py)
        self.index_memo: dict[int, tuple[PrimExpr, bool]] = {}
        self.check_sites: list[tuple[str, str, str]] = []  # see mlc.target.llvm.checks
        self.current_store = ""
        self.extern_symbols: set[str] = set()  # see mlc.target.llvm.extern
        self.parallel_runtime = parallel_runtime
        self.num_threads = num_threads
        self.vars: dict[Var, ir.Value] = {}
        self._mask: ir.Value | None = None
        self._in_parallel = False
        self._n_outlined = 0
        self._polled = False  # does a loop around the code being emitted poll the interrupt?
        self._interrupt: ir.GlobalVariable | None = None
        self.entry_name = "main"

    # -- functions ----------------------------------------------------------------------------
    def add_function(self, func: PrimFunc, name: str) -> None:
        self.entry_name = name
        self.checked_by_dimension = checked_by_dimension(func)
        sizes = func.size_vars
        scalars = func.scalar_args  # by value, each its own type (a bool as a byte)
        self.free_vars = {id(v) for v in (*sizes, *scalars)}
        fnty = ir.FunctionType(ty.VOID, [ty.I8P] * len(func.params) + [ty.I64] * len(sizes)
                               + [ty.memory_type(v.dtype) for v in scalars])
        fn = ir.Function(self.module, fnty, name=name)
        fn.attributes.add("nounwind")
        for arg, buf in zip(fn.args, func.params):
            arg.name = buf.data.name
            arg.add_attribute("noalias")
            self.vars[buf.data] = arg
        self.start_function(fn)
        for arg, var in zip(fn.args[len(func.params):], sizes):
            arg.name = var.name
            self.vars[var] = self.cast(arg, "int64", var.dtype)
        for arg, var in zip(fn.args[len(func.params) + len(sizes):], scalars):
            arg.name = var.name
            self.mark_data(var)
            if var.dtype == "bool":
                self.vars[var] = self.b.icmp_unsigned("!=", arg, ir.Constant(ty.I8, 0))
            else:
                self.vars[var] = arg
        self.emit_stmt(func.body)
        self.b.ret_void()

    def start_function(self, fn: ir.Function) -> None:
        """Point the builder at a new function: an ``entry`` block that holds only the
        allocas (so they happen once per call, not once per loop iteration), then code."""
        entry = fn.append_basic_block("entry")
        start = fn.append_basic_block("start")
        self.b = ir.IRBuilder(entry)
        jump = self.b.branch(start)
        self._alloca_b = ir.IRBuilder(entry)
        self._alloca_b.position_before(jump)
        self.b.position_at_end(start)

    # -- statements ---------------------------------------------------------------------------
    def emit_stmt(self, s: Stmt) -> None:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise CodegenError(
                f"the LLVM backend cannot compile a {type(s).__name__} statement; lowering "
                "should have removed it (did you build a function that was not lowered?)"
            )
        method(s)

    def stmt_SeqStmt(self, s: SeqStmt) -> None:
        for child in s.seq:
            self.emit_stmt(child)

    def stmt_Evaluate(self, s: Evaluate) -> None:
        if not isinstance(s.value, IntImm):
            self.emit(s.value)

    def stmt_BufferStore(self, s: BufferStore) -> None:
        self.current_store = s.buffer.name
        self.store(s.buffer, s.value, s.indices)

    def stmt_LetStmt(self, s: LetStmt) -> None:
        self.mark_data(s.var, s.value)
        self.vars[s.var] = self.emit(s.value)
        try:
            self.emit_stmt(s.body)
        finally:
            del self.vars[s.var]

    def stmt_IfThenElse(self, s: IfThenElse) -> None:
        cond = self.emit(s.condition)
        if ty.is_vector(cond.type):
            raise CodegenError(f"an if statement needs a scalar condition, got {s.condition}")
        self.conditional += 1
        try:
            if s.else_case is None:
                with self.b.if_then(cond):
                    self.emit_stmt(s.then_case)
                return
            with self.b.if_else(cond) as (then, otherwise):
                with then:
                    self.emit_stmt(s.then_case)
                with otherwise:
                    self.emit_stmt(s.else_case)
        finally:
            self.conditional -= 1

    def stmt_Allocate(self, s: Allocate) -> None:
        buf = s.buffer
        count: PrimExpr = IntImm(1, "int64")
        for extent in buf.shape:
            count = count * extent
        mem = ty.memory_type(buf.dtype)
        elem_bytes = max(1, dt.nbytes(dt.element(buf.dtype)))
        n = _const_value(buf.shape)
        if n is not None and n * elem_bytes <= STACK_LIMIT:
            slot = self._alloca_b.alloca(ir.ArrayType(mem, max(n, 1)), name=buf.name)
            slot.align = ALIGN
            self.vars[buf.data] = self.b.bitcast(slot, ty.I8P)
            self.emit_stmt(s.body)
            del self.vars[buf.data]
            return
        if n is not None and KEEP_MIN <= n * elem_bytes <= KEEP_MAX:
            size = -(-n * elem_bytes // ALIGN) * ALIGN
            ptr, slot = self.workspace_take(size, ALIGN)
            with self.b.if_then(self.allocated(ptr, buf, ir.Constant(ty.I64, size))):
                self.vars[buf.data] = ptr
                self.emit_stmt(s.body)
                del self.vars[buf.data]
            self.workspace_give(ptr, slot)
            return
        nbytes = self.b.mul(self.cast(self.emit(count), count.dtype, "int64"),
                            ir.Constant(ty.I64, elem_bytes))
        rounded = self.b.and_(self.b.add(nbytes, ir.Constant(ty.I64, ALIGN - 1)),
                              ir.Constant(ty.I64, -ALIGN))
        alloc = self.declare("aligned_alloc", ir.FunctionType(ty.I8P, [ty.I64, ty.I64]))
        # a fresh block aliases nothing else: without saying so LLVM must assume a store to
        # C may change a packed panel and reloads it (and spills C) at every step of k
        alloc.return_value.add_attribute("noalias")
        free = self.declare("free", ir.FunctionType(ty.VOID, [ty.I8P]))
        ptr = self.b.call(alloc, [ir.Constant(ty.I64, ALIGN), rounded], name=buf.name)
        with self.b.if_then(self.allocated(ptr, buf, rounded)):
            self.vars[buf.data] = ptr
            self.emit_stmt(s.body)
            del self.vars[buf.data]
        self.b.call(free, [ptr])

    def allocated(self, ptr: ir.Value, buf: Buffer, nbytes: ir.Value) -> ir.Value:
        """``ptr != null``; when it is null (no memory for ``buf``: the machine's, or the
        process's limit) the failure is recorded, and the code using ``buf`` is skipped:
        writing through a null pointer would kill the notebook's kernel."""
        null = ir.Constant(ptr.type, None)
        site = self.check_site("allocation", buf.name)
        self.fail_if(self.b.icmp_unsigned("==", ptr, null), site, nbytes)
        return self.b.icmp_unsigned("!=", ptr, null)

    def stmt_For(self, s: For) -> None:
        self.loop_ranges[s.loop_var] = Range(s.min, s.extent)
        if s.kind == ForKind.PARALLEL and self.parallel_runtime and not self._in_parallel:
            self.emit_parallel(s)
            return
        extent = s.extent.value if isinstance(s.extent, IntImm) else None
        if s.kind == ForKind.UNROLLED and extent is not None and extent <= UNROLL_LIMIT:
            lo = self.cast(self.emit(s.min), s.min.dtype, s.loop_var.dtype)
            for k in range(extent):
                self.vars[s.loop_var] = self.b.add(lo, ir.Constant(lo.type, k))
                self.emit_stmt(s.body)
            self.vars.pop(s.loop_var, None)
            return
        lo = self.cast(self.emit(s.min), s.min.dtype, s.loop_var.dtype)
        n = self.cast(self.emit(s.extent), s.extent.dtype, s.loop_var.dtype)
        hi = self.b.add(lo, n)
        self.serial_loop(s, lo, hi)

    def serial_loop(self, s: For, lo: ir.Value, hi: ir.Value) -> None:
        """``for loop_var in range(lo, hi): body`` with a phi node for the loop variable."""
        if self._blocks(s, lo):
            self.blocked_loop(s, lo, hi)
            return
        name = s.loop_var.name
        before = self.b.block
        header = self.b.append_basic_block(f"for_{name}.header")
        body = self.b.append_basic_block(f"for_{name}.body")
        done = self.b.append_basic_block(f"for_{name}.end")
        self.b.branch(header)
        self.b.position_at_end(header)
        i = self.b.phi(lo.type, name=name)
        i.add_incoming(lo, before)
        self.b.cbranch(self.b.icmp_signed("<", i, hi), body, done)
        self.b.position_at_end(body)
        self.vars[s.loop_var] = i
        outer = self._polls(s)
        if outer:
            self.poll_interrupt(done)
        self._polled |= outer
        try:
            self.emit_stmt(s.body)
        finally:
            self._polled ^= outer
        del self.vars[s.loop_var]
        step = self.b.add(i, ir.Constant(lo.type, 1), flags=["nsw"])
        i.add_incoming(step, self.b.block)
        back = self.b.branch(header)
        hint = _LOOP_HINTS.get(s.kind)
        if hint is not None:
            back.set_metadata("llvm.loop", self._loop_metadata(hint))
        self.b.position_at_end(done)

    def _polls(self, s: For) -> bool:
        """Does loop ``s`` check for an interrupt at each iteration? The outermost loop of
        each nest (of the function, or of a parallel loop's outlined part) that has loops
        inside; a short constant outer loop (a batch of 1) hands the check to the next.
        Innermost loops never poll: an exit would stop LLVM vectorizing them."""
        if self._polled:
            return False
        if isinstance(s.extent, IntImm) and s.extent.value <= SHORT_OUTER_LOOP:
            return False
        return contains(s.body, lambda n: isinstance(n, For))

    def _blocks(self, s: For, lo: ir.Value) -> bool:
        """Is ``s`` a long loop with nothing inside to check for an interrupt (a scan over
        a huge array, ``for i in range(2**40)``)? It runs in blocks (:meth:`blocked_loop`)."""
        if self._polled or not isinstance(lo.type, ir.IntType) or lo.type.width < 32:
            return False
        if isinstance(s.extent, IntImm) and s.extent.value <= POLL_BLOCK:
            return False
        return not contains(s.body, lambda n: isinstance(n, For))

    def blocked_loop(self, s: For, lo: ir.Value, hi: ir.Value) -> None:
        """A long innermost loop, checking for an interrupt every :data:`POLL_BLOCK`
        iterations; the loop itself stays as it was (LLVM still vectorizes it)::

            for start in range(lo, hi, POLL_BLOCK):      # checks @__mlc_interrupt
                for i in range(start, start + min(hi - start, POLL_BLOCK)): body
        """
        name = s.loop_var.name
        before = self.b.block
        header = self.b.append_basic_block(f"for_{name}.blocks")
        body = self.b.append_basic_block(f"for_{name}.block")
        done = self.b.append_basic_block(f"for_{name}.blocks_end")
        self.b.branch(header)
        self.b.position_at_end(header)
        start = self.b.phi(lo.type, name=f"{name}_block")
        start.add_incoming(lo, before)
        self.b.cbranch(self.b.icmp_signed("<", start, hi), body, done)
        self.b.position_at_end(body)
        self.poll_interrupt(done)
        rest = self.b.sub(hi, start)
        block = ir.Constant(lo.type, POLL_BLOCK)
        stop = self.b.add(start, self.b.select(self.b.icmp_signed("<", rest, block), rest,
                                               block))
        self._polled = True
        try:
            self.serial_loop(s, start, stop)
        finally:
            self._polled = False
        start.add_incoming(stop, self.b.block)
        self.b.branch(header)
        self.b.position_at_end(done)

    def poll_interrupt(self, leave: ir.Block) -> None:
        """``if (@__mlc_interrupt) break;``: a volatile load, so LLVM cannot hoist it out."""
        if self._interrupt is None:
            flag = ir.GlobalVariable(self.module, ty.I32, INTERRUPT_FLAG)
            flag.initializer = ir.Constant(ty.I32, 0)
            self._interrupt = flag
        set_ = self.b.load(self._interrupt, name="interrupted")  # made volatile in text()
        go_on = self.b.append_basic_block("not_interrupted")
        self.b.cbranch(self.b.icmp_unsigned("!=", set_, ir.Constant(ty.I32, 0)), leave, go_on)
        self.b.position_at_end(go_on)

    def _loop_metadata(self, hint: str) -> ir.MDValue:
        prop = self.module.add_metadata([ir.MetaDataString(self.module, hint), ir.IntType(1)(1)])
        return self.module.add_metadata([ir.MetaDataString(self.module, _SELF), prop])

    def thread_num(self) -> ir.Value:
        if not self.parallel_runtime:
            return ir.Constant(ty.I32, 0)
        fn = self.declare("omp_get_thread_num", ir.FunctionType(ty.I32, []))
        return self.b.call(fn, [])

    def text(self) -> str:
        """The module as text IR, with loop metadata made self-referential as LLVM wants."""
        src = str(self.module)
        if self._interrupt is not None:  # llvmlite's builder has no volatile load
            src = src.replace(f'load i32, i32* @"{INTERRUPT_FLAG}"',
                              f'load volatile i32, i32* @"{INTERRUPT_FLAG}"')
        pattern = rf'(!\d+) = !{{\s*!"{_SELF}",'
        return re.sub(pattern, lambda m: f"{m.group(1)} = distinct !{{{m.group(1)},", src)


_SELF = "mlc.loop.self"
_LOOP_HINTS = {
    ForKind.VECTORIZED: "llvm.loop.vectorize.enable",
    ForKind.UNROLLED: "llvm.loop.unroll.enable",
}


def _const_value(shape: tuple[PrimExpr | int, ...]) -> int | None:
    n = 1
    for extent in shape:
        if isinstance(extent, int):
            n *= extent
        elif isinstance(extent, IntImm):
            n *= extent.value
        else:
            return None
    return n


def codegen_llvm(
    func: PrimFunc,
    name: str | None = None,
    *,
    parallel_runtime: bool = False,
    num_threads: int = 0,
    triple: str = "",
    data_layout: str = "",
    bounds_check: bool = True,
    cpu_features: frozenset[str] | None = None,
) -> LLVMSource:
    """Emit ``func`` (lowered) as an LLVM module.

    ``parallel_runtime`` says whether libgomp is loaded: without it ``parallel`` loops are
    emitted as serial loops. ``num_threads`` (0 = libgomp's default, all cores) is passed to
    ``GOMP_parallel``. ``cpu_features`` (default: the host's) pick the instructions of the
    low-precision dot products (:mod:`mlc.target.llvm.dot`).
    """
    entry = c_name(name or func.name)
    gen = CodeGenLLVM(parallel_runtime=parallel_runtime, num_threads=num_threads,
                      bounds_check=bounds_check)
    gen.cpu_features = cpu_features if cpu_features is not None else dot.cpu_features()
    if triple:
        gen.module.triple = triple
    if data_layout:
        gen.module.data_layout = data_layout
    gen.add_function(func, entry)
    gen.workspace_finish()
    return LLVMSource(gen.text(), entry, func, gen._n_outlined > 0, tuple(gen.check_sites),
                      tuple(sorted(gen.extern_symbols)))
