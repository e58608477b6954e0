"""Scalar parameters in TVMScript: ``alpha: T.float32``, ``n: T.int32``; printed and read back."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ArgumentError, ScriptError
from mlc.script import from_source
from mlc.script import tir as T
from mlc.tir.expr import SizeVar, Var


@T.prim_func
def axpb(A: T.Buffer((16,), "float32"), alpha: T.float32, k: T.int32,
         B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * alpha + T.Cast("float32", k)


def test_scalar_params_are_read_in_the_order_written() -> None:
    assert [a.name for a in axpb.arguments] == ["A", "alpha", "k", "B"]
    assert [(p, v.name, v.dtype) for p, v in axpb.scalars] == [
        (1, "alpha", "float32"), (2, "k", "int32")]
    assert type(axpb.scalars[1][1]) is Var  # not a size: it may be negative


def test_a_script_with_scalars_builds_and_runs() -> None:
    f = mlc.build(axpb)
    a, b = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    f(a, 2.0, -3, b)
    np.testing.assert_allclose(b, a * 2 - 3)


def test_round_trip_through_the_printer() -> None:
    text = axpb.script()
    assert ("def axpb(A: T.Buffer((16,), \"float32\"), alpha: T.float32, k: T.int32, "
            "B: T.Buffer((16,), \"float32\")):") in text
    again = from_source(text)
    assert tir.structural_equal(axpb, again)
    assert again.script() == text
    lowered = mlc.lower(axpb)
    assert tir.structural_equal(lowered, from_source(lowered.script()))


def test_a_size_that_is_also_a_parameter() -> None:
    @T.prim_func
    def scale(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"), n: T.int64):
        for i in range(n):
            with T.block("B"):
                vi = T.axis.spatial(n, i)
                B[vi] = A[vi] * T.Cast("float32", n)

    (_, n), = scale.scalars
    assert type(n) is SizeVar and n.dtype == "int64" and scale.size_vars == (n,)
    assert "n = T.int64()" not in scale.script()  # declared once, as the parameter
    assert tir.structural_equal(scale, from_source(scale.script()))
    f = mlc.build(scale)
    a, b = np.ones(5, "float32"), np.zeros(5, "float32")
    f(a, b, 5)
    np.testing.assert_allclose(b, 5.0)
    with pytest.raises(ArgumentError, match="'n' .* is 4 but the arrays' shapes say n = 5"):
        f(a, b, 4)


def test_a_te_program_with_scalars_prints_a_script_that_reads_back() -> None:
    A = te.placeholder((8,), name="A")
    c = te.var("c", "float64")
    B = te.compute((8,), lambda i: A[i].astype("float64") * c, name="B")
    func = te.create_prim_func([A, c, B])
    text = func.script()
    assert "c: T.float64" in text
    again = from_source(text)
    assert again.script() == text
    b1, b2 = np.zeros(8), np.zeros(8)
    a = np.arange(8, dtype="float32")
    mlc.build(func)(a, 0.5, b1)
    mlc.build(again)(a, 0.5, b2)
    np.testing.assert_array_equal(b1, b2)


@pytest.mark.parametrize("params, words", [
    ("A: T.Buffer((4,), 'float32'), h: T.float16", "float16 scalar is not supported"),
    ("A: T.Buffer((4,), 'float32'), v: T.float32x4", "T.Buffer"),
    ("A: T.Buffer((4,), 'float32'), x", "needs a type"),
])
def test_bad_scalar_params_are_script_errors(params: str, words: str) -> None:
    text = f"@T.prim_func\ndef main({params}):\n    T.evaluate(0)\n"
    with pytest.raises(ScriptError, match=words):
        from_source(text)
