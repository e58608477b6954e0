"""CUDA C source: kernels cut out of bound loops, shared memory, barriers, NVRTC, errors."""

from __future__ import annotations

import pytest

import mlc
from mlc import te, tir
from mlc.errors import CodegenError
from mlc.target.cuda import nvrtc as cuda_nvrtc

needs_nvrtc = pytest.mark.skipif(
    not cuda_nvrtc.available(), reason="NVRTC not installed (pip install nvidia-cuda-nvrtc-cu12)"
)


def fusion_schedule(factor: int = 128):
    """The seed's elementwise fusion kernel ``y = x0 * x1 + x2``."""
    n = te.var("num_element")
    x0, x1, x2 = (te.placeholder((n,), name=f"x{i}") for i in range(3))
    y = te.compute((n,), lambda i: x0[i] * x1[i] + x2[i], name="y")
    s = te.create_schedule(y.op)
    bx, tx = s[y].split(y.op.axis[0], factor=factor)
    s[y].bind(bx, te.thread_axis("blockIdx.x"))
    s[y].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [x0, x1, x2, y]


# num_element may exceed int32 elements: the offsets are computed in int64
FUSION_KERNEL = """\
// grid (blockIdx.x: (num_element + 127) // 128); block (threadIdx.x: 128)
extern "C" __global__ void __launch_bounds__(128) fusion_kernel(float* __restrict__ x0, \
float* __restrict__ x1, float* __restrict__ x2, float* __restrict__ y, int32_t num_element) {
  int32_t i_0 = blockIdx.x;
  int32_t i_1 = threadIdx.x;
  if (((i_0 * 128) + i_1) < num_element) {
    y[((((int64_t)i_0) * 128) + ((int64_t)i_1))] = ((x0[((((int64_t)i_0) * 128) + \
((int64_t)i_1))] * x1[((((int64_t)i_0) * 128) + ((int64_t)i_1))]) + \
x2[((((int64_t)i_0) * 128) + ((int64_t)i_1))]);
  }
}
"""


def kernel_text(source: str) -> str:
    """The source after the prelude (from the first kernel's comment line on)."""
    return source[source.index("// grid"):]


