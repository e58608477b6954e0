"""Third round of hostile te programs (issue 26). Each test failed on the code before its
fix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import PrecisionWarning


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
