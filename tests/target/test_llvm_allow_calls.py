"""``mlc.build(..., allow_calls=False)``: the compiled module may call only math and mlc's runtime.

The check reads the LLVM module that is compiled (its declared functions), so a call that
no visitor saw is refused too; a student's own build (the default) keeps calling out.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import CodegenError, ForbiddenCallError
from mlc.script import from_source
from mlc.target.llvm.extern import RUNTIME_SYMBOLS, forbidden_symbols

HEAD = '''@T.prim_func
def main(A: T.Buffer((2, 9), "float32"), B: T.Buffer((2, 9), "float32")):
'''
COPY = '''    for i, j in T.grid(2, 9):
        B[i, j] = A[i, j]
'''


def program(*lines: str) -> str:
    return HEAD + "".join(f"    {line}\n" for line in lines) + COPY


ATTACKS = {
    "shape": program('tmp = T.alloc_buffer((T.call_extern("int32", "getpid") * 0 + 2,), '
                     '"float32")'),
    "strides": program('tmp = T.alloc_buffer((2, 9), "float32", strides=('
                       'T.call_extern("int32", "getpid") * 0 + 9, 1))',
                       'tmp[0, 0] = A[0, 0]', 'B[0, 0] = tmp[0, 0]'),
    "statement": program('T.evaluate(T.call_extern("int32", "getpid"))'),
    "value": HEAD + '''    for i, j in T.grid(2, 9):
        B[i, j] = A[i, j] + T.cast(T.call_extern("int32", "getpid") * 0, "float32")
''',
    "runtime helper by name": program('T.evaluate(T.call_extern("int32", "free", 0))'),
    "llvm intrinsic by name": program(
        'T.evaluate(T.call_extern("int64", "llvm.readcyclecounter"))'),
}


@pytest.mark.parametrize("where", sorted(ATTACKS))
def test_a_call_out_is_refused_naming_the_symbol(where):
    func = from_source(ATTACKS[where])
    with pytest.raises(ForbiddenCallError) as info:
        mlc.build(func, target="llvm", allow_calls=False)
    name = {"runtime helper by name": "free", "llvm intrinsic by name": "llvm.readcyclecounter"}
    assert f"'{name.get(where, 'getpid')}'" in str(info.value)
    assert "allow_calls=False" in str(info.value)
    assert isinstance(info.value, CodegenError)


def test_the_same_programs_build_and_run_by_default():
    """Chapter 01 calls C functions from a program: the default build keeps allowing it."""
    module = mlc.build(from_source(ATTACKS["shape"]), target="llvm")
    a = np.arange(18, dtype="float32").reshape(2, 9)
    b = np.zeros_like(a)
    module(a, b)
    np.testing.assert_array_equal(b, a)


def test_a_packed_call_is_refused():
    from mlc.runtime import registry

    @registry.register_func("test_allow_calls.touch", override=True)
    def touch(x):
        return 0

    text = program('T.evaluate(T.call_packed("test_allow_calls.touch", 1))')
    with pytest.raises(ForbiddenCallError, match=r"a packed function \(call_packed\)"):
        mlc.build(from_source(text), target="llvm", allow_calls=False)


def test_math_parallel_heap_buffers_and_libm_by_name_are_allowed():
    """What a graded program needs: math (intrinsics and libm), parallel loops (libgomp),
    a heap intermediate (aligned_alloc/free), and libm named by call_pure_extern."""
    n = 4096
    A = te.placeholder((n,), name="A")
    T1 = te.compute((n,), lambda i: te.tanh(A[i]) + te.exp(A[i]) + te.erf(A[i]), name="T1")
    C = te.compute((n,), lambda i: T1[(i + 1) % n] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    f = mlc.build(s, [A, C], target="llvm", allow_calls=False)
    a = np.random.default_rng(0).uniform(-1, 1, n).astype("float32")
    c = np.zeros_like(a)
    f(a, c)
    from math import erf

    t = np.tanh(a) + np.exp(a) + np.array([erf(x) for x in a], "float32")
    np.testing.assert_allclose(c, np.roll(t, -1) * 2, rtol=1e-5, atol=1e-5)
    text = HEAD + '''    for i, j in T.grid(2, 9):
        B[i, j] = T.call_pure_extern("float32", "expf", A[i, j])
'''
    g = mlc.build(from_source(text), target="llvm", allow_calls=False)
    x = np.ones((2, 9), "float32")
    y = np.zeros_like(x)
    g(x, y)
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)


def test_the_allowlist_holds_no_way_out():
    assert not RUNTIME_SYMBOLS & {"system", "execve", "open", "dlopen", "fork", "syscall"}
    ir = 'declare i32 @system(i8*)\n@environ = external global i8**\n'
    assert forbidden_symbols(ir, []) == ["system", "environ"]
    assert forbidden_symbols('declare float @expf(float)\n', []) == []


def test_cuda_sim_kernels_are_checked_and_a_real_gpu_cannot_promise_it():
    """cuda-sim's kernels are CPU loops compiled by LLVM: checked the same way. A real GPU's
    CUDA C is not, so ``allow_calls=False`` is refused there rather than ignored."""
    from mlc import tir
    from mlc.tir.call import call_extern

    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + te.const(0.0) * call_extern(
        "int32", "getpid").astype("float32"), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    bx, tx = sch.split(i, factors=[None, 32])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    with pytest.raises(ForbiddenCallError, match="'getpid'"):
        mlc.build(sch.mod, target="cuda-sim", allow_calls=False)
    with pytest.raises(CodegenError, match="compiles for this CPU"):
        mlc.build(sch.mod, target="cuda", allow_calls=False)


@pytest.mark.parametrize("name", ["exp", "free", "aligned_alloc", "memset", "expf",
                                  "__mlc_workspace_release"])
def test_a_program_named_like_a_function_the_code_calls_still_computes(name):
    """A program named ``exp`` (``emit_te(topi.exp, ...)`` names it so) that calls libm's
    float64 ``exp`` called itself; ``free``, ``aligned_alloc`` or ``__mlc_*`` with a heap
    buffer failed to build (IndexError, TypeError, DuplicatedNameError). The compiled
    symbol is then ``<name>_kernel``."""
    n = 4096
    A = te.placeholder((n,), name="A", dtype="float64")
    T1 = te.compute((n,), lambda i: te.exp(A[i]), name="T1")
    C = te.compute((n,), lambda i: T1[(i + 7) % n] + 1.0, name="C")
    f = mlc.build(_named(te.create_prim_func([A, C]), name), target="llvm")
    a = np.linspace(-2, 2, n)
    c = np.zeros_like(a)
    f(a, c)
    np.testing.assert_allclose(c, np.roll(np.exp(a), -7) + 1.0, rtol=1e-12)
    assert f.entry_name == f"{name}_kernel"


def _named(func, name):
    from dataclasses import replace

    return replace(func, name=name)
