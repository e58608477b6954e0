"""Mistakes students make with tensor expressions get a TEError that says what would work."""

from __future__ import annotations

import pytest

from mlc import te
from mlc.errors import MLCTypeError, TEError

A = te.placeholder((4, 5), name="A")


def test_wrong_number_of_indices_names_tensor_and_shape():
    with pytest.raises(TEError, match=r"tensor 'A' has shape \(4, 5\) \(2 dimensions\) but was "
                                      r"indexed with 1 index"):
        A[1]


def test_fcompute_arity_mismatch():
    with pytest.raises(TEError, match=r"te.compute\(name='C'\): the shape has 1 dimension so "
                                      r"fcompute must take 1 index argument, but it takes 2 "
                                      r"\(i, j\)"):
        te.compute((4,), lambda i, j: A[i, j], name="C")


def test_reduce_axis_outside_reducer():
    k = te.reduce_axis((0, 5), name="k")
    with pytest.raises(TEError, match="the reduce axis 'k' is used outside a reducer"):
        te.compute((4,), lambda i: A[i, k], name="C")


def test_reducer_not_at_top_level():
    k = te.reduce_axis((0, 5), name="k")
    with pytest.raises(TEError, match=r"must be the whole body of te.compute, not part of a "
                                      r"larger expression such as te.sum\(\.\.\.\) \+ 1"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) + 1, name="C")


def test_non_integer_shape():
    with pytest.raises(TEError, match=r"te.placeholder\(name='X'\): sizes must be integers, "
                                      r"got 4.5"):
        te.placeholder((4.5, 2), name="X")
    with pytest.raises(TEError, match="negative size -3"):
        te.compute((-3,), lambda i: i, name="N")


def test_python_if_on_symbolic_expression():
    with pytest.raises(MLCTypeError, match=r"use te.if_then_else|Use te.if_then_else"):
        te.compute((4,), lambda i: A[i, 0] if i > 2 else 0.0, name="C")


def test_float_index_and_float_math_on_int():
    with pytest.raises(TEError, match="index 0 of tensor 'A' is `0.5` of dtype float32"):
        A[0.5, 1]
    with pytest.raises(TEError, match=r"te.exp needs a float argument.*astype"):
        te.compute((4,), lambda i: te.exp(i), name="C")


def test_missing_placeholder_in_prim_func_arguments():
    C = te.compute((4,), lambda i: A[i, 0], name="C")
    with pytest.raises(TEError, match=r"reads placeholder 'A', which is not in the argument "
                                      r"list \[C\]"):
        te.create_prim_func([C])


def test_tensor_used_as_value():
    B = te.placeholder((3,), name="B")
    with pytest.raises(TEError, match=r"cannot broadcast 'A' of shape \(4, 5\) with 'B' of "
                                      r"shape \(3,\): dimension 1 is 5 against 3"):
        A + B
    with pytest.raises(TEError, match="fcompute returned the tensor 'A' itself"):
        te.compute((4,), lambda i: A, name="C")


def test_reduce_axis_needs_domain_and_reducer_needs_reduce_axis():
    with pytest.raises(TEError, match=r"needs a domain \(lo, hi\)"):
        te.reduce_axis(5)
    C = te.compute((4,), lambda i: A[i, 0], name="C")
    with pytest.raises(TEError, match=r"the axis 'i' is a spatial axis.*te.reduce_axis"):
        te.sum(A[0, 0], axis=C.op.axis[0])


def test_scan_checks():
    m = te.var("m")
    X = te.placeholder((m, 3), name="X")
    state = te.placeholder((m, 3), name="state")
    init = te.compute((1, 3), lambda _, i: X[0, i], name="init")
    bad = te.compute((m,), lambda t: X[t, 0], name="bad")
    with pytest.raises(TEError, match=r"update 'bad' has shape \(m,\) but the state has "
                                      r"\(m, 3\)"):
        te.scan(init, bad, state)
    with pytest.raises(TEError, match="the state must be a te.placeholder"):
        te.scan(init, init, init)


def test_if_then_else_needs_condition():
    with pytest.raises(TEError, match="not a bool condition"):
        te.compute((4,), lambda i: te.if_then_else(i, 1.0, 0.0), name="C")
