"""cuda-sim: GPU kernels run on the CPU with block/thread/shared-memory semantics, vs numpy."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import CodegenError
from mlc.runtime import cuda_driver
from mlc.target.cuda_sim.simulate import simulate, simulate_kernel
from mlc.target.gpu.split_host_device import barrier, insert_thread_sync, split_host_device
from mlc.target.llvm.build import compile_lowered
from mlc.tir.expr import FloatImm, IntImm, Var
from mlc.tir.stmt import Buffer, BufferStore, IfThenElse, KernelLaunch, seq

rng = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return rng.random(shape, dtype=np.float32)


def elementwise(factor: int):
    n = te.var("n")
    x0, x1, x2 = (te.placeholder((n,), name=f"x{i}") for i in range(3))
    y = te.compute((n,), lambda i: x0[i] * x1[i] + x2[i], name="y")
    s = te.create_schedule(y.op)
    bx, tx = s[y].split(y.op.axis[0], factor=factor)
    s[y].bind(bx, te.thread_axis("blockIdx.x"))
    s[y].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [x0, x1, x2, y]


def matmul_func(n: int) -> tuple:
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    return te.create_prim_func([X, W, Y]), (X, W, Y)


def bind_2d(sch: tir.Schedule, tile: int):
    blk = sch.get_block("Y")
    i, j, k = sch.get_loops(blk)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    sch.reorder(bi, bj, ti, tj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    return blk, k


def shared_matmul(n: int = 64, tile: int = 16) -> tir.Schedule:
    sch = tir.Schedule(matmul_func(n)[0])
    blk, k = bind_2d(sch, tile)
    ko, _ = sch.split(k, factors=[None, tile])
    xs = sch.cache_read(blk, 0, "shared")
    sch.compute_at(xs, ko)
    sch.bind(sch.get_loops(xs)[-1], "threadIdx.x")
    ws = sch.cache_read(blk, 1, "shared")
    sch.compute_at(ws, ko)
    return sch


@pytest.mark.parametrize("n", [1000, 64, 1])
def test_elementwise_non_dividing_split(n):
    s, args = elementwise(64)
    f = mlc.build(s, args, target="cuda-sim", name="fusion")
    x0, x1, x2 = rand(n), rand(n), rand(n)
    y = np.full(n, -1.0, "float32")
    f(x0, x1, x2, y)
    np.testing.assert_allclose(y, x0 * x1 + x2, rtol=1e-6)


def test_matmul_2d_thread_binding():
    sch = tir.Schedule(matmul_func(32)[0])
    bind_2d(sch, 8)
    f = mlc.build(sch.mod, target="cuda-sim")
    x, w, y = rand(32, 32), rand(32, 32), np.zeros((32, 32), "float32")
    f(x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
    assert f.kernels[0].threads == {"threadIdx.x": 8, "threadIdx.y": 8}


def test_matmul_shared_memory_tiles():
    f = mlc.build(shared_matmul().mod, target="cuda-sim")
    x, w, y = rand(64, 64), rand(64, 64), np.zeros((64, 64), "float32")
    f(x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
    assert "__syncthreads" in f.get_source("cuda")


def test_te_shared_matmul_with_facade():
    n, tile = 32, 8
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    s = te.create_schedule(Y.op)
    XS = s.cache_read(X, "shared", [Y])
    i, j = Y.op.axis
    bi, bj, ti, tj = s[Y].tile(i, j, tile, tile)
    ko, ki = s[Y].split(Y.op.reduce_axis[0], factor=tile)
    s[Y].bind(bi, te.thread_axis("blockIdx.y"))
    s[Y].bind(bj, te.thread_axis("blockIdx.x"))
    s[Y].bind(ti, te.thread_axis("threadIdx.y"))
    s[Y].bind(tj, te.thread_axis("threadIdx.x"))
    s[XS].compute_at(s[Y], ko)
    f = mlc.build(s, [X, W, Y], target="cuda-sim")
    x, w, y = rand(n, n), rand(n, n), np.zeros((n, n), "float32")
    f(x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)


def reduction_schedule(rows: int, cols: int, threads: int) -> tir.Schedule:
    """Row sums: each thread of a block adds a strided slice into shared memory, then
    thread 0 adds the partial sums (after a barrier)."""
    A = te.placeholder((rows, cols), name="A")
    ko = te.reduce_axis((0, cols // threads), name="ko")
    P = te.compute((rows, threads), lambda i, t: te.sum(A[i, ko * threads + t], axis=ko),
                   name="P")
    r = te.reduce_axis((0, threads), name="r")
    B = te.compute((rows,), lambda i: te.sum(P[i, r], axis=r), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, _ = sch.get_loops(sch.get_block("B"))
    io, ii = sch.split(i, factors=[None, 1])
    sch.bind(io, "blockIdx.x")
    sch.bind(ii, "threadIdx.x")
    bp = sch.get_block("P")
    sch.compute_at(bp, io)
    sch.bind(sch.get_loops(bp)[1], "threadIdx.x")
    sch.set_scope(bp, 0, "shared")
    return sch


def test_reduction_through_shared_memory():
    f = mlc.build(reduction_schedule(8, 256, 32).mod, target="cuda-sim")
    a, b = rand(8, 256), np.zeros(8, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)
    src = f.get_source("cuda")
    assert "__shared__ float P[32];" in src
    assert src.index("__syncthreads();") < src.index("if (threadIdx.x < 1)")


def test_missing_barrier_shows_in_the_result():
    """Without barriers a thread reads shared memory other threads have not written yet:
    the simulator runs threads in lock-step phases only between barriers, so it sees it."""
    func = mlc.lower(shared_matmul(32, 8).mod)
    x, w = rand(32, 32), rand(32, 32)
    results = []
    for sync in (True, False):
        gpu = split_host_device(func)
        cpu = simulate(insert_thread_sync(gpu) if sync else gpu)
        y = np.zeros((32, 32), "float32")
        compile_lowered(cpu, "llvm")(x, w, y)
        results.append(y)
    np.testing.assert_allclose(results[0], x @ w, rtol=1e-5)
    assert np.isnan(results[1]).any() or not np.allclose(results[1], x @ w)


def test_barrier_in_divergent_code_is_an_error():
    tx = Var("threadIdx.x", "int32")
    out = Buffer("out", (IntImm(32),), "float32")
    body = IfThenElse(tx < 16, seq(BufferStore(out, FloatImm(1.0), (tx,)), barrier()))
    kernel = KernelLaunch("k", body, (), (("threadIdx.x", 32),), (("threadIdx.x", tx),),
                          (out.data,), ("float32",))
    with pytest.raises(CodegenError, match="differs between threads"):
        simulate_kernel(kernel)


def test_module_sources_and_repr():
    s, args = elementwise(32)
    f = mlc.build(s, args, target="cuda-sim", name="fusion")
    assert "fusion_kernel" in f.get_source("cuda")
    assert "define" in f.get_source("ll")
    assert "cuda-sim" in repr(f)
    with pytest.raises(mlc.errors.ArgumentError, match="unknown source format"):
        f.get_source("spirv")
    with pytest.raises(mlc.errors.ArgumentError):
        f(np.zeros(3, "float32"))  # wrong number of arguments: checked before running
    t = f.time_evaluator(number=2, repeat=1)(*(rand(100) for _ in range(4)))
    assert len(t.results) == 1


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_driver.available(), reason="no NVIDIA GPU / CUDA driver here")
def test_real_gpu_matches_simulator():
    from mlc.target.cuda import nvrtc as cuda_nvrtc

    if not cuda_nvrtc.available():
        pytest.skip("NVRTC not installed")
    x, w = rand(64, 64), rand(64, 64)
    y = np.zeros((64, 64), "float32")
    mlc.build(shared_matmul().mod, target="cuda")(x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
    s, args = elementwise(64)
    a, b, c = rand(1000), rand(1000), rand(1000)
    out = np.zeros(1000, "float32")
    mlc.build(s, args, target="cuda")(a, b, c, out)
    np.testing.assert_allclose(out, a * b + c, rtol=1e-6)


def test_local_accumulator_lives_across_barriers():
    """A per-thread "local" array used on both sides of a barrier keeps one copy per thread."""
    sch = tir.Schedule(matmul_func(32)[0])
    blk, k = bind_2d(sch, 8)
    ko, _ = sch.split(k, factors=[None, 8])
    yl = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(yl, sch.get_loops(blk)[3])
    xs = sch.cache_read(blk, 0, "shared")
    sch.compute_at(xs, ko)
    sch.bind(sch.get_loops(xs)[-1], "threadIdx.x")
    f = mlc.build(sch.mod, target="cuda-sim")
    assert "float Y_local[1];" in f.get_source("cuda")
    x, w, y = rand(32, 32), rand(32, 32), np.zeros((32, 32), "float32")
    f(x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)


def test_two_kernels_share_a_global_intermediate():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((n,), lambda i: B[n - 1 - i] + 1.0, name="C")  # reads other blocks' B
    s = te.create_schedule(C.op)
    for T in (B, C):
        o, i = s[T].split(T.op.axis[0], factor=32)
        s[T].bind(o, te.thread_axis("blockIdx.x"))
        s[T].bind(i, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [A, C], target="cuda-sim", name="twice")
    assert [k.name for k in f.kernels] == ["twice_kernel0", "twice_kernel1"]
    a, c = rand(100), np.zeros(100, "float32")
    f(a, c)
    np.testing.assert_allclose(c, 2 * a[::-1] + 1, rtol=1e-6)


def test_vectorized_lanes_inside_a_thread():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    jo, ji = s[B].split(j, factor=4)
    s[B].bind(i, te.thread_axis("blockIdx.x"))
    s[B].bind(jo, te.thread_axis("threadIdx.x"))
    s[B].vectorize(ji)
    f = mlc.build(s, [A, B], target="cuda-sim")
    assert "/* 4 lanes */" in f.get_source("cuda")
    a, b = rand(64, 64), np.zeros((64, 64), "float32")
    f(a, b)
    np.testing.assert_allclose(b, 2 * a)


def test_store_outside_thread_loops_runs_in_one_thread():
    """The final sum is not bound to threadIdx: all threads would add into B[i] at once on a
    GPU, so the first thread does it alone (after the barrier)."""
    A = te.placeholder((8, 256), name="A")
    ko = te.reduce_axis((0, 8), name="ko")
    P = te.compute((8, 32), lambda i, t: te.sum(A[i, ko * 32 + t], axis=ko), name="P")
    r = te.reduce_axis((0, 32), name="r")
    B = te.compute((8,), lambda i: te.sum(P[i, r], axis=r), name="B")
    sch2 = tir.Schedule(te.create_prim_func([A, B]))
    i, _ = sch2.get_loops(sch2.get_block("B"))
    sch2.bind(i, "blockIdx.x")
    bp = sch2.get_block("P")
    sch2.compute_at(bp, i)
    sch2.bind(sch2.get_loops(bp)[1], "threadIdx.x")
    sch2.set_scope(bp, 0, "shared")
    f = mlc.build(sch2.mod, target="cuda-sim")
    src = f.get_source("cuda")
    assert src.index("__syncthreads();") < src.index("if (threadIdx.x == 0) {")
    a, b = rand(8, 256), np.zeros(8, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


def test_the_simulation_of_a_kernel_with_barriers_is_well_formed(monkeypatch):
    """Each phase between barriers gets its own thread loops, with fresh variables: the
    verifier (MLC_DEBUG=1) once refused threadIdx.x defined twice."""
    monkeypatch.setenv("MLC_DEBUG", "1")
    f = mlc.build(shared_matmul().mod, target="cuda-sim")
    x, w, y = rand(64, 64), rand(64, 64), np.zeros((64, 64), "float32")
    f(x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
