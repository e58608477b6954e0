"""Small te programs the block-primitive tests schedule, with their numpy references."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mlc import te
from mlc.testing import eval_prim_func
from mlc.tir import PrimFunc

RNG = np.random.default_rng(0)


def chain(n: int = 8, m: int = 6) -> PrimFunc:
    """A -> B = A * 2 -> C = B + 1 (two elementwise stages)."""
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1.0, name="C")
    return te.create_prim_func([A, C])


def chain_ref(a: np.ndarray) -> np.ndarray:
    return a * 2 + 1


def matmul_relu(n: int = 8, m: int = 6, k: int = 8) -> PrimFunc:
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = te.compute((n, m), lambda i, j: te.max(C[i, j], te.const(0.0)), name="D")
    return te.create_prim_func([A, B, D])


def matmul_relu_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(a @ b, 0)


def matmul(n: int = 16, m: int = 16, k: int = 16) -> PrimFunc:
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def conv_padded(h: int = 6, w: int = 6, kh: int = 3) -> PrimFunc:
    """Apad = zero-padded A (by 1), then a kh x kh single-channel convolution."""
    A = te.placeholder((h, w), name="A")
    W = te.placeholder((kh, kh), name="W")
    P = te.compute(
        (h + 2, w + 2),
        lambda i, j: te.if_then_else(
            te.all(i >= 1, i < h + 1, j >= 1, j < w + 1), A[i - 1, j - 1], te.const(0.0)
        ),
        name="Apad",
    )
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kh), name="rx")
    oh, ow = h + 2 - kh + 1, w + 2 - kh + 1
    C = te.compute(
        (oh, ow), lambda i, j: te.sum(P[i + ry, j + rx] * W[ry, rx], axis=[ry, rx]), name="C"
    )
    return te.create_prim_func([A, W, C])


def conv_padded_ref(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    p = np.pad(a, 1)
    kh = w.shape[0]
    oh, ow = p.shape[0] - kh + 1, p.shape[1] - kh + 1
    out = np.zeros((oh, ow), "float32")
    for y in range(kh):
        for x in range(kh):
            out += p[y : y + oh, x : x + ow] * w[y, x]
    return out


def softmax(n: int = 4, m: int = 8) -> PrimFunc:
    """The 4 blocks of softmax: row max, exp, row sum, normalize."""
    A = te.placeholder((n, m), name="A")
    k1 = te.reduce_axis((0, m), name="k1")
    mx = te.compute((n,), lambda i: te.max(A[i, k1], axis=k1), name="T_max")
    e = te.compute((n, m), lambda i, j: te.exp(A[i, j] - mx[i]), name="T_exp")
    k2 = te.reduce_axis((0, m), name="k2")
    s = te.compute((n,), lambda i: te.sum(e[i, k2], axis=k2), name="T_sum")
    out = te.compute((n, m), lambda i, j: e[i, j] / s[i], name="T_softmax")
    return te.create_prim_func([A, out])


def softmax_ref(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run(func: PrimFunc, *inputs: np.ndarray) -> np.ndarray:
    """Run ``func`` on ``inputs`` and return its last parameter (the output)."""
    out_buf = func.params[-1]
    out = np.full(tuple(int(d.value) for d in out_buf.shape), np.nan, "float32")  # type: ignore[attr-defined]
    eval_prim_func(func, *inputs, out)
    return out


def rand(*shape: int) -> np.ndarray:
    return RNG.random(shape, dtype=np.float32) - np.float32(0.3)


def check(func: PrimFunc, ref: Callable[..., np.ndarray], *shapes: tuple[int, ...]) -> None:
    inputs = [rand(*s) for s in shapes]
    np.testing.assert_allclose(run(func, *inputs), ref(*inputs), rtol=1e-4, atol=1e-5)
