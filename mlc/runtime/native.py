"""mlc's own native helpers: a few lines of LLVM IR, compiled once per process.

Compiled kernels call three things that are not in their own module; the JIT links them to
the functions below (``llvm.add_symbol``), whatever other OpenMP runtime the process has::

    GOMP_parallel(fn, data, threads, 0)   -> mlc_parallel_launch: libgomp's GOMP_parallel of
                                             mlc's own copy, or fn(data) on this thread alone
                                             in a child forked after the parent's threads ran
    omp_get_thread_num()                  -> that copy's omp_get_thread_num
    omp_get_num_threads()                 -> that copy's omp_get_num_threads

and the interrupt of a long call (:mod:`mlc.runtime.interrupt`) needs a C signal handler,
because Python's own handler runs only when the native call has returned::

    mlc_arm(flag)      install mlc_on_sigint for SIGINT (keeping the old action), flag = 0
    mlc_on_sigint(..)  *flag = 1, then the old handler (Python's: KeyboardInterrupt later)
    mlc_disarm()       put the old action back; return *flag and clear it

``mlc_spin(n)`` runs ``n`` rounds of the wait loop libgomp spins in (a load and a ``pause``):
timing it turns "spin 50 microseconds" into the ``GOMP_SPINCOUNT`` of this CPU.
"""

from __future__ import annotations

import ctypes
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm

# glibc's struct sigaction on x86-64 and aarch64: handler, 128-byte mask, int flags, restorer
SIGACTION_WORDS = 19
SA_SIGINFO = 0x4
SA_ONSTACK = 0x08000000

_IR = """
@mlc_fork_serial = global i32 0
@mlc_team_started = global i32 0
@mlc_gomp_parallel = global ptr null
@mlc_interrupt_target = global ptr null
@mlc_saved_sigint = global [{words} x i64] zeroinitializer

declare i32 @sigaction(i32, ptr, ptr)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; GOMP_parallel as the kernels call it
define void @mlc_parallel_launch(ptr %fn, ptr %data, i32 %threads, i32 %flags) {{
entry:
  %serial = load volatile i32, ptr @mlc_fork_serial
  %gomp = load ptr, ptr @mlc_gomp_parallel
  %forked = icmp ne i32 %serial, 0
  %none = icmp eq ptr %gomp, null
  %alone = or i1 %forked, %none
  br i1 %alone, label %serially, label %team
serially:                                   ; omp_get_num_threads() is 1 outside a team
  call void %fn(ptr %data)
  ret void
team:
  store i32 1, ptr @mlc_team_started
  call void %gomp(ptr %fn, ptr %data, i32 %threads, i32 %flags)
  ret void
}}

; n rounds of libgomp's wait loop, for timing
define i64 @mlc_spin(i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %x = load volatile i32, ptr @mlc_fork_serial
  call void asm sideeffect "{relax}", ""()
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret i64 %n
}}

define void @mlc_on_sigint(i32 %sig, ptr %info, ptr %context) {{
entry:
  %flag = load volatile ptr, ptr @mlc_interrupt_target
  %armed = icmp ne ptr %flag, null
  br i1 %armed, label %set, label %chain
set:
  store volatile i32 1, ptr %flag
  br label %chain
chain:                                      ; then what was there before (SIG_DFL 0, SIG_IGN 1)
  %old = load i64, ptr @mlc_saved_sigint
  %real = icmp ugt i64 %old, 1
  br i1 %real, label %call, label %done
call:
  %handler = inttoptr i64 %old to ptr
  call void %handler(i32 %sig, ptr %info, ptr %context)
  br label %done
done:
  ret void
}}

define i32 @mlc_arm(ptr %flag) {{
entry:
  %new = alloca [{words} x i64], align 8
  %old = alloca [{words} x i64], align 8
  call void @llvm.memset.p0.i64(ptr %new, i8 0, i64 {nbytes}, i1 false)
  store ptr @mlc_on_sigint, ptr %new
  %flags = getelementptr i8, ptr %new, i64 136
  store i32 {flags}, ptr %flags
  store volatile i32 0, ptr %flag
  store volatile ptr %flag, ptr @mlc_interrupt_target
  %r = call i32 @sigaction(i32 2, ptr %new, ptr %old)
  %failed = icmp ne i32 %r, 0
  br i1 %failed, label %unarmed, label %check
check:
  %handler = load i64, ptr %old
  %ours = icmp eq i64 %handler, ptrtoint (ptr @mlc_on_sigint to i64)
  br i1 %ours, label %armed, label %keep   ; left installed before: keep the first old one
keep:
  call void @llvm.memcpy.p0.p0.i64(ptr @mlc_saved_sigint, ptr %old, i64 {nbytes}, i1 false)
  %plain = icmp ule i64 %handler, 1        ; SIG_DFL or SIG_IGN: a SIGINT is not Python's
  br i1 %plain, label %giveback, label %armed
giveback:
  %g = call i32 @sigaction(i32 2, ptr %old, ptr null)
  br label %unarmed
unarmed:
  store volatile ptr null, ptr @mlc_interrupt_target
  ret i32 0
armed:
  ret i32 1
}}

define i32 @mlc_disarm() {{
entry:
  %r = call i32 @sigaction(i32 2, ptr @mlc_saved_sigint, ptr null)
  %flag = load volatile ptr, ptr @mlc_interrupt_target
  store volatile ptr null, ptr @mlc_interrupt_target
  %armed = icmp ne ptr %flag, null
  br i1 %armed, label %read, label %done
read:                                       ; and clear it: later calls must not stop
  %v = load volatile i32, ptr %flag
  store volatile i32 0, ptr %flag
  ret i32 %v
done:
  ret i32 0
}}
"""


