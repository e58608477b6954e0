"""Scratch blocks kept from one call to the next: the packed panels of a tuned kernel.

A large ``Allocate`` (a packed panel of a GEMM, megabytes) used to be ``aligned_alloc`` and
``free`` on every call. Freed, glibc hands the pages back to the kernel; the next call gets
fresh pages and takes a page fault on each first touch: 340 faults per 1024^3 GEMM call on
two threads here, 3-5% of its time, and more than numpy's matmul pays.

Each such allocation site gets a small table of slots (a module global). Taking a block
swaps a slot for null (an atomic exchange, so two threads, or two Python threads calling the
same module, never get the same block); an empty slot means ``aligned_alloc``. Giving it
back puts it in the slot if the slot is empty (compare-and-swap), else frees it. A thread
starts at the slot of its OpenMP thread number, so the threads of a parallel loop keep one
block each. ``__mlc_workspace_release`` frees what the slots hold; the runtime calls it
when the compiled module is collected (:func:`mlc.runtime.jit.compile_ir`).

Only blocks of a constant size between :data:`KEEP_MIN` and :data:`KEEP_MAX` bytes are
kept: small ones are cheap for malloc, and a module should not sit on gigabytes between
calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from llvmlite import ir

from mlc.target.llvm import types as ty

if TYPE_CHECKING:
    class _Host(Protocol):
        module: ir.Module
        b: ir.IRBuilder

        def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function: ...
        def thread_num(self) -> ir.Value: ...

KEEP_MIN = 128 * 1024  # bytes; glibc's default threshold for handing blocks back
KEEP_MAX = 64 * 1024 * 1024  # a GEMM panel is a few MiB; a module should not sit on GiBs
SLOTS = 16
RELEASE = "__mlc_workspace_release"  # the name mlc.runtime.jit looks up


class WorkspaceEmitter:
    """Mixin of the code generator: take and give back kept blocks."""

    def workspace_take(self: _Host, nbytes: int, align: int) -> tuple[ir.Value, ir.Value]:
        """A block of ``nbytes`` (constant) for one allocation site: (pointer, slot)."""
        sites: list[ir.GlobalVariable] = self.__dict__.setdefault("_workspace_sites", [])
        table_ty = ir.ArrayType(ty.I8P, SLOTS)
        table = ir.GlobalVariable(self.module, table_ty, name=f"__mlc_ws.{len(sites)}")
        table.linkage = "internal"
        table.initializer = ir.Constant(table_ty, None)
        sites.append(table)
        index = self.b.and_(self.thread_num(), ir.Constant(ty.I32, SLOTS - 1))
        slot = self.b.gep(table, [ir.Constant(ty.I32, 0), index], inbounds=True)
        take = _take_function(self, align)
        return self.b.call(take, [slot, ir.Constant(ty.I64, nbytes)]), slot

    def workspace_give(self: _Host, ptr: ir.Value, slot: ir.Value) -> None:
        self.b.call(_give_function(self), [slot, ptr])

    def workspace_finish(self: _Host) -> bool:
        """Define ``__mlc_workspace_release`` when the module keeps blocks; True if so."""
        sites: list[ir.GlobalVariable] = self.__dict__.get("_workspace_sites", [])
        if not sites:
            return False
        free = self.declare("free", ir.FunctionType(ty.VOID, [ty.I8P]))
        fn = ir.Function(self.module, ir.FunctionType(ty.VOID, []), name=RELEASE)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        null = ir.Constant(ty.I8P, None)
        for table in sites:
            for k in range(SLOTS):
                slot = b.gep(table, [ir.Constant(ty.I32, 0), ir.Constant(ty.I32, k)],
                             inbounds=True)
                b.call(free, [b.atomic_rmw("xchg", slot, null, "acq_rel")])
        b.ret_void()
        return True


def _take_function(host: _Host, align: int) -> ir.Function:
    """``noalias i8* take(i8** slot, i64 bytes)``: the slot's block, or a new one. Not
    inlined, so its result stays ``noalias`` (a fresh block, as from malloc) for LLVM's
    alias analysis: otherwise a store to the output would force reloads of the panel."""
    name = f"__mlc_ws_take{align}"
    existing = host.module.globals.get(name)
    if isinstance(existing, ir.Function):
        return existing
    alloc = host.declare("aligned_alloc", ir.FunctionType(ty.I8P, [ty.I64, ty.I64]))
    alloc.return_value.add_attribute("noalias")
    fn = ir.Function(host.module, ir.FunctionType(ty.I8P, [ty.I8P.as_pointer(), ty.I64]),
                     name=name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("nounwind")
    fn.return_value.add_attribute("noalias")
    slot, nbytes = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    kept = b.atomic_rmw("xchg", slot, ir.Constant(ty.I8P, None), "acq_rel")
    entry = b.block
    fresh = fn.append_basic_block("fresh")
    done = fn.append_basic_block("done")
    b.cbranch(b.icmp_unsigned("==", kept, ir.Constant(ty.I8P, None)), fresh, done)
    b.position_at_end(fresh)
    new = b.call(alloc, [ir.Constant(ty.I64, align), nbytes])
    b.branch(done)
    b.position_at_end(done)
    ptr = b.phi(ty.I8P)
    ptr.add_incoming(kept, entry)
    ptr.add_incoming(new, fresh)
    b.ret(ptr)
    return fn


def _give_function(host: _Host) -> ir.Function:
    """``void give(i8** slot, i8* block)``: back into the slot if it is empty, else freed."""
    name = "__mlc_ws_give"
    existing = host.module.globals.get(name)
    if isinstance(existing, ir.Function):
        return existing
    free = host.declare("free", ir.FunctionType(ty.VOID, [ty.I8P]))
    fn = ir.Function(host.module, ir.FunctionType(ty.VOID, [ty.I8P.as_pointer(), ty.I8P]),
                     name=name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("nounwind")
    slot, ptr = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    swapped = b.cmpxchg(slot, ir.Constant(ty.I8P, None), ptr, "acq_rel", "monotonic")
    kept = b.extract_value(swapped, 1)
    spill = fn.append_basic_block("spill")
    done = fn.append_basic_block("done")
    b.cbranch(kept, done, spill)
    b.position_at_end(spill)
    b.call(free, [ptr])
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn
