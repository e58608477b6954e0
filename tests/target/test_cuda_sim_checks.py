"""cuda-sim's checks: for each detector, a kernel with the bug and the same kernel fixed."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import (
    BarrierDivergenceError,
    GPUCheckError,
    GPUIndexError,
    MLCError,
    RaceError,
    UninitializedReadError,
)
from mlc.target.cuda_sim import check
from mlc.target.gpu.split_host_device import insert_thread_sync, split_host_device
from mlc.tir import expr as E
from mlc.tir import stmt as S
from mlc.tir.functor import IRMutator

N, T = 32, 8


def matmul(n: int) -> S.PrimFunc:
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    return te.create_prim_func([X, W, Y])


def shared_matmul(n: int = N, tile: int = T) -> tir.Schedule:
    sch = tir.Schedule(matmul(n))
    blk = sch.get_block("Y")
    i, j, k = sch.get_loops(blk)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    ko, _ = sch.split(k, factors=[None, tile])
    sch.reorder(bi, bj, ko, ti, tj)
    for loop, axis in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ti, "threadIdx.y"),
                       (tj, "threadIdx.x")):
        sch.bind(loop, axis)
    for index in (0, 1):
        copy = sch.cache_read(blk, index, "shared")
        sch.compute_at(copy, ko)
        rows, cols = sch.get_loops(copy)[-2:]
        sch.bind(rows, "threadIdx.y")
        sch.bind(cols, "threadIdx.x")
    return sch


def elementwise(n: int = 256) -> S.PrimFunc:
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return mlc.lower(s, [A, C], target="cuda-sim")


def mm_args(n: int = N) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32),
            np.zeros((n, n), np.float32)]


class _Stores(IRMutator):
    """Rewrite the stores into the buffer called ``name`` with ``fn(store)``."""

    def __init__(self, name: str, fn) -> None:
        self.name, self.fn = name, fn

    def visit_BufferStore(self, op: S.BufferStore) -> object:
        op = self.generic_visit(op)
        return self.fn(op) if op.buffer.name == self.name else op


def rewrite_stores(func: S.PrimFunc, name: str, fn) -> S.PrimFunc:
    return S.PrimFunc(func.params, _Stores(name, fn).visit(func.body), func.name, func.attrs)


# -- (1) races -------------------------------------------------------------------------------

def test_missing_barrier_is_a_race_naming_buffer_threads_and_line() -> None:
    racy = split_host_device(mlc.lower(shared_matmul().mod))  # insert_thread_sync left out
    x, w, y = mm_args()
    with pytest.raises(RaceError) as info:
        check(racy, x, w, y)
    msg = str(info.value)
    assert "main_kernel" in msg and "_shared[" in msg and "blockIdx (0, 0)" in msg
    assert "threadIdx (" in msg and "at line" in msg and "# <-- " in msg
    assert "__syncthreads" in msg
    kinds = {f.kind for f in info.value.findings}
    assert "write-read race" in kinds and "read-write race" in kinds
    assert isinstance(info.value, GPUCheckError) and isinstance(info.value, MLCError)


def test_same_kernel_with_barriers_passes_and_computes_the_product() -> None:
    fixed = insert_thread_sync(split_host_device(mlc.lower(shared_matmul().mod)))
    x, w, y = mm_args()
    report = check(fixed, x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
    assert report.barriers > 0 and "no races" in repr(report)


def test_blocks_writing_the_same_global_element_race() -> None:
    func = elementwise()
    # every block writes C[threadIdx.x]: blocks are never ordered
    racy = rewrite_stores(func, "C", lambda st: S.BufferStore(
        st.buffer, st.value, (E.FloorMod(st.indices[0], E.IntImm(64, "int32")),)))
    a = np.arange(256, dtype=np.float32)
    with pytest.raises(RaceError, match="different blocks"):
        check(racy, a, np.zeros(256, np.float32))
    c = np.zeros(256, np.float32)
    check(func, a, c)
    np.testing.assert_array_equal(c, a * 2)


def test_threads_writing_the_same_value_do_not_race() -> None:
    func = elementwise()
    same = rewrite_stores(func, "C", lambda st: S.BufferStore(
        st.buffer, E.FloatImm(1.0, "float32"), (E.IntImm(0, "int32"),)))
    check(same, np.zeros(256, np.float32), np.zeros(256, np.float32))


# -- (2) uninitialised shared memory --------------------------------------------------------

def test_read_of_shared_memory_never_written() -> None:
    func = insert_thread_sync(split_host_device(mlc.lower(shared_matmul().mod)))
    no_copy = rewrite_stores(func, "W_shared", lambda st: S.Evaluate(E.IntImm(0, "int32")))
    x, w, y = mm_args()
    with pytest.raises(UninitializedReadError, match="W_shared.*no thread of its block"):
        check(no_copy, x, w, y)
    check(func, x, w, y)


# -- (3) out-of-range accesses --------------------------------------------------------------

def test_out_of_range_global_write() -> None:
    func = elementwise()
    shifted = rewrite_stores(func, "C", lambda st: S.BufferStore(
        st.buffer, st.value, (st.indices[0] + 1,)))
    with pytest.raises(GPUIndexError, match=r"blockIdx \(3\), threadIdx \(63\) writes element "
                                            r"256 of C"):
        check(shifted, np.zeros(256, np.float32), np.zeros(256, np.float32))
    check(func, np.zeros(256, np.float32), np.zeros(256, np.float32))


def test_out_of_range_shared_write_is_also_an_index_error() -> None:
    func = insert_thread_sync(split_host_device(mlc.lower(shared_matmul().mod)))
    bad = rewrite_stores(func, "X_shared", lambda st: S.BufferStore(
        st.buffer, st.value, (st.indices[0] + 1,)))
    with pytest.raises(IndexError, match="X_shared.*shared memory"):
        check(bad, *mm_args())


# -- (4) barriers in divergent branches ----------------------------------------------------

def test_barrier_in_a_branch_some_threads_skip() -> None:
    func = insert_thread_sync(split_host_device(mlc.lower(shared_matmul().mod)))

    class Guard(IRMutator):
        def visit_KernelLaunch(self, k: S.KernelLaunch) -> object:
            tx = k.index_vars["threadIdx.x"]
            from dataclasses import replace
            return replace(k, body=S.IfThenElse(E.LT(tx, E.IntImm(4, tx.dtype)), k.body))

    guarded = S.PrimFunc(func.params, Guard().visit(func.body), func.name, func.attrs)
    with pytest.raises(BarrierDivergenceError, match=r"__syncthreads\(\).*threadIdx \(0, 0\)"
                                                     r".*threadIdx \(4, 0\)"):
        check(guarded, *mm_args())
    check(func, *mm_args())


# -- the module's entry points ---------------------------------------------------------------

def test_cuda_sim_module_checks_on_first_call_and_with_f_check() -> None:
    f = mlc.build(shared_matmul().mod, target="cuda-sim")
    x, w, y = mm_args()
    f(x, w, y)                        # checked (on copies) and run
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
    assert f.check_on_first_call is False
    report = f.check(x, w, np.zeros_like(y), blocks=2)
    assert report.blocks["main_kernel"] == (2, 16)


def test_check_refuses_what_is_not_a_gpu_program() -> None:
    with pytest.raises(MLCError, match="cuda-sim"):
        check(matmul(8), *mm_args(8))


def test_64x64_matmul_with_16x16_tiles_checks_quickly() -> None:
    f = mlc.build(shared_matmul(64, 16).mod, target="cuda-sim")
    x, w, y = mm_args(64)
    report = f.check(x, w, y)
    assert report.blocks["main_kernel"] == (16, 16)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
