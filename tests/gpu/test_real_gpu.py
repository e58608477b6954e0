"""On a real NVIDIA GPU: the ``"cuda"`` target computes what the CPU and numpy compute.

Every test here needs a GPU and NVRTC and is skipped without them (the reason says which).
They are the differential half of the GPU chapter's promise: the kernels that ``cuda-sim``
checks on a laptop are the kernels a GPU runs, so each program runs three ways (the GPU, its
simulation, and the LLVM CPU build or numpy) and the answers must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu.test_warp_shuffle import rfactor_row_sum, row_reduction
from gpu_schedules.test_course_programs import blocking_with_shared
from gpu_schedules.test_random_gpu_schedules import A_NP, B_NP, gpu_schedules
from gpu_schedules.test_scan_gpu import _cumsum_schedule
from hypothesis import HealthCheck, given, settings

import mlc
from mlc import te, tir
from mlc.errors import ArgumentError, MLCError
from mlc.runtime import cuda_driver
from mlc.target.cuda import nvrtc

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda_driver.available(), reason="no NVIDIA GPU / CUDA driver here"),
    pytest.mark.skipif(not nvrtc.available(), reason="NVRTC not installed (mlc[gpu])"),
]

rng = np.random.default_rng(7)


def threads(s: te.Schedule, t: te.Tensor, factor: int = 64) -> None:
    """Spread the (fused) axes of ``t`` over blocks of ``factor`` threads."""
    axis = s[t].fuse(*t.op.axis) if len(t.op.axis) > 1 else t.op.axis[0]
    bx, tx = s[t].split(axis, factor=factor)
    s[t].bind(bx, te.thread_axis("blockIdx.x"))
    s[t].bind(tx, te.thread_axis("threadIdx.x"))


def three_ways(tensors: list[te.Tensor], inputs: list[np.ndarray], out_dtype: str,
               factor: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The last tensor computed on the GPU, on cuda-sim and by the LLVM CPU build."""
    out = tensors[-1]
    results = []
    for target in ("cuda", "cuda-sim", "llvm"):
        s = te.create_schedule(out.op)
        if target != "llvm":
            threads(s, out, factor)
        f = mlc.build(s, tensors, target=target)
        y = np.zeros([int(d) for d in out.shape], out_dtype)
        f(*inputs, y)
        results.append(y)
    return results[0], results[1], results[2]


FLOAT_UNARY = {
    "exp": te.exp, "exp2": te.exp2, "log": te.log, "log2": te.log2, "log10": te.log10,
    "sqrt": te.sqrt, "rsqrt": te.rsqrt, "fabs": te.abs, "floor": te.floor, "ceil": te.ceil,
    "trunc": te.trunc, "round": te.round, "nearbyint": te.nearbyint, "sin": te.sin,
    "cos": te.cos, "tan": te.tan, "atan": te.atan, "tanh": te.tanh, "sigmoid": te.sigmoid,
    "erf": te.erf,
    "log1p": te.log1p, "expm1": te.expm1,
}
POSITIVE_ONLY = {"log", "log2", "log10", "sqrt", "rsqrt", "log1p"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
def test_float_intrinsics_agree_with_the_cpu(name: str, dtype: str) -> None:
    n = 1000
    x = rng.uniform(-4, 4, n).astype(dtype)
    x[:8] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, -0.0]  # ties: round's half-way rule
    if name in POSITIVE_ONLY:
        x = np.abs(x) + np.asarray(0.01, dtype)
    A = te.placeholder((n,), dtype, name="A")
    B = te.compute((n,), lambda i: FLOAT_UNARY[name](A[i]), name="B")
    gpu, sim, cpu = three_ways([A, B], [x], dtype)
    rtol = 2e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(gpu, cpu, rtol=rtol, atol=rtol, err_msg=f"{name} GPU vs CPU")
    np.testing.assert_array_equal(sim, cpu, err_msg=f"{name} cuda-sim vs CPU")


