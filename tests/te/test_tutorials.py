"""The classic TVM te tutorials, written as a user would (tvm. -> mlc./te.), vs numpy."""

from __future__ import annotations

import numpy as np

import mlc
from mlc import te, tir

RNG = np.random.default_rng(0)


def _build_run(s, args, arrays, out_shape, dtype="float32"):  # type: ignore[no-untyped-def]
    out = np.empty(out_shape, dtype)
    mlc.build(s, args, target="llvm")(*arrays, out)
    return out


def test_schedule_primitives() -> None:
    n, m = 64, 32
    A = te.placeholder((m, n), name="A")
    B = te.placeholder((m, n), name="B")
    C = te.compute((m, n), lambda i, j: A[i, j] * B[i, j], name="C")
    a, b = RNG.random((m, n), "float32"), RNG.random((m, n), "float32")
    for variant in range(5):
        s = te.create_schedule(C.op)
        if variant == 0:
            xo, xi = s[C].split(C.op.axis[0], factor=32)
        elif variant == 1:
            xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 10, 5)
            s[C].reorder(xi, yo, xo, yi)
        elif variant == 2:
            xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 10, 5)
            s[C].fuse(xi, yi)
        elif variant == 3:
            xo, xi = s[C].split(C.op.axis[1], nparts=8)
            s[C].vectorize(xi)
        else:
            s[C].parallel(C.op.axis[0])
        np.testing.assert_allclose(_build_run(s, [A, B, C], [a, b], (m, n)), a * b)


def test_compute_at_inline_root() -> None:
    m = 16
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] + 1, name="B")
    C = te.compute((m,), lambda i: B[i] * 2, name="C")
    a = RNG.random(m, "float32")
    for how in ("at", "inline", "root"):
        s = te.create_schedule(C.op)
        if how in ("at", "root"):
            s[B].compute_at(s[C], C.op.axis[0])
        if how == "root":
            s[B].compute_root()
        if how == "inline":
            s[B].compute_inline()
        np.testing.assert_allclose(_build_run(s, [A, C], [a], (m,)), (a + 1) * 2)


def test_reduction_with_rfactor() -> None:
    n, m = 32, 64
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    assert BF is not None
    a = RNG.random((n, m), "float32")
    np.testing.assert_allclose(_build_run(s, [A, B], [a], (n,)), a.sum(axis=1), rtol=1e-5)


def test_scan_cumsum() -> None:
    m, n = 8, 4
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n), name="s_state")
    s_init = te.compute((1, n), lambda _, i: X[0, i], name="s_init")
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i], name="s_update")
    s_scan = te.scan(s_init, s_update, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    x = RNG.random((m, n), "float32")
    np.testing.assert_allclose(_build_run(s, [X, s_scan], [x], (m, n)), x.cumsum(axis=0),
                               rtol=1e-5)


def test_intrinsics_and_math() -> None:
    n = 16
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.exp(A[i]) + te.sigmoid(A[i]) * te.log(A[i] + 1.0),
                   name="B")  # fmt: skip
    s = te.create_schedule(B.op)
    a = RNG.random(n, "float32")
    expected = np.exp(a) + 1 / (1 + np.exp(-a)) * np.log(a + 1)
    np.testing.assert_allclose(_build_run(s, [A, B], [a], (n,)), expected, rtol=1e-5)


def test_gemm_on_cpu_blocking_cache_write_packing() -> None:
    M = K = N = 64
    bn = 16
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), "k")
    packedB = te.compute((N // bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    C = te.compute(
        (M, N),
        lambda x, y: te.sum(A[x, k] * packedB[y // bn, k, y % bn], axis=k),
        name="C",
    )  # fmt: skip
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kaxis, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    s[C].parallel(xo)
    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    a, b = RNG.random((M, K), "float32"), RNG.random((K, N), "float32")
    np.testing.assert_allclose(_build_run(s, [A, B, C], [a, b], (M, N)), a @ b, rtol=1e-4)


def test_tensorir_chapter_mm_relu() -> None:
    A = te.placeholder((128, 128), name="A")
    B = te.placeholder((128, 128), name="B")
    k = te.reduce_axis((0, 128), name="k")
    Y = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((128, 128), lambda i, j: te.max(Y[i, j], 0.0), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    block_Y = sch.get_block("Y", func_name="main")
    i, j, kk = sch.get_loops(block_Y)
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.reorder(j0, kk, j1)
    block_C = sch.get_block("C", "main")
    sch.reverse_compute_at(block_C, j0)
    sch.decompose_reduction(block_Y, kk)
    a, b = RNG.random((128, 128), "float32"), RNG.random((128, 128), "float32")
    c = np.empty((128, 128), "float32")
    mlc.build(sch.mod, target="llvm")(a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4)
