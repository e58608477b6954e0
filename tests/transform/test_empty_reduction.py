"""A reduction over an empty range gives the reducer's identity (0 for sum, -inf for max,
the dtype's max for an integer min), in compiled code as in numpy: the init must run even
when no reduction step does. Constant extent 0 and symbolic n = 0, after splits, reorders
and caches, on the CPU and on cuda-sim."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir

IDENTITY = {
    ("sum", "float32"): 0.0,
    ("max", "float32"): -np.inf,
    ("min", "float32"): np.inf,
    ("sum", "int32"): 0,
    ("max", "int32"): np.iinfo("int32").min,
    ("min", "int32"): np.iinfo("int32").max,
}


def _reduction(kind: str, dtype: str, m: object, n: object) -> tuple[te.Tensor, te.Tensor]:
    A = te.placeholder((m, n), dtype=dtype, name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: getattr(te, kind)(A[i, k], axis=k), name="B")
    return A, B


def _run(f: mlc.runtime.Module, a: np.ndarray, dtype: str, m: int) -> np.ndarray:
    out = np.full(m, 7, dtype)  # anything but the identity
    f(a, out)
    return out


@pytest.mark.parametrize(("kind", "dtype"), sorted(IDENTITY))
@pytest.mark.parametrize("symbolic", [False, True])
def test_empty_reduction_gives_the_identity(kind: str, dtype: str, symbolic: bool) -> None:
    n = te.var("n") if symbolic else 0
    A, B = _reduction(kind, dtype, 4, n)
    s = te.create_schedule(B.op)
    f = mlc.build(s, [A, B])
    out = _run(f, np.zeros((4, 0), dtype), dtype, 4)
    np.testing.assert_array_equal(out, np.full(4, IDENTITY[kind, dtype], dtype))
    if symbolic:  # the same kernel still reduces a non-empty range
        a = np.arange(12, dtype=dtype).reshape(4, 3)
        want = getattr(np, {"sum": "sum", "max": "max", "min": "min"}[kind])(a, axis=1)
        np.testing.assert_array_equal(_run(f, a, dtype, 4), want)


def test_empty_reduction_after_split_and_reorder() -> None:
    n = te.var("n")
    A, B = _reduction("sum", "float32", 8, n)
    s = te.create_schedule(B.op)
    (i,) = B.op.axis
    (k,) = B.op.reduce_axis
    ko, ki = s[B].split(k, factor=4)
    io, ii = s[B].split(i, factor=2)
    s[B].reorder(io, ko, ii, ki)          # reduction loops between spatial loops
    f = mlc.build(s, [A, B])
    np.testing.assert_array_equal(_run(f, np.zeros((8, 0), "float32"), "float32", 8), 0)
    a = np.random.default_rng(0).random((8, 7), dtype="float32")
    np.testing.assert_allclose(_run(f, a, "float32", 8), a.sum(1), rtol=1e-5)


def test_empty_reduction_with_reduce_loop_outermost() -> None:
    A, B = _reduction("max", "float32", 4, 0)
    s = te.create_schedule(B.op)
    s[B].reorder(B.op.reduce_axis[0], B.op.axis[0])
    f = mlc.build(s, [A, B])
    np.testing.assert_array_equal(_run(f, np.zeros((4, 0), "float32"), "float32", 4), -np.inf)


def test_empty_reduction_through_a_write_cache_and_tir_schedule() -> None:
    n = te.var("n")
    A, B = _reduction("sum", "float32", 16, n)
    sch = tir.Schedule(te.create_prim_func([A, B]))
    blk = sch.get_block("B")
    i, k = sch.get_loops(blk)
    i0, i1 = sch.split(i, [None, 4])
    sch.cache_write(blk, 0, "local")
    f = mlc.build(sch.mod, target="llvm")
    np.testing.assert_array_equal(_run(f, np.zeros((16, 0), "float32"), "float32", 16), 0)
    a = np.ones((16, 5), "float32")
    np.testing.assert_array_equal(_run(f, a, "float32", 16), 5)


def test_one_of_two_reduce_axes_empty() -> None:
    n = te.var("n")
    A = te.placeholder((3, 4, n), name="A")
    k1 = te.reduce_axis((0, 4), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    B = te.compute((3,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    np.testing.assert_array_equal(_run(f, np.zeros((3, 4, 0), "float32"), "float32", 3), 0)


def test_empty_reduction_on_cuda_sim() -> None:
    n = te.var("n")
    A, B = _reduction("min", "float32", 64, n)
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [A, B], target="cuda-sim")
    np.testing.assert_array_equal(_run(f, np.zeros((64, 0), "float32"), "float32", 64), np.inf)


def test_non_empty_constant_reduction_keeps_its_first_step_init() -> None:
    # nothing changes for reductions that cannot be empty (benchmarks' code stays as it was)
    A, B = _reduction("sum", "float32", 4, 8)
    text = str(mlc.lower(te.create_schedule(B.op), [A, B]))
    assert "if k == 0" in text


def _sum_over_n() -> tuple[te.Tensor, te.Tensor]:
    return _reduction("sum", "float32", 4, te.var("n"))


def _zero_then_ones(f: mlc.runtime.Module, width: int) -> tuple[np.ndarray, np.ndarray]:
    empty = _run(f, np.zeros((4, 0), "float32"), "float32", 4)
    full = _run(f, np.ones((4, width), "float32"), "float32", 4)
    return empty, full


def test_empty_reduction_over_a_loop_fused_from_spatial_and_reduction_loops() -> None:
    # decompose_reduction cannot separate the init: a guarded nest writes it instead
    A, B = _sum_over_n()
    sch = tir.Schedule(te.create_prim_func([A, B]))
    sch.fuse(*sch.get_loops(sch.get_block("B")))
    empty, full = _zero_then_ones(mlc.build(sch.mod), 3)
    np.testing.assert_array_equal(empty, 0)
    np.testing.assert_array_equal(full, 3)


def test_empty_reduction_after_rfactor_with_a_tail() -> None:
    # the final block reduces over a constant 4 lanes, under `where k_1 < n`: with n = 0
    # no step runs, so the init must not wait for the first one
    A, B = _sum_over_n()
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=4)
    s.rfactor(B, ki)
    empty, full = _zero_then_ones(mlc.build(s, [A, B]), 5)
    np.testing.assert_array_equal(empty, 0)
    np.testing.assert_array_equal(full, 5)


def test_empty_cross_thread_reduction_on_cuda_sim() -> None:
    # with MLC_DEBUG on (tests/transform/conftest.py): simulate_gpu's output is verified too
    A, B = _sum_over_n()
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=32)
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(ki, te.thread_axis("threadIdx.x"))
    empty, full = _zero_then_ones(mlc.build(s, [A, B], target="cuda-sim"), 40)
    np.testing.assert_array_equal(empty, 0)
    np.testing.assert_array_equal(full, 40)


def test_reduction_whose_where_is_never_true_gives_the_identity() -> None:
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((4,), lambda i: te.max(A[i, k], axis=k, where=k > 10), name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    np.testing.assert_array_equal(_run(f, np.ones((4, 4), "float32"), "float32", 4), -np.inf)


def test_non_dividing_constant_split_keeps_its_first_step_init() -> None:
    A, B = _reduction("sum", "float32", 8, 64)
    s = te.create_schedule(B.op)
    s[B].split(B.op.reduce_axis[0], factor=3)
    assert "k_0 == 0 and k_1 == 0" in str(mlc.lower(s, [A, B]))
