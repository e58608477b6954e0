"""te.decl_tensor_intrin and s[C].tensorize: seed 003's ``s[CL].tensorize(yi, vdla.gemm8x8)``."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import TEError


def gemm8x8(name: str = "vdla.gemm8x8") -> tir.TensorIntrin:
    """The seed's accelerator instruction as a CPU micro-kernel: C[y, x] += A[k, y] * B[k, x]
    on 8x8 tiles, k unrolled and x vectorized."""
    a = te.placeholder((8, 8), name="a")
    b = te.placeholder((8, 8), name="b")
    k = te.reduce_axis((0, 8), name="k")
    c = te.compute((8, 8), lambda y, x: te.sum(a[k, y] * b[k, x], axis=k), name="c")

    def impl(sch: tir.Schedule) -> None:
        y, x, r = sch.get_loops(sch.get_block("c"))
        sch.reorder(y, r, x)
        sch.unroll(r)
        sch.vectorize(x)

    return te.decl_tensor_intrin(c.op, impl, name=name)


def seed_gemm(n: int = 64) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda y, x: te.sum(A[k, y] * B[k, x], axis=k), name="C")
    return A, B, C


def tile(s: te.Schedule, C: te.Tensor) -> list:
    y, x = C.op.axis
    yo, yi = s[C].split(y, factor=8)
    xo, xi = s[C].split(x, factor=8)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=8)
    s[C].reorder(yo, xo, ko, yi, xi, ki)
    return [yo, xo, ko, yi, xi, ki]


def test_seed_gemm8x8_tensorize_builds_and_matches_numpy() -> None:
    intrin = gemm8x8()
    A, B, C = seed_gemm()
    s = te.create_schedule(C.op)
    yo, xo, ko, yi, xi, ki = tile(s, C)
    s[C].tensorize(yi, intrin)
    text = str(s.sch.mod)
    assert "reads(A[vk0 * 8:vk0 * 8 + 8, vy0 * 8:vy0 * 8 + 8]" in text
    assert "for x in vectorized(8):" in text
    # the stage now names the tensorized block; its outer loops are still schedulable
    s[C].parallel(yo)
    a = np.random.default_rng(0).random((64, 64), dtype="float32")
    b = np.random.default_rng(1).random((64, 64), dtype="float32")
    c = np.full((64, 64), 5.0, "float32")
    mlc.build(s, [A, B, C], target="llvm")(a, b, c)
    np.testing.assert_allclose(c, a.T @ b, rtol=1e-4)


def test_decl_tensor_intrin_with_primfunc_or_plain_impl() -> None:
    a = te.placeholder((8,), name="a")
    b = te.compute((8,), lambda i: a[i] * 3.0, name="b")
    plain = te.decl_tensor_intrin(b.op, name="scale3_plain")
    assert tir.structural_equal(plain.desc.body, plain.impl.body)
    sch = tir.Schedule(te.create_prim_func([a, b]))
    sch.vectorize(sch.get_loops(sch.get_block("b"))[0])
    vec = te.decl_tensor_intrin(b, sch.mod, name="scale3_vec")
    A = te.placeholder((32,), name="A")
    B = te.compute((32,), lambda i: A[i] * 3.0, name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=8)
    s[B].tensorize(ii, vec)
    assert "vectorized(8)" in str(s.sch.mod)
    x = np.arange(32, dtype="float32")
    y = np.zeros(32, "float32")
    mlc.build(s, [A, B], target="llvm")(x, y)
    np.testing.assert_allclose(y, x * 3)


def test_decl_tensor_intrin_refuses_non_ops() -> None:
    with pytest.raises(TEError, match="the te operation the intrinsic computes"):
        te.decl_tensor_intrin("not an op", name="bad")  # type: ignore[arg-type]
