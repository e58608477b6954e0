"""TVM tutorial spellings of the te schedule: tile's keywords, set_store_predicate."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import ScheduleError


def test_tile_with_tvm_keywords() -> None:
    A = te.placeholder((64, 48), name="A")
    C = te.compute((64, 48), lambda i, j: A[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    xo, yo, xi, yi = s[C].tile(x, y, x_factor=8, y_factor=16)
    assert [int(v.dom.extent) for v in (xo, yo, xi, yi)] == [8, 3, 8, 16]
    s[C].vectorize(yi)
    f = mlc.build(s, [A, C])
    a = np.random.default_rng(0).random((64, 48), dtype=np.float32)
    c = np.zeros_like(a)
    f(a, c)
    np.testing.assert_allclose(c, a * 2)
    s2 = te.create_schedule(C.op)
    x, y = C.op.axis
    assert len(s2[C].tile(x_parent=x, y_parent=y, x_factor=4, y_factor=4)) == 4
    with pytest.raises(ScheduleError, match="given by position and by keyword"):
        s2[C].tile(x, y, 8, x_factor=8)
    with pytest.raises(ScheduleError, match="not the arguments before it"):
        te.create_schedule(C.op)[C].tile(x, y_factor=8)


def test_cross_thread_reduction_tutorial_with_store_predicate() -> None:
    """TVM's reduction tutorial, as written (tvm. -> mlc.), on cuda-sim."""
    n, m = 64, 64
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    f = mlc.build(s, [A, B], "cuda-sim")
    a = np.random.default_rng(1).random((n, m), dtype=np.float32)
    b = np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


def test_store_predicate_other_than_thread_zero_is_refused() -> None:
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), "k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="no reduce axis bound to a thread"):
        s[B].set_store_predicate(B.op.axis[0].var.equal(0))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(B.op.reduce_axis[0], tx)
    with pytest.raises(ScheduleError, match="runs on threadIdx.x"):
        s[B].set_store_predicate(tx.var.equal(1))


def test_notes_hardware_intrin_gemm_on_the_cpu_names_the_target_that_has_it() -> None:
    """The notes' gemm8x8, declared with te.hardware_intrin, tensorizes; building it for the
    CPU says which target implements the instruction (it was "string 'r' cannot be a
    value in compiled code")."""
    from mlc.errors import CodegenError

    t = te
    w, x = t.placeholder((8, 8), name="w"), t.placeholder((8, 8), name="x")
    k = t.reduce_axis((0, 8))
    y = t.compute((8, 8), lambda i, j: t.sum(w[i, k] * x[j, k], axis=k))

    def gemm_intrin_lower(inputs, outputs):
        ww_ptr = inputs[0].access_ptr("r")
        xx_ptr = inputs[1].access_ptr("r")
        zz_ptr = outputs[0].access_ptr("w")
        compute = t.hardware_intrin("gemm8x8", ww_ptr, xx_ptr, zz_ptr)
        reset = t.hardware_intrin("fill_zero", zz_ptr)
        update = t.hardware_intrin("fuse_gemm8x8_add", ww_ptr, xx_ptr, zz_ptr)
        return compute, reset, update

    gemm8x8 = t.decl_tensor_intrin(y.op, gemm_intrin_lower, name="notes.gemm8x8",
                                   override=True)
    n = 32
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    kk = te.reduce_axis((0, n), name="kk")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, kk] * B[j, kk], axis=kk), name="C")
    s = te.create_schedule(C.op)
    yo, xo, yi, xi = s[C].tile(C.op.axis[0], C.op.axis[1], x_factor=8, y_factor=8)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=8)
    s[C].reorder(yo, xo, ko, yi, xi, ki)
    s[C].tensorize(yi, gemm8x8)
    lowered = str(mlc.lower(s, [A, B, C]))
    assert "fuse_gemm8x8_add(access_ptr(" in lowered
    # the reset is the declared call, not a zeroing loop
    assert 'fill_zero(access_ptr(C[' in lowered and "_init in range" not in lowered
    with pytest.raises(CodegenError, match=r"fill_zero, fuse_gemm8x8_add .*the vdla target "
                                           r"implements"):
        mlc.build(s, [A, B, C])


def test_vdla_runs_the_declared_reset_against_numpy() -> None:
    """The accelerator's own intrinsic is declared as the notes do, reset included: the
    tensorized tiles now start with the declared fill_zero call, which the vdla target
    turns into its fill_zero instruction; the result still matches numpy."""
    from mlc.vdla import schedules

    n = 16
    s, args = schedules.gemm_schedule(n, n, n, 8, 8, 1, True)
    text = str(mlc.lower(s, args, target="vdla"))
    assert "vdla.fill_zero(" in text
    f = mlc.build(s, args, target="vdla")
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 4, (n, n)).astype("int8")
    b = rng.integers(-4, 4, (n, n)).astype("int8")
    c = np.zeros((n, n), "int32")
    f(a, b, c)
    np.testing.assert_array_equal(c, a.astype("int32") @ b.astype("int32").T)