@dataclass
class Helpers:
    """The compiled helpers: addresses of the functions, and the flags as ctypes ints."""

    engine: llvm.ExecutionEngine
    launch: int
    fork_serial: ctypes.c_int32
    team_started: ctypes.c_int32
    gomp_parallel: ctypes.c_void_p
    spin: Callable[[int], int]
    arm: Callable[[int], int]
    disarm: Callable[[], int]


@functools.cache
def helpers() -> Helpers:
    """Compile the helpers (once per process) and point the kernels' runtime calls at them."""
    from mlc.runtime import jit

    jit._initialize()
    triple = llvm.get_process_triple()
    relax = "pause" if triple.startswith(("x86_64", "i686", "i386")) else "yield"
    text = _IR.format(words=SIGACTION_WORDS, nbytes=8 * SIGACTION_WORDS,
                      flags=SA_SIGINFO | SA_ONSTACK, relax=relax)
    mod = jit.parse(text)
    tm = jit.new_target_machine()
    mod.triple = tm.triple
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()

    def var(name: str, kind: Any = ctypes.c_int32) -> Any:
        return kind.from_address(engine.get_global_value_address(name))

    def fn(name: str, restype: Any, *argtypes: Any) -> Any:
        return ctypes.CFUNCTYPE(restype, *argtypes)(engine.get_function_address(name))

    h = Helpers(
        engine=engine,
        launch=engine.get_function_address("mlc_parallel_launch"),
        fork_serial=var("mlc_fork_serial"),
        team_started=var("mlc_team_started"),
        gomp_parallel=var("mlc_gomp_parallel", ctypes.c_void_p),
        spin=fn("mlc_spin", ctypes.c_int64, ctypes.c_int64),
        arm=fn("mlc_arm", ctypes.c_int32, ctypes.c_void_p),
        disarm=fn("mlc_disarm", ctypes.c_int32),
    )
    llvm.add_symbol("GOMP_parallel", h.launch)
    return h


def bind_openmp(gomp_parallel: int, thread_num: int, num_threads: int) -> None:
    """Run the kernels' parallel loops on the libgomp whose functions are at these addresses."""
    h = helpers()
    h.gomp_parallel.value = gomp_parallel
    llvm.add_symbol("omp_get_thread_num", thread_num)
    llvm.add_symbol("omp_get_num_threads", num_threads)


@functools.cache
def seconds_per_spin() -> float:
    """How long one round of libgomp's wait loop takes on this CPU (a ``pause`` costs about
    10 cycles on older Intel cores and 140 on Skylake and later, so counts do not carry)."""
    h = helpers()
    n = 20_000
    h.spin(n)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        h.spin(n)
        best = min(best, time.perf_counter() - start)
    return best / n
