"""An index out of range in an inner dimension can land inside the array once flattened
(``X[1, -1]`` of a 3 x 3 ``X`` is ``X_flat[2]``): flatten_buffers wraps such an index in
``check_index``, so the run-time check sees the dimension, not only the flat offset."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import IndexOutOfBoundsError


def _gather_row_one() -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    X = te.placeholder((3, 3), name="X")
    G = te.placeholder((4,), "int32", name="G")
    B = te.compute((4,), lambda i: X[1, G[i]], name="B")
    return X, G, B


def test_gather_in_an_inner_dimension_that_stays_inside_the_array_is_refused() -> None:
    X, G, B = _gather_row_one()
    f = mlc.build(te.create_schedule(B.op), [X, G, B])
    x = np.arange(9, dtype="float32").reshape(3, 3)
    out = np.zeros(4, "float32")
    with pytest.raises(IndexOutOfBoundsError, match=r"X\[1, G\[i\]\] in dimension 1.*was -1"):
        f(x, np.array([0, 1, 2, -1], "int32"), out)   # X_flat[2]: inside the array
    with pytest.raises(IndexOutOfBoundsError, match=r"dimension 1.*was 3"):
        f(x, np.array([3, 0, 0, 0], "int32"), out)    # X_flat[6]: inside the array
    f(x, np.array([2, 1, 0, 2], "int32"), out)
    np.testing.assert_array_equal(out, [5, 4, 3, 5])


def test_vectorized_gather_in_an_inner_dimension() -> None:
    X = te.placeholder((4, 8), name="X")
    G = te.placeholder((8,), "int32", name="G")
    B = te.compute((4, 8), lambda i, j: X[i, G[j]], name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    f = mlc.build(s, [X, G, B])
    x = np.arange(32, dtype="float32").reshape(4, 8)
    g = np.array([7, 6, 5, 4, 3, 2, 1, 8], "int32")  # 8: the next row's first element
    with pytest.raises(IndexOutOfBoundsError, match=r"dimension 1.*was 8"):
        f(x, g, np.zeros((4, 8), "float32"))
    g[7] = 0
    out = np.zeros((4, 8), "float32")
    f(x, g, out)
    np.testing.assert_array_equal(out, x[:, g])


def test_wrong_guard_over_a_symbolic_inner_dimension() -> None:
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    # the guard should be j + 1 < m: at j == m - 1 this reads A[i + 1, 0]
    B = te.compute((n, m), lambda i, j: te.if_then_else(j < m, A[i, j + 1], 0.0), name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    a = np.ones((3, 4), "float32")
    with pytest.raises(IndexOutOfBoundsError, match=r"A\[i, j \+ 1\] in dimension 1.*was 4"):
        f(a, np.zeros((3, 4), "float32"))


def test_wrong_guard_over_a_constant_shape_that_never_reaches_the_end() -> None:
    A = te.placeholder((3, 5), name="A")
    B = te.compute((2,), lambda i: te.if_then_else(i < 5, A[0, i + 4], 0.0), name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(IndexOutOfBoundsError, match=r"A\[0, i \+ 4\] in dimension 1.*was 5"):
        f(np.ones((3, 5), "float32"), np.zeros(2, "float32"))


def test_a_right_guard_and_proven_indices_carry_no_inner_check() -> None:
    # padding (the guard proves the index) and a constant-shape GEMM: no check_index
    A = te.placeholder((8, 8), name="A")
    P = te.compute((10, 10), lambda i, j: te.if_then_else(
        te.all(i >= 1, i < 9, j >= 1, j < 9), A[i - 1, j - 1], 0.0), name="P")
    text = str(mlc.lower(te.create_schedule(P.op), [A, P]))
    assert "check_index" not in text, text
    k = te.reduce_axis((0, 64), name="k")
    X = te.placeholder((64, 64), name="X")
    W = te.placeholder((64, 64), name="W")
    Y = te.compute((64, 64), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    s = te.create_schedule(Y.op)
    s[Y].split(Y.op.axis[1], factor=12)  # does not divide: a guard `j_outer * 12 + j_inner < 64`
    text = str(mlc.lower(s, [X, W, Y]))
    assert "check_index" not in text, text
    n = te.var("n")
    S = te.placeholder((n, n), name="S")
    T = te.compute((n, n), lambda i, j: S[i, j] * 2.0, name="T")
    assert "check_index" not in str(mlc.lower(te.create_schedule(T.op), [S, T]))


def test_bounds_check_off_builds_no_inner_check() -> None:
    X, G, B = _gather_row_one()
    f = mlc.build(te.create_schedule(B.op), [X, G, B], bounds_check=False)
    out = np.zeros(4, "float32")
    f(np.arange(9, dtype="float32").reshape(3, 3), np.array([0, 1, 2, -1], "int32"), out)
    assert out[3] == 2  # the expert asked for no checks: X_flat[2]


@pytest.mark.parametrize("target", ["c", "cuda-sim"])
def test_other_targets_accept_the_checked_index(target: str) -> None:
    X, G, B = _gather_row_one()
    s = te.create_schedule(B.op)
    if target == "cuda-sim":
        s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [X, G, B], target=target)
    if target == "c":
        assert "G[i]" in f.get_source()
        return
    out = np.zeros(4, "float32")
    x = np.arange(9, dtype="float32").reshape(3, 3)
    f(x, np.array([2, 1, 0, 2], "int32"), out)
    np.testing.assert_array_equal(out, [5, 4, 3, 5])
    with pytest.raises(mlc.errors.MLCError, match=r"dimension 1|out of"):
        f(x, np.array([0, 1, 2, -1], "int32"), out)


@pytest.mark.parametrize("bad", [-(2**31), 2**31 - 1, 1431655766])
def test_extreme_gathered_indices_cannot_wrap_into_the_array(bad: int) -> None:
    # 1431655766 * 3 is 2 in 32-bit arithmetic: inside X; offsets read from data are int64
    X = te.placeholder((3, 3), name="X")
    G = te.placeholder((2,), "int32", name="G")
    B = te.compute((2,), lambda i: X[G[i], G[1 - i]], name="B")
    f = mlc.build(te.create_schedule(B.op), [X, G, B])
    x = np.arange(9, dtype="float32").reshape(3, 3)
    for g, dim in (([bad, 0], 0), ([0, bad], 1)):
        shown = rf"X\[G\[i\], G\[1 - i\]\] in dimension {dim}"
        with pytest.raises(IndexOutOfBoundsError, match=shown):
            f(x, np.array(g, "int32"), np.zeros(2, "float32"))
    A = te.placeholder((10,), name="A")
    C = te.compute((2,), lambda i: A[G[i] * 4096], name="C")
    h = mlc.build(te.create_schedule(C.op), [A, G, C])
    with pytest.raises(IndexOutOfBoundsError, match="4294967296"):  # 2**20 * 4096 is 0 in int32
        h(np.zeros(10, "float32"), np.array([2**20, 0], "int32"), np.zeros(2, "float32"))