INT_BINARY = {
    "floordiv": te.floordiv, "floormod": te.floormod, "truncdiv": te.truncdiv,
    "truncmod": te.truncmod, "py_floordiv": lambda a, b: a // b, "py_mod": lambda a, b: a % b,
    "max": te.max, "min": te.min, "mul": lambda a, b: a * b, "sub": lambda a, b: a - b,
}
NUMPY_INT = {
    "floordiv": np.floor_divide, "floormod": np.mod, "py_floordiv": np.floor_divide,
    "py_mod": np.mod, "max": np.maximum, "min": np.minimum, "mul": np.multiply,
    "sub": np.subtract,
    "truncdiv": lambda a, b: (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(a.dtype),
    "truncmod": lambda a, b: (a - b * (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)))
                              ).astype(a.dtype),
}


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("name", sorted(INT_BINARY))
def test_integer_arithmetic_with_negative_operands(name: str, dtype: str) -> None:
    """C's ``/`` truncates; floordiv rounds down: the GPU must print the one it means."""
    n = 512
    a = rng.integers(-1000, 1000, n).astype(dtype)
    b = rng.integers(1, 50, n).astype(dtype) * rng.choice(np.array([-1, 1], dtype), n)
    A = te.placeholder((n,), dtype, name="A")
    B = te.placeholder((n,), dtype, name="B")
    C = te.compute((n,), lambda i: INT_BINARY[name](A[i], B[i]), name="C")
    gpu, sim, cpu = three_ways([A, B, C], [a, b], dtype)
    with np.errstate(all="ignore"):
        want = NUMPY_INT[name](a, b)
    np.testing.assert_array_equal(cpu, want, err_msg=f"{name} CPU vs numpy")
    np.testing.assert_array_equal(gpu, want, err_msg=f"{name} GPU vs numpy")
    np.testing.assert_array_equal(sim, want, err_msg=f"{name} cuda-sim vs numpy")


def test_max_and_min_propagate_nan_on_the_gpu() -> None:
    n = 64
    a = rng.standard_normal(n).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    a[::3], b[1::5] = np.nan, np.nan
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: te.max(A[i], B[i]) + te.min(A[i], B[i]), name="C")
    gpu, sim, cpu = three_ways([A, B, C], [a, b], "float32", factor=32)
    want = np.maximum(a, b) + np.minimum(a, b)
    for got in (gpu, sim, cpu):
        np.testing.assert_array_equal(got, want)


def test_casts_between_float_and_int() -> None:
    n = 300
    x = rng.uniform(-60, 60, n)
    A = te.placeholder((n,), "float64", name="A")
    C = te.compute(
        (n,), lambda i: ((A[i] * A[i]).astype("float32") + A[i].astype("float32")).astype(
            "int32") % 7, name="C")
    gpu, sim, cpu = three_ways([A, C], [x], "int32")
    want = (x * x).astype("float32") + x.astype("float32")
    np.testing.assert_array_equal(cpu, want.astype("int32") % 7)
    np.testing.assert_array_equal(gpu, cpu)
    np.testing.assert_array_equal(sim, cpu)


def test_float16_is_refused_with_what_works() -> None:
    A = te.placeholder((64,), "float16", name="A")
    B = te.compute((64,), lambda i: A[i] * A[i], name="B")
    s = te.create_schedule(B.op)
    threads(s, B, 32)
    with pytest.raises(mlc.errors.CodegenError, match="float16.*float32"):
        mlc.build(s, [A, B], target="cuda")


