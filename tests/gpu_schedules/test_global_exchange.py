"""A global intermediate written by some GPU threads and read by others in the same kernel
(compute_at under the blockIdx loop, its loop bound to threadIdx): threads do not wait for
each other's global writes, so the build refuses it, naming the buffer and what works — the
"shared" scope (filled cooperatively, with a barrier) or a kernel of its own."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import CodegenError


def _stencil() -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    A = te.placeholder((1025,), name="A")
    B = te.compute((1025,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((1024,), lambda i: B[i] + B[i + 1], name="C")
    return A, B, C


def _schedule(cooperative: bool, scope: str | None) -> tuple[te.Schedule, list[te.Tensor]]:
    A, B, C = _stencil()
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=128)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].compute_at(s[C], bx)
    if scope is not None:
        s[B].set_scope(scope)
    if cooperative:
        _, bi = s[B].split(B.op.axis[0], factor=128)
        s[B].bind(bi, te.thread_axis("threadIdx.x"))
    return s, [A, C]


def _check(f: mlc.runtime.Module) -> None:
    a = np.random.default_rng(0).random(1025, dtype="float32")
    c = np.zeros(1024, "float32")
    f(a, c)
    np.testing.assert_allclose(c, 2 * a[:-1] + 2 * a[1:], rtol=1e-6)


@pytest.mark.parametrize("cooperative", [True, False])
def test_global_intermediate_shared_by_threads_is_refused(cooperative: bool) -> None:
    s, args = _schedule(cooperative, None)
    # bound: written by some threads, read by others; serial: allocated inside the kernel
    with pytest.raises(CodegenError, match=r"'B'.*\"shared\".*(kernel of its own|own kernel)"):
        mlc.build(s, args, target="cuda-sim")
    with pytest.raises(CodegenError, match=r"'B'.*\"shared\""):
        mlc.build(s, args, target="cuda")


def test_shared_scope_computes_it_cooperatively() -> None:
    s, args = _schedule(True, "shared")
    _check(mlc.build(s, args, target="cuda-sim"))
    assert "tvm_storage_sync" in str(mlc.lower(s, args, target="cuda-sim"))


def test_own_kernel_works() -> None:
    A, B, C = _stencil()
    s = te.create_schedule(C.op)
    for T in (B, C):
        bx, tx = s[T].split(T.op.axis[0], factor=128)
        s[T].bind(bx, te.thread_axis("blockIdx.x"))
        s[T].bind(tx, te.thread_axis("threadIdx.x"))
    _check(mlc.build(s, [A, C], target="cuda-sim"))


def test_read_modify_write_of_the_same_element_is_accepted() -> None:
    # a reduction into global C: every thread reads back only what it wrote
    A = te.placeholder((256, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((256,), lambda i: te.sum(A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [A, C], target="cuda-sim")
    a = np.random.default_rng(1).random((256, 64), dtype="float32")
    c = np.zeros(256, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a.sum(1), rtol=1e-5)
