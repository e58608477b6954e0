"""Compiling LLVM text IR to machine code in this process (MCJIT).

Three steps, each visible from a :class:`mlc.runtime.Module`:

1. parse and verify the IR the backend wrote (``get_source("ll-unopt")``);
2. optimise it with LLVM's new pass manager at ``-O3`` for this CPU, with loop and SLP
   vectorization on (``get_source("ll")``);
3. compile it with MCJIT into executable memory; assembly on request (``get_source("asm")``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import llvmlite.binding as llvm

from mlc.errors import CodegenError, TargetError

T = TypeVar("T")


class Target(Protocol):
    """What the JIT needs of a target: the CPU to compile for (None: this host)."""

    @property
    def mcpu(self) -> str | None: ...

    @property
    def mattr(self) -> str | None: ...


@functools.cache
def _initialize() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    # Math functions that LLVM lowers to calls (expf, tanhf, erf...) come from libm.
    # Conversions the CPU has no instruction for (double -> half without AVX512-FP16, say)
    # become calls to compiler-runtime helpers (__truncdfhf2) that live in libgcc_s; without
    # it MCJIT would call address 0.
    for lib in ("m", "gcc_s"):
        path = ctypes.util.find_library(lib)
        if path:
            llvm.load_library_permanently(path)


def missing_symbols(names: tuple[str, ...]) -> list[str]:
    """The C functions among ``names`` that this process cannot resolve (libm is loaded).
    MCJIT aborts the whole process on an unresolved symbol, so check before linking."""
    _initialize()
    return [n for n in names if not llvm.address_of_symbol(n)]


@functools.cache
def target_machine(mcpu: str | None = None, mattr: str | None = None) -> llvm.TargetMachine:
    """A target machine for this process's triple; the host CPU unless told otherwise.
    Shared (cached) for optimising and printing assembly; never give it to an engine."""
    return new_target_machine(mcpu, mattr)


def new_target_machine(mcpu: str | None = None, mattr: str | None = None) -> llvm.TargetMachine:
    """A fresh target machine. An MCJIT engine takes ownership of (and later frees) the
    machine it is given, so each engine gets its own."""
    _initialize()
    triple = llvm.get_process_triple()
    cpu = mcpu or llvm.get_host_cpu_name()
    asked = mcpu is not None or mattr is not None  # names the user wrote: check them
    if mattr is None:
        mattr = llvm.get_host_cpu_features().flatten() if mcpu is None else ""
    try:
        target = llvm.Target.from_triple(triple)
    except RuntimeError as err:  # pragma: no cover - host triple always exists
        raise CodegenError(f"LLVM cannot compile for {triple}: {err}") from err
    if not asked:
        return target.create_target_machine(
            cpu=cpu, features=mattr, opt=3, reloc="default", codemodel="jitdefault"
        )
    # LLVM only warns (on stderr) about a CPU or feature it does not know, and later ends the
    # process ("LLVM ERROR: 64-bit code requested on a subtarget that doesn't support it")
    # while generating code for it: read the warnings and refuse the target instead.
    tm, warnings = _stderr_of(lambda: target.create_target_machine(
        cpu=cpu, features=mattr, opt=3, reloc="default", codemodel="jitdefault"))
    unknown = [line for line in warnings.splitlines() if "is not a recognized" in line]
    if unknown:
        raise TargetError(
            f"LLVM does not know {unknown[0].split(' is not')[0]} ("
            f"{f'-mcpu={mcpu} ' if mcpu else ''}{f'-mattr={mattr}' if mattr else ''}".strip()
            + "): use an LLVM CPU name such as "
            f"{llvm.get_host_cpu_name()!r} (this machine), 'haswell' or 'skylake-avx512', "
            "and features such as +avx2, +avx512f"
        )
    if warnings:
        sys.stderr.write(warnings)
    return tm


def _stderr_of(fn: Callable[[], T]) -> tuple[T, str]:
    """Run ``fn`` and return its result with what it wrote to file descriptor 2 (LLVM's
    own warnings bypass Python's sys.stderr). The capture is a temporary file, not a pipe:
    another thread writing much to stderr meanwhile cannot fill it and block the process;
    what it wrote is handed back with the rest (the caller writes it out again)."""
    sys.stderr.flush()
    with tempfile.TemporaryFile() as capture:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            result = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        text = capture.read().decode(errors="replace")
    return result, text


def machine_for(target: Target) -> llvm.TargetMachine:
    return target_machine(target.mcpu, target.mattr)


def parse(ir_text: str) -> llvm.ModuleRef:
    """Parse and verify text IR; a failure here is a bug in the backend, shown with the IR."""
    _initialize()
    try:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
    except RuntimeError as err:
        raise CodegenError(
            f"LLVM rejected the generated code (a bug in mlc's backend): {err}\n{ir_text}"
        ) from err
    return mod


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    """Run the ``-O3`` pipeline in place: SLP vectorization and unrolling, and LLVM's loop
    vectorizer only on the loops a schedule marked ``vectorized`` (their
    ``llvm.loop.vectorize.enable`` hint; mlc's own pass vectorizes the others).

    Why not everywhere: LLVM 22's loop vectorizer miscompiles a guarded loop nest on CPUs
    with AVX-512 (``C[by * 8 + tx // 4, bx * 4 + tx % 4] = B[bx * 4 + tx % 4]`` loaded
    ``B[bx * 4 + 0 .. 7]`` as if ``tx % 4`` were consecutive across 8 lanes: odd rows wrong,
    without a word; tests/target/test_llvm_autovectorize.py). A schedule says where vectors
    go; LLVM does not guess."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = False  # vectorize only where forced (the schedule's hint)
    # SLP vectorization is quadratic in a basic block's length: one 30,000-instruction
    # block (a 10,000-term expression built in Python) took it 40 s of a 50 s build
    pto.slp_vectorization = _largest_block(mod) <= SLP_BLOCK_LIMIT
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)


SLP_BLOCK_LIMIT = 8000
"""Instructions in one basic block past which :func:`optimize` skips SLP vectorization."""


def _largest_block(mod: llvm.ModuleRef) -> int:
    return max((sum(1 for _ in b.instructions) for f in mod.functions for b in f.blocks),
               default=0)


@dataclass
class Compiled:
    """An executable module: keep this object alive while its function may be called."""

    engine: llvm.ExecutionEngine
    address: int
    optimized_ir: str
    workspace: weakref.finalize | None = None
    """Frees the blocks the module keeps between calls (mlc.target.llvm.workspace) when
    this object is collected; None when it keeps none."""


def compile_ir(ir_text: str, entry: str, target: Target) -> Compiled:
    """Parse, optimise and JIT-compile ``ir_text``; return the address of ``entry``."""
    tm = machine_for(target)
    mod = parse(ir_text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    optimize(mod, tm)
    optimized = str(mod)
    engine = llvm.create_mcjit_compiler(mod, new_target_machine(target.mcpu, target.mattr))
    engine.finalize_object()
    address = engine.get_function_address(entry)
    if not address:  # pragma: no cover - the entry is always defined
        raise CodegenError(f"compiled module has no function {entry!r}")
    compiled = Compiled(engine, address, optimized)
    release = engine.get_function_address(WORKSPACE_RELEASE)
    if release:  # blocks kept between calls (mlc.target.llvm.workspace): freed with the code
        compiled.workspace = weakref.finalize(compiled, _release_workspace, engine, release)
    return compiled


WORKSPACE_RELEASE = "__mlc_workspace_release"


def _release_workspace(engine: llvm.ExecutionEngine, address: int) -> None:
    """Free the blocks a module kept. Holds ``engine`` so its code outlives the call."""
    ctypes.CFUNCTYPE(None)(address)()


def assembly(ir_text: str, target: Target) -> str:
    """Target assembly of (already optimised) text IR."""
    tm = machine_for(target)
    mod = parse(ir_text)
    return str(tm.emit_assembly(mod))
