"""The te-style schedule facade: every call becomes tir.Schedule primitives."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import ScheduleError
from mlc.testing import eval_prim_func


def _matmul(n: int = 16):  # type: ignore[no-untyped-def]
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    return X, W, Y


def _check_matmul(func, n: int = 16, build: bool = False) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    x = rng.random((n, n), dtype=np.float32)
    w = rng.random((n, n), dtype=np.float32)
    y = np.full((n, n), np.nan, np.float32)
    eval_prim_func(func, x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
    if build:
        import mlc

        y2 = np.full((n, n), np.nan, np.float32)
        mlc.build(func, target="llvm")(x, w, y2)
        np.testing.assert_allclose(y2, x @ w, rtol=1e-5)


def test_design_doc_schedule() -> None:
    X, W, Y = _matmul()
    s = te.create_schedule(Y.op)
    i, j = Y.op.axis
    yo, xo, yi, xi = s[Y].tile(i, j, 4, 8)
    ko, ki = s[Y].split(Y.op.reduce_axis[0], factor=4)
    s[Y].reorder(yo, xo, ko, yi, ki, xi)
    s[Y].vectorize(xi)
    s[Y].parallel(yo)
    s[Y].unroll(ki)
    text = str(s.to_prim_func([X, W, Y]))
    heads = [line.strip() for line in text.splitlines()[2:8]]
    assert heads == [
        "for i_0 in parallel(4):",
        "for j_0 in range(2):",
        "for k_0 in range(4):",
        "for i_1 in range(4):",
        "for k_1 in unroll(4):",
        "for j_1 in vectorized(8):",
    ]
    kinds = [inst.kind for inst in s.sch.trace.insts]
    assert kinds[:2] == ["get_block", "get_loops"]
    assert kinds.count("split") == 3 and kinds.count("reorder") == 2
    _check_matmul(s.to_prim_func([X, W, Y]), build=True)


def test_split_nparts_fuse_and_params_order() -> None:
    X, W, Y = _matmul()
    s = te.create_schedule([Y])
    i, j = s[Y].op.axis
    io, ii = s[Y].split(i, nparts=3)
    assert io.var.name == "i_0" and int(io.dom.extent.value) == 3  # type: ignore[attr-defined]
    f = s[Y].fuse(ii, j)
    s[Y].parallel(io)
    s[Y].pragma(f, "auto_unroll_max_step", 16)
    func = s.to_prim_func([W, X, Y], name="mm")
    assert [b.name for b in func.params] == ["W", "X", "Y"] and func.name == "mm"
    assert '"pragma_auto_unroll_max_step": 16' in str(func)
    _check_matmul(s.to_prim_func([X, W, Y]))


def test_bind_thread_axis() -> None:
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    text = str(s.to_prim_func([A, B]))
    assert 'thread_binding(4, "blockIdx.x")' in text and 'thread_binding(16, "threadIdx.x")' in text


def test_errors() -> None:
    X, W, Y = _matmul()
    s = te.create_schedule(Y.op)
    i, j = Y.op.axis
    with pytest.raises(ScheduleError, match="give exactly one of factor="):
        s[Y].split(i, factor=2, nparts=2)
    with pytest.raises(ScheduleError, match="is a placeholder"):
        s[X]
    with pytest.raises(ScheduleError, match="reduce variable vk"):
        s[Y].parallel(Y.op.reduce_axis[0])
    other = te.compute((3,), lambda t: t * 1.0, name="Z")
    with pytest.raises(ScheduleError, match="is not an axis of this schedule"):
        s[Y].vectorize(other.op.axis[0])
    with pytest.raises(ScheduleError, match="leave out"):
        s.to_prim_func([X, Y])


def test_cache_write_and_compute_at_gemm() -> None:
    X, W, Y = _matmul()
    s = te.create_schedule(Y.op)
    YL = s.cache_write(Y, "local")
    # Y's axes now name the copy-out loops; YL's the computation
    yo, xo, yi, xi = s[Y].tile(Y.op.axis[0], Y.op.axis[1], 4, 4)
    s[YL].compute_at(s[Y], xo)
    ko, ki = s[YL].split(s[YL].op.reduce_axis[0], factor=4)
    yl_i, yl_j = s[YL].op.axis
    s[YL].reorder(ko, yl_i, ki, yl_j)
    s[YL].vectorize(yl_j)
    s[Y].parallel(yo)
    func = s.to_prim_func([X, W, Y])
    text = str(func)
    assert 'scope="local"' in text
    assert "k_0" in text and "vectorized(4)" in text
    _check_matmul(func, build=True)


def test_compute_inline_and_cache_read() -> None:
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((8, 8), lambda i, j: B[j, i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    AA = s.cache_read(A, "local", [C])
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[AA].compute_at(s[C], xo)
    func = s.to_prim_func([A, C])
    assert 'block("B")' not in str(func)
    a = np.random.default_rng(1).random((8, 8), dtype=np.float32)
    c = np.full((8, 8), np.nan, np.float32)
    eval_prim_func(func, a, c)
    np.testing.assert_allclose(c, a.T * 2 + 1, rtol=1e-6)


def test_rfactor() -> None:
    A = te.placeholder((32,), name="A")
    k = te.reduce_axis((0, 32), name="k")
    B = te.compute((1,), lambda _: te.sum(A[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=8)
    BF = s.rfactor(B, ki)
    assert len(s[BF].op.axis) == 2  # the output's axis and the factored one
    func = s.to_prim_func([A, B])
    a = np.random.default_rng(2).random(32, dtype=np.float32)
    b = np.full(1, np.nan, np.float32)
    eval_prim_func(func, a, b)
    np.testing.assert_allclose(b, [a.sum()], rtol=1e-5)


def test_lower_of_a_te_schedule_keeps_its_primitives() -> None:
    # regression: the driver took a te schedule's .func (the unscheduled program) for a
    # tir.Schedule's, so mlc.lower(s, args) and mlc.build(s, args) dropped every primitive
    X = te.placeholder((8, 8), name="X")
    Y = te.compute((8, 8), lambda i, j: X[i, j] * 2.0, name="Y")
    s = te.create_schedule(Y.op)
    s[Y].split(Y.op.axis[0], factor=4)
    assert "i_0" in str(mlc.lower(s, [X, Y]))
