"""mlc.viz.perf: the peak kernel fits the vector registers and computes its sums; the copy
kernel of the bandwidth copies; arithmetic intensity comes from the loop nest."""

from __future__ import annotations

import numpy as np

import mlc
from mlc import te
from mlc.target.llvm.cpu import host_simd
from mlc.viz.perf import (
    arithmetic_intensity,
    copy_func,
    matmul_intensity,
    peak_func,
    peak_shape,
)


def test_peak_tile_fits_the_vector_registers():
    simd = host_simd()
    shape = peak_shape()
    vectors = shape["lanes"] // simd.lanes
    assert shape["lanes"] % simd.lanes == 0
    accumulators = shape["rows"] * vectors
    assert accumulators + vectors + 1 <= simd.registers
    assert accumulators >= 8  # FMA latency (~4) x ports (2) independent chains at least


def test_peak_kernel_computes_its_sums():
    shape = {"tasks": 3, "rows": 2, "lanes": 2 * host_simd().lanes, "k_len": 8, "repeat": 4}
    f = mlc.build(peak_func(**shape))
    x = np.random.rand(shape["rows"], shape["k_len"]).astype("float32")
    y = np.random.rand(shape["k_len"], shape["lanes"]).astype("float32")
    out = np.zeros((shape["tasks"], shape["rows"], shape["lanes"]), "float32")
    f(x, y, out)
    want = shape["repeat"] * (x @ y)
    np.testing.assert_allclose(out, np.broadcast_to(want, out.shape), rtol=1e-5)


def test_copy_kernel_copies():
    n = 8 * 64 * 64 * 2
    src = np.random.rand(n).astype("float32")
    dst = np.zeros_like(src)
    mlc.build(copy_func(n))(src, dst)
    np.testing.assert_array_equal(dst, src)


def test_intensity_of_a_matmul_that_fits_is_the_compulsory_one():
    A = te.placeholder((64, 64), name="A")
    B = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    func = te.create_prim_func([A, B, C])
    assert arithmetic_intensity(func, cache_bytes=1 << 20) == matmul_intensity(64)
    assert arithmetic_intensity(func, cache_bytes=2 << 10) < matmul_intensity(64) / 4
