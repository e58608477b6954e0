"""TVM idioms on immediates and shapes: int()/float()/__index__, numpy shapes,
get_const_tuple, and `==` on expressions that Python's `if` cannot decide."""

from __future__ import annotations

import numpy as np
import pytest

from mlc import te, tir
from mlc.errors import MLCTypeError
from mlc.topi.utils import get_const_int, get_const_tuple


def test_int_float_index_on_immediates() -> None:
    c = tir.const(7)
    assert int(c) == 7 and float(c) == 7.0 and [0, 1, 2, 3, 4, 5, 6, 7][c] == 7
    f = tir.const(2.5, "float32")
    assert float(f) == 2.5 and int(f) == 2
    assert bool(tir.const(0)) is False and bool(tir.const(3)) is True


def test_te_shapes_are_numpy_shapes() -> None:
    A = te.placeholder((3, 4), name="A")
    assert np.zeros(A.shape).shape == (3, 4)
    assert [int(d) for d in A.shape] == [3, 4]
    assert list(range(A.shape[1])) == [0, 1, 2, 3]
    assert get_const_tuple(A.shape) == (3, 4)
    assert get_const_int(A.shape[0]) == 3


def test_get_const_tuple_refuses_symbolic_sizes() -> None:
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    with pytest.raises(MLCTypeError, match="symbolic size"):
        get_const_tuple(A.shape)


def test_constants_compare_by_value_in_if() -> None:
    A = te.placeholder((4, 4), name="A")
    assert A.shape[0] == 4  # noqa: PLR2004
    assert A.shape[0] == A.shape[1]
    assert not (A.shape[0] != 4)  # noqa: PLR2004


def test_if_on_a_symbolic_comparison_is_a_typed_error() -> None:
    A = te.placeholder((4,), name="A")

    def f(i: tir.PrimExpr) -> tir.PrimExpr:
        if i == 0:
            return A[i]
        return A[i] * 2

    with pytest.raises(MLCTypeError, match=r"if_then_else"):
        te.compute((4,), f, name="B")
    i = tir.Var("i")
    with pytest.raises(MLCTypeError, match="symbolic condition"):
        bool(i + 1 == 3)
    with pytest.raises(MLCTypeError, match="symbolic condition"):
        bool(i != 0)


def test_container_lookups_keep_identity_semantics() -> None:
    i, j, k = tir.Var("i"), tir.Var("j"), tir.Var("k")
    assert j in [i, j]
    assert k not in [i, j]
    assert [i, j, k].index(k) == 2  # noqa: PLR2004
    assert i == i  # noqa: PLR0124
    assert i != j
    d = {i: 1, j: 2}
    assert d[j] == 2 and k not in d  # noqa: PLR2004
    assert {i, j} - {i} == {j}