def shared_matmul(n: int = 64, tile: int = 16) -> tir.Schedule:
    """Y = X @ W with 16x16 thread blocks and both operands staged through shared memory."""
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    sch = tir.Schedule(te.create_prim_func([X, W, Y]))
    blk = sch.get_block("Y")
    i, j, kk = sch.get_loops(blk)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    sch.reorder(bi, bj, ti, tj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    ko, _ = sch.split(kk, factors=[None, tile])
    xs = sch.cache_read(blk, 0, "shared")
    sch.compute_at(xs, ko)
    sch.bind(sch.get_loops(xs)[-1], "threadIdx.x")  # each thread copies one element
    ws = sch.cache_read(blk, 1, "shared")
    sch.compute_at(ws, ko)
    return sch


def test_fusion_kernel_source():
    s, args = fusion_schedule()
    f = mlc.build(s, args, target="cuda", name="fusion")
    assert kernel_text(f.get_source("cuda")) == FUSION_KERNEL
    assert f.get_source() == f.get_source("cuda")
    (k,) = f.kernels
    assert str(k.grid["blockIdx.x"]) == "(num_element + 127) // 128"
    assert k.threads == {"threadIdx.x": 128}


def test_shared_memory_and_barriers_in_source():
    f = mlc.build(shared_matmul().mod, target="cuda")
    src = kernel_text(f.get_source("cuda"))
    assert "__shared__ float X_shared[256];" in src  # one 16 x 16 tile per k_0 step
    assert "__shared__ float W_shared[256];" in src
    assert "int32_t i_0 = blockIdx.y;" in src and "int32_t j_1 = threadIdx.x;" in src
    # the tile loop: load both tiles, wait, multiply, wait before the next load
    body = src[src.index("for (int32_t k_0"):]
    load, rest = body.split("__syncthreads();", 1)
    assert "X_shared[" in load and "W_shared[" in load and "Y[" not in load
    compute, tail = rest.split("__syncthreads();", 1)
    assert "Y[" in compute
    assert "__syncthreads" not in tail
    assert src.count("__syncthreads();") == 2
    assert f.kernels[0].threads == {"threadIdx.x": 16, "threadIdx.y": 16}


def test_smaller_thread_loop_gets_a_guard():
    n = 64
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((n,), lambda i: B[i] + 1.0, name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    bo, bi = sch.split(sch.get_loops(sch.get_block("C"))[0], factors=[None, 32])
    sch.bind(bo, "blockIdx.x")
    sch.bind(bi, "threadIdx.x")
    bb = sch.get_block("B")
    sch.compute_at(bb, bo)
    sch.set_scope(bb, 0, "shared")
    o, i = sch.split(sch.get_loops(bb)[-1], factors=[None, 16])
    sch.bind(i, "threadIdx.x")
    src = kernel_text(mlc.build(sch.mod, target="cuda").get_source())
    assert "if (threadIdx.x < 16) {" in src
    assert src.index("if (threadIdx.x < 16)") < src.index("__syncthreads();") < src.index("C[")


def test_math_functions_use_float_versions():
    A = te.placeholder((256,), name="A")
    B = te.compute((256,), lambda i: te.exp(A[i]) + te.sqrt(A[i]), name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    src = mlc.build(s, [A, B], target="cuda").get_source()
    assert "expf(" in src and "sqrtf(" in src


def test_unbound_schedule_is_an_error():
    A = te.placeholder((1024,), name="A")
    B = te.compute((1024,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(CodegenError, match=r"bind the outer loop to blockIdx\.x and the inner "
                                           r"one to threadIdx\.x"):
        mlc.build(s, [A, B], target="cuda")


def test_host_loop_around_kernel_is_an_error():
    A = te.placeholder((8, 64), name="A")
    B = te.compute((8, 64), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[1], te.thread_axis("threadIdx.x"))
    with pytest.raises(CodegenError, match="the loop 'i' .* runs on the host around GPU loops"):
        mlc.build(s, [A, B], target="cuda")


def test_too_many_threads_per_block():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    s[B].bind(i, te.thread_axis("threadIdx.y"))
    s[B].bind(j, te.thread_axis("threadIdx.x"))
    with pytest.raises(CodegenError, match=r"4096 threads per block .* at most 1024"):
        mlc.build(s, [A, B], target="cuda")


def test_symbolic_thread_extent_is_an_error():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    with pytest.raises(CodegenError, match="number of threads per block must be a constant"):
        mlc.build(s, [A, B], target="cuda")


def test_target_strings():
    from mlc.target.target import parse_target

    t = parse_target("cuda -arch=sm_86")
    assert (t.kind, t.arch) == ("cuda", "sm_86")
    assert str(t) == "cuda -arch=sm_86"
    assert parse_target("cuda-sim").kind == "cuda-sim"


@needs_nvrtc
def test_nvrtc_compiles_the_fusion_kernel():
    s, args = fusion_schedule()
    f = mlc.build(s, args, target="cuda -arch=sm_80", name="fusion")
    ptx = f.get_source("ptx")
    assert ".visible .entry fusion_kernel(" in ptx
    assert ".target sm_80" in ptx


@needs_nvrtc
def test_nvrtc_compiles_shared_memory_matmul():
    f = mlc.build(shared_matmul().mod, target="cuda")
    ptx = f.get_source("ptx")
    assert "bar.sync" in ptx and ".shared" in ptx


@needs_nvrtc
def test_nvrtc_error_carries_the_log():
    with pytest.raises(CodegenError, match=r"NVRTC could not compile(.|\n)*undefined_thing"):
        cuda_nvrtc.compile_to_ptx('extern "C" __global__ void k() { undefined_thing(); }')


@needs_nvrtc
def test_nvrtc_compiles_max_reduction_and_vectors():
    A = te.placeholder((64, 64), name="A")
    r = te.reduce_axis((0, 64), name="r")
    M = te.compute((64,), lambda i: te.max(A[i, r], axis=r), name="M")
    B = te.compute((64, 64), lambda i, j: A[i, j] - M[i], name="B")
    s = te.create_schedule(B.op)
    for T in (M, B):
        o, i = s[T].split(T.op.axis[0], factor=16)
        s[T].bind(o, te.thread_axis("blockIdx.x"))
        s[T].bind(i, te.thread_axis("threadIdx.x"))
    s[B].vectorize(B.op.axis[1])
    f = mlc.build(s, [A, B], target="cuda")
    assert f.get_source("ptx").count(".entry") == 2


def test_index_division_of_thread_and_loop_variables_is_plain_c_division() -> None:
    """threadIdx / 2 is floor division already: no 64-bit helper call in the kernel's
    indices (64-bit division is emulated on a GPU); a maybe-negative operand keeps it."""
    src = kernel_text(mlc.build(shared_matmul().mod, target="cuda").get_source())
    assert "mlc_floordiv(" not in src and "mlc_floormod(" not in src
    n = 64
    A = te.placeholder((n,), "int32", name="A")
    B = te.compute((n,), lambda i: A[i] // 3 + (i - 7) // 2, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    src = kernel_text(mlc.build(s, [A, B], target="cuda").get_source())
    assert "mlc_floordiv(A[" in src  # A[i] may be negative: it keeps the helper
    assert "((i_1 + 1) / 2)" in src  # (i - 7) // 2 was simplified to a non-negative division


def test_an_aligned_vectorized_copy_is_one_float4_move() -> None:
    """The course's cooperative fetch (split by 4, vectorize) moves 16 bytes per thread; a
    copy whose ends are not multiples of 4 stays lane by lane."""
    n = 64
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    c = sch.get_block("C")
    i, j, kk = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 8])
    k0, _ = sch.split(kk, [None, 32])  # an 8 x 32 tile of A: 64 threads x 4 lanes
    sch.reorder(i0, j0, i1, j1, k0)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(sch.fuse(i1, j1), "threadIdx.x")
    cache = sch.cache_read(c, 0, "shared")
    sch.compute_at(cache, k0)
    _, t, v = sch.split(sch.fuse(*sch.get_loops(cache)[-2:]), [None, 64, 4])
    sch.vectorize(v)
    sch.bind(t, "threadIdx.x")
    src = kernel_text(mlc.build(sch.mod, target="cuda").get_source())
    assert "__shared__ __align__(16) float A_shared[256];" in src
    assert "*(float4*)(&A_shared[" in src and "*(const float4*)(&A[" in src

    X = te.placeholder((130,), name="X")
    Y = te.compute((128,), lambda i: X[i + 1], name="Y")  # X's end is not 16-byte aligned
    s = te.create_schedule(Y.op)
    bx, tx = s[Y].split(Y.op.axis[0], factor=128)
    to, vi = s[Y].split(tx, factor=4)
    s[Y].bind(bx, te.thread_axis("blockIdx.x"))
    s[Y].bind(to, te.thread_axis("threadIdx.x"))
    s[Y].vectorize(vi)
    src = kernel_text(mlc.build(s, [X, Y], target="cuda").get_source())
    assert "float4" not in src and "/* 4 lanes */" in src
