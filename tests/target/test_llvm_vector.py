"""LLVM backend, vectors: Ramp/Broadcast loads and stores, gathers, masks, vector math."""

from __future__ import annotations

import numpy as np
import pytest
from llvm_helpers import build, loop

from mlc.tir import (
    Broadcast,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    Cast,
    Ramp,
    Select,
    Var,
    const,
    seq,
)

RNG = np.random.default_rng(1)


def _vec_index(i: Var, lanes: int, stride: int = 1, scale: int | None = None) -> Ramp:
    return Ramp(i * (scale or lanes * stride), const(stride), lanes)


def test_contiguous_vector_load_store_and_broadcast() -> None:
    """``B[8i : 8i+8] = A[8i : 8i+8] * 2 + c`` as one vector load, fma and store per step."""
    A = Buffer("A", (64,), "float32")
    B = Buffer("B", (64,), "float32")
    i = Var("i", "int32")
    idx = _vec_index(i, 8)
    value = BufferLoad(A, (idx,)) * Broadcast(const(2.0), 8) + Broadcast(const(0.5), 8)
    f = build((A, B), loop(i, 8, BufferStore(B, value, (idx,))))
    a = RNG.random(64, dtype=np.float32)
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 2 + 0.5, rtol=1e-6)
    ir = f.get_source("ll-unopt")
    assert "load <8 x float>" in ir and "store <8 x float>" in ir
    assert "shufflevector" in ir  # the broadcast


def test_strided_gather_and_scatter() -> None:
    """``B[4i : 4i+4] = A[8i : 8i+8 : 2]`` (gather) and ``C[8i : 8i+8 : 2] = ...`` (scatter)."""
    A = Buffer("A", (32,), "int32")
    B = Buffer("B", (16,), "int32")
    C = Buffer("C", (32,), "int32")
    i = Var("i", "int32")
    gathered = BufferLoad(A, (Ramp(i * 8, const(2), 4),))
    body = seq(
        BufferStore(B, gathered, (Ramp(i * 4, const(1), 4),)),
        BufferStore(C, gathered + Broadcast(const(100), 4), (Ramp(i * 8, const(2), 4),)),
        BufferStore(C, Broadcast(const(-1), 4), (Ramp(i * 8 + 1, const(2), 4),)),
    )
    f = build((A, B, C), loop(i, 4, body))
    a = np.arange(32, dtype=np.int32)
    b = np.empty(16, np.int32)
    c = np.empty(32, np.int32)
    f(a, b, c)
    np.testing.assert_array_equal(b, a[::2])
    expected = np.empty(32, np.int32)
    expected[::2] = a[::2] + 100
    expected[1::2] = -1
    np.testing.assert_array_equal(c, expected)


def test_broadcast_index_loads_one_element() -> None:
    """``B[4i : 4i+4] = A[i]`` written with a Broadcast index, and Ramp + Broadcast indices."""
    A = Buffer("A", (4,), "float64")
    B = Buffer("B", (16,), "float64")
    i = Var("i", "int32")
    value = BufferLoad(A, (Broadcast(i, 4),))
    index = Ramp(const(0), const(1), 4) + Broadcast(i * 4, 4)  # normalised to a Ramp
    f = build((A, B), loop(i, 4, BufferStore(B, value, (index,))))
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.empty(16)
    f(a, b)
    np.testing.assert_array_equal(b, np.repeat(a, 4))


def test_vector_bool_and_int_ops() -> None:
    A = Buffer("A", (16,), "int32")
    M = Buffer("M", (16,), "bool")
    B = Buffer("B", (16,), "int32")
    i = Var("i", "int32")
    idx = _vec_index(i, 8)
    x = BufferLoad(A, (idx,))
    body = seq(
        BufferStore(M, x % Broadcast(const(3), 8) == Broadcast(const(0), 8), (idx,)),
        BufferStore(B, Select(BufferLoad(M, (idx,)), x // Broadcast(const(-2), 8),
                              Cast("int32x8", BufferLoad(M, (idx,)))), (idx,)),
    )
    f = build((A, M, B), loop(i, 2, body))
    a = np.arange(-8, 8, dtype=np.int32)
    m = np.empty(16, bool)
    b = np.empty(16, np.int32)
    f(a, m, b)
    np.testing.assert_array_equal(m, a % 3 == 0)
    np.testing.assert_array_equal(b, np.where(a % 3 == 0, a // -2, 0))


def test_vector_select_with_loads_uses_masks() -> None:
    """``C[i] = A[i] if i < n else 0`` over vectors of 8, where A has only n elements: the
    loads past the end are masked off (a masked vector load; the gather goes lane by lane)."""
    n = 13
    A = Buffer("A", (n,), "float32")
    C = Buffer("C", (16,), "float32")
    D = Buffer("D", (16,), "float32")
    i = Var("i", "int32")
    idx = _vec_index(i, 8)
    inside = idx < Broadcast(const(n), 8)
    gather_idx = Ramp(i * 8, const(1), 8) * Broadcast(const(1), 8)  # not a Ramp: a gather
    body = seq(
        BufferStore(C, Select(inside, BufferLoad(A, (idx,)), Broadcast(const(0.0), 8)), (idx,)),
        BufferStore(D, Select(inside, BufferLoad(A, (gather_idx,)), Broadcast(const(-1.0), 8)),
                    (idx,)),
    )
    f = build((A, C, D), loop(i, 2, body))
    a = RNG.random(n, dtype=np.float32)
    c = np.empty(16, np.float32)
    d = np.empty(16, np.float32)
    f(a, c, d)
    np.testing.assert_array_equal(c, np.concatenate([a, np.zeros(3, np.float32)]))
    np.testing.assert_array_equal(d, np.concatenate([a, -np.ones(3, np.float32)]))
    assert "llvm.masked.load" in f.get_source("ll-unopt")


@pytest.mark.parametrize("op", ["exp", "tanh", "sqrt", "erf", "sigmoid"])
def test_vector_math(op: str) -> None:
    A = Buffer("A", (32,), "float32")
    B = Buffer("B", (32,), "float32")
    i = Var("i", "int32")
    idx = _vec_index(i, 8)
    f = build((A, B), loop(i, 4, BufferStore(B, Call("float32x8", op, (BufferLoad(A, (idx,)),)),
                                              (idx,))))
    a = RNG.uniform(0.1, 2, 32).astype(np.float32)
    b = np.empty_like(a)
    f(a, b)
    import math

    ref = {"exp": np.exp, "tanh": np.tanh, "sqrt": np.sqrt, "erf": np.vectorize(math.erf),
           "sigmoid": lambda x: 1 / (1 + np.exp(-x))}[op]
    np.testing.assert_allclose(b, ref(a.astype(np.float64)), rtol=3e-6)


def test_ramp_as_a_value() -> None:
    """``B[4i : 4i+4] = float(4i, 4i+1, ...)``: a Ramp used as data, not as an index."""
    B = Buffer("B", (12,), "float32")
    i = Var("i", "int32")
    idx = _vec_index(i, 4)
    f = build((B,), loop(i, 3, BufferStore(B, Cast("float32x4", idx), (idx,))))
    b = np.empty(12, np.float32)
    f(b)
    np.testing.assert_array_equal(b, np.arange(12, dtype=np.float32))
