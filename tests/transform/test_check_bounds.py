"""check_bounds: an access outside an array is refused before any code runs."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import LoweringError


def test_reading_past_the_end_is_refused_with_the_block_and_range():
    A = te.placeholder((1024,), name="A")
    B = te.compute((1024,), lambda i: A[i + 1], name="B")
    with pytest.raises(LoweringError) as err:
        mlc.build(te.create_schedule(B.op), [A, B])
    msg = str(err.value)
    assert 'block "B" reads A[vi + 1] with vi in [0, 1024)' in msg
    assert "reaches 1024, but A has shape (1024,)" in msg
    assert "te.if_then_else" in msg


def test_negative_index_and_writes_are_checked():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j - 1], name="B")
    with pytest.raises(LoweringError, match=r"its index in dimension 1 \(.*\) reaches -1"):
        mlc.lower(te.create_prim_func([A, B]))


def test_guarded_padding_is_allowed_and_correct():
    A = te.placeholder((16,), name="A")
    P = te.compute((16,), lambda i: te.if_then_else(i + 1 < 16, A[i + 1], 0.0), name="P")
    f = mlc.build(te.create_schedule(P.op), [A, P])
    a = np.arange(16, dtype="float32")
    p = np.zeros(16, "float32")
    f(a, p)
    np.testing.assert_array_equal(p, np.append(a[1:], 0))


def test_symbolic_shapes_are_not_refused():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B])
    a = np.ones(5, "float32")
    b = np.zeros(5, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, 2 * a)