def test_reduction_and_if_then_else_with_symbolic_size() -> None:
    n = te.var("n")
    A = te.placeholder((n, 37), name="A")
    k = te.reduce_axis((0, 37), name="k")
    B = te.compute((n,), lambda i: te.sum(te.if_then_else(A[i, k] > 0, A[i, k], 0.0), axis=k),
                   name="B")
    s = te.create_schedule(B.op)
    threads(s, B, 32)
    f = mlc.build(s, [A, B], target="cuda")
    for rows in (1, 31, 33, 1000):
        a = rng.standard_normal((rows, 37)).astype("float32")
        b = np.full(rows, np.nan, "float32")
        f(a, b)
        np.testing.assert_allclose(b, np.where(a > 0, a, 0).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tiles", [(8, 8, 8, 8, 8), (4, 4, 8, 8, 8), (8, 8, 16, 16, 8)])
def test_mlc_course_blocking_with_shared_on_the_gpu(tiles: tuple[int, ...]) -> None:
    n = 512
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = blocking_with_shared(tir.Schedule(te.create_prim_func([A, B, C])), *tiles)
    f = mlc.build(sch.mod, target="cuda")
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    c = np.full((n, n), np.nan, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(gpu_schedules())
def test_random_gpu_schedules_on_the_gpu_match_the_simulator(sch: tir.Schedule) -> None:
    try:
        sim = mlc.build(sch.mod, target="cuda-sim")
    except mlc.errors.CodegenError:
        return  # not a kernel (refused before any bind): tests/gpu_schedules checks the words
    gpu = mlc.build(sch.mod, target="cuda")
    m, n = A_NP.shape[0], B_NP.shape[1]
    c_sim = np.full((m, n), np.nan, "float32")
    c_gpu = np.full((m, n), np.nan, "float32")
    sim(A_NP, B_NP, c_sim)
    gpu(A_NP, B_NP, c_gpu)
    np.testing.assert_allclose(c_gpu, A_NP @ B_NP, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(c_gpu, c_sim, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(10, 300), (1, 7), (64, 1000)])
def test_a_scan_runs_its_time_loop_on_the_host_around_gpu_kernels(shape) -> None:
    s, args = _cumsum_schedule()
    f = mlc.build(s, args, target="cuda")
    x = rng.random(shape, dtype=np.float32)
    y = np.full(shape, np.nan, np.float32)
    f(x, y)
    np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-4)


def test_device_time_evaluator_times_kernels_not_copies() -> None:
    n = 1 << 22
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    threads(s, B, 256)
    f = mlc.build(s, [A, B], target="cuda")
    a = rng.standard_normal(n).astype("float32")
    b = np.zeros(n, "float32")
    result = f.time_evaluator(number=20, repeat=3)(a, b)
    assert len(result.results) == 3 and result.mean > 0
    np.testing.assert_array_equal(b, a * 2)  # the timed runs still return their result
    with pytest.raises(ArgumentError):
        f.time_evaluator(number=2)(a)


def test_launch_errors_are_typed() -> None:
    """Asking for more threads per block than any GPU has: a typed error, not a crash."""
    n = 4096
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    threads(s, B, 2048)
    with pytest.raises(MLCError, match="threads"):
        f = mlc.build(s, [A, B], target="cuda")
        f(np.zeros(n, "float32"), np.zeros(n, "float32"))


# -- cross-thread reductions with warp shuffles (tests/gpu/test_warp_shuffle.py on cuda-sim) --


@pytest.mark.parametrize("threads", [1, 16, 31, 32, 33, 48, 64, 100, 1024])
@pytest.mark.parametrize(("reducer", "dtype"), [("sum", "float32"), ("max", "float32"),
                                                ("min", "float64"), ("sum", "int32"),
                                                ("sum", "int64")])
def test_warp_shuffle_reductions_on_the_gpu(threads: int, reducer: str, dtype: str) -> None:
    rows, cols = 7, 2000
    s, args = row_reduction(rows, cols, threads, reducer, dtype)
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, (rows, cols), dtype=dtype, endpoint=True)
        a[0] = info.min  # wraps as numpy's sum does
    else:
        a = rng.standard_normal((rows, cols)).astype(dtype)
        a[1] = -np.inf
        a[2, 1500] = np.nan
        a[3, ::2] = np.inf
    want = {"sum": lambda: a.sum(1, dtype=dtype), "max": lambda: a.max(1),
            "min": lambda: a.min(1)}[reducer]()
    got = {}
    for target in ("cuda", "cuda-sim"):
        f = mlc.build(s, args, target=target)
        got[target] = np.zeros(rows, dtype)
        f(a, got[target])
    if threads > 1:
        assert "__shfl_down_sync" in f.get_source("cuda")
    if dtype.startswith("int") or reducer != "sum":
        np.testing.assert_array_equal(got["cuda"], want)
    else:  # the GPU adds in another order than numpy's pairwise sum
        np.testing.assert_allclose(got["cuda"], want, rtol=1e-4 if dtype == "float32" else 1e-10)
        np.testing.assert_allclose(got["cuda"], got["cuda-sim"], rtol=1e-5)


def test_tvm_reduction_tutorial_with_rfactor_on_the_gpu() -> None:
    s, args = rfactor_row_sum(te.var("n"), te.var("m"))
    f = mlc.build(s, args, target="cuda")
    assert "__shfl_down_sync(0xffffffffu, B_red[0], 8, 16);" in f.get_source("cuda")
    for rows, cols in [(1024, 1024), (70, 100), (3, 5), (33, 0)]:
        a = rng.random((rows, cols), dtype=np.float32)
        b = np.full(rows, np.nan, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a.sum(1), rtol=1e-4)


def test_shuffles_and_the_shared_tree_agree_on_the_gpu() -> None:
    s, args = row_reduction(64, 4096, 256, "sum", "int32")
    a = rng.integers(-(2**31), 2**31 - 1, (64, 4096), dtype=np.int32)
    shuffled, tree = np.zeros(64, "int32"), np.zeros(64, "int32")
    mlc.build(s, args, target="cuda")(a, shuffled)
    plain = mlc.build(mlc.lower(s, args), target="cuda")  # common passes: no shuffles
    assert "__shfl_down_sync" not in plain.get_source("cuda")
    plain(a, tree)
    np.testing.assert_array_equal(shuffled, a.sum(1, dtype=np.int32))
    np.testing.assert_array_equal(tree, shuffled)
