"""te-style compute_at / compute_inline / compute_root are declarative, as in TVM: the order
of the calls does not matter, the last call for a stage wins, and attachments are resolved
when the schedule is lowered or built."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import ScheduleError


def _softmax(n: int = 8, m: int = 16) -> tuple[list[te.Tensor], dict[str, te.Tensor]]:
    X = te.placeholder((n, m), name="X")
    k = te.reduce_axis((0, m), name="k")
    mx = te.compute((n,), lambda i: te.max(X[i, k], axis=k), name="mx")
    e = te.compute((n, m), lambda i, j: te.exp(X[i, j] - mx[i]), name="e")
    k2 = te.reduce_axis((0, m), name="k2")
    sm = te.compute((n,), lambda i: te.sum(e[i, k2], axis=k2), name="sm")
    Y = te.compute((n, m), lambda i, j: e[i, j] / sm[i], name="Y")
    return [X, Y], {"mx": mx, "e": e, "sm": sm, "Y": Y}


def _numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]


def _run(s: te.Schedule, args: list[te.Tensor], x: np.ndarray) -> np.ndarray:
    f = mlc.build(s, args, target="llvm")
    y = np.empty_like(x)
    f(x, y)
    return y


@pytest.mark.parametrize("order", list(itertools.permutations(["mx", "e", "sm"])))
def test_softmax_compute_at_in_any_order(order: tuple[str, ...]) -> None:
    args, t = _softmax()
    s = te.create_schedule(t["Y"].op)
    i = t["Y"].op.axis[0]
    for name in order:
        s[t[name]].compute_at(s[t["Y"]], i)
    x = np.random.default_rng(0).standard_normal((8, 16)).astype("float32")
    np.testing.assert_allclose(_run(s, args, x), _numpy_softmax(x), rtol=1e-5)
    # every stage now sits under Y's loop i: one outer loop in the program
    text = str(mlc.lower(s, args))
    assert text.count("for i in") == 1, text


def test_compute_root_after_compute_at() -> None:
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1, name="B")
    C = te.compute((16,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].compute_root()
    text = str(mlc.lower(s, [A, C]))
    assert text.count("for i") == 2, text  # B has its own loop again  # noqa: PLR2004
    a = np.arange(16, dtype="float32")
    c = np.empty(16, "float32")
    mlc.build(s, [A, C], target="llvm")(a, c)
    np.testing.assert_array_equal(c, (a + 1) * 2)


def test_last_call_wins_inline_then_root() -> None:
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1, name="B")
    C = te.compute((16,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    s[B].compute_root()
    assert "B" in str(mlc.lower(s, [A, C]))
    s2 = te.create_schedule(C.op)
    s2[B].compute_at(s2[C], C.op.axis[0])
    s2[B].compute_inline()
    assert "with block(\"B\")" not in str(mlc.lower(s2, [A, C]))


def test_split_after_compute_at_uses_the_loops_under_the_attach_point() -> None:
    # The GEMM tutorial's pattern: cache_write, compute_at, then schedule the cache's loops.
    n = 32
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (kk,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kk, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].vectorize(yc)
    rng = np.random.default_rng(1)
    a, b = rng.random((n, n), "float32"), rng.random((n, n), "float32")
    c = np.empty((n, n), "float32")
    mlc.build(s, [A, B, C], target="llvm")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_unresolvable_attachment_names_the_call_at_build() -> None:
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1, name="B")
    C = te.compute((16,), lambda i: B[i] * 2, name="C")
    D = te.compute((16,), lambda i: A[i] * 3, name="D")
    s = te.create_schedule([C.op, D.op])
    s[B].compute_at(s[D], D.op.axis[0])  # D reads nothing B writes
    with pytest.raises(ScheduleError, match=r"s\[B\]\.compute_at\(s\[D\], i\) cannot be applied"):
        mlc.lower(s, [A, C, D])


def test_split_of_a_producer_whose_consumer_is_attached_to_the_same_loop() -> None:
    # The accelerator's pattern: a GEMM stage C and an element-wise stage D reading it, both
    # computed at O's loop; C's loops are split before anything is lowered. C can only move
    # under O's loop once D has, so D's pending compute_at is applied first.
    n = 16
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")
    D = te.compute((n, n), lambda x, y: te.max(C[x, y], 0.0), name="D")
    O = te.compute((n, n), lambda x, y: D[x, y] * 2, name="O")
    s = te.create_schedule(O.op)
    xo, yo, _, _ = s[O].tile(O.op.axis[0], O.op.axis[1], 8, 8)
    s[C].compute_at(s[O], yo)
    s[D].compute_at(s[O], yo)
    (kk,) = s[C].op.reduce_axis
    ko, ki = s[C].split(kk, factor=4)
    xc, yc = s[C].op.axis
    s[C].reorder(ko, xc, ki, yc)
    func = s.to_prim_func([A, B, O])
    text = str(mlc.lower(func))
    assert text.count("for x_0 in") == 1, text
    assert text.index("for k_0 in range(4)") < text.index("for ax0_1 in range(8)"), text
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((n, n), "float32"), rng.standard_normal((n, n), "float32")
    o = np.empty((n, n), "float32")
    mlc.build(func, target="llvm")(a, b, o)
    np.testing.assert_allclose(o, np.maximum(a @ b, 0) * 2, rtol=1e-5, atol=1e-5)
