"""Third round of hostile te programs (issue 26). Each test failed on the code before its
fix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import PrecisionWarning, ScheduleError, TEError


def _sum(n: int, dtype: str, accumulate: str | None = None) -> tuple[te.Tensor, te.Tensor]:
    A = te.placeholder((n,), dtype, name="A")
    k = te.reduce_axis((0, n), name="k")
    S = te.compute((1,), lambda i: te.sum(A[k].astype(accumulate) if accumulate else A[k],
                                          axis=k), name="S")
    return A, S


# -- item 2: half precision without silent loss ----------------------------------------------

def test_float16_sum_past_2048_terms_warns_at_build_naming_the_fix() -> None:
    # te.sum over 5000 float16 ones gave 2048.0 without a word
    A, S = _sum(5000, "float16")
    with pytest.warns(PrecisionWarning, match=r"block 'S' adds 5000 terms into S, a float16 "
                      r"accumulator.*te\.sum\(A\[k\]\.astype\(\"float32\"\), axis=k\)"):
        f = mlc.build(te.create_schedule(S.op), [A, S])
    out = np.zeros(1, "float16")
    f(np.ones(5000, "float16"), out)
    assert out[0] == 2048.0  # what the warning announces: the float16 accumulator stops


def test_the_fix_the_warning_names_gives_numpys_sum_without_a_warning() -> None:
    A, S = _sum(5000, "float16", "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        f = mlc.build(te.create_schedule(S.op), [A, S])
    out = np.zeros(1, "float32")
    f(np.ones(5000, "float16"), out)
    assert out[0] == 5000.0


@pytest.mark.parametrize("n, reducer", [(2048, "sum"), (5000, "max")])
def test_short_float16_sums_and_float16_max_do_not_warn(n: int, reducer: str) -> None:
    A = te.placeholder((n,), "float16", name="A")
    k = te.reduce_axis((0, n), name="k")
    red = te.sum if reducer == "sum" else te.max
    S = te.compute((1,), lambda i: red(A[k], axis=k), name="S")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        mlc.build(te.create_schedule(S.op), [A, S])


def test_float16_sum_over_a_symbolic_length_warns() -> None:
    n = te.var("n")
    A = te.placeholder((n,), "float16", name="A")
    k = te.reduce_axis((0, n), name="k")
    S = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="S")
    with pytest.warns(PrecisionWarning, match="known at run time"):
        mlc.build(te.create_schedule(S.op), [A, S])


def test_the_printed_program_shows_the_accumulators_dtype() -> None:
    A, S = _sum(5000, "float16")
    text = str(te.create_prim_func([A, S]))
    assert 'S: Buffer((1,), "float16")' in text and "S[vi] = float16(0.0)" in text


# -- item 3: mistakes that were accepted or unclear -------------------------------------------

def test_numpy_function_inside_compute_names_the_te_function() -> None:
    # failed with numpy's "loop of ufunc does not support argument 0 of type BufferLoad"
    A = te.placeholder((64,), name="A")
    with pytest.raises(TEError, match=r"np\.exp was applied.*Use te\.exp"):
        te.compute((64,), lambda i: np.exp(A[i]), name="B")
    with pytest.raises(TEError, match=r"np\.sqrt.*Use te\.sqrt"):
        te.compute((64,), lambda i: np.sqrt(A[i] * 2), name="B")


@pytest.mark.parametrize("branches", ["literals", "int expression"])
def test_if_then_else_with_int_and_float_branches_is_refused(branches: str) -> None:
    # silently became float32
    A = te.placeholder((64,), "int32", name="A")
    if branches == "literals":
        fn = lambda i: te.if_then_else(i > 3, 1, 2.5)  # noqa: E731
    else:
        fn = lambda i: te.if_then_else(i > 3, A[i], 2.5)  # noqa: E731
    with pytest.raises(TEError, match="one branch is an integer.*the other a float"):
        te.compute((64,), fn, name="B")


def test_if_then_else_with_a_python_int_beside_a_float_expression_is_fine() -> None:
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: te.if_then_else(A[i] > 0, A[i], 0), name="B")
    a = np.linspace(-1, 1, 64).astype("float32")
    b = np.zeros_like(a)
    mlc.build(te.create_schedule(B.op), [A, B])(a, b)
    np.testing.assert_array_equal(b, np.maximum(a, 0))


def test_split_of_an_inlined_stage_says_it_was_inlined() -> None:
    # said "loop 'i' is no longer in the program: a primitive replaced it"
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2, name="B")
    C = te.compute((64,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    with pytest.raises(ScheduleError, match=r"stage 'B' is computed inline .*compute_root"):
        s[B].split(B.op.axis[0], factor=4)
    s[B].compute_root()  # what the message offers works
    s[B].split(B.op.axis[0], factor=4)
    a = np.arange(64, dtype="float32")
    c = np.zeros_like(a)
    mlc.build(s, [A, C])(a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)


def test_unknown_pragma_is_refused() -> None:
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match=r"unknown pragma 'bogus_pragma'.*s\[B\]\.unroll"):
        s[B].pragma(B.op.axis[0], "bogus_pragma", 1)
    s[B].pragma(B.op.axis[0], "auto_unroll_max_step", 8)


def test_np_maximum_inside_compute_names_te_max() -> None:
    # said only that Python's `if` cannot look at a symbolic value
    from mlc.errors import MLCTypeError

    A = te.placeholder((8,), name="A")
    with pytest.raises(MLCTypeError, match=r"np\.maximum.*use te\.max\(a, b\)"):
        te.compute((8,), lambda i: np.maximum(A[i], 0), name="B")
